"""The complaint page, for support: the complaint's words start the search, a subject and
some days narrow it.

The words find what holds them in every type (``search_everything``: memories, the ledger,
excerpts, run goals, compactions), best first. With a subject, the page also lists which
memories agents were given about it over the days, ranked by the words, with how often
each was served: two queries whatever the number of recalls (the ranking over the
memories recalled in the range, and the counts of those memories' recalls in it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from ledger.dates import day_window
from ledger.models import Memory, RecallItem, Subject
from ledger.reads.retrieval import Ranked, goal_terms, rank_memories, search_everything
from ledger.views.answers import answer
from ledger.views.forms.search import ComplaintForm
from ledger.views.http import SignedInRequest, support_only
from ledger.views.presenting import STATUS_CHANGES

# The memories listed; a subject rarely has more recalled in one stretch.
SHOWN = 100


@dataclass(frozen=True)
class Suspect:
    memory: Memory
    rank: float
    recalls: int
    last_read: datetime
    status: str


def suspects(
    subject: Subject, *, start: date | None, end: date | None, phrase: str
) -> list[Suspect]:
    """The memories recalled about ``subject`` from ``start`` to ``end`` (days, both
    included), ranked by ``phrase`` and, without one, by how often they were served."""
    served = RecallItem.objects.about(subject).recalled_between(*day_window(start, end))
    terms = goal_terms(phrase)
    if terms:
        candidates = Memory.objects.filter(pk__in=served.values("memory_id"))
        ranked = rank_memories(candidates=candidates, goal=phrase, k=SHOWN).memories
        usage = {
            row["memory_id"]: row
            for row in served.filter(memory__in=[r.memory.pk for r in ranked]).recalls_per_memory()
        }
    else:
        usage = {row["memory_id"]: row for row in served.recalls_per_memory()[:SHOWN]}
        by_id = Memory.objects.in_bulk(list(usage))
        ranked = [Ranked(by_id[memory_id], 0.0) for memory_id in usage]
    return [
        Suspect(
            memory=r.memory,
            rank=r.rank,
            recalls=usage[r.memory.pk]["recalls"],
            last_read=usage[r.memory.pk]["last_read"],
            status=STATUS_CHANGES.get(r.memory.status, r.memory.status),
        )
        for r in ranked
    ]


@support_only
@require_GET
def complaint_page(request: SignedInRequest) -> HttpResponse:
    asked = bool(request.GET)
    form = ComplaintForm(
        request.GET if asked else None, subjects=Subject.objects.visible_to(request.user)
    )
    context: dict[str, object] = {"form": form, "asked": asked, "shown": SHOWN}
    status = 200
    if asked and form.is_valid():
        subject = form.cleaned_data["subject"]
        start, end = form.cleaned_data["start"], form.cleaned_data["end"]
        phrase = form.cleaned_data["phrase"]
        context.update(subject=subject, phrase=phrase, dated=bool(start or end))
        if subject is not None:
            context["suspects"] = suspects(subject, start=start, end=end, phrase=phrase)
        if phrase:
            since, until = day_window(start, end)
            context["groups"] = search_everything(
                phrase, request.user, subject=subject, start=since, end=until
            )
    elif asked:
        status = 400
    return answer(
        request,
        fragment="ledger/complaint.html#result",
        page="ledger/complaint.html",
        context=context,
        status=status,
    )
