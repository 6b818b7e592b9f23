import os

from django.core.wsgi import get_wsgi_application

from memoryadmin import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
# Before the handler loads its middleware, which tracing adds to. runserver (make run)
# loads this module too.
tracing.configure()

application = get_wsgi_application()
