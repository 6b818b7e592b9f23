"""The subject page: what the assistant remembers about someone, and every fix a person makes.

Each action has an htmx path (a fragment swapped into the page, no reload) and a plain
path (a redirect back to the page) so the page works without JavaScript too; both, and a
refusal, are answered through ``ledger.views.answers``. Every lookup goes through the
viewer's scope, so a memory they may not see is a 404 for every action.
"""

from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from ledger import access
from ledger.actions.conflicts import dismiss_conflict, keep_commitment, resolve_conflict
from ledger.actions.lifecycle import (
    answer_question,
    correct_memory,
    renew_memory,
    restore_memory,
    retract_memory,
    withhold_memory,
)
from ledger.actors import Actor
from ledger.models import Conflict, Memory, MemoryQuerySet, Policy, Source, Subject
from ledger.reads.erasure_requests import standing as erasure_standing
from ledger.reads.names import Names
from ledger.rules.holds import held_for_review
from ledger.rules.memories import renew_period, undo_refusal, undo_seconds_left
from ledger.rules.refusals import Refusal
from ledger.views.answers import answer, refused
from ledger.views.cards import (
    Card,
    CardContext,
    ConflictView,
    Group,
    card_for,
    conversations_of,
    open_conflicts,
)
from ledger.views.forms.memories import CorrectionForm, given_reason
from ledger.views.forms.search import BASIS_FILTERS, STATUS_FILTERS, Filters
from ledger.views.http import SignedInRequest
from ledger.views.paging import BadPage, numbered, page_number
from ledger.views.presenting import KIND_TITLES, day, undo_seconds

TEMPLATE = "ledger/subject.html"
type MemoryView = Callable[[SignedInRequest, uuid.UUID], HttpResponse]
# The value of "keep" that keeps a possible conflict's ledger commitment.
KEEP_COMMITMENT = "commitment"
# Memories on one page of the subject page: a person reads a card at a time, not a scroll
# of hundreds; and the page keeps a fixed number of queries, and a bounded time to render
# its cards, whatever the subject holds.
PAGE_SIZE = 25
# Support sees the latest runs about a person; older ones are reached through the ledger.
RUNS_SHOWN = 20
# A correction to words another memory already says keeps that one (``correct_memory``).
MERGED_NOTE = (
    "Saved. Another memory already said this, so it is the one kept; the memory you "
    "corrected stays in its history."
)


# A person's correction whose words were held for review (``correct_memory``).
HELD_NOTE = (
    "Saved, and held for review: the assistant is not given these words until someone "
    "else confirms them. The earlier version stays in the memory's history."
)


def is_own(request: SignedInRequest, subject: Subject) -> bool:
    return access.acts_for_person(request.user, subject)


def subject_url(subject: Subject, anchor: str = "", **params: str) -> str:
    url = reverse("subject", args=[subject.ref])
    if params:
        url += "?" + urlencode(params)
    return url + (f"#{anchor}" if anchor else "")


def memory_url(memory: Memory, **params: str) -> str:
    """The subject page at the page that holds ``memory``, scrolled to its card; ``params``
    (``edit``, ``delete``, ``uses``) name the memory themselves, or else ``show`` does."""
    named = params or {"show": str(memory.pk)}
    return subject_url(memory.subject, f"memory-{memory.pk}", **named)


def describe(request: SignedInRequest, memory: Memory) -> Card:
    context = CardContext.load(
        viewer=request.user,
        subject=memory.subject,
        memories=[memory],
        conflicts=open_conflicts(memory.subject),
    )
    return card_for(memory, context)


def listed(subject: Subject, filters: Filters) -> MemoryQuerySet:
    """Every memory the subject page lists for these filters, on one page or another."""
    memories = Memory.objects.for_subject(subject)
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
    return memories


def page_context(
    request: SignedInRequest,
    subject: Subject,
    filters: Filters,
    *,
    number: int | None = None,
    shown: Memory | None = None,
) -> dict[str, Any]:
    """Everything the subject page and its results fragment show, for these filters: page
    ``number`` of the list, or else the page that holds ``shown`` (else the first).

    The same number of queries whatever the page and however many memories there are.
    """
    conflicts = open_conflicts(subject)
    memories = listed(subject, filters)
    counts = memories.subject_page_counts()
    if number is None:
        before = memories.position_on_subject_page(shown) if shown is not None else None
        number = 1 + (before or 0) // PAGE_SIZE
    pages = numbered(number=number, total=sum(counts.values()), size=PAGE_SIZE)
    sources = Prefetch("sources", Source.objects.select_related("run"))
    rows = list(
        memories.in_subject_page_order()
        .select_related("agent")
        .prefetch_related(sources)[pages.offset : pages.offset + PAGE_SIZE]
    )
    contenders = [
        [m for m in c.memories.all() if m.status == Memory.Status.ACTIVE] for c in conflicts
    ]
    context = CardContext.load(
        viewer=request.user,
        subject=subject,
        memories=[*rows, *(m for group in contenders for m in group)],
        conflicts=conflicts,
    )
    cards = [card_for(m, context) for m in rows]
    groups = []
    # Where each heading begins in the whole list: the questions first, then each kind.
    start = counts[Memory.Status.PENDING]
    for kind, title in KIND_TITLES.items():
        groups.append(
            Group(kind=kind, title=str(title), total=counts[kind], continued=pages.offset > start)
        )
        start += counts[kind]
    for item in cards:
        if item.memory.status != Memory.Status.PENDING:
            next(g for g in groups if g.kind == item.memory.kind).cards.append(item)
    conflict_views = [
        ConflictView(conflict=c, cards=[card_for(m, context) for m in group])
        for c, group in zip(conflicts, contenders, strict=True)
    ]
    erasures = list(subject.erasures.all())
    # Support's erasure waiting for an admin (``access.erasure_needs_approval``), and the
    # last one an admin declined, with why: support reads it here.
    requests = erasure_standing(subject, erasures)
    declined = requests.declined if access.may_see_erasure_decisions(request.user) else None
    names = Names.for_labels(request.user, [e.erased_by for e in erasures] + requests.labels)
    return {
        "subject": subject,
        "own": context.own,
        "filters": filters,
        "kinds": KIND_TITLES,
        "bases": BASIS_FILTERS,
        "statuses": STATUS_FILTERS,
        "questions": [c for c in cards if c.memory.status == Memory.Status.PENDING],
        "questions_continued": pages.offset > 0,
        "groups": [g for g in groups if g.cards],
        # Conflicts come first, so they are on the first page; later ones say where.
        "conflicts": [v for v in conflict_views if v.sides > 1],
        "pages": pages,
        "asked": filters.query(),
        "has_any": Memory.objects.for_subject(subject).shown_on_subject_page().exists(),
        "in_use": Memory.objects.for_subject(subject).servable().exists(),
        "erasures": [(e, names.who(e.erased_by)) for e in erasures],
        "erasure_requested_by": (
            names.who(requests.waiting.requested_by) if requests.waiting else ""
        ),
        "erasure_declined": declined,
        "erasure_declined_by": names.who(declined.decided_by) if declined else "",
        "undo_seconds": undo_seconds(),
    }


def undo_left(request: SignedInRequest, memory: Memory) -> int:
    """Whole seconds until the viewer's Undo button goes; 0 when they cannot undo.

    Rounded up past the window's end, so the page's re-fetch then finds it closed.
    """
    if memory.status != Memory.Status.RETRACTED or memory.status_changed_at is None:
        return 0
    deletion = memory.history.order_by("-history_date", "-history_id").first()
    now = timezone.now()
    refusal = undo_refusal(
        deleted_by=deletion.history_actor if deletion else "",
        by=Actor.for_user(request.user).label,
        deleted_at=memory.status_changed_at,
        now=now,
        within_seconds=undo_seconds(),
    )
    if refusal is not None:
        return 0
    left = undo_seconds_left(
        deleted_at=memory.status_changed_at, now=now, within_seconds=undo_seconds()
    )
    return math.floor(left) + 1


def fragment_for(memory: Memory) -> str:
    """The partial a memory is shown in: a guess as a question, anything else as a card."""
    return "question" if memory.status == Memory.Status.PENDING else "card"


def part(name: str) -> str:
    """One of the subject page's fragments."""
    return f"{TEMPLATE}#{name}"


def card_context(request: SignedInRequest, memory: Memory, **extra: Any) -> dict[str, Any]:
    """What a fragment showing one memory reads: its card, and its undo offer."""
    return {
        "subject": memory.subject,
        "own": is_own(request, memory.subject),
        "card": describe(request, memory),
        "undo_seconds": undo_seconds(),
        "undo_left": undo_left(request, memory),
        **extra,
    }


def in_conflicts(subject: Subject) -> set[uuid.UUID]:
    """The memories the subject's open conflicts hold, before an action changes them."""
    held = Conflict.objects.open().filter(subject=subject).values_list("memories", flat=True)
    return {pk for pk in held if pk is not None}


def refreshes_page(view: MemoryView) -> MemoryView:
    """An action on one memory's card that, answered with the card's fragment, also brings
    the rest of the subject page it was made on up to date (``refreshed``)."""

    @functools.wraps(view)
    def wrapped(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
        if request.method != "POST" or not request.htmx:
            return view(request, pk)
        memory = visible_memory(request, pk)
        before = in_conflicts(memory.subject)
        response = view(request, pk)
        return refreshed(request, response, memory, before)

    return wrapped


def refreshed(
    request: SignedInRequest, response: HttpResponse, memory: Memory, before: set[uuid.UUID]
) -> HttpResponse:
    """``response`` (a fragment for ``memory``'s card) with what the action changed elsewhere
    on the subject page it was made on, swapped out of band: the conflicts, the cards that
    joined or left one (``before``: who was in one), the headings' counts."""
    shown = urlsplit(request.htmx.current_url or "")
    subject = memory.subject
    if (
        response.status_code != 200
        or response.has_header("HX-Redirect")
        or shown.path != subject_url(subject)
    ):
        return response
    asked = QueryDict(shown.query)
    try:
        number = page_number(asked.get("page", ""))
    except BadPage:
        number = None
    context = page_context(request, subject, Filters.from_data(asked), number=number)
    now = {card.memory.pk for view in context["conflicts"] for card in view.cards}
    changed = (before ^ now) - {memory.pk}
    context["restated"] = [
        card for group in context["groups"] for card in group.cards if card.memory.pk in changed
    ]
    response.content += render_to_string(part("refreshed"), context, request).encode()
    return response


def visible_memory(request: SignedInRequest, pk: uuid.UUID) -> Memory:
    """The memory, if the viewer may see its subject; a 404 otherwise, as if it did not exist."""
    return get_object_or_404(
        Memory.objects.visible_to(request.user).select_related("subject"), pk=pk
    )


@login_required
@require_GET
def subject_page(request: SignedInRequest, ref: str) -> HttpResponse:
    subject = get_object_or_404(Subject.objects.visible_to(request.user), ref=ref)
    filters = Filters.from_data(request.GET)
    # The plain (no-JavaScript) paths of edit, delete, undo and "which conversations?",
    # and links to one memory (``show``), open the page that holds it, in that state.
    mine = Memory.objects.for_subject(subject).select_related("subject")
    named: dict[str, Memory | None] = {}
    for param in ("edit", "delete", "deleted", "uses", "show"):
        value = request.GET.get(param, "")
        named[param] = mine.filter(pk=value).first() if _is_uuid(value) else None
    shown = named["edit"] or named["delete"] or named["uses"] or named["show"]
    status = 200
    try:
        number = page_number(request.GET.get("page", ""))
    except BadPage as error:
        number, status = 1, 400
        page_error = str(error)
    else:
        page_error = ""
    context = page_context(request, subject, filters, number=number, shown=shown)
    context["page_error"] = page_error
    if request.htmx and request.htmx.target == "memory-list":
        response = render(request, f"{TEMPLATE}#results", context, status=status)
        # Same URL, two bodies: caches must key on the htmx headers too.
        patch_vary_headers(response, ("HX-Request", "HX-Target"))
        return response
    for param in ("edit", "delete", "deleted"):
        found = named[param]
        context[param] = describe(request, found) if found else None
        if param == "deleted" and found:
            context["undo_left"] = undo_left(request, found)
    if named["uses"] is not None:
        context.update(uses_context(named["uses"]))
    if access.may_see_runs(request.user):
        context["runs"] = subject.runs.select_related("agent")[:RUNS_SHOWN]
    return render(request, TEMPLATE, context, status=status)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


@login_required
@require_GET
def memory_card(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    memory = visible_memory(request, pk)
    return answer(
        request,
        fragment=part("card"),
        context=lambda: card_context(request, memory),
        redirect_to=memory_url(memory),
    )


@login_required
@refreshes_page
def memory_edit(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """GET: the inline form. POST: save a correction, which supersedes the old memory."""
    memory = visible_memory(request, pk)
    if request.method == "GET":
        return answer(
            request,
            fragment=part("edit-form"),
            context=lambda: card_context(request, memory),
            redirect_to=memory_url(memory, edit=str(memory.pk)),
        )
    if request.method != "POST":
        return HttpResponse(status=405)
    form = CorrectionForm(request.POST)
    if not form.is_valid():
        return _refused_edit(request, memory, form)
    try:
        new = correct_memory(
            memory=memory,
            actor=Actor.for_user(request.user),
            statement=form.cleaned_data["statement"],
            reason=form.cleaned_data["reason"],
        )
    except Refusal as refusal:
        form.add_error(None, refusal.detail)
        return _refused_edit(request, memory, form, status=refusal.status)
    if new.supersedes_id != memory.pk:
        # Merged into the memory that already says it: its card is elsewhere on the page.
        return answer(request, redirect_to=memory_url(new), message=MERGED_NOTE)
    if new.status == Memory.Status.PENDING:
        # Held for its words: its card says who reviews them, and why.
        return answer(
            request,
            fragment=part("question"),
            context=lambda: card_context(request, new, note=HELD_NOTE, focus=True),
            redirect_to=memory_url(new),
            message=HELD_NOTE,
        )
    return answer(
        request,
        fragment=part("card"),
        context=lambda: card_context(
            request, new, note="Saved. The earlier version is in the history.", focus=True
        ),
        redirect_to=memory_url(new),
        message="Saved. The earlier version stays in the memory's history.",
    )


def _refused_edit(
    request: SignedInRequest, memory: Memory, form: CorrectionForm, status: int = 400
) -> HttpResponse:
    """The form again, as typed, with what is wrong: in the card, or on the page."""
    typed = {
        "errors": [e for field_errors in form.errors.values() for e in field_errors],
        "value": request.POST.get("statement", ""),
        "reason": request.POST.get("reason", ""),
    }

    def on_page() -> dict[str, Any]:
        context = page_context(request, memory.subject, Filters(), shown=memory)
        return {**context, "edit": describe(request, memory), **typed}

    return answer(
        request,
        fragment=part("edit-form"),
        context=lambda: card_context(request, memory, **typed),
        page=TEMPLATE,
        page_context=on_page,
        status=status,
    )


@login_required
@refreshes_page
def memory_delete(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """GET: the confirm step. POST: retract; agents stop recalling it at once."""
    memory = visible_memory(request, pk)
    if request.method == "GET":
        return answer(
            request,
            fragment=part("delete-confirm"),
            context=lambda: card_context(request, memory),
            redirect_to=memory_url(memory, delete=str(memory.pk)),
        )
    if request.method != "POST":
        return HttpResponse(status=405)
    try:
        retract_memory(
            memory=memory, actor=Actor.for_user(request.user), reason=given_reason(request.POST)
        )
    except Refusal as refusal:
        return _refused(request, memory, "delete-confirm", refusal)
    memory.refresh_from_db()
    return answer(
        request,
        fragment=part("undo"),
        context=lambda: card_context(request, memory),
        redirect_to=subject_url(memory.subject, "undo", deleted=str(memory.pk)),
    )


def _refused(
    request: SignedInRequest, memory: Memory, fragment: str, refusal: Refusal
) -> HttpResponse:
    """A refusal said in words, with its 4xx status: inside the fragment for htmx, on the
    page otherwise."""
    memory.refresh_from_db()
    return refused(
        request,
        refusal,
        fragment=part(fragment),
        context=lambda: card_context(request, memory),
        page=TEMPLATE,
        page_context=lambda: page_context(request, memory.subject, Filters(), shown=memory),
    )


@login_required
@refreshes_page
def memory_undo(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """GET: the undo offer as it stands now (the page re-fetches it when its time is up).
    POST: undo the deletion."""
    memory = visible_memory(request, pk)
    if request.method == "GET":
        # Restored meanwhile (in another tab, say): it is shown as it is now.
        retracted = memory.status == Memory.Status.RETRACTED
        return answer(
            request,
            fragment=part("undo" if retracted else fragment_for(memory)),
            context=lambda: card_context(request, memory),
            redirect_to=subject_url(memory.subject, "undo", deleted=str(memory.pk)),
        )
    if request.method != "POST":
        return HttpResponse(status=405)
    try:
        restored = restore_memory(
            memory=memory,
            actor=Actor.for_user(request.user),
            within_seconds=undo_seconds(),
        )
    except Refusal as refusal:
        return _refused(request, memory, "undo", refusal)
    return answer(
        request,
        fragment=part(fragment_for(restored)),
        context=lambda: card_context(request, restored, note="Undone: it is back.", focus=True),
        redirect_to=memory_url(restored),
        message="Undone: the memory is back.",
    )


@login_required
@require_POST
@refreshes_page
def memory_answer(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """A person answers the question about a guess: yes confirms it, no deletes it."""
    memory = visible_memory(request, pk)
    said = request.POST.get("answer", "")
    held = held_for_review(status=memory.status, statement=memory.statement)
    try:
        if said not in ("yes", "no"):
            raise Refusal("answer_required", "Answer yes or no.", 400)
        answer_question(
            memory=memory,
            actor=Actor.for_user(request.user),
            right=said == "yes",
            reason=given_reason(request.POST),
        )
    except Refusal as refusal:
        return _refused(request, memory, "question", refusal)
    memory.refresh_from_db()
    if said == "no":
        return answer(
            request,
            fragment=part("undo"),
            context=lambda: card_context(request, memory),
            redirect_to=subject_url(memory.subject),
            message="Deleted." if held else "Deleted: it was a wrong guess.",
        )
    return answer(
        request,
        fragment=part("answered"),
        context=lambda: card_context(request, memory, focus=True),
        redirect_to=subject_url(memory.subject),
        message="Thanks: confirmed.",
    )


def uses_context(memory: Memory) -> dict[str, Any]:
    conversations, total = conversations_of(memory)
    return {
        "uses_of": memory.pk,
        "conversations": conversations,
        "conversations_total": total,
        "conversations_more": total - len(conversations),
    }


@login_required
@require_GET
def memory_uses(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """The conversations that were given one memory: run, agent and when, latest first."""
    memory = visible_memory(request, pk)
    return answer(
        request,
        fragment=part("uses"),
        # The list needs only the memory, not its whole card (conflicts, usage, policy).
        context=lambda: {
            "subject": memory.subject,
            "card": {"memory": memory},
            **uses_context(memory),
        },
        redirect_to=memory_url(memory, uses=str(memory.pk)),
    )


@login_required
@require_POST
def memory_withhold(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """The person's "Don't use this" (``use=no``) and "Use it again" (``use=yes``)."""
    memory = visible_memory(request, pk)
    use = request.POST.get("use", "")
    try:
        if use not in ("yes", "no"):
            raise Refusal("use_required", "Say whether the assistant may use it.", 400)
        memory = withhold_memory(
            memory=memory, actor=Actor.for_user(request.user), withheld=use == "no"
        )
    except Refusal as refusal:
        return _refused(request, memory, fragment_for(memory), refusal)
    note = (
        "The assistant will not use this any more. It stays here, and you can let it be used again."
        if memory.withheld
        else "The assistant may use this again."
    )
    return answer(
        request,
        fragment=part(fragment_for(memory)),
        context=lambda: card_context(request, memory, note=note, focus=True),
        redirect_to=memory_url(memory),
        message=note,
    )


@login_required
@require_POST
def memory_renew(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """Give an expired (or expiring) memory a new life, for one of the periods offered."""
    memory = visible_memory(request, pk)
    try:
        period = renew_period(
            Policy.current(), basis=memory.basis, chosen=request.POST.get("period", "")
        )
        why = given_reason(request.POST)
        until = timezone.now() + timedelta(days=period.days)
        memory = renew_memory(
            memory=memory,
            actor=Actor.for_user(request.user),
            expires_at=until,
            reason=why,
            kept_for=period.kept_for(until),
        )
    except Refusal as refusal:
        return _refused(request, memory, "card", refusal)
    note = f"Renewed: kept until {day(until)}."
    return answer(
        request,
        fragment=part("card"),
        context=lambda: card_context(request, memory, note=note, focus=True),
        redirect_to=memory_url(memory),
        message=note,
    )


@login_required
@require_POST
def conflict_resolve(request: SignedInRequest, pk: int) -> HttpResponse:
    """Pick one of the statements that disagree, or write the right one, or keep the
    ledger's commitment over the memory that seems to contradict it."""
    conflict = get_object_or_404(
        Conflict.objects.visible_to(request.user).select_related("subject"), pk=pk
    )
    keep_id = request.POST.get("keep", "")
    actor = Actor.for_user(request.user)
    try:
        if keep_id == KEEP_COMMITMENT:
            commitment = keep_commitment(
                conflict=conflict, actor=actor, reason=given_reason(request.POST)
            )
            note = f"Resolved. The commitment stands: “{commitment.fact}”"
            return _conflict_settled(request, conflict, note)
        kept = resolve_conflict(
            conflict=conflict,
            actor=actor,
            keep=_contender(conflict, keep_id),
            statement=_rewritten(request.POST.get("statement", "")),
            reason=given_reason(request.POST),
        )
    except Refusal as refusal:
        return _conflict_refused(request, conflict, refusal)
    if kept.status == Memory.Status.PENDING:
        note = f"Resolved. Held for review before the assistant may use it: “{kept.statement}”"
    elif kept.withheld:
        note = f"Resolved. Kept, and still not used by the assistant: “{kept.statement}”"
    else:
        note = f"Resolved. The assistant now remembers: “{kept.statement}”"
    return _conflict_settled(request, conflict, note)


def _contender(conflict: Conflict, keep_id: str) -> Memory | None:
    """The statement chosen to keep (none chosen: ``None``); one not in the conflict is a 400."""
    if not keep_id:
        return None
    keep = conflict.memories.filter(pk=keep_id).first() if _is_uuid(keep_id) else None
    if keep is None:
        raise Refusal("not_in_conflict", "That statement is not in this conflict.", 400)
    return keep


def _rewritten(statement: str) -> str | None:
    """The right statement, if one was written, checked as a correction's is."""
    if not statement:
        return None
    form = CorrectionForm({"statement": statement})
    if not form.is_valid():
        problem = " ".join(str(error) for error in form.errors["statement"])
        raise Refusal("statement_invalid", problem, 400)
    rewritten: str = form.cleaned_data["statement"]
    return rewritten


@login_required
@require_POST
def conflict_dismiss(request: SignedInRequest, pk: int) -> HttpResponse:
    """Say a possible conflict is not one: both statements stay as they are."""
    conflict = get_object_or_404(
        Conflict.objects.visible_to(request.user).select_related("subject"), pk=pk
    )
    try:
        dismiss_conflict(
            conflict=conflict,
            actor=Actor.for_user(request.user),
            reason=given_reason(request.POST),
        )
    except Refusal as refusal:
        return _conflict_refused(request, conflict, refusal)
    return _conflict_settled(request, conflict, "Not a conflict: both statements are kept.")


def _conflict_settled(request: SignedInRequest, conflict: Conflict, note: str) -> HttpResponse:
    def results() -> dict[str, Any]:
        context = page_context(request, conflict.subject, Filters.from_data(request.POST))
        return {**context, "results_note": note}

    return answer(
        request,
        fragment=part("results"),
        context=results,
        redirect_to=subject_url(conflict.subject),
        message=note,
    )


def _conflict_refused(
    request: SignedInRequest, conflict: Conflict, refusal: Refusal
) -> HttpResponse:
    def box() -> dict[str, Any]:
        contenders = list(
            conflict.memories.filter(status=Memory.Status.ACTIVE).prefetch_related("sources__run")
        )
        conflicts = open_conflicts(conflict.subject)
        context = CardContext.load(
            viewer=request.user, subject=conflict.subject, memories=contenders, conflicts=conflicts
        )
        # The open one as the page shows it, with its commitment; as it is if it has closed.
        shown = next((c for c in conflicts if c.pk == conflict.pk), conflict)
        view = ConflictView(
            conflict=shown, cards=[card_for(m, context) for m in contenders], error=refusal.detail
        )
        return {"subject": conflict.subject, "own": context.own, "view": view}

    return refused(
        request,
        refusal,
        fragment=part("conflict"),
        context=box,
        redirect_to=subject_url(conflict.subject, f"conflict-{conflict.pk}"),
        # The forms target the whole list (a resolution changes it); a refusal is this box's.
        swap_into=f"#conflict-{conflict.pk}",
    )
