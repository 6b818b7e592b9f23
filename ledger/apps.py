from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ledger.rules.rates import parse_rate

RATE_SETTINGS = (
    "MEMORYADMIN_RATE_READS",
    "MEMORYADMIN_RATE_WRITES",
    "MEMORYADMIN_RATE_FAILED_KEYS",
)


class LedgerConfig(AppConfig):
    name = "ledger"
    verbose_name = "memoryadmin"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        # Registered on import: checks, the history receivers, the task and lockout counts.
        from ledger import checks, measures, signals  # noqa: F401
        from ledger.access import ensure_roles

        refuse_bad_rates()
        # After auth's own post_migrate handler has made the permissions.
        post_migrate.connect(ensure_roles, sender=self)


def refuse_bad_rates() -> None:
    """Every process that loads the app (web, worker, command) stops at once on an API rate
    limit that is not one: zero or "off" is refused, never a quiet no-limit."""
    for name in RATE_SETTINGS:
        try:
            parse_rate(getattr(settings, name))
        except ValueError as problem:
            raise ImproperlyConfigured(f"{name}: {problem}") from None
