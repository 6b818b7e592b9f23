"""gunicorn's settings, read when it starts from the repository's folder: its access log
(``--access-logfile``) keeps paths, never query strings (``memoryadmin.logs``). Started
from elsewhere, pass ``--logger-class memoryadmin.logs.GunicornLogger``."""

logger_class = "memoryadmin.logs.GunicornLogger"
