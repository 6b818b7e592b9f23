"""The audit's words: how each change names the objects it points at, links to their pages,
and says what a value meant, for every kind of tracked object."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import (
    Field,
    ForeignKey,
    Model,
)
from django.urls import NoReverseMatch, reverse
from django.utils.text import Truncator

from ledger.choices import (
    CORRECTIONS,
    Basis,
    MemoryKind,
    MemoryStatus,
    SourceKind,
    StatedBy,
)
from ledger.dates import when
from ledger.models import (
    Agent,
    LedgerEntry,
    Memory,
    Run,
    Source,
    Subject,
)
from ledger.reads.names import Names
from ledger.rules.agents import Restriction
from ledger.rules.write_policy import KEYS_SETTING, POLICY_SETTINGS, PolicySetting
from ledger.words import CORRECTION_REF

# People have no history rows: their changes are a kind of their own in the log.
PERSON = "person"
# A statement named by a value pointing at its memory (a conflict's kept one, a source's).
STATEMENT_SHOWN = 80
# What a dashboard correction's source is, instead of its reference: ours, not the agent's.
CORRECTED_ON_THE_DASHBOARD = "corrected on the dashboard"


def source_name(kind: str, ref: str) -> str:
    """A source as a person reads it: its reference, or what a correction's source was."""
    if kind == SourceKind.OPERATOR and ref.startswith(CORRECTION_REF):
        return CORRECTED_ON_THE_DASHBOARD
    return ref


def quoted(statement: str) -> str:
    return f"“{statement}”" if statement else "(erased)"


# How the objects a change points at are named, instead of by their bare id: the columns
# read (one query per model a page's changes point at) and the name made of them.
NAMED_BY: dict[type[Model], tuple[tuple[str, ...], Callable[..., str]]] = {
    # As every page names a subject (``Subject.name``).
    Subject: (("ref", "display_name"), lambda ref, display_name: display_name or ref),
    Agent: (("name",), str),
    Run: (("ref",), str),
    Source: (("kind", "ref"), source_name),
    Memory: (("statement",), lambda statement: quoted(Truncator(statement).chars(STATEMENT_SHOWN))),
    # The commitment a possible conflict involves, in its words.
    LedgerEntry: (("fact",), lambda fact: quoted(Truncator(fact).chars(STATEMENT_SHOWN))),
    # A subject's owner, and who a reminder went to: people by their username.
    User: (("username",), str),
}


# How a history row names its object, by kind; any other kind is named by its id.
DESCRIBED: dict[str, Callable[[Any], str]] = {
    "subject": lambda row: row.display_name or row.ref,
    "agent": lambda row: row.name,
    "agentkey": lambda row: f"key {row.prefix}…",
    "run": lambda row: row.ref,
    "source": lambda row: source_name(row.kind, row.ref),
    "memory": lambda row: quoted(row.statement),
    "conflict": lambda row: "possible conflict" if row.possible else f"slot {row.key}",
    "policy": lambda row: "the write policy",
    "ledgerentry": lambda row: row.fact or "(erased)",
    "journalentry": lambda row: row.action,
    "runnote": lambda row: f"note {row.key}",
    # By its moment, as the batch deletions page lists them, after its kind's name.
    "retractionbatch": lambda row: when(row.retracted_at),
    "webhookendpoint": lambda row: row.url,
    PERSON: lambda row: row.username,
}

# The page each kind of object has, and the field of its rows (a history row, or a change to a
# person) that its address needs. A kind with a page gets its link by being named here.
PAGES: dict[str, tuple[str, str]] = {
    "memory": ("memory-history", "id"),
    "subject": ("subject", "ref"),
    "run": ("run", "ref"),
    "retractionbatch": ("retraction", "id"),
    "agent": ("agent", "name"),
    "person": ("person", "username"),
    "webhookendpoint": ("webhook", "id"),
    # The policy is one row: a change links to its version in the policy page's history.
    "policy": ("policy", ""),
}


def corrects(row: Any) -> bool:
    """Whether a memory's row is of a dashboard correction or an admin's revert (as
    ``MemoryQuerySet.corrections`` says): the ones the corrections pages compare and revert."""
    correction = row.supersedes_id is not None and row.stated_by in CORRECTIONS
    return correction or row.restores_id is not None


def link_for(kind: str, row: Any) -> str:
    """The address of the object a change was to, for the kinds that have a page; else "".

    A correction or a revert links to its page among the corrections, where it can be
    compared with what it replaced and reverted, rather than to its trace.
    """
    if kind == "memory" and corrects(row):
        return reverse("audit-correction", args=[row.id])
    page = PAGES.get(kind)
    if page is None:
        return ""
    name, attribute = page
    if not attribute:
        return f"{reverse(name)}#version-{row.version}"
    try:
        return reverse(name, args=[getattr(row, attribute)])
    except NoReverseMatch:
        # A reference no address can hold (one written before references were checked).
        return ""


@dataclass(frozen=True)
class Wording:
    """How one column of one kind is said when its model field alone cannot say it: its
    label, and the words for a value (given the row it is on)."""

    label: str
    words: Callable[[Any, Any], str]


def _stated_by(row: Any, value: str) -> str:
    if row.basis == Basis.INFERRED and not value:
        # A guess was never stated by anyone: only a confirmation or a correction makes it so.
        return "nobody (a guess)"
    return str(StatedBy(value).label) if value in StatedBy.values else value


def _setting(setting: PolicySetting) -> Wording:
    def words(row: Any, value: Any) -> str:
        if setting.name == KEYS_SETTING:
            return ", ".join(value) if value else "none"
        return setting.amount(value)

    return Wording(setting.label, words)


def _restriction(restriction: Restriction) -> Wording:
    # The admin's reason is the change's own reason: said once, in the "why".
    return Wording(restriction.words.capitalize(), lambda row, value: "yes" if value else "no")


def _acted(row: Any, label: str) -> str:
    # A column holding who acted ("user:sam") is said as the Who column says an actor; the
    # role they had is the change's own, in its Role column.
    return Names("", frozenset()).who(label) if label else ""


SAID: dict[tuple[str, str], Wording] = {
    ("memory", "stated_by"): Wording("Stated by", _stated_by),
    ("retractionbatch", "retracted_by"): Wording("Deleted by", _acted),
    ("retractionbatch", "undone_by"): Wording("Undone by", _acted),
    ("erasurerequest", "decided_by"): Wording("Decided by", _acted),
    ("source", "ref"): Wording("Reference", lambda row, ref: source_name(row.kind, ref)),
    **{("agent", r.field): _restriction(r) for r in Restriction},
    # As the policy page labels and says them.
    **{("policy", s.name): _setting(s) for s in POLICY_SETTINGS},
}


def words_for(field: Field[Any, Any], value: Any, names: dict[tuple[type[Model], Any], str]) -> str:
    """A stored value as a person reads it: a choice's label, a date, an object's name."""
    if value is None or value == "":
        return ""
    if isinstance(field, ForeignKey):
        return names.get((field.related_model, value), str(value))
    if field.choices:
        return str(dict(field.flatchoices).get(value, value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _memory_summary(row: Any) -> str:
    """What a memory was written as, in a line beside its words (the entry's object): its
    basis, kind, slot and, when not in use at once, its status."""
    basis = str(Basis(row.basis).label) if row.basis in Basis.values else row.basis
    kind = str(MemoryKind(row.kind).label) if row.kind in MemoryKind.values else row.kind
    article = "An" if basis[:1] in "aeiou" else "A"
    said = [f"{article} {basis} {kind}"]
    if row.key:
        said.append(f"in slot {row.key}")
    if row.status != MemoryStatus.ACTIVE and row.status in MemoryStatus.values:
        said.append(str(MemoryStatus(row.status).label))
    return ", ".join(said)


# The line a creation of these kinds is summed up by, above every field it set.
SUMMARIES: dict[str, Callable[[Any], str]] = {"memory": _memory_summary}
