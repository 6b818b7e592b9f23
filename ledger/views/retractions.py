"""Support's batch retractions: choose what a poisoned source wrote, preview it, delete it
in one batch with a reason, and undo the batch as one. Support and admins only.

The preview is a fragment for htmx and part of the page otherwise; every step is a plain
form too, so the whole flow works without JavaScript.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.db.models import Count
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ledger.actions.retractions import (
    Preview,
    Selection,
    UndoReport,
    preview_retraction,
    retract_batch,
    undo_batch,
)
from ledger.actors import Actor
from ledger.models import Memory, RetractionBatch
from ledger.reads.names import Names
from ledger.rules.refusals import Refusal
from ledger.rules.retractions import undo_reason
from ledger.views.answers import answer, refused
from ledger.views.forms.memories import BatchForm, SelectionForm, given_reason
from ledger.views.http import SignedInRequest, support_only
from ledger.views.paging import BadCursor, next_query
from ledger.views.presenting import STATUS_CHANGES
from ledger.views.sorting import BadSort, Sortable

LIST_TEMPLATE = "ledger/retractions.html"
NEW_TEMPLATE = "ledger/retraction_new.html"
BATCH_TEMPLATE = "ledger/retraction.html"
BATCHES_SHOWN = 50
BATCH_SORTS = Sortable(
    columns={"when": "retracted_at", "memories": "memories"},
    default="-when",
)
# The memories a batch page lists; its count is exact whatever it shows.
ITEMS_SHOWN = 200
# What a form post carries besides the fields themselves.
FORM_EXTRAS = {"csrfmiddlewaretoken"}


def _unknown(data: QueryDict, form: type[forms.Form], *extra: str) -> list[str]:
    allowed = {*form.base_fields, *FORM_EXTRAS, *extra}
    return sorted(name[:50] for name in data if name not in allowed)


def _errors(form: forms.Form) -> list[str]:
    return [str(e) for errors in form.errors.values() for e in errors]


@support_only
@require_GET
def batch_list(request: SignedInRequest) -> HttpResponse:
    """Every batch, newest first or as sorted (``?sort=memories``), a keyset page at a time."""
    unknown = _unknown(request.GET, forms.Form, "after", "sort")
    if unknown:
        return _list_refused(request, f"Unknown filter: {', '.join(unknown)}.")
    batches = RetractionBatch.objects.annotate(memories=Count("items"))
    try:
        sort = BATCH_SORTS.chosen(request.GET)
        page = sort.page(batches, cursor=request.GET.get("after", ""), size=BATCHES_SHOWN)
    except (BadSort, BadCursor) as error:
        return _list_refused(request, str(error))
    names = Names.for_labels(
        request.user,
        [label for b in page.rows for label in (b.retracted_by, b.undone_by) if label],
    )
    return render(
        request,
        LIST_TEMPLATE,
        {
            "batches": [
                (b, names.who(b.retracted_by), names.who(b.undone_by) if b.undone_by else "")
                for b in page.rows
            ],
            "sort": sort,
            "next_query": next_query(request.GET, page.next_cursor),
        },
    )


def _list_refused(request: SignedInRequest, error: str) -> HttpResponse:
    return render(request, LIST_TEMPLATE, {"batches": [], "error": error}, status=400)


@support_only
@require_http_methods(["GET", "POST"])
def batch_new(request: SignedInRequest) -> HttpResponse:
    """GET: the selection form, pre-filled from the query (``?source_ref=msg_0588``), and
    with any criterion given, the preview. POST: retract what was previewed, as one batch."""
    if request.method == "POST":
        return _create(request)
    unknown = _unknown(request.GET, SelectionForm)
    form = SelectionForm(request.GET if request.GET else None)
    context: dict[str, Any] = {"form": form}
    status = 200
    if unknown:
        context["errors"], status = [f"Unknown filter: {', '.join(unknown)}."], 400
    elif form.is_bound and not form.is_valid():
        context["errors"], status = _errors(form), 400
    elif unseen := _unseen(request, form):
        context["errors"], status = [unseen], 404
    elif form.is_bound:
        try:
            context["preview"] = preview_retraction(form.selection())
        except Refusal as refusal:
            context["errors"], status = [refusal.detail], refusal.status
    if context.get("preview"):
        context.update(_preview_words(context["preview"]))
    context.update(_ticked(request.GET))
    return answer(
        request,
        fragment=f"{NEW_TEMPLATE}#preview",
        page=NEW_TEMPLATE,
        context=context,
        status=status,
    )


def _ticked(data: QueryDict) -> dict[str, Any]:
    """The memories ticked in the search, as the page names them: chosen one by one, they
    are what the page deletes, not a source's or a run's."""
    parts = (part.strip() for value in data.getlist("memories") for part in value.split(","))
    ids = [part for part in parts if part]
    return {"ticked": ",".join(ids), "ticked_count": len(set(ids))}


def _unseen(request: SignedInRequest, form: SelectionForm) -> str:
    """What is wrong with the memories ticked one by one, if any: one the viewer may not see
    is answered as one that does not exist."""
    ticked = (form.cleaned_data.get("memories") or ()) if form.is_bound else ()
    if not ticked:
        return ""
    seen = set(
        Memory.objects.visible_to(request.user).filter(pk__in=ticked).values_list("pk", flat=True)
    )
    missing = [pk for pk in ticked if pk not in seen]
    return f"No memory has the id {missing[0]}. Nothing was changed." if missing else ""


def _preview_words(preview: Preview) -> dict[str, Any]:
    return {
        "hidden": preview.selection.as_json(),
        "rows": [(m, STATUS_CHANGES.get(m.status, m.status)) for m in preview.listed],
    }


def _create(request: SignedInRequest) -> HttpResponse:
    form = BatchForm(request.POST)
    unknown = _unknown(request.POST, BatchForm)
    if unknown or not form.is_valid():
        errors = [f"Unknown field: {', '.join(unknown)}."] if unknown else _errors(form)
        return _new_refused(request, form, errors, 400)
    unseen = _unseen(request, form)
    if unseen:
        return _new_refused(request, form, [unseen], 404)
    try:
        batch = retract_batch(
            selection=form.selection(),
            actor=Actor.for_user(request.user),
            reason=form.cleaned_data["reason"],
            expected=form.cleaned_data["expected"],
        )
    except Refusal as refusal:
        return _new_refused(request, form, [refusal.detail], refusal.status)
    return answer(request, redirect_to=reverse("retraction", args=[batch.pk]))


def _new_refused(
    request: SignedInRequest, form: BatchForm, errors: list[str], status: int
) -> HttpResponse:
    """The form again, as it was filled in, with the fresh preview when there is one."""
    context: dict[str, Any] = {
        "form": form,
        "errors": errors,
        "reason": form.data.get("reason"),
        **_ticked(request.POST),
    }
    # The selection itself was fine (only the reason or count erred): show it afresh.
    if not form.errors.keys() - {"reason", "expected"}:
        try:
            preview = preview_retraction(Selection.from_data(form.cleaned_data))
        except Refusal:
            pass
        else:
            context.update(preview=preview, **_preview_words(preview))
    return render(request, NEW_TEMPLATE, context, status=status)


def _batch_context(
    request: SignedInRequest, batch: RetractionBatch, report: UndoReport | None = None
) -> dict[str, Any]:
    items = list(
        batch.items.select_related("memory__subject").order_by("memory__written_at", "memory_id")[
            :ITEMS_SHOWN
        ]
    )
    labels = [batch.retracted_by, batch.undone_by]
    names = Names.for_labels(request.user, [label for label in labels if label])
    return {
        "batch": batch,
        "count": batch.items.count(),
        "items": [
            (
                item,
                STATUS_CHANGES.get(item.status_before, item.status_before),
                STATUS_CHANGES.get(item.memory.status, item.memory.status),
            )
            for item in items
        ],
        "by": names.who(batch.retracted_by),
        "undone_by": names.who(batch.undone_by) if batch.undone_by else "",
        "undo_reason": _undo_reason(batch),
        "selection": batch.selection,
        "report": report,
        "left_alone": [
            (memory, _changed_since(memory)) for memory in (report.left_alone if report else [])
        ],
    }


def _undo_reason(batch: RetractionBatch) -> str:
    """Why the batch was undone, as the person gave it: the undo's history row keeps it
    after the batch's own words (``undo_batch``)."""
    if batch.undone_at is None:
        return ""
    why = (
        batch.history.exclude(undone_at=None)
        .order_by("history_date")
        .values_list("history_change_reason", flat=True)
        .first()
    )
    return undo_reason(batch.pk, str(why or ""))


def _changed_since(memory: Memory) -> str:
    if memory.status == Memory.Status.RETRACTED:
        return "put back and deleted again since the batch; it stays deleted"
    now = STATUS_CHANGES.get(memory.status, memory.status).lower()
    return f"changed since the batch (now: {now}); left as it is"


@support_only
@require_GET
def batch_page(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    batch = get_object_or_404(RetractionBatch, pk=pk)
    return render(request, BATCH_TEMPLATE, _batch_context(request, batch))


@support_only
@require_POST
def batch_undo(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """Undo the batch; the answer is the report of what came back and what was left alone
    (rendered, not redirected to, because the report exists only now)."""
    batch = get_object_or_404(RetractionBatch, pk=pk)
    try:
        report = undo_batch(
            batch=batch, actor=Actor.for_user(request.user), reason=given_reason(request.POST)
        )
    except Refusal as refusal:
        batch.refresh_from_db()
        return refused(
            request,
            refusal,
            fragment=f"{BATCH_TEMPLATE}#undo",
            page=BATCH_TEMPLATE,
            context=lambda: _batch_context(request, batch),
        )
    return answer(
        request,
        fragment=f"{BATCH_TEMPLATE}#undo",
        page=BATCH_TEMPLATE,
        context=lambda: _batch_context(request, report.batch, report),
    )
