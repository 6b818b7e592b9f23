import os
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger import access
from ledger.actions.people import (
    ROLES,
    PersonExists,
    create_person,
    full_name,
    role_words,
    update_person,
)
from ledger.actors import Actor
from ledger.rules.refusals import Refusal

DEFAULT_REASON = "From the command line."


class Command(BaseCommand):
    help = (
        "Create a person non-interactively; the password comes from PERSON_PASSWORD. "
        "An existing person is changed only with --update. Every change is kept in the "
        "person's history as the command line's (system:cli), with --reason. A superuser "
        "is made with Django's createsuperuser, never here."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=ROLES, help="required for a new person")
        parser.add_argument("--subject", default="", help="ref of a subject this user owns")
        parser.add_argument("--subject-name", default="", help="how the subject is called")
        parser.add_argument("--email", default="", help="where reminders and set-password links go")
        parser.add_argument("--first-name", default="", help="shown beside their username")
        parser.add_argument("--last-name", default="", help="shown beside their username")
        parser.add_argument("--reason", default="", help="why, kept in the person's history")
        parser.add_argument(
            "--update",
            action="store_true",
            help="change an existing person: only what is given (PERSON_PASSWORD included)",
        )

    def handle(self, *args: Any, username: str, role: str | None, **options: Any) -> None:
        password = os.environ.get("PERSON_PASSWORD", "")
        subject, subject_name, email = options["subject"], options["subject_name"], options["email"]
        names = {"first_name": options["first_name"], "last_name": options["last_name"]}
        actor = Actor.system("cli")
        reason = options["reason"] or DEFAULT_REASON
        try:
            if options["update"]:
                user = User.objects.filter(username=username).first()
                if user is None:
                    raise CommandError(f"There is no person called '{username}' to update.")
                if subject and (role or access.role_of(user)) != access.Role.END_USER:
                    raise CommandError("Only an end user (--role user) owns a subject.")
                changes = update_person(
                    user,
                    actor=actor,
                    role=role or "",
                    password=password,
                    subject_ref=subject,
                    subject_name=subject_name,
                    email=email,
                    reason=reason,
                    **names,
                )
                said = "; ".join(changes) if changes else "nothing to change"
                self.stdout.write(f"Updated '{username}': {said}.")
                return
            if not role:
                raise CommandError("Give the new person a role: --role user, support or admin.")
            if subject and role != "user":
                raise CommandError("Only an end user (--role user) owns a subject.")
            if not password:
                raise CommandError("Set PERSON_PASSWORD to the new person's password.")
            create_person(
                username=username,
                password=password,
                role=role,
                subject_ref=subject,
                subject_name=subject_name,
                email=email,
                actor=actor,
                reason=reason,
                **names,
            )
        except PersonExists as refused:
            raise CommandError(
                f"{refused} Nothing was changed; add --update to change them."
            ) from None
        except Refusal as refused:
            raise CommandError(refused.detail) from None
        except ValidationError as invalid:
            raise CommandError("The password was refused: " + " ".join(invalid.messages)) from None
        name = full_name(names["first_name"], names["last_name"])
        called = f" ({name})" if name else ""
        owned = f", owning subject {subject}" if subject else ""
        self.stdout.write(f"Created {role_words(role)} '{username}'{called}{owned}.")
