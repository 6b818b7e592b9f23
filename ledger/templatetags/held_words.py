"""``{{ memory|why_held }}``: why a memory waiting for a person's confirmation was held for
review, so whoever confirms it knows what they accept; empty when nothing in its text was."""

from django import template

from ledger.models import Memory
from ledger.rules.holds import held_for_review

register = template.Library()


@register.filter
def why_held(memory: Memory) -> str:
    return held_for_review(status=memory.status, statement=memory.statement)
