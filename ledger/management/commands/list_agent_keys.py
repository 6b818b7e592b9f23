from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand
from django.utils import timezone

from ledger.dates import when
from ledger.models import AgentKey
from ledger.rules.agents import Restriction, restriction_reason

COLUMNS = ("NAME", "PREFIX", "SCOPES", "CREATED", "LAST USED", "EXPIRES", "STATE")


def state(key: AgentKey, now: datetime) -> str:
    """Whether the key works now, and any restriction on its agent's writes."""
    agent = key.agent
    if not agent.is_active:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "stopped (rotated)"
    words = ["working (grace)" if key.expires_at else "working"]
    words += [r.words for r in Restriction if restriction_reason(agent, r)]
    return "; ".join(words)


class Command(BaseCommand):
    help = "List every agent's API keys: name, prefix, scopes, dates, and whether each works."

    def handle(self, *args: Any, **options: Any) -> None:
        now = timezone.now()
        keys = AgentKey.objects.select_related("agent").order_by(
            "agent__name", "-created_at", "-id"
        )
        rows = [
            (
                key.agent.name,
                key.prefix,
                ",".join(key.agent.scopes) or "none",
                when(key.created_at),
                # Only a request with the key counts (the demo's seed writes without one).
                when(key.last_used_at) if key.last_used_at else "no request yet",
                when(key.expires_at) if key.expires_at else "never",
                state(key, now),
            )
            for key in keys.iterator()
        ]
        if not rows:
            self.stdout.write("No agents yet. Make one with create_agent_key NAME --scopes read.")
            return
        widths = [max(len(row[i]) for row in (COLUMNS, *rows)) for i in range(len(COLUMNS))]
        for row in (COLUMNS, *rows):
            self.stdout.write(
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            )
