"""Text every stored line must be: no character that hides, reorders or ends a line."""

from __future__ import annotations

import re
import unicodedata

# Characters that could end a line, reorder text or hide words when a statement is pasted
# into a prompt or shown on a page: control characters, line and paragraph separators,
# lone surrogates, and invisible format characters (bidi overrides, zero-width spaces, the
# "tag" block that can smuggle text a model reads and a person never sees). The zero-width
# joiner stays: emoji sequences need it and it carries no text.
_FORBIDDEN_CATEGORIES = {"Cc", "Cs", "Zl", "Zp", "Cf"}
_ALLOWED_FORMAT = {"\u200d"}
# A reference an agent or a person gives: a subject's, a run's, a source's.
REF_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$")
REF_HELP = "1–100 characters: letters, digits and _ . : - (starting with a letter or digit)."
KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,99}$")


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


def sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else f"{text}."
