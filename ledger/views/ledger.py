"""A subject's ledger of facts and commitments, for people.

Support and admins see everything, each entry with its source. The person the subject
is about sees only the commitments and proposals recorded about them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote, urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone

from ledger import access
from ledger.choices import LEDGER_KIND_READINGS, LedgerKind
from ledger.models import LedgerEntry, LedgerEntryQuerySet, Subject
from ledger.views.answers import answer
from ledger.views.http import SignedInRequest

TEMPLATE = "ledger/subject_ledger.html"
# The person reads these about themselves; agents and support read LEDGER_KIND_READINGS.
OWNER_LABELS = {
    LedgerEntry.Kind.COMMITMENT: "Agreed: the assistant has to keep to this.",
    LedgerEntry.Kind.PROPOSAL: "Only proposed. Nothing happens unless you agree to it.",
}


@dataclass(frozen=True)
class Row:
    entry: LedgerEntry
    label: str
    status: str


@dataclass(frozen=True)
class Section:
    title: str
    slug: str
    rows: list[Row]
    empty: str


def _rows(
    entries: LedgerEntryQuerySet,
    now: datetime,
    labels: dict[LedgerKind, str] = LEDGER_KIND_READINGS,
) -> list[Row]:
    related = entries.select_related(
        "run", "agent", "source", "promotion_source", "supersedes", "superseded_by"
    )
    return [Row(e, labels[LedgerKind(e.kind)], e.status_at(now)) for e in related]


def staff_sections(entries: LedgerEntryQuerySet, now: datetime) -> list[Section]:
    return [
        Section("In force", "in-force", _rows(entries.in_force(now), now), "Nothing in force."),
        Section(
            "Expired",
            "expired",
            _rows(entries.stale(now), now),
            "Nothing has expired.",
        ),
        Section(
            "Superseded", "superseded", _rows(entries.superseded(), now), "Nothing superseded."
        ),
        Section("Withdrawn", "withdrawn", _rows(entries.withdrawn(), now), "Nothing withdrawn."),
    ]


def owner_sections(entries: LedgerEntryQuerySet, now: datetime) -> list[Section]:
    shown = entries.shown_to_owner(now)
    return [
        Section(
            "What was agreed with you",
            "commitments",
            _rows(shown.filter(kind=LedgerEntry.Kind.COMMITMENT), now, OWNER_LABELS),
            "Nothing has been agreed with you.",
        ),
        Section(
            "Proposals you have not agreed to",
            "proposals",
            _rows(shown.filter(kind=LedgerEntry.Kind.PROPOSAL), now, OWNER_LABELS),
            "No open proposals.",
        ),
    ]


def support_mail(subject: Subject) -> str:
    """A mailto: link to support that names the subject, or "" when no address is set."""
    address = settings.MEMORYADMIN_SUPPORT_EMAIL
    if not address:
        return ""
    about = {"subject": f"Something is wrong in what the assistant recorded ({subject.ref})"}
    return f"mailto:{address}?{urlencode(about, quote_via=quote)}"


@login_required
def subject_ledger(request: SignedInRequest, ref: str) -> HttpResponse:
    subject = get_object_or_404(Subject.objects.visible_to(request.user), ref=ref)
    staff = access.may_see_ledger_in_full(request.user)
    now = timezone.now()
    entries = LedgerEntry.objects.filter(subject=subject)
    kind = request.GET.get("kind", "")
    if staff and kind in LedgerEntry.Kind.values:
        entries = entries.filter(kind=kind)
    else:
        kind = ""
    context = {
        "subject": subject,
        "kind": kind,
        "kinds": LedgerEntry.Kind.choices,
        "sections": staff_sections(entries, now) if staff else owner_sections(entries, now),
        "support_email": settings.MEMORYADMIN_SUPPORT_EMAIL,
        "support_mail": support_mail(subject),
        "conflicts": LedgerEntry.objects.filter(subject=subject).contradictions(now)
        if staff
        else [],
    }
    return answer(request, fragment=f"{TEMPLATE}#sections", page=TEMPLATE, context=context)
