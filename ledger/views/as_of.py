"""A subject's memory as of a moment, for support: what was in force, the block an agent
would have been given, and the recalls actually made around then, verbatim."""

from __future__ import annotations

from datetime import datetime, time

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.views.decorators.http import require_GET

from ledger.dates import FIRST_YEAR, LAST_YEAR, askable
from ledger.models import Subject
from ledger.reads.as_of import AROUND, RECALLS_AROUND, as_of, recalls_around
from ledger.reads.recall import GOAL_MAX
from ledger.views.answers import answer
from ledger.views.http import SignedInRequest, support_only


class BadMoment(ValueError):
    pass


def parse_moment(text: str) -> datetime:
    """An ISO date-time (a time without a zone is the site's local time) or a date, which
    means the end of that day: everything that happened on it counts."""
    try:
        day = parse_date(text)
        moment = datetime.combine(day, time.max) if day else parse_datetime(text)
    except ValueError as error:
        raise BadMoment(f"“{text}” is not a real date or time.") from error
    if moment is None:
        raise BadMoment(
            f"“{text}” is not a date or a time: write it like 2027-03-02 or 2027-03-02T14:30."
        )
    if not askable(moment):
        raise BadMoment(f"Choose a moment between {FIRST_YEAR} and {LAST_YEAR}.")
    moment = timezone.make_aware(moment) if timezone.is_naive(moment) else moment
    now = timezone.now()
    if moment <= now:
        return moment
    # Today's date means the end of today: so far, now. Any later moment has no history
    # yet, and showing what is in force now under its date would pass a guess off as one.
    if day is not None and day == timezone.localdate(now):
        return now
    raise BadMoment(
        f"“{text}” has not come yet: choose a moment up to now (leave it empty for now)."
    )


@support_only
@require_GET
def subject_as_of(request: SignedInRequest, ref: str) -> HttpResponse:
    subject = get_object_or_404(Subject.objects.visible_to(request.user), ref=ref)
    typed = request.GET.get("at", "").strip()
    context: dict[str, object] = {
        "subject": subject,
        "typed": typed,
        "around_hours": int(AROUND.total_seconds() // 3600),
        "recalls_cap": RECALLS_AROUND,
    }
    status = 200
    try:
        at = parse_moment(typed) if typed else timezone.now()
    except BadMoment as error:
        context["error"] = str(error)
        status = 400
    else:
        goal = request.GET.get("goal", "").strip()[:GOAL_MAX]
        # A recall's own size, when its "Replay" link gives it; anything else: the default.
        k = request.GET.get("k", "")
        size = int(k) if k.isascii() and k.isdigit() and len(k) <= 3 else None
        context["state"] = as_of(subject, at, goal, size)
        context["recalls"] = recalls_around(subject, at)
        context["picker"] = timezone.localtime(at).strftime("%Y-%m-%dT%H:%M")
    return answer(
        request,
        fragment="ledger/as_of.html#result",
        page="ledger/as_of.html",
        context=context,
        status=status,
    )
