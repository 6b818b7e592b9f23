from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.actions.agents import create_agent
from ledger.actors import Actor
from ledger.rules.refusals import Refusal


class Command(BaseCommand):
    help = "Create an agent and print its API key (shown once) on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument(
            "--scopes",
            default="read",
            help="comma-separated: read, write, staff (batch retractions)",
        )

    def handle(self, *args: Any, name: str, scopes: str, **options: Any) -> None:
        wanted = [s.strip() for s in scopes.split(",") if s.strip()]
        try:
            agent, key = create_agent(name=name, scopes=wanted, actor=Actor.system("cli"))
        except Refusal as refusal:
            if refusal.code == "agent_name_taken":
                raise CommandError(
                    f"{refusal.detail}\nTo rotate it: manage.py rotate_agent_key {name} "
                    '--grace-hours 24 --reason "Why it is rotated."'
                ) from refusal
            raise CommandError(refusal.detail) from refusal
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Agent '{agent.name}' created with scopes {','.join(agent.scopes)}.")
        self.stdout.write("Store this key now; it is never shown again:")
        self.stdout.write(key)
