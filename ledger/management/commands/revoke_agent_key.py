from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.actions.agents import revoke_agent
from ledger.actors import Actor
from ledger.models import Agent
from ledger.rules.refusals import Refusal


class Command(BaseCommand):
    help = "Revoke an agent: every key it has stops at once; later requests with them get 401."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--reason", required=True, help="why, kept in the agent's history")

    def handle(self, *args: Any, name: str, reason: str, **options: Any) -> None:
        agent = Agent.objects.filter(name=name).first()
        if agent is None:
            raise CommandError(f"No agent named '{name}'.")
        try:
            revoke_agent(agent=agent, actor=Actor.system("cli"), reason=reason)
        except Refusal as refusal:
            raise CommandError(refusal.detail) from refusal
        self.stdout.write(f"Agent '{name}' revoked: none of its keys works any more.")
