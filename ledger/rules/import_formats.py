"""Reading a file of memories from another system into entries for the write gate.

Pure: text in, entries out, no database. Three formats, named or detected (``auto``):

- ``export``: memoryadmin's own export (``ledger.reads.exports``), of which only the memories
  still in use there come in (active, not withheld, not past their expiry), with their
  kind, key, statement, basis and expiry; every other memory is an entry ``skipped`` with
  the reason, so a report still names it.
- ``statements``: a JSON object of statements per subject, ``{"<subject ref>": ["…"]}``.
- ``lines``: plain text, one statement a line, about the one subject the request names;
  blank lines and lines starting with ``#`` are left out.

A statement from ``statements`` or ``lines`` is another assistant's note about the person,
not the person's word in this system: it comes in as ``inferred`` (of the kind asked,
``preference`` by default), and the gate holds it until a second agent or the person
confirms it.

Every entry carries the line of the file where it starts: for JSON, the line where its
statement string begins (found by walking the parsed text, ``_node``), so that a source
ref ``dana-export.json:14`` points a person at the right place.

A byte order mark at the start (as Windows editors save UTF-8) is not part of the file:
``without_bom`` drops it before anything reads the text, so a JSON file is still JSON and
its lines keep their numbers.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

FORMATS = ("auto", "export", "statements", "lines")
EXPORT_PREFIX = "memoryadmin.export/"
# An import is one request decided line by line in one transaction: these bound how long
# it holds its subjects' locks and how big its report can grow.
MAX_CHARS = 1_000_000
MAX_ENTRIES = 1000
# A file of statements nests three deep and an export six; anything far deeper is not one.
MAX_DEPTH = 20
# No field of a memory is a number anywhere near this long. Python itself refuses to read an
# integer of over 4,300 digits (``sys.get_int_max_str_digits``), with a plain ValueError.
MAX_DIGITS = 100
BOM = "\ufeff"
DEFAULT_KIND = "preference"
INFERRED = "inferred"


@dataclass(frozen=True)
class Problem:
    """What makes a file unreadable: the line (None for the whole file) and the field."""

    line: int | None
    message: str
    field: str = "content"

    def __str__(self) -> str:
        where = f"Line {self.line}" if self.line is not None else self.field
        return f"{where}: {self.message}"


class UnreadableFile(Exception):
    """The file cannot be imported as it is; nothing of it may be written."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems[:5]))
        self.problems = problems


@dataclass(frozen=True)
class Entry:
    line: int
    # The memory in the words of ``POST /api/v1/memories`` (its source aside): checked by
    # the same serializer before it reaches the gate.
    fields: dict[str, Any]
    # For an export's memory not in use there, why it is not imported; "" otherwise.
    skipped: str = ""


@dataclass(frozen=True)
class Parsed:
    format: str
    entries: list[Entry]


def parse(
    content: str,
    *,
    now: datetime,
    format: str = "auto",
    subject: str | None = None,
    kind: str = DEFAULT_KIND,
) -> Parsed:
    """The entries of ``content`` in file order, or ``UnreadableFile`` naming every problem.

    ``subject``: the subject of a plain text file; for an export, the subject to import it
    into instead of the one it names."""
    content = without_bom(content)
    if format not in FORMATS:
        raise UnreadableFile([Problem(None, f"Unknown format '{format[:50]}'.", "format")])
    if len(content) > MAX_CHARS:
        raise UnreadableFile(
            [Problem(None, f"The file is over {MAX_CHARS:,} characters: split it.")]
        )
    lines = _Lines(content)
    if format == "auto":
        format = _detect(content)
    if format == "lines":
        if subject is None:
            raise UnreadableFile(
                [
                    Problem(
                        None,
                        "A plain text file names no subject: say which one (`subject`, or "
                        "`--subject` on the command line).",
                        "subject",
                    )
                ]
            )
        entries = _plain(content, subject=subject, kind=kind)
    else:
        root = _json(content, lines)
        if format == "export":
            entries = _export(root, lines, subject=subject, now=now)
        else:
            if subject is not None:
                raise UnreadableFile(
                    [
                        Problem(
                            None,
                            "A file of statements names its subjects: leave subject out.",
                            "subject",
                        )
                    ]
                )
            entries = _statements(root, lines, kind=kind)
    if not entries:
        raise UnreadableFile([Problem(None, "The file holds no memories to import.")])
    if len(entries) > MAX_ENTRIES:
        raise UnreadableFile(
            [
                Problem(
                    None,
                    f"The file holds {len(entries):,} memories; an import takes at most "
                    f"{MAX_ENTRIES:,}: split it.",
                )
            ]
        )
    return Parsed(format=format, entries=entries)


def without_bom(content: str) -> str:
    return content.removeprefix(BOM)


def _detect(content: str) -> str:
    """JSON is an object: an export says its format; any other object is statements."""
    if not content.lstrip().startswith("{"):
        return "lines"
    try:
        document = _DECODER.decode(content)
    except (ValueError, RecursionError):
        return "statements"  # and reading it as JSON will say what is wrong, and where
    named = document.get("format") if isinstance(document, dict) else None
    return "export" if isinstance(named, str) and named.startswith(EXPORT_PREFIX) else "statements"


class _Lines:
    """The line of a character offset, 1 for the first."""

    def __init__(self, text: str) -> None:
        self._starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def of(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)


def _plain(content: str, *, subject: str, kind: str) -> list[Entry]:
    entries = []
    # Split on line feeds only: the line numbers are the ones an editor shows.
    for number, raw in enumerate(content.split("\n"), start=1):
        text = raw.strip()
        if text and not text.startswith("#"):
            entries.append(Entry(number, _guess(subject, text, kind)))
    return entries


def _guess(subject: str, statement: Any, kind: str) -> dict[str, Any]:
    return {"subject": subject, "kind": kind, "basis": INFERRED, "statement": statement}


@dataclass(frozen=True)
class _Node:
    """A JSON value with the offset where it begins, and its parts with theirs."""

    value: Any
    at: int
    items: tuple[_Node, ...] = ()
    members: tuple[tuple[str, _Node], ...] = field(default=())


class _TooLong:
    """An integer of over ``MAX_DIGITS`` digits, left unread: ``_node`` names its line."""


def _integer(digits: str) -> int | _TooLong:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        return _TooLong()
    return int(digits)


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_int=_integer)


def _json(content: str, lines: _Lines) -> _Node:
    try:
        _DECODER.decode(content)
    except json.JSONDecodeError as error:
        raise UnreadableFile(
            [Problem(error.lineno, f"Not valid JSON: {error.msg} (column {error.colno}).")]
        ) from None
    except RecursionError:
        raise UnreadableFile([Problem(None, "Not valid JSON: nested too deeply.")]) from None
    node, _end = _node(content, 0, depth=0, lines=lines)
    return node


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _node(text: str, at: int, *, depth: int, lines: _Lines) -> tuple[_Node, int]:
    """The value that starts at ``at`` (after white space) in text already known to be
    valid JSON, and the offset after it."""
    if depth > MAX_DEPTH:
        raise UnreadableFile([Problem(None, f"Nested deeper than {MAX_DEPTH} levels.")])
    at = _skip(text, at)
    opening = text[at]
    if opening not in "{[":
        value, end = _DECODER.raw_decode(text, at)
        if isinstance(value, _TooLong):
            raise UnreadableFile(
                [Problem(lines.of(at), f"A number of over {MAX_DIGITS} digits: no memory has one.")]
            )
        return _Node(value, at), end
    closing = "}" if opening == "{" else "]"
    parts: list[tuple[str, _Node]] = []
    position = _skip(text, at + 1)
    while text[position] != closing:
        key = ""
        if opening == "{":
            key, position = _DECODER.raw_decode(text, position)
            position = _skip(text, position) + 1  # past the colon
        part, position = _node(text, position, depth=depth + 1, lines=lines)
        parts.append((key, part))
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)
    if opening == "[":
        items = tuple(part for _key, part in parts)
        return _Node([i.value for i in items], at, items=items), position + 1
    return _Node({k: v.value for k, v in parts}, at, members=tuple(parts)), position + 1


def _statements(root: _Node, lines: _Lines, *, kind: str) -> list[Entry]:
    if not isinstance(root.value, dict):
        raise UnreadableFile(
            [Problem(lines.of(root.at), 'Expected an object: {"<subject ref>": ["…", …]}.')]
        )
    entries, problems = [], []
    for subject, listed in root.members:
        if not isinstance(listed.value, list):
            problems.append(
                Problem(lines.of(listed.at), f"The statements of '{subject[:100]}' must be a list.")
            )
            continue
        # Whatever each item is, the write's own checks say what is wrong with it.
        entries += [Entry(lines.of(i.at), _guess(subject, i.value, kind)) for i in listed.items]
    if problems:
        raise UnreadableFile(problems)
    return entries


def _member(node: _Node, name: str) -> _Node | None:
    found = [part for key, part in node.members if key == name]
    return found[-1] if found else None


def _export(root: _Node, lines: _Lines, *, subject: str | None, now: datetime) -> list[Entry]:
    document = root.value
    where = lines.of(root.at)
    if not isinstance(document, dict) or not str(document.get("format", "")).startswith(
        EXPORT_PREFIX
    ):
        raise UnreadableFile(
            [Problem(where, f"Not a memoryadmin export: its format must be '{EXPORT_PREFIX}…'.")]
        )
    named = document.get("subject")
    ref = subject or (named.get("ref") if isinstance(named, dict) else None)
    if not isinstance(ref, str):
        raise UnreadableFile([Problem(where, "The export names no subject.ref.")])
    memories = _member(root, "memories")
    if memories is None or not isinstance(memories.value, list):
        raise UnreadableFile([Problem(where, "The export has no list of memories.")])
    entries, problems = [], []
    for item in memories.items:
        if not isinstance(item.value, dict):
            problems.append(Problem(lines.of(item.at), "A memory must be an object."))
            continue
        statement = _member(item, "statement")
        if statement is None:
            problems.append(Problem(lines.of(item.at), "This memory has no statement."))
            continue
        if not isinstance(statement.value, str):
            problems.append(Problem(lines.of(statement.at), "A statement must be a string."))
            continue
        entries.append(_exported(item.value, lines.of(statement.at), ref, now))
    if problems:
        raise UnreadableFile(problems)
    return entries


def _exported(memory: dict[str, Any], line: int, subject: str, now: datetime) -> Entry:
    fields: dict[str, Any] = {
        "subject": subject,
        "kind": memory.get("kind"),
        "statement": memory["statement"],
        "basis": memory.get("basis"),
    }
    if memory.get("key"):
        fields["key"] = memory["key"]
    expires = memory.get("expires_at")
    if expires is not None:
        fields["expires_at"] = expires
    elif fields["basis"] != INFERRED:
        # No expiry there: it cannot change, as the person said it.
        fields["permanent"] = True
    return Entry(line, fields, skipped=_why_skipped(memory, now))


def _why_skipped(memory: dict[str, Any], now: datetime) -> str:
    status = memory.get("status")
    if status != "active":
        return f"Not in use in the export (its status there is '{str(status)[:30]}')."
    if memory.get("withheld") is True:
        return "The person asked that it not be used."
    expires = memory.get("expires_at")
    try:
        past = isinstance(expires, str) and datetime.fromisoformat(expires) <= now
    except (TypeError, ValueError):
        # Unreadable, or without a time zone (naive, so not comparable with ``now``): the
        # write refuses it, naming the line, as it refuses an expiry without an offset.
        past = False
    return "Past its expiry." if past else ""
