"""``{{ memory|why_held }}``: why a memory waiting for a person's confirmation was held for
review, so whoever confirms it knows what they accept; empty when nothing in its text was.
``{{ memory|why_quarantined:own }}``: that it waits because an admin quarantined its agent,
in the person's words when ``own`` (they are looking at their own memory), else staff's.
The memory's agent should be loaded with it (``select_related("agent")``)."""

from django import template

from ledger.models import Memory
from ledger.rules.holds import held_by_quarantine, held_for_review

register = template.Library()


@register.filter
def why_held(memory: Memory) -> str:
    return held_for_review(status=memory.status, statement=memory.statement)


@register.filter
def why_quarantined(memory: Memory, own: bool) -> str:
    if memory.status != Memory.Status.PENDING or memory.agent_id is None:
        # Not waiting, or a person's write: no agent to look up.
        return ""
    return held_by_quarantine(status=memory.status, writer=memory.agent, for_person=bool(own))
