from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "ledger"
    verbose_name = "memoryadmin"

    def ready(self) -> None:
        from ledger import signals  # noqa: F401  (connects the history receiver)
