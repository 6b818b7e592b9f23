"""Wording more than one layer reads: the start of the reasons and references that
corrections and reverts write into history, which the audit, the export and the
corrections page then recognise. A leaf: it imports nothing of the project."""

# The reference of the source a person's correction on the dashboard gets: "correction:"
# and the id of the memory corrected. Pages show it in words (``presenting.source_words``).
CORRECTION_REF = "correction:"
# The start of a correction's first history row; the corrector's reason follows.
CORRECTION_OF = "Correction of an earlier memory: "
# The start of a revert's first history row; the admin's own words follow.
REVERT_OF = "Revert of a correction: "
# The start of the history row a correction leaves on the memory it replaced.
CORRECTED = "Corrected: "
# What pages and exports say when whoever made a change gave no reason (a person need not).
NO_REASON = "no reason given"
# The reason earlier versions made up for a person's correction given without one: rows
# that still hold it are said as having none, like the rows written since.
MADE_UP_REASON = "the person's own correction"


def given(reason: str) -> str:
    """The words someone gave as their reason, from what a history row stored after its
    lead-in: without the made-up stand-in."""
    return reason.strip().removeprefix(MADE_UP_REASON).strip()


def reason_words(stored: str) -> str:
    """A history row's reason as the pages and the export say it: a correction's lead-in
    with no words of the corrector's after it says "no reason given"."""
    for lead in (CORRECTED, CORRECTION_OF):
        if stored.startswith(lead):
            return lead + (given(stored.removeprefix(lead)) or NO_REASON)
    return stored


def full_stop(text: str) -> str:
    """The full stop a sentence that ends by quoting ``text`` still needs: none when the
    quoted words end a sentence of their own ("… may now use “Pays monthly.”")."""
    return "" if text.rstrip().endswith((".", "!", "?", "…")) else "."
