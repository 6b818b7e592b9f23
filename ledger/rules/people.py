"""People: what the People page and the create_person command may change about a
person, erasure requests, sign-in lockouts and reserved usernames."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ledger.rules.refusals import Refusal
from ledger.rules.text import forbidden_character

# Who asked for an erasure, as staff record it: a line, not a story (it outlives the content).
ERASURE_REQUEST_MAX = 200


def checked_request(text: str, *, required: bool = False) -> str:
    """Who asked for an erasure and how, on one line; refused in words when it is too long
    or holds an invisible character, or is missing where ``required`` (staff erasing for
    someone must say who asked, as anyone changing someone else's memory says why). Empty
    is allowed otherwise: a script run by the system does not know who asked."""
    request = " ".join(text.split())
    if required and not request:
        raise Refusal(
            "request_required", "Say who asked for the erasure, and how. Nothing was erased.", 400
        )
    if len(request) > ERASURE_REQUEST_MAX:
        raise Refusal(
            "request_too_long",
            f"Keep who asked to {ERASURE_REQUEST_MAX} characters (this is {len(request)}). "
            "Nothing was erased.",
            400,
        )
    if (found := forbidden_character(request)) is not None:
        raise Refusal(
            "request_invalid_character",
            f"Who asked holds an invisible character ({found}): type it again. Nothing was erased.",
            400,
        )
    return request


class PersonMove(StrEnum):
    CHANGE_ROLE = "change_role"
    LINK_SUBJECT = "link_subject"
    UNLINK_SUBJECT = "unlink_subject"
    DISABLE = "disable"
    ENABLE = "enable"
    SEND_PASSWORD_LINK = "send_password_link"
    LIFT_LOCKOUT = "lift_lockout"


@dataclass(frozen=True)
class PersonFacts:
    """What the rules about changing a person look at, read from the person beforehand."""

    name: str
    superuser: bool
    # The person is the admin asking.
    yourself: bool
    active: bool
    end_user: bool
    has_email: bool
    owned_subjects: int


def refuse_person_move(move: PersonMove, person: PersonFacts) -> None:
    """Why ``move`` may not be made on ``person``, as a refusal; nothing when it may."""
    if person.superuser:
        raise Refusal(
            "person_superuser",
            f"{person.name} is a superuser: superusers are managed from the command line "
            "only, never from a page. Nothing was changed.",
            403,
        )
    if person.yourself and move in (PersonMove.CHANGE_ROLE, PersonMove.DISABLE):
        raise Refusal(
            "person_yourself",
            "You cannot change your own role or disable yourself: ask another admin. "
            "Nothing was changed.",
            403,
        )
    if move == PersonMove.DISABLE and not person.active:
        raise Refusal("person_disabled", f"{person.name} is already disabled.", 409)
    if move == PersonMove.ENABLE and person.active:
        raise Refusal("person_active", f"{person.name} can already sign in.", 409)
    if move == PersonMove.CHANGE_ROLE:
        refuse_owner_leaving_end_users(person)
    if move == PersonMove.LINK_SUBJECT and not person.end_user:
        raise Refusal(
            "person_not_end_user",
            f"Only an end user owns a subject, and {person.name} is not one: make them an "
            "end user first. Nothing was changed.",
            409,
        )
    if move == PersonMove.SEND_PASSWORD_LINK and not person.active:
        raise Refusal(
            "person_disabled",
            f"{person.name} is disabled: enable them first, or the password they set would "
            "not let them in. Nothing was sent.",
            409,
        )
    if move == PersonMove.SEND_PASSWORD_LINK and not person.has_email:
        raise Refusal(
            "person_without_email",
            f"{person.name} has no e-mail address, so there is nowhere to send the link. "
            "An address is set from the command line "
            "(manage.py create_person NAME --update --email ADDRESS). Nothing was sent.",
            409,
        )


def refuse_owner_leaving_end_users(person: PersonFacts) -> None:
    """An end user who owns subjects stays one: as support or an admin they would work on
    their own subjects as staff, not as the person whose subjects they are. Their subjects
    are unlinked first, each with its reason, so that their history says so."""
    if person.end_user and person.owned_subjects:
        owned = "a subject" if person.owned_subjects == 1 else f"{person.owned_subjects} subjects"
        raise Refusal(
            "person_owns_subjects",
            f"{person.name} owns {owned}: as support or an admin they would work on their own "
            "as staff. Unlink their subjects first (on their page, each with a reason), then "
            "change the role. Nothing was changed.",
            409,
        )


def person_move_refusal(move: PersonMove, person: PersonFacts) -> Refusal | None:
    """Why the person page does not offer ``move``, or None when it does."""
    try:
        refuse_person_move(move, person)
    except Refusal as refusal:
        return refusal
    return None


def person_moves(person: PersonFacts) -> frozenset[PersonMove]:
    """The moves the person page offers: the ones ``refuse_person_move`` lets through."""
    return frozenset(move for move in PersonMove if person_move_refusal(move, person) is None)


def refuse_nothing_to_lift[L](lockout: L | None, *, name: str) -> L:
    """A lift needs a lockout in force: one that ended, or another admin lifted, is not
    lifted again (nor recorded as lifted)."""
    if lockout is None:
        raise Refusal(
            "not_locked_out",
            f"{name} is not locked out of sign-in (any more): nothing was lifted.",
            409,
        )
    return lockout


# Addresses under /people/ that are pages, not people.
RESERVED_USERNAMES = frozenset({"new"})


def refuse_reserved_username(username: str) -> None:
    if username.lower() in RESERVED_USERNAMES:
        raise Refusal(
            "username_reserved",
            f"'{username}' is the address of a page: choose another username.",
            400,
        )


def refuse_same_role(*, name: str, current: str, wanted: str) -> None:
    if current == wanted:
        raise Refusal("role_unchanged", f"{name} already has that role; nothing was changed.", 409)


def refuse_subject_taken(*, subject_ref: str, owner: str, person: str) -> None:
    """A subject has one owner: taking it from someone is two steps, each with a reason."""
    if owner == person:
        raise Refusal("subject_already_linked", f"{person} already owns {subject_ref}.", 409)
    if owner:
        raise Refusal(
            "subject_taken",
            f"The subject {subject_ref} belongs to {owner}. A subject has one owner: unlink "
            f"it on {owner}'s page first, with a reason. Nothing was changed.",
            409,
        )
