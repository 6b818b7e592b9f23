"""A person's reminders: what is due for review or about to expire, and marking them read."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ledger.actions.reminders import mark_read
from ledger.models import Reminder
from ledger.views.answers import answer
from ledger.views.http import SignedInRequest


@login_required
def reminders(request: SignedInRequest) -> HttpResponse:
    rows = (
        Reminder.objects.for_person(request.user)
        .actionable()
        .select_related("memory__subject")
        .order_by("read_at", "due_on", "pk")
    )
    return render(
        request,
        "ledger/reminders.html",
        {
            "mine": [r for r in rows if r.audience == Reminder.Audience.OWNER],
            "queue": [r for r in rows if r.audience == Reminder.Audience.SUPPORT],
            "emailed": settings.MEMORYADMIN_EMAIL,
        },
    )


@login_required
@require_POST
def reminder_read(request: SignedInRequest, pk: int) -> HttpResponse:
    # Someone else's reminder is a 404, exactly like one that does not exist.
    reminder = get_object_or_404(Reminder.objects.for_person(request.user).actionable(), pk=pk)
    mark_read(reminder=reminder)
    return answer(
        request,
        fragment="ledger/reminders.html#marked",
        context=lambda: {
            "reminder": reminder,
            "unread": Reminder.objects.for_person(request.user).unread().count(),
        },
        redirect_to=reverse("reminders"),
        message="Reminder marked as read.",
    )
