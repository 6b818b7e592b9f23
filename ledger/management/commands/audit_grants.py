import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.reads import audit_chain

# A plain PostgreSQL identifier: anything else is more likely a typo than a role's name.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,62}")


class Command(BaseCommand):
    help = (
        "Print the SQL (PostgreSQL) that makes the audit append-only for the application's "
        "database role: history rows and seals can be read and added, never changed or "
        "deleted, except what an erasure blanks. Run it as the tables' owner, after migrate."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("role", help="the role the application connects as")
        parser.add_argument("--schema", default="public", help="the tables' schema (public)")

    def handle(self, *args: Any, role: str, schema: str, **options: Any) -> None:
        for name, what in ((role, "role"), (schema, "schema")):
            if not NAME.fullmatch(name):
                raise CommandError(
                    f"{name!r} is not a plain {what} name: use letters, digits and _, "
                    "starting with a letter or _."
                )
        self.stdout.write(
            f"-- The audit append-only for {role}: run as the owner of the tables (never as "
            f"{role}), after every migrate.\n"
            "BEGIN;\n" + "\n".join(audit_chain.append_only_grants(role, schema)) + "\nCOMMIT;"
        )
