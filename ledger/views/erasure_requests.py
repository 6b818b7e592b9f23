"""The admins' queue of erasures support asked for: approve (the erasure runs) or decline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ledger.actions.erasure_requests import approve_erasure, decline_erasure
from ledger.actors import Actor
from ledger.models import ErasureRequest
from ledger.reads.names import Names
from ledger.rules.refusals import Refusal
from ledger.views.answers import answer, refused
from ledger.views.http import SignedInRequest, admin_only

TEMPLATE = "ledger/erasure_requests.html"
# Decided requests shown under the waiting ones, newest first; the audit keeps them all.
RECENT = 20


@admin_only
@require_GET
def erasure_requests(request: SignedInRequest) -> HttpResponse:
    return render(request, TEMPLATE, _page(request))


@admin_only
@require_POST
def erasure_request_approve(request: SignedInRequest, pk: int) -> HttpResponse:
    erasure_request = get_object_or_404(ErasureRequest.objects.select_related("subject"), pk=pk)
    try:
        erasure = approve_erasure(request=erasure_request, actor=Actor.for_user(request.user))
    except Refusal as refusal:
        return _refused(request, erasure_request, refusal)
    return _decided(
        request,
        erasure_request,
        f"Approved: everything about {erasure_request.subject.ref} was erased "
        f"({erasure.memories} memor{'y' if erasure.memories == 1 else 'ies'}).",
    )


@admin_only
@require_POST
def erasure_request_decline(request: SignedInRequest, pk: int) -> HttpResponse:
    erasure_request = get_object_or_404(ErasureRequest.objects.select_related("subject"), pk=pk)
    try:
        decline_erasure(
            request=erasure_request,
            actor=Actor.for_user(request.user),
            reason=request.POST.get("reason", ""),
        )
    except Refusal as refusal:
        return _refused(request, erasure_request, refusal)
    return _decided(
        request, erasure_request, f"Declined: nothing about {erasure_request.subject.ref} erased."
    )


def _page(request: SignedInRequest) -> Mapping[str, Any]:
    """Every request waiting, oldest first (the longest wait is at the top), then the latest
    decided. A fixed number of queries however many there are."""
    waiting = list(
        ErasureRequest.objects.waiting().select_related("subject").order_by("created_at", "pk")
    )
    decided = list(
        ErasureRequest.objects.decided()
        .select_related("subject")
        .order_by("-decided_at", "-pk")[:RECENT]
    )
    names = _names(request, [*waiting, *decided])
    return {
        "waiting": [_row(r, names) for r in waiting],
        "decided": [_row(r, names) for r in decided],
    }


def _names(request: SignedInRequest, rows: list[ErasureRequest]) -> Names:
    labels = {label for r in rows for label in (r.requested_by, r.decided_by) if label}
    return Names.for_labels(request.user, labels)


def _row(erasure_request: ErasureRequest, names: Names) -> Mapping[str, Any]:
    return {
        "request": erasure_request,
        "requested_by": names.who(erasure_request.requested_by),
        "decided_by": names.who(erasure_request.decided_by) if erasure_request.decided_by else "",
    }


def _fragment(request: SignedInRequest, erasure_request: ErasureRequest) -> Mapping[str, Any]:
    erasure_request.refresh_from_db()
    return {"row": _row(erasure_request, _names(request, [erasure_request]))}


def _decided(
    request: SignedInRequest, erasure_request: ErasureRequest, message: str
) -> HttpResponse:
    """htmx: the decided card leaves the waiting list, and the count, the decided list
    (it on top) and the words said come out of band: the same queries as the page."""
    return answer(
        request,
        fragment=f"{TEMPLATE}#decided-answer",
        context=lambda: {
            **_page(request),
            "said": message,
            "oob": True,
            "just": erasure_request.pk,
        },
        redirect_to=reverse("erasure-requests"),
        message=message,
    )


def _refused(
    request: SignedInRequest, erasure_request: ErasureRequest, refusal: Refusal
) -> HttpResponse:
    return refused(
        request,
        refusal,
        fragment=f"{TEMPLATE}#request",
        context=lambda: _fragment(request, erasure_request),
        # Without htmx: the queue again, with the refusal's words on top and its status.
        page=TEMPLATE,
        page_context=lambda: _page(request),
    )
