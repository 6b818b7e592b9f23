"""What every page may ask about the person viewing it, answered by ``ledger.access``."""

from __future__ import annotations

from django.http import HttpRequest

from ledger import access


def viewer(request: HttpRequest) -> dict[str, object]:
    """``staff``: whether the viewer is support or an admin (their pages show more)."""
    return {"staff": access.is_staff(request.user)}
