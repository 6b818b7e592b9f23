"""The admin's review of corrections and erasures. Admins only; anyone else gets a 404.

Corrections: every memory that replaced another on the dashboard (a person's or support's
correction, or an admin's revert), newest first, with the original beside it, who
corrected it and why, and whether agents were still given the original afterwards; a
correction's page also says how often agents were given its own words, and reverts it.
Erasures: who asked, who carried it out, when, which subject and how many rows of each
kind lost their content, never any of the content.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_POST

from ledger import access
from ledger.actions.reverts import revert_correction
from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.dates import day_window
from ledger.models import Erasure, ErasureRequest, Memory, Source
from ledger.reads.corrections import (
    Reads,
    Version,
    chain_of,
    listing,
    reach_of,
    reads_after,
    reads_after_each,
    why,
    why_words,
)
from ledger.reads.erasure_requests import approved_requests
from ledger.reads.names import Names
from ledger.rules.memories import revert_refusal
from ledger.rules.refusals import Refusal
from ledger.views.answers import answer, refused
from ledger.views.forms.memories import REVERT_REASON_MAX, RevertForm
from ledger.views.forms.search import CorrectionFilters
from ledger.views.http import SignedInRequest, admin_only
from ledger.views.paging import BadCursor, asked, keyset_page, next_query
from ledger.views.presenting import said_label, source_words, status_words

LIST_TEMPLATE = "ledger/corrections.html"
DETAIL_TEMPLATE = "ledger/correction.html"
ERASURES_TEMPLATE = "ledger/erasures.html"
PAGE_SIZE = 50

# A person in the audit is named with the role they had when they acted.
ROLE_WORDS: dict[str, str] = {
    ActorRole.PERSON: "the person",
    ActorRole.SUPPORT: "support",
    ActorRole.ADMIN: "an admin",
}


def who_words(names: Names, label: str, role: str) -> str:
    """Who acted, with their role then: 'support (sam)', 'the assistant (crm-bot)'."""
    username = Actor.username_in(label)
    if username is None:
        return names.who(label)
    role_words = ROLE_WORDS.get(role)
    return f"{role_words} ({username})" if role_words else username


def _unknown(data: QueryDict, form: type[forms.Form]) -> list[str]:
    return sorted(name[:50] for name in data if name not in form.base_fields)


@dataclass(frozen=True)
class Entry:
    """One correction in the list, in words."""

    memory: Memory
    original: Memory
    revert: bool
    who: str
    why: str
    reads_after: int
    status: str
    # Whether its page offers the revert: the link says so ("Compare and revert").
    revertable: bool


@admin_only
@require_GET
def corrections(request: SignedInRequest) -> HttpResponse:
    """Every correction and revert, newest first, a keyset page at a time, filtered by who
    corrected (role, person), subject and day range."""
    form = CorrectionFilters(request.GET)
    unknown = _unknown(request.GET, CorrectionFilters)
    context: dict[str, Any] = {"form": form}
    if unknown:
        context["error"] = f"Unknown filter: {', '.join(unknown)}."
        return _list_response(request, context, 400)
    if not form.is_valid():
        context["error"] = "Check the filters: " + " ".join(
            str(e) for errors in form.errors.values() for e in errors
        )
        return _list_response(request, context, 400)
    data = form.cleaned_data
    rows = listing(Memory.objects.visible_to(request.user))
    if data["who"] or data["person"]:
        person = Actor.label_for_user(data["person"]) if data["person"] else ""
        rows = rows.written_by(role=data["who"], actor=person)
    if data["subject_row"] is not None:
        rows = rows.for_subject(data["subject_row"])
    rows = rows.written_between(*day_window(data["written_from"], data["written_to"]))
    try:
        page = keyset_page(
            rows, field="written_at", cursor=data["after"], size=PAGE_SIZE, newest_first=True
        )
    except BadCursor as error:
        context["error"] = str(error)
        return _list_response(request, context, 400)
    reads = reads_after_each(page.rows)
    names = Names(request.user.get_username(), frozenset())
    context.update(
        entries=[
            Entry(
                memory=m,
                original=m.supersedes,  # type: ignore[arg-type]  # a correction replaced one
                revert=m.restores_id is not None,
                who=who_words(names, m.author, m.author_role),  # type: ignore[attr-defined]
                why=why_words(m.author_reason),  # type: ignore[attr-defined]
                reads_after=reads.get(m.pk, 0),
                status=status_words(m, by_revert=m.reverted),  # type: ignore[attr-defined]
                revertable=revert_refusal(
                    is_correction=True,
                    status=m.status,
                    restored_status=m.supersedes.status,  # type: ignore[union-attr]
                )
                is None,
            )
            for m in page.rows
        ],
        next_query=next_query(request.GET, page.next_cursor),
        continued=bool(data["after"]),
        asked=asked(request.GET).urlencode(),
    )
    return _list_response(request, context, 200)


def _list_response(request: SignedInRequest, context: dict[str, Any], status: int) -> HttpResponse:
    template = LIST_TEMPLATE
    if request.htmx and request.htmx.target == "correction-rows":
        template += "#rows"
    response = render(request, template, context, status=status)
    patch_vary_headers(response, ("HX-Request", "HX-Target"))
    return response


@dataclass(frozen=True)
class Side:
    """One side of a correction's page: the original or the replacement."""

    memory: Memory
    said: str
    wrote: str
    status: str
    sources: list[tuple[Source, str, str]]


@dataclass(frozen=True)
class RevertedBy:
    """The admin's revert that replaced a correction, in words."""

    memory: Memory
    who: str
    why: str
    # Whether the revert is still the current memory, and so can be reverted in turn.
    revertable: bool


@dataclass(frozen=True)
class Step:
    """One version in the chain, in words."""

    version: Version
    what: str
    who: str
    status: str
    here: bool


def _correction(request: SignedInRequest, pk: uuid.UUID) -> Memory:
    """The correction ``pk``, if it is one the viewer may see; a 404 otherwise."""
    return get_object_or_404(listing(Memory.objects.visible_to(request.user)), pk=pk)


def _what(version: Version) -> str:
    memory = version.memory
    if memory.supersedes_id is None:
        return "First written"
    if not version.correction:
        return "Rewritten by an agent"
    if memory.restores_id is None:
        return "Corrected"
    return "Reverted: earlier words put back"


def _detail_context(request: SignedInRequest, memory: Memory, **extra: Any) -> dict[str, Any]:
    original = memory.supersedes
    assert original is not None  # ``listing`` holds only memories that replaced another
    chain = chain_of(memory)
    names = Names(request.user.get_username(), frozenset())
    authors = {v.memory.pk: who_words(names, v.memory.author, v.memory.author_role) for v in chain}  # type: ignore[attr-defined]
    evidence: dict[uuid.UUID, list[Source]] = {}
    sources = Source.objects.filter(memory__in=[original, memory]).select_related("run")
    for source in sources.order_by("received_at", "id"):
        evidence.setdefault(source.memory_id, []).append(source)  # type: ignore[arg-type]
    # Each version's successor in the chain: a revert's says "replaced by a revert".
    following = {v.memory.supersedes_id: v.memory for v in chain}

    def status(m: Memory) -> str:
        successor = following.get(m.pk)
        return status_words(
            m, by_revert=successor is not None and successor.restores_id is not None
        )

    def side(m: Memory) -> Side:
        # A copied correction's source says who corrected it then, not who copied it.
        wrote_words = authors.get(m.restores_id or m.pk, authors.get(m.pk, ""))
        return Side(
            memory=m,
            said=said_label(
                m,
                own=False,
                created_by_viewer=False,
                source=next(iter(evidence.get(m.pk, [])), None),
            ),
            wrote=authors.get(m.pk, "someone unrecorded"),
            status=status(m),
            sources=[
                (s, *source_words(s, corrected_by=wrote_words)) for s in evidence.get(m.pk, [])
            ],
        )

    refusal = revert_refusal(
        is_correction=True, status=memory.status, restored_status=original.status
    )
    reads: Reads = reads_after(original, memory.written_at)
    revert = memory.restores_id is not None
    successor = following.get(memory.pk)
    reverted_by = None
    if successor is not None and successor.restores_id is not None:
        reverted_by = RevertedBy(
            memory=successor,
            who=authors.get(successor.pk, "someone unrecorded"),
            why=why(successor.author_reason),  # type: ignore[attr-defined]
            revertable=revert_refusal(
                is_correction=True, status=successor.status, restored_status=memory.status
            )
            is None,
        )
    return {
        "memory": memory,
        "original": side(original),
        "sides": [
            ("Original, the correction undone" if revert else "Original", side(original)),
            ("Replacement, the words put back" if revert else "Replacement", side(memory)),
        ],
        "revert": revert,
        "restores": memory.restores,
        "who": authors.get(memory.pk, "someone unrecorded"),
        "why": why(memory.author_reason),  # type: ignore[attr-defined]
        "reads": reads,
        "reach": reach_of(memory),
        "reverted_by": reverted_by,
        "chain": [
            Step(
                version=v,
                what=_what(v),
                who=authors.get(v.memory.pk, "someone unrecorded"),
                status=status(v.memory),
                here=v.memory.pk == memory.pk,
            )
            for v in chain
        ],
        "latest": chain[-1],
        "may_revert": refusal is None,
        "not_revertable": refusal.detail if refusal else "",
        "reason_max": REVERT_REASON_MAX,
        "reason": "",
        "error": "",
        **extra,
    }


@admin_only
@require_GET
def correction(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """One correction: the original and the replacement side by side, who corrected it and
    why, who was still given the original afterwards, the chain, and the revert form."""
    memory = _correction(request, pk)
    return render(request, DETAIL_TEMPLATE, _detail_context(request, memory))


@admin_only
@require_POST
def correction_revert(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """Revert the correction: a copy of what it replaced supersedes it. htmx gets the page's
    correction section in its new state; a plain form post is redirected back to the page."""
    memory = get_object_or_404(Memory.objects.visible_to(request.user), pk=pk)
    form = RevertForm(request.POST)
    # Shown again as typed, should it be refused; a NUL byte cannot be put on a page.
    typed = request.POST.get("reason", "").replace("\x00", "")
    try:
        if not form.is_valid():
            problem = " ".join(str(e) for errors in form.errors.values() for e in errors)
            raise Refusal("reason_invalid", problem, 400)
        copy = revert_correction(
            memory=memory, actor=Actor.for_user(request.user), reason=form.cleaned_data["reason"]
        )
    except Refusal as refusal:
        shown = listing(Memory.objects.visible_to(request.user)).filter(pk=pk).first()
        if shown is None:
            # Not a correction: it has no page here, only the refusal in words.
            return refused(
                request,
                refusal,
                fragment=f"{DETAIL_TEMPLATE}#refused",
                page=DETAIL_TEMPLATE,
                context={"memory": memory, "refused_only": True},
            )
        return refused(
            request,
            refusal,
            fragment=f"{DETAIL_TEMPLATE}#correction",
            page=DETAIL_TEMPLATE,
            context=lambda: _detail_context(request, shown, reason=typed),
        )
    return answer(
        request,
        fragment=f"{DETAIL_TEMPLATE}#correction",
        context=lambda: _detail_context(request, _correction(request, pk), reverted=copy),
        redirect_to=reverse("audit-correction", args=[memory.pk]),
        message="Reverted: the words this correction replaced are the current memory again. "
        "The revert is in the audit, and can itself be reverted from its own page.",
    )


# The kinds of rows an erasure blanks, as its record counts them: field, one, many.
BLANKED = (
    ("memories", "memory", "memories"),
    ("ledger_entries", "ledger entry", "ledger entries"),
    ("sources", "source", "sources"),
    ("journal_entries", "journal entry", "journal entries"),
    ("run_notes", "run note", "run notes"),
    ("recalls", "recorded recall", "recorded recalls"),
    ("snapshots", "compaction snapshot", "compaction snapshots"),
    ("conflicts", "conflict", "conflicts"),
    ("write_decisions", "write decision’s reason", "write decisions’ reasons"),
    ("history_rows", "earlier version in the history", "earlier versions in the history"),
    ("stored_responses", "stored API response (deleted)", "stored API responses (deleted)"),
)


@dataclass(frozen=True)
class ErasureEntry:
    erasure: Erasure
    asked: str
    carried: str
    blanked: list[str]


def _asked_words(
    erasure: Erasure, carried: str, names: Names, request: ErasureRequest | None
) -> str:
    if not erasure.requested_by:
        return "Not recorded"
    # The role too: staff may type their own label as who asked.
    if erasure.erased_by_role == ActorRole.PERSON and erasure.requested_by == erasure.erased_by:
        return "The person themselves, on the dashboard"
    if request is not None:
        # Support recorded who asked, on the request; the admin who approved carried it out.
        # Only support files requests (``access.erasure_needs_approval``).
        recorded = who_words(names, request.requested_by, ActorRole.SUPPORT)
        return f"“{erasure.requested_by}”, as recorded by {recorded} and approved by {carried}"
    return f"“{erasure.requested_by}”, as recorded by {carried}"


def _blanked(erasure: Erasure) -> list[str]:
    counts = []
    for name, one, many in BLANKED:
        n = getattr(erasure, name)
        counts.append(f"{n} {one if n == 1 else many}")
    return [*counts, "the subject’s display name"]


@admin_only
@require_GET
def erasures(request: SignedInRequest) -> HttpResponse:
    """Every erasure, newest first, a keyset page at a time: when, which subject, who asked,
    who carried it out, and how many rows of each kind lost their content."""
    unknown = sorted(name[:50] for name in request.GET if name != "after")
    if unknown:
        refused = {"error": f"Unknown filter: {', '.join(unknown)}."}
        return render(request, ERASURES_TEMPLATE, refused, status=400)
    rows = Erasure.objects.filter(access.visible_subjects(request.user, via="subject__"))
    cursor = request.GET.get("after", "")
    try:
        page = keyset_page(
            rows.select_related("subject"),
            field="erased_at",
            cursor=cursor,
            size=PAGE_SIZE,
            newest_first=True,
        )
    except BadCursor as error:
        return render(request, ERASURES_TEMPLATE, {"error": str(error)}, status=400)
    names = Names(request.user.get_username(), frozenset())
    approved = approved_requests(page.rows)
    entries = []
    for erasure in page.rows:
        carried = who_words(names, erasure.erased_by, erasure.erased_by_role)
        asked = _asked_words(erasure, carried, names, approved.get(erasure.pk))
        entries.append(ErasureEntry(erasure, asked, carried, _blanked(erasure)))
    context: dict[str, Any] = {
        "entries": entries,
        "next": page.next_cursor,
        "continued": bool(cursor),
    }
    return render(request, ERASURES_TEMPLATE, context)
