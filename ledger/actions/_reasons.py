"""Whether whoever makes a change must say why, asked by the actions on their locked rows.

Private to ``ledger.actions``. Who must is ``access.change_needs_reason`` and the refusal's
words are ``rules.reasons``'; the two layers may not import each other, so they meet here,
where every caller (a page, the API, a command, a test) reaches the same answer.
"""

from __future__ import annotations

from ledger import access
from ledger.actors import Actor
from ledger.models import Subject
from ledger.rules.reasons import refuse_unexplained_change


def needs_reason(actor: Actor, subject: Subject) -> bool:
    """Whether ``actor`` must say why they change what is kept about ``subject``: support or
    an admin must, the person need not. An agent's reason is the API's to demand (its
    serializers require one of every agent); the system's, whoever runs the command."""
    return actor.user is not None and access.change_needs_reason(actor.user, subject)


def refuse_missing_reason(*, actor: Actor, subject: Subject, reason: str) -> None:
    """Refuse a change to someone else's memory that does not say why, in the dashboard's
    words (code ``reason_required``, 400); the person's own change needs no reason."""
    if needs_reason(actor, subject):
        refuse_unexplained_change(reason)
