"""What every page may ask about the person viewing it, answered by ``ledger.access``."""

from __future__ import annotations

from django.http import HttpRequest

from ledger import access
from ledger.reads.audit_verified import Verification, last_verification


def viewer(request: HttpRequest) -> dict[str, object]:
    """``staff``: whether the viewer is support or an admin (their pages show more);
    ``administer``: whether they are an admin (the nav offers the admin's pages);
    ``audit_failed``: for an admin, the last verification of the audit if it failed (the
    banner every page shows them until one passes)."""
    administer = access.may_administer(request.user)
    return {
        "staff": access.is_staff(request.user),
        "administer": administer,
        # A function, so the record is read (a small file, no query) only by a page that
        # shows the banner, not by every fragment.
        "audit_failed": _failed_verification if administer else None,
    }


def _failed_verification() -> Verification | None:
    verification = last_verification()
    return verification if verification is not None and not verification.ok else None
