"""Which erasure ran when an admin approved which of support's requests.

An erasure's own row says who carried it out (the approving admin), not who filed the
request and recorded who asked: the erasure review names both, from the request.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from ledger.models import Erasure, ErasureRequest


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
