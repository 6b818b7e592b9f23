"""The exact block one recall gave an agent, as it was recorded: support reads what the
assistant was told, word for word, and which memories it came from."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from ledger import access
from ledger.models import Recall
from ledger.views.http import SignedInRequest, support_only


@support_only
@require_GET
def recall_page(request: SignedInRequest, pk: int) -> HttpResponse:
    """One recall: agent, run, turn, goal, time, the block verbatim and the memories served."""
    recalls = Recall.objects.filter(access.visible_subjects(request.user, via="subject__"))
    recall = get_object_or_404(recalls.select_related("agent", "run", "subject"), pk=pk)
    items = recall.items.select_related("memory").order_by("position")
    return render(request, "ledger/recall.html", {"recall": recall, "items": list(items)})
