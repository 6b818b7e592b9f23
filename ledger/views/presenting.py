"""Plain-words descriptions of memories for people: who said it, where from, who changed it.

Pure functions over rows already loaded; the pages and fragments share them. Who is staff
is looked up once per page (``Names``), never once per row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings

from ledger.actions.conflicts import KEPT_IN_CONFLICT
from ledger.actions.reverts import REVERTED
from ledger.choices import CORRECTIONS, StatedBy
from ledger.dates import day as day  # re-exported: views format days with the presenters
from ledger.models import Memory, Source
from ledger.reads.names import Names
from ledger.words import CORRECTION_REF, reason_words

KIND_TITLES = {
    Memory.Kind.PREFERENCE: "Preferences",
    Memory.Kind.ACCOUNT_FACT: "Facts about the account",
    Memory.Kind.EPISODE: "Past episodes",
}


def expiring_soon_days() -> int:
    return settings.MEMORYADMIN_EXPIRING_SOON_DAYS


def undo_seconds() -> int:
    return settings.MEMORYADMIN_UNDO_SECONDS


def ask_support(memory: Memory, run: str | None) -> str:
    """A mailto: link to support (``MEMORYADMIN_SUPPORT_EMAIL``) asking about ``memory`` in
    the conversation ``run``, with the references support looks them up by filled in; ""
    when no address is set."""
    address = settings.MEMORYADMIN_SUPPORT_EMAIL
    if not address:
        return ""
    where = f"conversation reference {run}" if run else "a read outside any named conversation"
    about = {
        "subject": f"A question about what the assistant remembered ({run or memory.pk})",
        "body": (
            f"Memory: {memory.pk}\nUsed in: {where}\nSubject: {memory.subject.ref}\n\n"
            "My question:\n"
        ),
    }
    return f"mailto:{address}?{urlencode(about, quote_via=quote)}"


def held_statement(memory: Memory) -> bool:
    """An agent's report of what the person said, held pending by an admin's restriction on
    that agent: only a restriction holds a statement, and until a person confirms it, it
    is the agent's claim, not the person's word (nor a guess)."""
    return (
        memory.status == Memory.Status.PENDING
        and memory.basis == Memory.Basis.STATED
        and memory.stated_by == StatedBy.PERSON
    )


def said_label(memory: Memory, *, own: bool, created_by_viewer: bool, source: Source | None) -> str:
    """Who a memory's words are, in a badge; ``source`` is its first (where it came from)."""
    if memory.basis == Memory.Basis.INFERRED:
        return "The assistant guessed this"
    if held_statement(memory):
        return (
            "The assistant says you told it this"
            if own
            else "The assistant says the person said this"
        )
    if memory.stated_by == StatedBy.CONFIRMATION:
        return "You confirmed this" if own else "Confirmed by the person"
    if memory.stated_by == StatedBy.SUPPORT_CONFIRMATION:
        return "Confirmed by support"
    if memory.stated_by in CORRECTIONS:
        if created_by_viewer:
            return "You corrected this"
        if memory.stated_by == StatedBy.SUPPORT_CORRECTION:
            return "Corrected by support"
        return "Corrected by the person"
    return written_by_agent(source, own=own)


def written_by_agent(source: Source | None, *, own: bool) -> str:
    """A statement an agent wrote (or an import brought in), said as the agent's and not as
    the person's word: the words are the agent's reading of what it cites, which may be the
    person speaking of someone else."""
    match source.kind if source else "":
        case Source.Kind.USER_MESSAGE:
            return f"The assistant wrote this, citing {'your' if own else 'the person’s'} message"
        case Source.Kind.TOOL_RESULT:
            return "The assistant wrote this, citing a tool’s answer"
        case Source.Kind.OPERATOR:
            return "Written by hand on the dashboard"
        case Source.Kind.IMPORT:
            return "Imported from an earlier memory store"
        case _:
            return "The assistant wrote this"


def origin(source: Source | None, *, own: bool) -> str:
    """Where a memory came from, to follow 'Written': 'from your message in …'."""
    if source is None:
        return "from an unknown source"
    when = day(source.run.started_at if source.run else source.received_at)
    your = "your" if own else "the person’s"
    match source.kind:
        case Source.Kind.USER_MESSAGE:
            if source.run is not None:
                return f"from {your} message in the conversation of {when}"
            return f"from {your} message of {when}"
        case Source.Kind.TOOL_RESULT:
            return f"from a tool the assistant used on {when}"
        case Source.Kind.OPERATOR:
            return f"on the dashboard on {when}"
        case _:
            return f"from an earlier memory store, imported on {when}"


# What a source was, as support reads it on a history page.
SOURCE_KINDS: dict[str, str] = {
    Source.Kind.USER_MESSAGE: "Message from the person",
    Source.Kind.TOOL_RESULT: "Result of a tool the assistant used",
    Source.Kind.OPERATOR: "Written by hand",
    Source.Kind.IMPORT: "Imported from an earlier memory store",
}


def source_words(source: Source, *, corrected_by: str) -> tuple[str, str]:
    """What a source was, and the reference that traces it in the agent's own records.

    A dashboard correction's reference is ours ("correction:<id>"), not the agent's: it is
    said in words, with who corrected it (``corrected_by``), and no reference is shown.
    """
    if source.kind == Source.Kind.OPERATOR and source.ref.startswith(CORRECTION_REF):
        return f"Corrected on the dashboard by {corrected_by}", ""
    return SOURCE_KINDS.get(source.kind, source.kind), source.ref


# A status as a person reads it at the head of a line: "In use", "Deleted".
STATUS_CHANGES: dict[str, str] = {status: status.label.capitalize() for status in Memory.Status}
# A memory an admin's revert replaced: superseded, but not by anyone's correction of it.
REPLACED_BY_REVERT = "Replaced by a revert"


def status_words(memory: Memory, *, by_revert: bool = False) -> str:
    """``memory``'s status at the head of a line; ``by_revert``: the memory that superseded
    it is an admin's revert (its ``restores`` is set), not a correction."""
    if memory.status == Memory.Status.SUPERSEDED and by_revert:
        return REPLACED_BY_REVERT
    return STATUS_CHANGES.get(memory.status, memory.status)


@dataclass(frozen=True)
class Change:
    """One field between two versions of a history row (a memory's, an agent's), in words."""

    label: str
    before: str
    after: str


@dataclass
class Step:
    at: datetime
    what: str
    who: str
    why: str
    changes: list[Change] = field(default_factory=list)


STATED_BY_WORDS: dict[str, str] = {
    StatedBy.PERSON: "said by the person",
    StatedBy.CONFIRMATION: "confirmed by the person",
    StatedBy.SUPPORT_CONFIRMATION: "confirmed by support",
    StatedBy.CORRECTION: "a correction by the person",
    StatedBy.SUPPORT_CORRECTION: "a correction by support",
}

# The fields a history page compares row to row, with how each value is said.
COMPARED: list[tuple[str, str]] = [
    ("statement", "Statement"),
    ("key", "Slot"),
    ("status", "Status"),
    ("basis", "Basis"),
    ("stated_by", "How it became stated"),
    ("expires_at", "Expires"),
    ("withheld", "Used by the assistant"),
]


def _value_words(name: str, row: Any) -> str:
    value = getattr(row, name)
    if name == "stated_by" and row.basis == Memory.Basis.INFERRED:
        # A guess was never stated by anyone: only a confirmation or correction makes it so.
        return "not stated: a guess"
    if name == "status":
        return STATUS_CHANGES.get(value, str(value))
    if name == "basis":
        return "guessed" if value == Memory.Basis.INFERRED else "stated"
    if name == "stated_by":
        return STATED_BY_WORDS.get(value, str(value))
    if name == "expires_at":
        return day(value) if value else "never"
    if name == "withheld":
        return "no" if value else "yes"
    return str(value) if value else "(none)"


def changes_between(before: Any, after: Any) -> list[Change]:
    """What differs between two history rows of one memory, field by field."""
    return [
        Change(label, _value_words(name, before), _value_words(name, after))
        for name, label in COMPARED
        if getattr(before, name) != getattr(after, name)
    ]


def steps(rows: Iterable[Any], *, names: Names) -> list[Step]:
    """One memory's history rows, oldest first, with what changed in words."""
    out: list[Step] = []
    previous = None
    for row in rows:
        if previous is None:
            what = f"Written ({STATUS_CHANGES.get(row.status, row.status).lower()})"
            if row.withheld:
                # A correction of a withheld memory keeps the person's "don't use it".
                what = "Written (kept, not used by the assistant)"
        elif row.withheld != previous.withheld:
            what = "Not to be used by the assistant" if row.withheld else "Allowed to be used again"
        elif row.status != previous.status:
            what = STATUS_CHANGES.get(row.status, row.status)
            if row.status == Memory.Status.ACTIVE and previous.basis != row.basis:
                what = "Confirmed"
        elif row.basis != previous.basis:
            what = "Confirmed"
        elif row.expires_at != previous.expires_at:
            what = f"New expiry: {day(row.expires_at)}" if row.expires_at else "Made permanent"
        else:
            what = "Changed"
        why = reason_words(row.history_change_reason or "")
        if row.status == Memory.Status.SUPERSEDED and why.startswith(REVERTED):
            # Superseded by an admin's revert, whose reason says so: named once, not twice.
            what, why = REPLACED_BY_REVERT, why.removeprefix(REVERTED)
        if why.startswith(KEPT_IN_CONFLICT):
            # "Kept when the conflict was resolved by the person: deleted instead …": the
            # step's name, then what else went; who did it is said by ``who``.
            what, why = KEPT_IN_CONFLICT, why.partition(": ")[2]
        changes: list[Change] = changes_between(previous, row) if previous is not None else []
        if what == REPLACED_BY_REVERT:
            changes = [
                Change(c.label, c.before, REPLACED_BY_REVERT) if c.label == "Status" else c
                for c in changes
            ]
        who = names.who(row.history_actor)
        out.append(Step(at=row.history_date, what=what, who=who, why=why, changes=changes))
        previous = row
    return out
