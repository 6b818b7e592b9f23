"""State documents: the shape a compaction must have, the checks that hold a document to
that shape, and what changed between two generations.

Pure functions: no queries, no writes. The checks compare structure (which items sit in
which list, which strings are present), never the quality of the prose, so a harness can
run the same arithmetic and a person can trust the verdict without reading the summary.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker, ValidationError

# A finding's status. "resolved" and "not_found" both answer the item (a negative result
# is an answer, and the costliest one to lose); "partial" means work remains.
FINDING_STATUSES = ("resolved", "not_found", "partial")
RESOLVED_STATUSES = frozenset({"resolved", "not_found"})

# The parts of the context after compaction, in the order a chart stacks them.
BUDGET_PARTS = (
    "system_prompt",
    "tool_definitions",
    "goal",
    "pinned_facts",
    "summary",
    "recent_turns",
    "reserve",
)

CHECKS = ("schema", "partition", "monotonic", "commitments", "references")

# Two commitments at least this similar (difflib ratio, case-folded) are shown as a
# rewording of one another in a diff rather than as one dropped and one added.
REWORD_SIMILARITY = 0.6
# Dropped × added commitments compared at most (under a second of work, measured on long
# commitments); a compaction that drops and adds fifty at once has bigger news than a
# rewording.
REWORD_PAIRS_MAX = 2_500
# How many schema errors are reported one by one before the rest are counted.
SCHEMA_ERRORS_SHOWN = 20
# How many names a message spells out; the problem's ``items`` always holds all of them.
NAMES_IN_MESSAGE = 10

ITEM_MAX = 200
_ONE_LINE = r"^\S(?:.*\S)?$"  # no surrounding white space, no line breaks


def _text(max_length: int, *, one_line: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": max_length}
    if one_line:
        schema["pattern"] = _ONE_LINE
    return schema


_ITEM = {**_text(ITEM_MAX, one_line=True), "description": "The name of one task item."}
_TIME = {"type": "string", "format": "date-time", "maxLength": 40}

STATE_DOCUMENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "State document",
    "description": (
        "The position a run has reached, written at one compaction for the next model "
        "call: what the task is, what has been found and on what evidence, what is still "
        "open and why, which queries were already run, which commitments bind the agent "
        "and which artefacts exist at which revision."
    ),
    "type": "object",
    "additionalProperties": False,
    "required": ["task", "findings", "open", "queries_run", "commitments", "artifacts"],
    "properties": {
        "task": {
            "type": "object",
            "additionalProperties": False,
            "required": ["text", "items"],
            "properties": {
                "text": _text(4000),
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 500,
                    "uniqueItems": True,
                    "items": _ITEM,
                    "description": "Every item the task is about; findings and open split them.",
                },
            },
        },
        "findings": {
            "type": "array",
            "maxItems": 500,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["item", "status"],
                "properties": {
                    "item": _ITEM,
                    "status": {"enum": list(FINDING_STATUSES)},
                    "evidence": {
                        **_text(2000),
                        "description": "The claim itself: what was established, or why "
                        "nothing was found.",
                    },
                    "tried": {**_text(2000), "description": "What was tried on the item."},
                    "source": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["ref", "at"],
                        "properties": {"ref": _text(500, one_line=True), "at": _TIME},
                        "description": "A key that reproduces the evidence, and when it was read.",
                    },
                },
            },
        },
        "open": {
            "type": "array",
            "maxItems": 500,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["item", "blocked_by"],
                "properties": {"item": _ITEM, "blocked_by": _text(1000)},
            },
        },
        "queries_run": {"type": "array", "maxItems": 2000, "items": _text(500)},
        "commitments": {
            "type": "array",
            "maxItems": 200,
            "items": _text(1000),
            "description": "Commitments carried verbatim from the ledger.",
        },
        "artifacts": {
            "type": "array",
            "maxItems": 500,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["gist"],
                "properties": {
                    "path": _text(500, one_line=True),
                    "revision": {
                        "oneOf": [
                            _text(100, one_line=True),
                            {"type": "integer", "minimum": 0},
                        ]
                    },
                    "url": {**_text(2000, one_line=True), "format": "uri"},
                    "fetched_at": _TIME,
                    "gist": {**_text(300, one_line=True), "description": "One line."},
                },
            },
        },
        "relational_note": {
            **_text(1000),
            "description": "Short prose about tone and relationship, kept apart from the "
            "fields that carry commitments.",
        },
    },
}

_formats = FormatChecker(formats=())


@_formats.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parsed = datetime.fromisoformat(value.replace("z", "Z"))
    if parsed.tzinfo is None:
        raise ValueError("a date-time needs a UTC offset")
    return True


@_formats.checks("uri")
def _is_web_address(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


_validator = Draft202012Validator(STATE_DOCUMENT_SCHEMA, format_checker=_formats)


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


def _pointer(path: Iterable[Any]) -> str:
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
    task_items = list(document["task"]["items"])
    found = Counter(entry["item"] for entry in document["findings"])
    blocked = Counter(entry["item"] for entry in document["open"])
    problems = []
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


def resolved_items(document: Mapping[str, Any]) -> list[str]:
    """Items with a finding that answers them, in document order."""
    return [
        entry["item"]
        for entry in _entries(document, "findings")
        if isinstance(entry.get("item"), str) and entry.get("status") in RESOLVED_STATUSES
    ]


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
    carried_list = [text.strip() for text in [*document["commitments"], *pinned]]
    carried = set(carried_list)
    missing = [fact for fact in dict.fromkeys(f.strip() for f in in_force) if fact not in carried]
    if not missing:
        return []
    hints = []
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
    for name in ("path", "url", "gist"):
        value = artifact.get(name)
        if isinstance(value, str) and value:
            return value
    return "(unnamed artifact)"


def check_references(document: Mapping[str, Any]) -> list[Problem]:
    """Artifacts carry a key that reproduces them; a finding with no source carries its claim."""
    problems = []
    unkeyed = []
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
    unsupported = [
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


# ---- What changed between two generations -------------------------------------------


@dataclass(frozen=True)
class Move:
    item: str
    before: str  # "open" or "findings"
    after: str
    status: str = ""  # the finding's status when the item moved into findings


@dataclass(frozen=True)
class StatusChange:
    item: str
    before: str
    after: str


@dataclass(frozen=True)
class Reword:
    before: str
    after: str
    similarity: float

    @property
    def percent(self) -> int:
        return round(self.similarity * 100)


@dataclass(frozen=True)
class RevisionChange:
    artifact: str
    before: str
    after: str


@dataclass(frozen=True)
class SnapshotDiff:
    moved: list[Move] = field(default_factory=list)
    status_changed: list[StatusChange] = field(default_factory=list)
    vanished_findings: list[str] = field(default_factory=list)
    vanished_open: list[str] = field(default_factory=list)
    commitments_dropped: list[str] = field(default_factory=list)
    commitments_reworded: list[Reword] = field(default_factory=list)
    commitments_added: list[str] = field(default_factory=list)
    queries_added: list[str] = field(default_factory=list)
    queries_dropped: list[str] = field(default_factory=list)
    artifacts_changed: list[RevisionChange] = field(default_factory=list)
    artifacts_added: list[str] = field(default_factory=list)
    artifacts_removed: list[str] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not any(getattr(self, name) for name in self.__dataclass_fields__)

    @property
    def losses(self) -> int:
        """How many things the later generation no longer carries."""
        return (
            len(self.vanished_findings)
            + len(self.vanished_open)
            + len(self.commitments_dropped)
            + len(self.commitments_reworded)
            + len(self.queries_dropped)
            + len(self.artifacts_removed)
        )


# Rejected documents are stored as they came, so the diff reads them defensively: any
# entry that is not shaped as the schema says is skipped rather than trusted.
_DIFF_LIST_MAX = 2000


def _entries(document: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    value = document.get(name) if isinstance(document, Mapping) else None
    if not isinstance(value, list):
        return []
    return [entry for entry in value[:_DIFF_LIST_MAX] if isinstance(entry, Mapping)]


def _strings(document: Mapping[str, Any], name: str) -> list[str]:
    value = document.get(name) if isinstance(document, Mapping) else None
    if not isinstance(value, list):
        return []
    return list(dict.fromkeys(s.strip() for s in value[:_DIFF_LIST_MAX] if isinstance(s, str)))


def _positions(document: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Where each item sits: ("findings", status) or ("open", "")."""
    where: dict[str, tuple[str, str]] = {}
    for entry in _entries(document, "open"):
        if isinstance(entry.get("item"), str):
            where[entry["item"]] = ("open", "")
    for entry in _entries(document, "findings"):
        if isinstance(entry.get("item"), str):
            status = entry.get("status")
            where[entry["item"]] = ("findings", status if isinstance(status, str) else "")
    return where


def _artifact_versions(document: Mapping[str, Any]) -> dict[str, str]:
    versions: dict[str, str] = {}
    for artifact in _entries(document, "artifacts"):
        if isinstance(artifact.get("path"), str):
            versions[artifact["path"]] = f"revision {artifact.get('revision', '?')}"
        elif isinstance(artifact.get("url"), str):
            versions[artifact["url"]] = f"fetched {artifact.get('fetched_at', '?')}"
    return versions


def pair_rewordings(dropped: Sequence[str], added: Sequence[str]) -> list[Reword]:
    """Pair each dropped commitment with the most similar new one, best pairs first.

    Comparing is quadratic, and a rejected document can carry any number of commitments:
    past the schema's own limit the lists are shown as dropped and added, unpaired.
    """
    if len(dropped) * len(added) > REWORD_PAIRS_MAX:
        return []
    candidates = []
    for old in dropped:
        for new in added:
            matcher = difflib.SequenceMatcher(None, old.casefold(), new.casefold())
            if matcher.real_quick_ratio() < REWORD_SIMILARITY:
                continue
            if matcher.quick_ratio() < REWORD_SIMILARITY:
                continue
            ratio = matcher.ratio()
            if ratio >= REWORD_SIMILARITY:
                candidates.append(Reword(old, new, ratio))
    pairs: list[Reword] = []
    used_old: set[str] = set()
    used_new: set[str] = set()
    for reword in sorted(candidates, key=lambda r: -r.similarity):
        if reword.before in used_old or reword.after in used_new:
            continue
        used_old.add(reword.before)
        used_new.add(reword.after)
        pairs.append(reword)
    return sorted(pairs, key=lambda r: list(dropped).index(r.before))


def diff_documents(before: Mapping[str, Any], after: Mapping[str, Any]) -> SnapshotDiff:
    """What the later document moved, dropped, reworded or added relative to the earlier."""
    was, now = _positions(before), _positions(after)
    moved = [
        Move(item, was[item][0], now[item][0], now[item][1])
        for item in now
        if item in was and was[item][0] != now[item][0]
    ]
    status_changed = [
        StatusChange(item, was[item][1], now[item][1])
        for item in now
        if item in was
        and was[item][0] == now[item][0] == "findings"
        and was[item][1] != now[item][1]
    ]
    vanished = [item for item in was if item not in now]

    old_commitments, new_commitments = (
        _strings(before, "commitments"),
        _strings(after, "commitments"),
    )
    dropped = [c for c in old_commitments if c not in new_commitments]
    added = [c for c in new_commitments if c not in old_commitments]
    reworded = pair_rewordings(dropped, added)
    paired_old = {r.before for r in reworded}
    paired_new = {r.after for r in reworded}

    old_queries, new_queries = _strings(before, "queries_run"), _strings(after, "queries_run")
    seen_before, seen_after = set(old_queries), set(new_queries)
    old_artifacts, new_artifacts = _artifact_versions(before), _artifact_versions(after)
    return SnapshotDiff(
        moved=moved,
        status_changed=status_changed,
        vanished_findings=[item for item in vanished if was[item][0] == "findings"],
        vanished_open=[item for item in vanished if was[item][0] == "open"],
        commitments_dropped=[c for c in dropped if c not in paired_old],
        commitments_reworded=reworded,
        commitments_added=[c for c in added if c not in paired_new],
        queries_added=[q for q in new_queries if q not in seen_before],
        queries_dropped=[q for q in old_queries if q not in seen_after],
        artifacts_changed=[
            RevisionChange(key, old_artifacts[key], version)
            for key, version in new_artifacts.items()
            if key in old_artifacts and old_artifacts[key] != version
        ],
        artifacts_added=[key for key in new_artifacts if key not in old_artifacts],
        artifacts_removed=[key for key in old_artifacts if key not in new_artifacts],
    )


@dataclass(frozen=True)
class DocumentCounts:
    task_items: int
    findings: int
    resolved: int
    open: int
    queries: int
    commitments: int
    artifacts: int


def count_document(document: object) -> DocumentCounts:
    """How much a document carries, read defensively so rejected documents count too."""
    doc: Mapping[str, Any] = document if isinstance(document, Mapping) else {}
    task = doc.get("task")
    items = task.get("items") if isinstance(task, Mapping) else None
    return DocumentCounts(
        task_items=len(items) if isinstance(items, list) else 0,
        findings=len(_entries(doc, "findings")),
        resolved=len(resolved_items(doc)),
        open=len(_entries(doc, "open")),
        queries=len(_strings(doc, "queries_run")),
        commitments=len(_strings(doc, "commitments")),
        artifacts=len(_entries(doc, "artifacts")),
    )
