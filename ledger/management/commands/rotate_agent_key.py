from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.actions.agents import rotate_agent_key
from ledger.actors import Actor
from ledger.dates import when
from ledger.models import Agent
from ledger.rules.agents import GRACE_HOURS_MAX
from ledger.rules.refusals import Refusal


class Command(BaseCommand):
    help = (
        "Give an agent a new API key, printed alone on the last line (shown once). Its older "
        "keys keep working for the grace period, then stop."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument(
            "--grace-hours",
            type=int,
            required=True,
            help=f"how long the old key keeps working: 0 (stops at once) to {GRACE_HOURS_MAX}",
        )
        parser.add_argument(
            "--reason",
            default="Key rotated from the command line.",
            help="why, kept in the agent's history",
        )

    def handle(self, *args: Any, name: str, grace_hours: int, reason: str, **options: Any) -> None:
        agent = Agent.objects.filter(name=name).first()
        if agent is None:
            raise CommandError(f"No agent named '{name}'. Make one with create_agent_key.")
        try:
            rotation = rotate_agent_key(
                agent=agent, actor=Actor.system("cli"), grace_hours=grace_hours, reason=reason
            )
        except Refusal as refusal:
            raise CommandError(refusal.detail) from refusal
        self.stdout.write(f"Agent '{name}' has a new key.")
        if not rotation.replaced:
            self.stdout.write("It had no other working key.")
        elif grace_hours == 0:
            self.stdout.write("Its older key stopped working now.")
        else:
            self.stdout.write(
                f"Its older key keeps working until {when(rotation.old_keys_end)} at the "
                "latest, then stops: switch the agent over before then."
            )
        self.stdout.write("Store this key now; it is never shown again:")
        self.stdout.write(rotation.key)
