"""The action journal: an agent writes its intent before it acts, then what happened.

The journal is how an agent that died mid-action learns, on resume, that an attempt
may already exist. Outcomes move one way only; an unknown is resolved by reading the
world, never by retrying blindly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from ledger.actions._tracking import save_tracked
from ledger.actions.runs import RunOfAnotherAgent, start_run
from ledger.actions.webhooks import emit
from ledger.actors import Actor
from ledger.models import Agent, JournalEntry, Run
from ledger.rules import webhooks
from ledger.rules.holds import refuse_paused_agent
from ledger.rules.journal import checked_for_resolution, refuse_journal_move, stale_intent_cutoff
from ledger.rules.refusals import Refusal


def run_for_agent(*, ref: str, agent: Agent) -> Run | None:
    """The agent's run with this reference, created on first use; None if another agent's."""
    try:
        return start_run(ref=ref, agent=agent)
    except RunOfAnotherAgent:
        return None


@dataclass(frozen=True)
class IntentResult:
    entry: JournalEntry
    created: bool


def journal_intent(
    *, agent: Agent, run: Run, idempotency_key: str, action: str, intent: dict[str, Any]
) -> IntentResult:
    """Record an intent once per (agent, key). A repeat returns the first entry untouched.
    Only in the agent's own run: a journal is its agent's record of its own side effects,
    whatever the write policy says of what agents write about a subject."""
    if run.agent_id != agent.pk:
        raise RunOfAnotherAgent(run.ref)
    existing = JournalEntry.objects.filter(agent=agent, idempotency_key=idempotency_key).first()
    if existing is not None:
        return IntentResult(existing, created=False)
    # A paused agent starts no new side effect; what it already journaled it may still
    # report (``record_outcome``), so the record of the world stays true.
    refuse_paused_agent(agent)
    now = timezone.now()
    entry = JournalEntry(
        run=run,
        agent=agent,
        idempotency_key=idempotency_key,
        action=action,
        intent=intent,
        created_at=now,
        updated_at=now,
    )
    try:
        with transaction.atomic():
            save_tracked(entry, actor=Actor.for_agent(agent), reason=f"Intends to {action}.")
    except IntegrityError:
        # A concurrent request journaled the same key first: that attempt is the one.
        return IntentResult(
            JournalEntry.objects.get(agent=agent, idempotency_key=idempotency_key), created=False
        )
    return IntentResult(entry, created=True)


# Marks an outcome field the request left out, as opposed to one it set to null.
UNSET: Any = object()


def record_outcome(
    *,
    agent: Agent,
    idempotency_key: str,
    state: str,
    effect: Any = UNSET,
    verification: Any = UNSET,
) -> JournalEntry:
    """Move the agent's entry to ``state`` with what the tool and the world said."""
    with transaction.atomic():
        entry = (
            JournalEntry.objects.select_for_update()
            .filter(agent=agent, idempotency_key=idempotency_key)
            .first()
        )
        if entry is None:
            raise Refusal("not_found", "No journal entry of yours has this key.", status=404)
        refuse_journal_move(entry.state, state)
        previous = entry.state
        entry.state = state
        entry.updated_at = timezone.now()
        fields = ["state", "updated_at"]
        if effect is not UNSET:
            entry.effect = effect
            fields.append("effect")
        if verification is not UNSET:
            entry.verification = verification
            fields.append("verification")
        save_tracked(
            entry,
            actor=Actor.for_agent(agent),
            reason=f"Outcome recorded: {previous} → {state}.",
            update_fields=fields,
        )
        if state == JournalEntry.State.UNKNOWN:
            entry.agent = agent
            emit(
                webhooks.Event.JOURNAL_UNKNOWN,
                webhooks.journal_payload(entry, previous),
                subject_id=entry.run.subject_id,
                run_id=entry.run_id,
            )
    return entry


def resolve_journal_entry(
    *, entry: JournalEntry, state: str, verification: str, actor: Actor
) -> JournalEntry:
    """A person records what the world shows about an action whose outcome nobody knows:
    done or not done, with what they checked. Only an entry that needs resolving (an
    unknown outcome, or an intent that never reported back) may be resolved by a person;
    an agent still within its time may yet report its own outcome."""
    checked = checked_for_resolution(state=state, verification=verification)
    with transaction.atomic():
        entry = JournalEntry.objects.select_for_update().get(pk=entry.pk)
        refuse_journal_move(entry.state, state)
        if not entry.needs_resolution(stale_intent_cutoff()):
            raise Refusal(
                "resolution_not_needed",
                "The agent may still report this action's outcome itself: only an unknown "
                "outcome, or an intent that never reported back, is resolved by a person.",
                409,
            )
        previous = entry.state
        entry.state = state
        resolved: dict[str, Any] = {"checked": checked, "recorded_by": actor.label}
        if entry.verification is not None:
            # What the agent verified stays beside what the person checked.
            resolved["by_agent"] = entry.verification
        entry.verification = resolved
        entry.updated_at = timezone.now()
        save_tracked(
            entry,
            actor=actor,
            reason=f"Resolved by reading the external system: {previous} → {state}. "
            f"Checked: {checked}",
            update_fields=["state", "verification", "updated_at"],
        )
    return entry
