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


def full_stop(text: str) -> str:
    """The full stop a sentence that ends by quoting ``text`` still needs: none when the
    quoted words end a sentence of their own ("… may now use “Pays monthly.”")."""
    return "" if text.rstrip().endswith((".", "!", "?", "…")) else "."
