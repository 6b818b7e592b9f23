"""Why a change was made: when one must be given, and what it may hold."""

from __future__ import annotations

from ledger.rules.refusals import Refusal
from ledger.rules.text import forbidden_in_excerpt

# What support (or an admin) is told on changing someone else's memory without saying why:
# the dashboard's words, wherever the change is asked for.
SUPPORT_MUST_SAY_WHY = "Support must say why they change someone's memory."


def refuse_unexplained_change(reason: str) -> None:
    """A change to someone else's memory says why, in words that hide nothing: the person
    reads the reason in its history. Who must give one is ``access.change_needs_reason``;
    the actions ask both through ``ledger.actions._reasons.refuse_missing_reason``."""
    if not reason.strip():
        raise Refusal("reason_required", SUPPORT_MUST_SAY_WHY, 400)
    refuse_hidden_characters(reason)


def refuse_without_reason(
    reason: str, *, why: str = "these memories are deleted", kept: str = "each one's history"
) -> None:
    """A change to what others rely on says why, in words that hide nothing: the reason is
    kept in the history and shown on pages."""
    if not reason.strip():
        raise Refusal("reason_required", f"Say why {why}: the reason is kept in {kept}.", 400)
    refuse_hidden_characters(reason)


def refuse_hidden_characters(reason: str) -> None:
    """A reason is kept in the history and shown on pages: nothing in it may hide or
    reorder what it says."""
    if (found := forbidden_in_excerpt(reason)) is not None:
        raise Refusal(
            "reason_invalid_character",
            f"The reason holds an invisible character ({found}): type it again. "
            "Nothing was changed.",
            400,
        )
