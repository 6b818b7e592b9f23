"""Plain-words descriptions of memories for people: who said it, where from, how long.

Pure functions over rows already loaded; the pages and fragments share them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone
from django.utils.dateformat import format as format_date

from ledger.models import Memory, Source
from ledger.querysets import is_staff_role

KIND_TITLES = {
    Memory.Kind.PREFERENCE: "Preferences",
    Memory.Kind.ACCOUNT_FACT: "Facts about the account",
    Memory.Kind.EPISODE: "Past episodes",
}


def expiring_soon_days() -> int:
    return int(settings.MEMORYADMIN.get("EXPIRING_SOON_DAYS", 14))


def undo_seconds() -> int:
    return int(settings.MEMORYADMIN.get("UNDO_SECONDS", 30))


def day(value: datetime, now: datetime | None = None) -> str:
    """'4 March', with the year only when it is not this year."""
    now = now or timezone.now()
    local = timezone.localtime(value)
    if local.year == timezone.localtime(now).year:
        return format_date(local, "j F")
    return format_date(local, "j F Y")


def said_label(memory: Memory, *, own: bool, created_by_viewer: bool) -> str:
    if memory.basis == Memory.Basis.INFERRED:
        return "The assistant guessed this"
    if memory.stated_by == "confirmation":
        return "You confirmed this" if own else "Confirmed by the person"
    if memory.stated_by == "correction":
        if created_by_viewer:
            return "You corrected this"
        return "Corrected by support" if own else "Corrected by a person"
    return "You said this" if own else "The person said this"


def origin(source: Source | None, *, own: bool, now: datetime | None = None) -> str:
    """Where a memory came from, to follow 'Written': 'from your message in …'."""
    if source is None:
        return "from an unknown source"
    when = day(source.run.started_at if source.run else source.received_at, now)
    your = "your" if own else "the person’s"
    match source.kind:
        case Source.Kind.USER_MESSAGE:
            if source.run is not None:
                return f"from {your} message in the conversation of {when}"
            return f"from {your} message of {when}"
        case Source.Kind.TOOL_RESULT:
            return f"from a tool the assistant used on {when}"
        case Source.Kind.OPERATOR:
            return f"by hand on {when}"
        case _:
            return f"from an earlier memory store, imported on {when}"


@dataclass
class Card:
    """One memory as the subject page shows it."""

    memory: Memory
    said: str
    written: str
    excerpt: str
    expiry: str
    badges: list[tuple[str, str]] = field(default_factory=list)
    conflict_id: int | None = None
    expired: bool = False
    actionable: bool = True


def card_for(
    memory: Memory,
    *,
    viewer: Any,
    own: bool,
    open_conflicts: dict[str, int],
    now: datetime | None = None,
) -> Card:
    """Describe ``memory``; ``open_conflicts`` maps memory ids to their open conflict."""
    now = now or timezone.now()
    sources = list(memory.sources.all())
    first = sources[0] if sources else None
    created_by_viewer = False
    if memory.stated_by == "correction":
        created = memory.history.order_by("history_date", "history_id").first()
        created_by_viewer = created is not None and created.history_actor == (
            f"user:{viewer.get_username()}"
        )
    expired = memory.status == Memory.Status.EXPIRED or (
        memory.expires_at is not None and memory.expires_at <= now
    )
    if memory.expires_at is None:
        expiry = "Does not expire."
    elif expired:
        expiry = f"Expired on {day(memory.expires_at, now)}."
    else:
        expiry = f"Expires on {day(memory.expires_at, now)}."
    badges: list[tuple[str, str]] = []
    if memory.status == Memory.Status.PENDING:
        badges.append(("pending", "waiting for confirmation"))
    conflict_id = open_conflicts.get(str(memory.pk))
    if conflict_id is not None:
        badges.append(("conflict", "conflicting"))
    if expired:
        badges.append(("expired", f"expired on {day(memory.expires_at or now, now)}"))
    elif memory.expires_at is not None and memory.expires_at <= now + timedelta(
        days=expiring_soon_days()
    ):
        badges.append(("expiring", "expiring soon"))
    if memory.status == Memory.Status.RETRACTED:
        badges.append(("retracted", "deleted"))
    return Card(
        memory=memory,
        said=said_label(memory, own=own, created_by_viewer=created_by_viewer),
        written=f"Written {origin(first, own=own, now=now)}.",
        excerpt=next((s.excerpt for s in sources if s.excerpt), ""),
        expiry=expiry,
        badges=badges,
        conflict_id=conflict_id,
        expired=expired,
        actionable=memory.status in (*Memory.LIVE, Memory.Status.EXPIRED),
    )


def who(label: str, *, viewer: Any) -> str:
    """A history actor ('user:dana', 'agent:x', 'system:expiry') in words for ``viewer``."""
    kind, _, name = label.partition(":")
    if kind == "user":
        if name == viewer.get_username():
            return "you"
        person = User.objects.filter(username=name).first()
        if person is not None and is_staff_role(person):
            return f"support ({name})"
        return name
    if kind == "agent":
        return f"the assistant ({name})"
    if kind == "system" and name == "expiry":
        return "the expiry task"
    if kind == "system":
        return f"the system ({name})"
    return label or "someone unrecorded"


STATUS_CHANGES = {
    Memory.Status.ACTIVE: "In use",
    Memory.Status.PENDING: "Waiting for confirmation",
    Memory.Status.SUPERSEDED: "Replaced by a correction",
    Memory.Status.RETRACTED: "Deleted",
    Memory.Status.EXPIRED: "Expired",
    Memory.Status.ERASED: "Erased",
}


@dataclass
class Step:
    at: datetime
    what: str
    who: str
    why: str


def steps(memory: Memory, *, viewer: Any) -> list[Step]:
    """Every history row of one memory, oldest first, with what changed in words."""
    out: list[Step] = []
    previous = None
    for row in memory.history.order_by("history_date", "history_id"):
        if previous is None:
            what = f"Written ({STATUS_CHANGES.get(row.status, row.status).lower()})"
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
        out.append(
            Step(
                at=row.history_date,
                what=what,
                who=who(row.history_actor, viewer=viewer),
                why=row.history_change_reason or "",
            )
        )
        previous = row
    return out
