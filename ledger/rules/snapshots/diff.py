"""What changed between two generations of a run's state document, and how much each holds.

Rejected documents are stored as they came, so everything here reads a document
defensively: an entry that is not shaped as the schema says is skipped rather than
trusted, and a rejected document can still be counted and compared, which is how a person
sees what that compaction would have lost. A commitment whose wording changed is shown as
a rewording of the old one, not as one dropped and one added, because a paraphrased
constraint is the loss that is easiest to miss.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger.rules.snapshots.schema import FINDING_STATUS_WORDS, RESOLVED_STATUSES

# Two commitments at least this similar (difflib ratio, case-folded) are shown as a
# rewording of one another in a diff rather than as one dropped and one added.
REWORD_SIMILARITY = 0.6
# Dropped × added commitments compared at most (under a second of work, measured on long
# commitments); a compaction that drops and adds fifty at once has bigger news than a
# rewording.
REWORD_PAIRS_MAX = 2_500
# How many entries of one list are read: a rejected document may hold any number.
_DIFF_LIST_MAX = 2000


@dataclass(frozen=True)
class Move:
    item: str
    before: str  # "open" or "findings"
    after: str
    status: str = ""  # the finding's status when the item moved into findings

    @property
    def status_words(self) -> str:
        return FINDING_STATUS_WORDS.get(self.status, self.status)


@dataclass(frozen=True)
class StatusChange:
    item: str
    before: str
    after: str

    @property
    def before_words(self) -> str:
        return FINDING_STATUS_WORDS.get(self.before, self.before)

    @property
    def after_words(self) -> str:
        return FINDING_STATUS_WORDS.get(self.after, self.after)


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


def resolved_items(document: Mapping[str, Any]) -> list[str]:
    """Items with a finding that answers them, in document order.

    Read defensively like everything here, so it counts rejected documents too; the
    monotonic check asks it of accepted ones.
    """
    return [
        entry["item"]
        for entry in _entries(document, "findings")
        if isinstance(entry.get("item"), str) and entry.get("status") in RESOLVED_STATUSES
    ]


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
    candidates: list[Reword] = []
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
