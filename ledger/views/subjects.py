"""Whole-subject actions on the subject page: pause memory, export everything, erase it."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.defaultfilters import pluralize
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from ledger import access
from ledger.actions.erasure import erase_subject
from ledger.actions.erasure_requests import request_erasure
from ledger.actions.subjects import set_memory_paused
from ledger.actors import Actor
from ledger.models import Memory, Subject
from ledger.reads.exports import export_subject
from ledger.reads.names import Names
from ledger.rules.people import ERASURE_REQUEST_MAX
from ledger.rules.refusals import Refusal
from ledger.views.answers import answer
from ledger.views.http import SignedInRequest
from ledger.views.memories import is_own, part, subject_url


def _visible_subject(request: SignedInRequest, ref: str) -> Subject:
    return get_object_or_404(Subject.objects.visible_to(request.user), ref=ref)


@login_required
@require_POST
def subject_pause(request: SignedInRequest, ref: str) -> HttpResponse:
    """The one switch: ``paused=on`` stops every new write about the subject."""
    subject = _visible_subject(request, ref)
    if not access.may_pause_memory(request.user, subject):
        raise Http404
    paused = request.POST.get("paused") == "on"
    subject = set_memory_paused(
        subject=subject,
        actor=Actor.for_user(request.user),
        paused=paused,
    )
    return answer(
        request,
        fragment=part("switch"),
        context=lambda: {
            "subject": subject,
            "own": is_own(request, subject),
            "switched": True,
            "in_use": Memory.objects.for_subject(subject).servable().exists(),
        },
        redirect_to=subject_url(subject),
        message="Memory is paused." if paused else "Memory is switched back on.",
    )


@login_required
@require_GET
def subject_export(request: SignedInRequest, ref: str) -> HttpResponse:
    """Everything about the subject as a JSON download (format: docs/end-users.md)."""
    subject = _visible_subject(request, ref)
    document = export_subject(subject)
    safe_ref = "".join(c if c.isalnum() or c in "-_" else "_" for c in subject.ref)
    filename = f"memoryadmin-export-{safe_ref}-{timezone.now():%Y-%m-%d}.json"
    response = HttpResponse(
        json.dumps(document, indent=2, ensure_ascii=False),
        content_type="application/json; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


def _names(subject: Subject) -> set[str]:
    return {n.casefold() for n in (subject.name, subject.ref) if n}


@login_required
def subject_erase(request: SignedInRequest, ref: str) -> HttpResponse:
    """GET: the deliberate confirm step. POST: erase, if the name was typed exactly (and,
    when staff erase for someone, once they said who asked, which ``erase_subject``
    demands: the erasure review shows it)."""
    subject = _visible_subject(request, ref)
    own = is_own(request, subject)
    needs_approval = access.erasure_needs_approval(request.user, subject)
    # A request already waiting is said up front: support's form would only be refused.
    waiting = subject.erasure_requests.waiting().first() if not own else None
    context = {
        "subject": subject,
        "own": own,
        "needs_approval": needs_approval,
        "waiting": waiting,
        "waiting_by": (
            Names.for_labels(request.user, [waiting.requested_by]).who(waiting.requested_by)
            if waiting
            else ""
        ),
        "typed": "",
        "error": "",
        "requested_by": "",
        "request_error": "",
        "request_max": ERASURE_REQUEST_MAX,
    }
    if request.method == "GET":
        return render(request, "ledger/erase.html", context)
    if request.method != "POST":
        return HttpResponse(status=405)
    typed = " ".join(request.POST.get("confirm_name", "").split())
    requested_by = " ".join(request.POST.get("requested_by", "").split())
    context.update(typed=typed, requested_by=requested_by)
    if typed.casefold() not in _names(subject):
        context["error"] = f"To erase, type “{subject.name}” exactly as shown. Nothing was erased."
        return render(request, "ledger/erase.html", context, status=400)
    pause = request.POST.get("pause") == "on"
    try:
        if needs_approval:
            request_erasure(
                subject=subject,
                actor=Actor.for_user(request.user),
                reason=requested_by,
                pause=pause,
            )
        else:
            erasure = erase_subject(
                subject=subject,
                actor=Actor.for_user(request.user),
                pause=pause,
                requested_by=requested_by,
            )
    except Refusal as refusal:
        context["request_error"] = refusal.detail
        return render(request, "ledger/erase.html", context, status=refusal.status)
    if needs_approval:
        return answer(
            request,
            redirect_to=subject_url(subject),
            message="Erasure requested: nothing is erased until an admin approves it.",
        )
    counts = [
        f"{n} {word}{pluralize(n, plural)}"
        for n, word, plural in [
            (erasure.memories, "memor", "y,ies"),
            (erasure.ledger_entries, "ledger entr", "y,ies"),
            (erasure.sources, "source", "s"),
        ]
    ]
    return answer(
        request,
        redirect_to=subject_url(subject),
        message=f"Erased: {counts[0]}, {counts[1]} and {counts[2]} no longer hold any content. "
        "The assistant recalls nothing of it.",
    )
