import os

from django.core.asgi import get_asgi_application

from memoryadmin import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
# Before the handler loads its middleware, which tracing adds to.
tracing.configure()

application = get_asgi_application()
