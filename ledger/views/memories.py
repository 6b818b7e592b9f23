"""The subject page: what the assistant remembers about someone, and every fix a person makes.

Each action has an htmx path (a fragment swapped into the page, no reload) and a plain
path (a redirect back to the page) so the page works without JavaScript too. Every lookup
goes through the viewer's scope, so a memory they may not see is a 404 for every action.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from ledger import policy
from ledger.actions.memories import (
    confirm_memory,
    correct_memory,
    renew_memory,
    resolve_conflict,
    restore_memory,
    retract_memory,
)
from ledger.actors import Actor
from ledger.models import Conflict, Memory, Subject
from ledger.querysets import is_staff_role
from ledger.recall import recalls_that_served
from ledger.views.presenting import KIND_TITLES, Card, card_for, steps, undo_seconds, who

TEMPLATE = "ledger/subject.html"
# Support sees the latest runs about a person; older ones are reached through the ledger.
RUNS_SHOWN = 20
# The latest reads of one version on its history page; the API lists them all.
READS_SHOWN = 50
STATUS_FILTERS = {
    "": "Current",
    "active": "In use",
    "pending": "Waiting for confirmation",
    "expired": "Expired",
    "retracted": "Deleted",
}
BASIS_FILTERS = {"": "Anyone", "stated": "Said by the person", "inferred": "Guessed"}


@dataclass
class Filters:
    q: str = ""
    kind: str = ""
    basis: str = ""
    status: str = ""

    @classmethod
    def from_data(cls, data: QueryDict) -> Filters:
        def pick(name: str, allowed: Any) -> str:
            value = data.get(name, "")
            return value if value in allowed else ""

        return cls(
            q=data.get("q", "").strip()[:200],
            kind=pick("kind", Memory.Kind.values),
            basis=pick("basis", BASIS_FILTERS),
            status=pick("status", STATUS_FILTERS),
        )

    @property
    def narrowed(self) -> bool:
        return bool(self.q or self.kind or self.basis or self.status)


@dataclass
class ConflictView:
    conflict: Conflict
    cards: list[Card]
    error: str = ""


@dataclass
class Group:
    kind: str
    title: str
    cards: list[Card] = field(default_factory=list)


def is_own(request: HttpRequest, subject: Subject) -> bool:
    return subject.owner_id is not None and subject.owner_id == request.user.pk


def subject_url(subject: Subject, anchor: str = "", **params: str) -> str:
    url = reverse("subject", args=[subject.ref])
    if params:
        url += "?" + urlencode(params)
    return url + (f"#{anchor}" if anchor else "")


def _open_conflicts(subject: Subject) -> list[Conflict]:
    return list(
        Conflict.objects.open()
        .filter(subject=subject)
        .prefetch_related("memories__sources__run", "memories__subject")
    )


def _conflict_map(conflicts: list[Conflict]) -> dict[str, int]:
    return {
        str(m.pk): c.pk
        for c in conflicts
        for m in c.memories.all()
        if m.status == Memory.Status.ACTIVE
    }


def describe(request: HttpRequest, memory: Memory) -> Card:
    return card_for(
        memory,
        viewer=request.user,
        own=is_own(request, memory.subject),
        open_conflicts=_conflict_map(_open_conflicts(memory.subject)),
    )


def page_context(request: HttpRequest, subject: Subject, filters: Filters) -> dict[str, Any]:
    """Everything the subject page and its results fragment show, for these filters."""
    own = is_own(request, subject)
    now = timezone.now()
    conflicts = _open_conflicts(subject)
    conflict_map = _conflict_map(conflicts)
    memories = Memory.objects.for_subject(subject).prefetch_related("sources__run")
    memories = (
        memories.filter(status=filters.status)
        if filters.status
        else memories.shown_on_subject_page()
    )
    if filters.q:
        memories = memories.matching(filters.q)
    if filters.kind:
        memories = memories.filter(kind=filters.kind)
    if filters.basis:
        memories = memories.filter(basis=filters.basis)

    def card(memory: Memory) -> Card:
        return card_for(memory, viewer=request.user, own=own, open_conflicts=conflict_map, now=now)

    cards = [card(m) for m in memories.order_by("-written_at", "-pk")]
    groups = [Group(kind=kind, title=str(title)) for kind, title in KIND_TITLES.items()]
    for item in cards:
        if item.memory.status != Memory.Status.PENDING:
            next(g for g in groups if g.kind == item.memory.kind).cards.append(item)
    conflict_views = [
        ConflictView(conflict=c, cards=[card(m) for m in c.memories.all() if m.status == "active"])
        for c in conflicts
    ]
    return {
        "subject": subject,
        "own": own,
        "filters": filters,
        "kinds": KIND_TITLES,
        "bases": BASIS_FILTERS,
        "statuses": STATUS_FILTERS,
        "questions": [c for c in cards if c.memory.status == Memory.Status.PENDING],
        "groups": [g for g in groups if g.cards],
        "conflicts": [v for v in conflict_views if len(v.cards) > 1],
        "has_any": Memory.objects.for_subject(subject).shown_on_subject_page().exists(),
        "erasures": [(e, who(e.erased_by, viewer=request.user)) for e in subject.erasures.all()],
        "undo_seconds": undo_seconds(),
    }


def _fragment(
    request: HttpRequest, name: str, memory: Memory, status: int = 200, **extra: Any
) -> HttpResponse:
    context = {
        "subject": memory.subject,
        "own": is_own(request, memory.subject),
        "card": describe(request, memory),
        "undo_seconds": undo_seconds(),
        **extra,
    }
    return render(request, f"{TEMPLATE}#{name}", context, status=status)


def _visible_memory(request: HttpRequest, pk: Any) -> Memory:
    return get_object_or_404(
        Memory.objects.visible_to(request.user).select_related("subject"), pk=pk
    )


@login_required
@require_GET
def subject_page(request: HttpRequest, ref: str) -> HttpResponse:
    subject = get_object_or_404(Subject.objects.visible_to(request.user), ref=ref)
    filters = Filters.from_data(request.GET)
    context = page_context(request, subject, filters)
    if request.htmx and request.htmx.target == "memory-list":
        response = render(request, f"{TEMPLATE}#results", context)
        # Same URL, two bodies: caches must key on the htmx headers too.
        patch_vary_headers(response, ("HX-Request", "HX-Target"))
        return response
    # The plain (no-JavaScript) paths of edit, delete and undo open the page in that state.
    mine = Memory.objects.for_subject(subject)
    for param in ("edit", "delete", "deleted"):
        value = request.GET.get(param, "")
        found = mine.filter(pk=value).first() if _is_uuid(value) else None
        context[param] = describe(request, found) if found else None
    if is_staff_role(request.user):
        context["runs"] = subject.runs.select_related("agent")[:RUNS_SHOWN]
    return render(request, TEMPLATE, context)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


@login_required
@require_GET
def memory_card(request: HttpRequest, pk: Any) -> HttpResponse:
    memory = _visible_memory(request, pk)
    if not request.htmx:
        return HttpResponseRedirect(subject_url(memory.subject, f"memory-{memory.pk}"))
    return _fragment(request, "card", memory)


class CorrectionForm(forms.Form):
    statement = forms.CharField(
        max_length=Memory.STATEMENT_MAX,
        error_messages={
            "required": "Write what is right: the statement cannot be empty.",
            "max_length": "Keep it to one sentence of at most %(limit_value)d characters "
            "(this one has %(show_value)d).",
        },
    )
    reason = forms.CharField(max_length=500, required=False)

    def __init__(self, *args: Any, reason_required: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason"].required = reason_required
        self.fields["reason"].error_messages["required"] = (
            "Support must say why they change someone's memory."
        )

    def clean_statement(self) -> str:
        statement = " ".join(self.cleaned_data["statement"].split())
        bad = policy.forbidden_character(statement)
        if bad:
            raise forms.ValidationError(f"The statement holds an invisible character ({bad}).")
        return statement


@login_required
def memory_edit(request: HttpRequest, pk: Any) -> HttpResponse:
    """GET: the inline form. POST: save a correction, which supersedes the old memory."""
    memory = _visible_memory(request, pk)
    own = is_own(request, memory.subject)
    if request.method == "GET":
        if not request.htmx:
            return HttpResponseRedirect(
                subject_url(memory.subject, f"memory-{memory.pk}", edit=str(memory.pk))
            )
        return _fragment(request, "edit-form", memory)
    if request.method != "POST":
        return HttpResponse(status=405)
    form = CorrectionForm(request.POST, reason_required=not own)
    if not form.is_valid():
        return _refused_edit(request, memory, form)
    try:
        new = correct_memory(
            memory=memory,
            actor=Actor.for_user(request.user),  # type: ignore[arg-type]
            statement=form.cleaned_data["statement"],
            reason=form.cleaned_data["reason"] or "the person's own correction",
        )
    except policy.Refusal as refusal:
        form.add_error(None, refusal.detail)
        return _refused_edit(request, memory, form, status=refusal.status)
    if not request.htmx:
        messages.success(request, "Saved. The earlier version stays in the memory's history.")
        return HttpResponseRedirect(subject_url(new.subject, f"memory-{new.pk}"))
    return _fragment(
        request, "card", new, note="Saved. The earlier version is in the history.", focus=True
    )


def _refused_edit(
    request: HttpRequest, memory: Memory, form: CorrectionForm, status: int = 400
) -> HttpResponse:
    errors = [e for field_errors in form.errors.values() for e in field_errors]
    if request.htmx:
        return _fragment(
            request,
            "edit-form",
            memory,
            status=status,
            errors=errors,
            value=request.POST.get("statement", ""),
            reason=request.POST.get("reason", ""),
        )
    context = page_context(request, memory.subject, Filters())
    context.update(
        edit=describe(request, memory),
        errors=errors,
        value=request.POST.get("statement", ""),
        reason=request.POST.get("reason", ""),
    )
    return render(request, TEMPLATE, context, status=status)


@login_required
def memory_delete(request: HttpRequest, pk: Any) -> HttpResponse:
    """GET: the confirm step. POST: retract; agents stop recalling it at once."""
    memory = _visible_memory(request, pk)
    if request.method == "GET":
        if not request.htmx:
            return HttpResponseRedirect(
                subject_url(memory.subject, f"memory-{memory.pk}", delete=str(memory.pk))
            )
        return _fragment(request, "delete-confirm", memory)
    if request.method != "POST":
        return HttpResponse(status=405)
    own = is_own(request, memory.subject)
    try:
        retract_memory(
            memory=memory,
            actor=Actor.for_user(request.user),  # type: ignore[arg-type]
            reason="Deleted by the person." if own else "Deleted by support.",
        )
    except policy.Refusal as refusal:
        return _refused(request, memory, "delete-confirm", refusal)
    memory.refresh_from_db()
    if not request.htmx:
        return HttpResponseRedirect(subject_url(memory.subject, "undo", deleted=str(memory.pk)))
    return _fragment(request, "undo", memory)


def _refused(
    request: HttpRequest, memory: Memory, fragment: str, refusal: policy.Refusal
) -> HttpResponse:
    """A refusal said in words: inside the fragment for htmx, as a message otherwise."""
    if request.htmx:
        memory.refresh_from_db()
        return _fragment(request, fragment, memory, status=refusal.status, error=refusal.detail)
    messages.error(request, refusal.detail)
    return HttpResponseRedirect(subject_url(memory.subject, f"memory-{memory.pk}"))


@login_required
@require_POST
def memory_undo(request: HttpRequest, pk: Any) -> HttpResponse:
    memory = _visible_memory(request, pk)
    try:
        restored = restore_memory(
            memory=memory,
            actor=Actor.for_user(request.user),  # type: ignore[arg-type]
            within_seconds=undo_seconds(),
        )
    except policy.Refusal as refusal:
        return _refused(request, memory, "undo", refusal)
    if not request.htmx:
        messages.success(request, "Undone: the memory is back.")
        return HttpResponseRedirect(subject_url(restored.subject, f"memory-{restored.pk}"))
    fragment = "question" if restored.status == Memory.Status.PENDING else "card"
    return _fragment(request, fragment, restored, note="Undone: it is back.", focus=True)


@login_required
@require_POST
def memory_answer(request: HttpRequest, pk: Any) -> HttpResponse:
    """A person answers the question about a guess: yes confirms it, no deletes it."""
    memory = _visible_memory(request, pk)
    answer = request.POST.get("answer", "")
    actor = Actor.for_user(request.user)  # type: ignore[arg-type]
    own = is_own(request, memory.subject)
    try:
        if answer == "yes":
            confirm_memory(
                memory=memory,
                actor=actor,
                reason="Confirmed by the person." if own else "Confirmed by support.",
            )
        elif answer == "no":
            retract_memory(
                memory=memory,
                actor=actor,
                reason="The person said the guess is wrong."
                if own
                else "Support rejected the guess.",
            )
        else:
            raise policy.Refusal("answer_required", "Answer yes or no.", 400)
    except policy.Refusal as refusal:
        return _refused(request, memory, "question", refusal)
    memory.refresh_from_db()
    if not request.htmx:
        messages.success(
            request, "Thanks: confirmed." if answer == "yes" else "Deleted: it was a wrong guess."
        )
        return HttpResponseRedirect(subject_url(memory.subject))
    if answer == "no":
        return _fragment(request, "undo", memory)
    return _fragment(request, "answered", memory, focus=True)


@login_required
@require_POST
def memory_renew(request: HttpRequest, pk: Any) -> HttpResponse:
    """Give an expired (or expiring) memory a new life until the chosen day."""
    memory = _visible_memory(request, pk)
    try:
        # To the end of the chosen day, so the page shows the day the person picked.
        until = datetime.combine(
            forms.DateField().clean(request.POST.get("until", "")), time.max, tzinfo=UTC
        )
    except forms.ValidationError:
        refusal = policy.Refusal("date_required", "Choose the day it should last until.", 400)
        return _refused(request, memory, "card", refusal)
    try:
        memory = renew_memory(
            memory=memory,
            actor=Actor.for_user(request.user),  # type: ignore[arg-type]
            expires_at=until,
            reason="Renewed by the person." if is_own(request, memory.subject) else "By support.",
        )
    except policy.Refusal as refusal:
        return _refused(request, memory, "card", refusal)
    if not request.htmx:
        messages.success(request, "Renewed.")
        return HttpResponseRedirect(subject_url(memory.subject, f"memory-{memory.pk}"))
    return _fragment(request, "card", memory, note="Renewed.", focus=True)


@login_required
@require_GET
def memory_history(request: HttpRequest, pk: Any) -> HttpResponse:
    """Every version of one memory: the chain of corrections, each with its history."""
    memory = _visible_memory(request, pk)
    first = memory
    while first.supersedes_id is not None:
        first = Memory.objects.get(pk=first.supersedes_id)
    chain = [first]
    while (following := Memory.objects.filter(supersedes=chain[-1]).first()) is not None:
        chain.append(following)
    staff = is_staff_role(request.user)
    versions = [
        {
            "memory": m,
            "steps": steps(m, viewer=request.user),
            "current": m.pk == memory.pk,
            # Support traces a complaint: where each version came from and which runs read it.
            "sources": m.sources.select_related("run") if staff else (),
            "reads": recalls_that_served(m).select_related("agent", "run")[:READS_SHOWN]
            if staff
            else (),
        }
        for m in reversed(chain)
    ]
    return render(
        request,
        "ledger/memory_history.html",
        {
            "memory": memory,
            "subject": memory.subject,
            "own": is_own(request, memory.subject),
            "versions": versions,
        },
    )


@login_required
@require_POST
def conflict_resolve(request: HttpRequest, pk: int) -> HttpResponse:
    """Pick one of the statements that disagree, or write the right one."""
    conflict = get_object_or_404(
        Conflict.objects.visible_to(request.user).select_related("subject"), pk=pk
    )
    subject = conflict.subject
    keep_id = request.POST.get("keep", "")
    keep = None
    if keep_id:
        keep = conflict.memories.filter(pk=keep_id).first() if _is_uuid(keep_id) else None
        if keep is None:
            return _conflict_refused(request, conflict, "That statement is not in this conflict.")
    statement = request.POST.get("statement", "")
    if statement:
        form = CorrectionForm({"statement": statement})
        if not form.is_valid():
            return _conflict_refused(request, conflict, " ".join(form.errors["statement"]))
        statement = form.cleaned_data["statement"]
    try:
        kept = resolve_conflict(
            conflict=conflict,
            actor=Actor.for_user(request.user),  # type: ignore[arg-type]
            keep=keep,
            statement=statement or None,
        )
    except policy.Refusal as refusal:
        return _conflict_refused(request, conflict, refusal.detail, refusal.status)
    note = f"Resolved. The assistant now remembers: “{kept.statement}”"
    if not request.htmx:
        messages.success(request, note)
        return HttpResponseRedirect(subject_url(subject))
    context = page_context(request, subject, Filters.from_data(request.POST))
    context["results_note"] = note
    return render(request, f"{TEMPLATE}#results", context)


def _conflict_refused(
    request: HttpRequest, conflict: Conflict, detail: str, status: int = 400
) -> HttpResponse:
    if not request.htmx:
        messages.error(request, detail)
        return HttpResponseRedirect(subject_url(conflict.subject, f"conflict-{conflict.pk}"))
    own = is_own(request, conflict.subject)
    cmap = _conflict_map([conflict])
    view = ConflictView(
        conflict=conflict,
        cards=[
            card_for(m, viewer=request.user, own=own, open_conflicts=cmap)
            for m in conflict.memories.filter(status=Memory.Status.ACTIVE)
        ],
        error=detail,
    )
    return render(
        request,
        f"{TEMPLATE}#conflict",
        {"subject": conflict.subject, "own": own, "view": view},
        status=status,
    )
