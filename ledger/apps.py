from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "ledger"
    verbose_name = "memoryadmin"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from ledger import checks, signals  # noqa: F401  (register checks, history receiver)
        from ledger.access import ensure_roles

        # After auth's own post_migrate handler has made the permissions.
        post_migrate.connect(ensure_roles, sender=self)
