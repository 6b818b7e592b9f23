"""Pure policy decisions: no writes, no queries. The write gate and the pages ask these."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta

from ledger.models import Memory, Policy

# Characters that could end a line, reorder text or hide words when a statement is pasted
# into a prompt or shown on a page: control characters, line and paragraph separators,
# lone surrogates, and invisible format characters (bidi overrides, zero-width spaces, the
# "tag" block that can smuggle text a model reads and a person never sees). The zero-width
# joiner stays: emoji sequences need it and it carries no text.
_FORBIDDEN_CATEGORIES = {"Cc", "Cs", "Zl", "Zp", "Cf"}
_ALLOWED_FORMAT = {"\u200d"}
KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,99}$")


class Refusal(Exception):
    """A write the policy refuses. ``code`` is stable for programs, ``detail`` for people."""

    def __init__(self, code: str, detail: str, status: int = 422) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status


def forbidden_character(text: str) -> str | None:
    """The first character a one-line text may not hold, described, or None."""
    for ch in text:
        if unicodedata.category(ch) in _FORBIDDEN_CATEGORIES and ch not in _ALLOWED_FORMAT:
            return f"U+{ord(ch):04X}"
    return None


def forbidden_in_excerpt(text: str) -> str | None:
    """Excerpts may keep line breaks and tabs, but nothing else invisible."""
    return forbidden_character(text.replace("\n", " ").replace("\r", " ").replace("\t", " "))


def normalize_statement(statement: str) -> str:
    return " ".join(statement.casefold().split())


def refuse_system_of_record(policy: Policy, key: str) -> None:
    if key and key in policy.system_of_record_keys:
        raise Refusal(
            "system_of_record",
            f"The key '{key}' belongs to another system of record; read it from there.",
        )


def refuse_if_paused(memory_paused: bool) -> None:
    if memory_paused:
        raise Refusal(
            "memory_paused",
            "The person has paused memory for this subject; nothing new may be written.",
            status=423,
        )


def refuse_over_cap(policy: Policy, live_count: int) -> None:
    if live_count >= policy.subject_active_cap:
        raise Refusal(
            "subject_cap_reached",
            f"This subject already holds {live_count} live memories, the policy's "
            f"limit of {policy.subject_active_cap}. Retract or let some expire first.",
            status=409,
        )


@dataclass(frozen=True)
class Expiry:
    expires_at: datetime | None
    capped: bool


def expiry_for(
    policy: Policy,
    *,
    kind: str,
    basis: str,
    now: datetime,
    requested: datetime | None,
    omitted: bool,
) -> Expiry:
    """When a new memory dies: the request, else the kind's default; guesses are capped."""
    expires_at = now + timedelta(days=policy.ttl_days(kind)) if omitted else requested
    if basis != Memory.Basis.INFERRED:
        return Expiry(expires_at, capped=False)
    longest = now + timedelta(days=policy.inferred_max_days)
    if expires_at is None or expires_at > longest:
        return Expiry(longest, capped=not omitted)
    return Expiry(expires_at, capped=False)


def review_date_for(policy: Policy, *, kind: str, now: datetime) -> datetime:
    return now + timedelta(days=policy.review_days(kind))


def needs_corroboration(policy: Policy, *, basis: str, distinct_sources: int) -> bool:
    return basis == Memory.Basis.INFERRED and distinct_sources < policy.inferred_sources_required
