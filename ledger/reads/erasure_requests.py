"""Which erasure ran when an admin approved which of support's requests, and where a
subject's requests stand.

An erasure's own row says who carried it out (the approving admin), not who filed the
request and recorded who asked: the erasure review names both, from the request.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from ledger.models import Erasure, ErasureRequest, Subject


@dataclass(frozen=True)
class Standing:
    """A subject's request waiting for an admin, and its latest decided one when an admin
    declined it (support, who filed it, reads why on the subject's page)."""

    waiting: ErasureRequest | None
    declined: ErasureRequest | None

    @property
    def labels(self) -> list[str]:
        """Who filed and who decided, for ``Names``."""
        return [
            label
            for request in (self.waiting, self.declined)
            if request is not None
            for label in (request.requested_by, request.decided_by)
            if label
        ]


def standing(subject: Subject, erasures: Iterable[Erasure] = ()) -> Standing:
    """Where ``subject``'s erasure requests stand, in one query.

    One request waits at a time and the next may be filed only once it is decided, so the
    newest request is the waiting one, if any, and the newest decided one is beside it. A
    decline that an erasure (``erasures``, the subject's) came after says nothing any more."""
    latest = list(subject.erasure_requests.order_by("-created_at", "-pk")[:2])
    waiting = next((r for r in latest if r.decision == ErasureRequest.Decision.WAITING), None)
    decided = next((r for r in latest if r.decision != ErasureRequest.Decision.WAITING), None)
    declined = None
    if (
        decided is not None
        and decided.decision == ErasureRequest.Decision.DECLINED
        and decided.decided_at is not None
        and all(erasure.erased_at < decided.decided_at for erasure in erasures)
    ):
        declined = decided
    return Standing(waiting=waiting, declined=declined)


def approved_requests(erasures: Iterable[Erasure]) -> dict[int, ErasureRequest]:
    """The approved request each of ``erasures`` carried out, by the erasure's id.

    An approval marks its request approved, then erases, in one transaction with the
    subject locked: its erasure is the subject's first one carried out by the approving
    admin at or after the decision. Two queries, however many erasures."""
    subjects = {erasure.subject_id for erasure in erasures}
    if not subjects:
        return {}
    # Every erasure of those subjects, not only these: the first after a decision may be
    # on another page of the review.
    carried: dict[int, list[tuple[datetime, int, str]]] = defaultdict(list)
    for pk, subject_id, erased_at, erased_by in (
        Erasure.objects.filter(subject_id__in=subjects)
        .order_by("erased_at", "pk")
        .values_list("pk", "subject_id", "erased_at", "erased_by")
    ):
        carried[subject_id].append((erased_at, pk, erased_by))
    found: dict[int, ErasureRequest] = {}
    approved = ErasureRequest.objects.filter(
        subject_id__in=subjects,
        decision=ErasureRequest.Decision.APPROVED,
        decided_at__isnull=False,
    )
    for request in approved:
        erasure = next(
            (
                pk
                for erased_at, pk, erased_by in carried[request.subject_id]
                if request.decided_at is not None
                and erased_at >= request.decided_at
                and erased_by == request.decided_by
            ),
            None,
        )
        if erasure is not None:
            found[erasure] = request
    return found
