"""Idempotency: which answers a retry with the same Idempotency-Key gets again."""

from __future__ import annotations

from enum import StrEnum

from ledger.rules.memories import MEMORY_REFUSAL_CODES

# Idempotency: which answers a retry with the same Idempotency-Key gets again. A refusal
# caused by a state that can change is decided afresh, or a retry after the person resumed
# memory, an admin lifted a pause or freed a system-of-record key, a memory was retracted or
# a rate limit reset would be refused forever; a refusal that the request alone decides, or
# a state that never goes back, is replayed. The statuses are refusals of the first kind
# whatever their code: the subject or the agent is paused (423), the client's copy is stale
# (412), the agent sent too much too fast (429).
PASSING_REFUSAL_STATUSES = frozenset({412, 423, 429})


class OnRetry(StrEnum):
    DECIDED_AGAIN = "decided again"  # depends on a state that can change
    REPLAYED = "replayed"  # permanent for this request


_AGAIN, _REPLAYED = OnRetry.DECIDED_AGAIN, OnRetry.REPLAYED
# Every code a write refuses with (a test reads them from the source). A memory or a
# ledger entry refused a move because of its status: a deleted memory can be restored and
# a pending one confirmed, so those are decided again; a superseded, withdrawn or erased
# ledger entry stays so.
REFUSAL_ON_RETRY: dict[str, OnRetry] = {
    # The write gate.
    "system_of_record": _AGAIN,  # an admin edits the keys on the policy page
    "subject_cap_reached": _AGAIN,
    "memory_paused": _AGAIN,
    "agent_writes_paused": _AGAIN,
    "agent_quarantined": _AGAIN,
    "agent_stated_untrusted": _AGAIN,
    "unsafe_text": _REPLAYED,
    "agent_revoked": _REPLAYED,
    # A memory's moves.
    **dict.fromkeys(MEMORY_REFUSAL_CODES, _AGAIN),
    "not_the_person": _AGAIN,  # a subject can be linked to its person
    "not_current": _AGAIN,
    "not_a_correction": _REPLAYED,
    "subject_erased": _REPLAYED,
    "words_already_live": _AGAIN,
    "undo_expired": _REPLAYED,
    "expiry_in_past": _REPLAYED,
    "inferred_needs_expiry": _REPLAYED,
    "period_required": _REPLAYED,
    "not_an_admin": _AGAIN,
    # Whose write it is: an admin may let agents change each other's writes, or give the
    # key the staff scope; words held for review wait for someone other than their writer.
    "not_your_write": _AGAIN,
    "own_held_words": _AGAIN,  # once someone else confirms them, they are no longer held
    # Conflicts.
    "conflict_resolved": _REPLAYED,
    "choice_required": _REPLAYED,
    "not_a_contender": _AGAIN,  # a slot's conflict gains contenders
    "commitment_stands": _REPLAYED,
    "no_commitment": _REPLAYED,
    "not_possible": _REPLAYED,
    # The ledger.
    "ledger_entry_active": _AGAIN,
    "ledger_entry_expired": _AGAIN,
    "ledger_entry_superseded": _REPLAYED,
    "ledger_entry_withdrawn": _REPLAYED,
    "ledger_entry_erased": _REPLAYED,
    "ledger_entry_immutable": _REPLAYED,
    "established_needs_named_source": _REPLAYED,
    "agreement_needs_person": _REPLAYED,
    "not_a_proposal": _REPLAYED,
    "use_promote": _REPLAYED,
    "use_supersede": _REPLAYED,
    # Journal, notes, snapshots.
    "journal_move_refused": _AGAIN,  # an entry moves on, and may then allow the move
    "resolution_not_needed": _AGAIN,  # an intent that never reports back goes stale
    "resolution_invalid": _REPLAYED,
    "verification_required": _REPLAYED,
    "verification_too_long": _REPLAYED,
    "verification_invalid_character": _REPLAYED,
    "not_found": _AGAIN,  # the run or entry may be written next
    "too_many_notes": _AGAIN,  # a note can be deleted
    "unknown_subject": _AGAIN,  # a subject is made by its first write
    "subject_mismatch": _REPLAYED,  # a run keeps one subject
    "generation_exists": _REPLAYED,  # generations are never replaced
    # Retractions and their undo.
    "reason_required": _REPLAYED,
    "reason_invalid_character": _REPLAYED,
    "request_required": _REPLAYED,
    "request_too_long": _REPLAYED,
    "request_invalid_character": _REPLAYED,
    "selection_empty": _REPLAYED,
    "window_backwards": _REPLAYED,
    "selection_matches_nothing": _AGAIN,
    "selection_too_large": _AGAIN,
    "selection_changed": _AGAIN,
    "batch_already_undone": _REPLAYED,
    # Erasure requests (pages only). Something remembered about an erased subject gives an
    # erasure something to do again, a waiting request gets decided, and a person's role can
    # change; who filed a request, and a decision once taken, never change.
    "already_erased": _AGAIN,
    "erasure_already_requested": _AGAIN,
    "erasure_needs_admin": _AGAIN,
    "erasure_own_request": _REPLAYED,
    "erasure_request_decided": _REPLAYED,
    "decline_reason_required": _REPLAYED,
    # Pages only (people, agents, the policy), listed so that none is left undecided.
    "policy_unknown_setting": _REPLAYED,
    "policy_unchanged": _AGAIN,
    "policy_changed": _AGAIN,
    "grace_out_of_range": _REPLAYED,
    "keys_changed": _AGAIN,
    "scopes_required": _REPLAYED,
    "restriction_unchanged": _AGAIN,
    "agent_name_invalid": _REPLAYED,
    "agent_name_reserved": _REPLAYED,
    "agent_name_revoked": _REPLAYED,  # a revoked name is never reused
    "agent_name_taken": _REPLAYED,
    "username_reserved": _REPLAYED,
    "person_yourself": _REPLAYED,
    "person_superuser": _AGAIN,
    "person_active": _AGAIN,
    "person_disabled": _AGAIN,
    "person_not_end_user": _AGAIN,
    "person_owns_subjects": _AGAIN,
    "person_without_email": _AGAIN,
    "role_unchanged": _AGAIN,
    "subject_already_linked": _AGAIN,
    "subject_not_owned": _AGAIN,
    "subject_taken": _AGAIN,
    "mail_not_sent": _AGAIN,
    "not_locked_out": _AGAIN,  # a username or address can be locked out again
    # Staff sign-in through the identity provider: groups and usernames change there and here.
    "no_staff_role": _AGAIN,
    "username_taken": _AGAIN,
    # Support's queues (pages only): items enter and leave queues, people change roles.
    "not_in_queue": _AGAIN,
    "already_resolved": _AGAIN,  # a restored memory or reopened conflict is queued again
    "assignee_not_staff": _AGAIN,
    "confirm_alone": _AGAIN,  # a quarantine is lifted; held words are read one by one
    "nothing_selected": _REPLAYED,
    "ticket_invalid": _REPLAYED,
    "note_required": _REPLAYED,
    "note_too_long": _REPLAYED,
    "note_invalid_character": _REPLAYED,
}


def answer_is_replayed(status: int, code: str) -> bool:
    """Whether a write's answer is kept for its Idempotency-Key: what happened, and a
    refusal ``REFUSAL_ON_RETRY`` calls permanent. A malformed request (400) is not kept
    either: the client fixes it and sends it again under the same key."""
    if status == 400 or status in PASSING_REFUSAL_STATUSES:
        return False
    return REFUSAL_ON_RETRY.get(code, OnRetry.REPLAYED) == OnRetry.REPLAYED
