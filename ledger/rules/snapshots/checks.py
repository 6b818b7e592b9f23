"""The five checks that hold a state document to its shape, and the problems they name.

The checks compare structure (which items sit in which list, which strings are present),
never the quality of the prose, so a harness can run the same arithmetic and a person can
trust the verdict without reading the summary. Each problem carries a stable code and every
name it is about, so a client can act on it without parsing the message, which spells out
only the first few.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from ledger.rules.snapshots.diff import REWORD_SIMILARITY, resolved_items
from ledger.rules.snapshots.schema import FORMAT_CHECKER, STATE_DOCUMENT_SCHEMA

CHECKS = ("schema", "partition", "monotonic", "commitments", "references")

# How many schema errors are reported one by one before the rest are counted.
SCHEMA_ERRORS_SHOWN = 20
# How many names a message spells out; the problem's ``items`` always holds all of them.
NAMES_IN_MESSAGE = 10

_validator = Draft202012Validator(STATE_DOCUMENT_SCHEMA, format_checker=FORMAT_CHECKER)


# What each check is called where people read its problems.
CHECK_TITLES = {
    "schema": "Shape",
    "partition": "Every task item placed",
    "monotonic": "Nothing resolved lost",
    "commitments": "Commitments carried",
    "references": "Artifacts reproducible",
}


@dataclass(frozen=True)
class Problem:
    """One reason a document is rejected: the check, a stable code, words, and the names."""

    check: str
    code: str
    message: str
    items: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "code": self.code,
            "message": self.message,
            "items": list(self.items),
        }


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(f"“{name}”" for name in names[:NAMES_IN_MESSAGE])
    rest = len(names) - NAMES_IN_MESSAGE
    return f"{shown} and {rest} more" if rest > 0 else shown


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _pointer(path: Iterable[str | int]) -> str:
    """RFC 6901: the root is the empty string; ``~`` and ``/`` in a key are escaped."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def check_schema(document: object) -> list[Problem]:
    """Every place the document does not fit the schema, located by JSON Pointer."""
    errors = sorted(_validator.iter_errors(document), key=lambda e: list(map(str, e.path)))
    problems = [
        Problem(
            "schema",
            "invalid",
            f"{_pointer(error.path) if error.path else 'The document'}: {_describe(error)}",
            (_pointer(error.path),),
        )
        for error in errors[:SCHEMA_ERRORS_SHOWN]
    ]
    if len(errors) > SCHEMA_ERRORS_SHOWN:
        hidden = len(errors) - SCHEMA_ERRORS_SHOWN
        problems.append(
            Problem("schema", "more_errors", f"{_count(hidden, 'more schema error')} not listed.")
        )
    return problems


_FORMAT_WORDS = {
    "date-time": "an ISO 8601 date-time with a UTC offset",
    "uri": "an http or https URL",
}


def _describe(error: ValidationError) -> str:
    """jsonschema's message, in words for the rules whose default message is a regex."""
    value = _short(repr(error.instance), 80)
    if error.validator == "pattern":
        return f"{value} must be one line without leading or trailing white space"
    if error.validator == "format":
        return f"{value} is not {_FORMAT_WORDS.get(str(error.validator_value), 'valid')}"
    return _short(error.message)


def _short(message: str, limit: int = 300) -> str:
    # jsonschema quotes the offending value, which may be a whole list.
    return message if len(message) <= limit else message[: limit - 1] + "…"


def check_partition(document: Mapping[str, Any]) -> list[Problem]:
    """Every task item sits in exactly one entry of findings or open, and nothing else does."""
    task_items: list[str] = list(document["task"]["items"])
    found: Counter[str] = Counter(entry["item"] for entry in document["findings"])
    blocked: Counter[str] = Counter(entry["item"] for entry in document["open"])
    problems: list[Problem] = []
    missing = [item for item in task_items if item not in found and item not in blocked]
    if missing:
        problems.append(
            Problem(
                "partition",
                "missing",
                f"{_count(len(missing), 'task item is', 'task items are')} in neither findings "
                f"nor open: {_names(missing)}.",
                tuple(missing),
            )
        )
    both = [item for item in task_items if item in found and item in blocked]
    if both:
        problems.append(
            Problem(
                "partition",
                "in_both",
                f"{_count(len(both), 'task item is', 'task items are')} in both findings and "
                f"open: {_names(both)}.",
                tuple(both),
            )
        )
    repeated = [item for item in task_items if found[item] > 1 or blocked[item] > 1]
    if repeated:
        problems.append(
            Problem(
                "partition",
                "repeated",
                f"{_count(len(repeated), 'task item appears', 'task items appear')} more than "
                f"once in the same list: {_names(repeated)}.",
                tuple(repeated),
            )
        )
    known = set(task_items)
    strangers = [item for item in {**found, **blocked} if item not in known]
    if strangers:
        problems.append(
            Problem(
                "partition",
                "not_a_task_item",
                f"{_count(len(strangers), 'entry names an item', 'entries name items')} that "
                f"the task does not list: {_names(strangers)}.",
                tuple(strangers),
            )
        )
    return problems


def check_monotonic(
    document: Mapping[str, Any],
    previous: Mapping[str, Any] | None,
    previous_generation: int | None = None,
) -> list[Problem]:
    """Nothing answered in the previous accepted generation is missing or unanswered now."""
    if previous is None:
        return []
    now = set(resolved_items(document))
    lost = [item for item in dict.fromkeys(resolved_items(previous)) if item not in now]
    if not lost:
        return []
    where = (
        f"generation {previous_generation}" if previous_generation else "the previous generation"
    )
    return [
        Problem(
            "monotonic",
            "resolved_lost",
            f"{_count(len(lost), 'item')} resolved in {where} "
            f"{'is' if len(lost) == 1 else 'are'} missing or no longer resolved: {_names(lost)}.",
            tuple(lost),
        )
    ]


def check_commitments(
    document: Mapping[str, Any], pinned: Sequence[str], in_force: Sequence[str]
) -> list[Problem]:
    """Each commitment in force is carried word for word in ``commitments`` or ``pinned``.

    Only the outer white space is trimmed before comparing: a change of case, punctuation
    or wording is a paraphrase, and a paraphrase of a constraint is a different constraint.
    """
    carried_list: list[str] = [text.strip() for text in [*document["commitments"], *pinned]]
    carried = set(carried_list)
    missing = [fact for fact in dict.fromkeys(f.strip() for f in in_force) if fact not in carried]
    if not missing:
        return []
    hints: list[str] = []
    for fact in missing:
        closest = difflib.get_close_matches(fact, carried_list, n=1, cutoff=REWORD_SIMILARITY)
        if closest:
            hints.append(f"“{fact}” appears only as “{closest[0]}”")
    message = (
        f"{_count(len(missing), 'commitment')} in force "
        f"{'is' if len(missing) == 1 else 'are'} not carried verbatim in commitments or "
        f"pinned: {_names(missing)}."
    )
    if hints:
        message += " A paraphrase does not count: " + "; ".join(hints[:NAMES_IN_MESSAGE]) + "."
    return [Problem("commitments", "not_verbatim", message, tuple(missing))]


def artifact_label(artifact: Mapping[str, Any]) -> str:
    """The name a message gives an artifact: its path, else its URL, else its gist."""
    for name in ("path", "url", "gist"):
        value = artifact.get(name)
        if isinstance(value, str) and value:
            return value
    return "(unnamed artifact)"


def check_references(document: Mapping[str, Any]) -> list[Problem]:
    """Artifacts carry a key that reproduces them; a finding with no source carries its claim."""
    problems: list[Problem] = []
    unkeyed: list[str] = []
    for artifact in document["artifacts"]:
        by_path = "path" in artifact and "revision" in artifact
        by_url = "url" in artifact and "fetched_at" in artifact
        if not (by_path or by_url):
            unkeyed.append(artifact_label(artifact))
    if unkeyed:
        problems.append(
            Problem(
                "references",
                "artifact_without_key",
                f"{_count(len(unkeyed), 'artifact has', 'artifacts have')} no key that "
                f"reproduces {'it' if len(unkeyed) == 1 else 'them'} (path and revision, or "
                f"URL and fetched time): {_names(unkeyed)}.",
                tuple(unkeyed),
            )
        )
    unsupported: list[str] = [
        entry["item"]
        for entry in document["findings"]
        if "source" not in entry and "evidence" not in entry
    ]
    if unsupported:
        problems.append(
            Problem(
                "references",
                "finding_without_claim",
                f"{_count(len(unsupported), 'finding has', 'findings have')} neither a source "
                f"nor the claim itself in evidence: {_names(unsupported)}.",
                tuple(unsupported),
            )
        )
    return problems


def check_document(
    document: object,
    *,
    pinned: Sequence[str] = (),
    in_force: Sequence[str] = (),
    previous: Mapping[str, Any] | None = None,
    previous_generation: int | None = None,
) -> list[Problem]:
    """All problems with a document. A document that does not fit the schema gets only
    its schema problems: the other checks would be guessing at its structure."""
    problems = check_schema(document)
    if problems:
        return problems
    assert isinstance(document, Mapping)
    return [
        *check_partition(document),
        *check_monotonic(document, previous, previous_generation),
        *check_commitments(document, pinned, in_force),
        *check_references(document),
    ]
