"""What every page may ask about the person viewing it, answered by ``ledger.access``."""

from __future__ import annotations

from django.http import HttpRequest

from ledger import access


def viewer(request: HttpRequest) -> dict[str, object]:
    """``staff``: whether the viewer is support or an admin (their pages show more);
    ``administer``: whether they are an admin (the nav offers the admin's pages)."""
    return {
        "staff": access.is_staff(request.user),
        "administer": access.may_administer(request.user),
    }
