import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.actions.people import ROLES, create_person
from ledger.actors import Actor


class Command(BaseCommand):
    help = "Create a person non-interactively; the password comes from PERSON_PASSWORD."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=ROLES, required=True)
        parser.add_argument("--subject", default="", help="ref of a subject this user owns")
        parser.add_argument("--subject-name", default="", help="how the subject is called")
        parser.add_argument("--email", default="", help="where review reminders are sent")

    def handle(self, *args: Any, username: str, role: str, subject: str, **options: Any) -> None:
        password = os.environ.get("PERSON_PASSWORD", "")
        if not password:
            raise CommandError("Set PERSON_PASSWORD to the new person's password.")
        if subject and role != "user":
            raise CommandError("Only an end user (--role user) owns a subject.")
        create_person(
            username=username,
            password=password,
            role=role,
            subject_ref=subject,
            subject_name=options["subject_name"],
            email=options["email"],
            actor=Actor.system("cli"),
        )
        owned = f", owning subject {subject}" if subject else ""
        self.stdout.write(f"{role} '{username}' is ready{owned}.")
