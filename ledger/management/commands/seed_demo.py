"""A small, realistic demo. Running it twice changes nothing the second time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from ledger.actions.agents import hash_key
from ledger.actions.memories import (
    MemoryInput,
    SourceInput,
    correct_memory,
    import_memory,
    write_memory,
)
from ledger.actions.people import create_person
from ledger.actions.tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Agent, Memory, Subject

DEMO_PASSWORD = "demo-password-1"
DEMO_AGENT = "demo-assistant"
# A fixed key so that the README's examples work against the demo. Demo data only.
DEMO_KEY = "ma_demo00000000_local-demo-key-do-not-use-in-production"
DEMO_PEOPLE = [
    ("dana", "user", "acct_4b71c9e20d8af315", "Dana Whitfield"),
    ("sam", "support", "", ""),
    ("alex", "admin", "", ""),
]


class Command(BaseCommand):
    help = "Load demo subjects, memories and people (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            if Agent.objects.filter(name=DEMO_AGENT).exists():
                self.stdout.write("Demo data is already loaded.")
            else:
                self._load()
                self.stdout.write("Demo data loaded.")
        self.stdout.write(f"Demo logins (password '{DEMO_PASSWORD}'):")
        for username, role, _, _ in DEMO_PEOPLE:
            self.stdout.write(f"  {username:<6} {role}")
        self.stdout.write(f"Demo agent key (read, write): {DEMO_KEY}")

    def _load(self) -> None:
        system = Actor.system("seed_demo")
        agent = Agent(
            name=DEMO_AGENT,
            key_prefix=DEMO_KEY.split("_")[1],
            key_hash=hash_key(DEMO_KEY),
            scopes=["read", "write"],
        )
        save_tracked(agent, actor=system, reason="Demo agent.")
        people = {}
        for username, role, subject_ref, subject_name in DEMO_PEOPLE:
            people[username] = create_person(
                username=username,
                password=DEMO_PASSWORD,
                role=role,
                subject_ref=subject_ref,
                subject_name=subject_name,
                actor=system,
            )

        def write(subject: str, statement: str, **fields: Any) -> Memory:
            source = fields.pop("source")
            result = write_memory(
                agent=agent,
                data=MemoryInput(subject=subject, statement=statement, source=source, **fields),
            )
            assert result.memory is not None, result.reason
            return result.memory

        dana = "acct_4b71c9e20d8af315"
        write(
            dana,
            "Prefers email over telephone for billing questions.",
            kind="preference",
            key="contact.channel",
            basis="stated",
            source=SourceInput(
                kind="user_message",
                ref="msg_0192",
                run="run_77",
                turn=4,
                excerpt="please email me about invoices, I never pick up calls",
            ),
        )
        write(
            dana,
            "Runs a monthly close in the first week of each month.",
            kind="account_fact",
            key="finance.close_cycle",
            basis="inferred",
            source=SourceInput(
                kind="tool_result",
                ref="ledger_export_2291",
                run="run_77",
                turn=9,
                excerpt="journal entries cluster on days 1-6",
            ),
        )
        write(
            dana,
            "Deliveries should arrive before noon.",
            kind="preference",
            key="delivery.window",
            basis="stated",
            source=SourceInput(
                kind="user_message",
                ref="msg_0207",
                run="run_81",
                turn=2,
                excerpt="mornings are best for deliveries",
            ),
        )
        write(
            dana,
            "Deliveries should arrive after 3 pm.",
            kind="preference",
            key="delivery.window",
            basis="stated",
            source=SourceInput(
                kind="user_message",
                ref="msg_0311",
                run="run_90",
                turn=3,
                excerpt="nobody is in before three these days",
            ),
        )
        wrong = write(
            dana,
            "Account is on the Starter plan.",
            kind="account_fact",
            key="account.plan",
            basis="stated",
            source=SourceInput(kind="tool_result", ref="crm_lookup_5510", run="run_81", turn=5),
        )
        correct_memory(
            memory=wrong,
            actor=Actor.for_user(people["dana"]),
            statement="Account is on the Team plan since October.",
            reason="I upgraded in October.",
        )
        subject = Subject.objects.get(ref=dana)
        now = timezone.now()
        import_memory(
            subject=subject,
            kind="episode",
            statement="Asked for a refund on an invoice sent twice in March.",
            basis="stated",
            source=SourceInput(
                kind="import",
                ref="helpdesk_ticket_8812",
                excerpt="invoice INV-2291 was sent twice, please refund one",
            ),
            written_at=now - timedelta(days=120),
            expires_at=now - timedelta(days=30),
            actor=system,
        )
        northwind = "acct_9d3e1a77c05b42e8"
        write(
            northwind,
            "Orders flour in 25 kg sacks, never smaller.",
            kind="preference",
            key="order.unit",
            basis="stated",
            source=SourceInput(
                kind="user_message",
                ref="msg_1044",
                run="run_102",
                turn=1,
                excerpt="we only take 25kg sacks",
            ),
        )
        write(
            northwind,
            "Likely closes on Mondays.",
            kind="account_fact",
            key="hours.closed_day",
            basis="inferred",
            source=SourceInput(kind="tool_result", ref="orders_by_weekday", run="run_102", turn=6),
        )
        write(
            "acct_1f6b0c93d2e84a71",
            "Wants invoices addressed to the finance team, not a person.",
            kind="preference",
            key="invoice.addressee",
            basis="stated",
            source=SourceInput(kind="user_message", ref="msg_2210", run="run_140", turn=2),
        )
        for ref, name in [
            (northwind, "Northwind Bakery"),
            ("acct_1f6b0c93d2e84a71", "Marco Rossi"),
        ]:
            named = Subject.objects.get(ref=ref)
            named.display_name = name
            save_tracked(named, actor=system, reason="Demo name.", update_fields=["display_name"])
