"""The history of one memory: every version, who changed it and why, and (for support)
where each version came from and which agent runs read it. A fixed number of queries,
however long the chain of corrections and however often it was read."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.db.models import F, Prefetch, Window
from django.db.models.functions import RowNumber
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ledger import access
from ledger.models import Memory, RecallItem, Source
from ledger.views.http import SignedInRequest
from ledger.views.memories import is_own, visible_memory
from ledger.views.presenting import STATUS_CHANGES, Names, source_words, steps

# The latest reads of one version on its history page; the API lists them all.
READS_SHOWN = 50


def _chain(memory: Memory) -> list[Memory]:
    """Every version of ``memory``, newest first: what it corrected, and what corrected it.

    Corrections stay within one subject, so its links are read in one light query and
    walked here, whatever the length of the chain.
    """
    links = dict(Memory.objects.for_subject(memory.subject).values_list("pk", "supersedes_id"))
    following = {old: new for new, old in links.items() if old is not None}
    first = memory.pk
    while links.get(first) is not None:
        first = links[first]
    ids = [first]
    while ids[-1] in following:
        ids.append(following[ids[-1]])
    sources = Source.objects.select_related("run")
    rows = Memory.objects.filter(pk__in=ids).prefetch_related(Prefetch("sources", sources))
    by_id = {m.pk: m for m in rows}
    return [by_id[pk] for pk in reversed(ids)]


def _latest_reads(chain: list[Memory]) -> dict[uuid.UUID, list[RecallItem]]:
    """The latest recalls of each version, at most ``READS_SHOWN`` each, in one query."""
    latest = (
        RecallItem.objects.filter(memory__in=chain)
        .select_related("recall__agent", "recall__run")
        .annotate(
            row=Window(
                RowNumber(),
                partition_by=[F("memory_id")],
                order_by=[F("recall__recalled_at").desc(), F("recall_id").desc()],
            )
        )
        .filter(row__lte=READS_SHOWN)
        .order_by("memory_id", "row")
    )
    reads: dict[uuid.UUID, list[RecallItem]] = {}
    for item in latest:
        reads.setdefault(item.memory_id, []).append(item)
    return reads


@login_required
@require_GET
def memory_history(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """Every version of one memory: the chain of corrections, each with its history."""
    memory = visible_memory(request, pk)
    chain = _chain(memory)
    history = list(
        Memory.history.filter(id__in=[m.pk for m in chain]).order_by("history_date", "history_id")
    )
    names = Names.for_labels(request.user, [row.history_actor for row in history])
    staff = access.is_staff(request.user)
    # Support traces a complaint: where each version came from and which runs read it.
    reads = _latest_reads(chain) if staff else {}
    versions = []
    for m in chain:
        rows = [row for row in history if row.id == m.pk]
        # Who wrote this version: for a dashboard correction, who corrected it.
        wrote = names.who(rows[0].history_actor) if rows else "someone unrecorded"
        sources = [(s, *source_words(s, corrected_by=wrote)) for s in m.sources.all()]
        versions.append(
            {
                "memory": m,
                "status": STATUS_CHANGES.get(m.status, m.status),
                "steps": steps(rows, names=names),
                "current": m.pk == memory.pk,
                "sources": sources if staff else (),
                "reads": reads.get(m.pk, []),
            }
        )
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
