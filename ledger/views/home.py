"""The landing page: the subjects a person may see."""

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ledger.models import Subject
from ledger.querysets import is_staff_role


@login_required
def home(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    subjects = Subject.objects.visible_to(request.user).annotate(
        active=Count("memories", filter=Q(memories__status="active")),
        pending=Count("memories", filter=Q(memories__status="pending")),
    )
    if query:
        subjects = subjects.filter(Q(ref__icontains=query) | Q(display_name__icontains=query))
    return render(
        request,
        "ledger/home.html",
        {"subjects": subjects[:200], "query": query, "staff": is_staff_role(request.user)},
    )
