"""What support's work on a queue item may hold: a ticket reference and internal notes."""

from __future__ import annotations

import re

from ledger.rules.refusals import Refusal
from ledger.rules.text import forbidden_in_excerpt

TICKET_MAX = 64
NOTE_MAX = 2000
# A reference in another tool (a help desk's "ZD-1234", "#88", "ops/2031/7"): no spaces,
# so it is a reference, never a sentence about the person.
TICKET_PATTERN = re.compile(rf"[A-Za-z0-9._#/-]{{1,{TICKET_MAX}}}")


def checked_ticket(ticket: str) -> str:
    """A ticket reference as kept: "" clears it; anything else is one reference."""
    ticket = ticket.strip()
    if ticket and not TICKET_PATTERN.fullmatch(ticket):
        raise Refusal(
            "ticket_invalid",
            f"A ticket reference is up to {TICKET_MAX} letters, digits and . _ # / -, "
            "with no spaces (ZD-1234, #88). Nothing was changed.",
            400,
        )
    return ticket


def checked_note(text: str) -> str:
    """An internal note as kept, or the refusal saying what is wrong with it."""
    text = text.strip()
    if not text:
        raise Refusal("note_required", "Write the note first. Nothing was saved.", 400)
    if len(text) > NOTE_MAX:
        raise Refusal(
            "note_too_long",
            f"A note is at most {NOTE_MAX} characters; this one has {len(text)}. "
            "Nothing was saved.",
            400,
        )
    if (found := forbidden_in_excerpt(text)) is not None:
        raise Refusal(
            "note_invalid_character",
            f"The note holds an invisible character ({found}): type it again. Nothing was saved.",
            400,
        )
    return text
