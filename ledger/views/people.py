"""The admin's People page: who signs in, in what role, owning which subjects; and on each
person's page their changes: role, subjects, access, a set-password link, and their history.
A sign-in lockout (a person's, or an address's on the list) is shown in words and lifted
with a reason, as the other changes are.

Admins only (anyone else gets a 404). Every change is a plain form posted to its own
address with a reason; a change made answers with the person page (redirected to), a
refusal with the page again, the words beside the field and what was typed kept. A field
a form does not have (``is_superuser``, ``is_staff``, ``groups``, ``password`` …) is
refused by name and never honoured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.db.models import Count, OuterRef, Prefetch, QuerySet, Subquery
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ledger import access
from ledger.access import Role
from ledger.actions import lockouts as lockout_actions
from ledger.actions import people as actions
from ledger.actions.people import ACTIVE, DISABLED, ROLE_WORDS
from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.choices import PersonField as Field
from ledger.models import LockoutLift, PersonChange, Subject
from ledger.reads import lockouts
from ledger.reads.names import Names
from ledger.rules.people import PersonMove, person_move_refusal, person_moves
from ledger.rules.refusals import Refusal
from ledger.views.answers import answer
from ledger.views.forms.people import (
    AddressLiftForm,
    LinkForm,
    NewPersonForm,
    ReasonOnlyForm,
    RoleForm,
    UnlinkForm,
)
from ledger.views.http import SignedInRequest, admin_only
from ledger.views.paging import BadCursor, next_query
from ledger.views.sorting import BadSort, Sortable

LIST_TEMPLATE = "ledger/people.html"
NEW_TEMPLATE = "ledger/person_new.html"
PERSON_TEMPLATE = "ledger/person.html"
PEOPLE_SHOWN = 50
# The columns that sort the list of people.
PEOPLE_SORTS = Sortable(
    columns={"username": "username", "subjects": "owned", "last-signed-in": "last_login"},
    default="username",
)
# Subjects named in a row of the list; the count beside them is exact.
SUBJECTS_IN_ROW = 3
SUBJECTS_SHOWN = 100
HISTORY_SHOWN = 200
FORM_EXTRAS = {"csrfmiddlewaretoken"}
FIELD_WORDS: dict[str, str] = {
    Field.PERSON: "Person",
    Field.NAME: "Name",
    Field.ROLE: "Role",
    Field.EMAIL: "E-mail address",
    Field.SUBJECT: "Subject owned",
    Field.ACCESS: "Signing in",
    Field.PASSWORD: "Password",
    Field.PASSWORD_LINK: "Set-password link",
    Field.PASSWORD_LINK_FAILED: "Set-password link not sent",
}
LINK_FIELDS = (Field.PASSWORD_LINK, Field.PASSWORD_LINK_FAILED)
ACCESS_WORDS = {ACTIVE: "can sign in", DISABLED: "disabled"}
ACTOR_ROLES: dict[str, str] = dict(ActorRole.choices)
OWNS_SUBJECTS = "person_owns_subjects"
# Which field of a form a refusal is about, so its words appear beside that field.
REFUSAL_FIELDS = {
    "reason_required": "reason",
    "reason_invalid_character": "reason",
    "role_unchanged": "role",
    OWNS_SUBJECTS: "role",
    "subject_taken": "subject_ref",
    "subject_already_linked": "subject_ref",
    "username_reserved": "username",
}


def _unknown(data: QueryDict, form: type[forms.Form] | Iterable[str]) -> list[str]:
    allowed = set(form.base_fields if isinstance(form, type) else form) | FORM_EXTRAS
    return sorted(name[:50] for name in data if name not in allowed)


def role_words(person: User) -> str:
    if person.is_superuser:
        return "Admin (superuser)"
    role = access.role_of(person)
    return ROLE_WORDS[role] if role is not None else ""


@admin_only
@require_GET
def people(request: SignedInRequest) -> HttpResponse:
    """Everyone who can sign in (or could), by username or as sorted (``?sort=-subjects``),
    a keyset page at a time, narrowed to one role with ``?role=``."""
    role = request.GET.get("role", "")
    after = request.GET.get("after", "")
    context: dict[str, Any] = {"role": role, "roles": ROLE_WORDS.items(), "rows": []}
    unknown = _unknown(request.GET, {"role", "after", "sort"})
    if unknown:
        context["error"] = f"Unknown filter: {', '.join(unknown)}."
        return render(request, LIST_TEMPLATE, context, status=400)
    if role and role not in actions.ROLES:
        context["error"] = f"'{role[:50]}' is not a role: choose end user, support or admin."
        return render(request, LIST_TEMPLATE, context, status=400)
    return _people_response(request, role=role, after=after)


def _people_response(
    request: SignedInRequest,
    *,
    role: str = "",
    after: str = "",
    address_form: AddressLiftForm | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    context: dict[str, Any] = {"role": role, "roles": ROLE_WORDS.items(), "error": error}
    listed = _with_last_link(User.objects.all()).annotate(owned=Count("subjects"))
    if role:
        listed = listed.filter(access.people_in_role(Role(role)))
    listed = listed.prefetch_related(
        "groups",
        Prefetch(
            "subjects",
            queryset=Subject.objects.order_by("ref")[:SUBJECTS_IN_ROW],
            to_attr="named_subjects",
        ),
    )
    # A form sent from the page (lifting an address's lockout) answers with the first page.
    data = request.GET if request.method == "GET" else QueryDict()
    try:
        sort = PEOPLE_SORTS.chosen(data)
        page = sort.page(listed, cursor=after, size=PEOPLE_SHOWN)
    except (BadSort, BadCursor) as refused:
        context.update(rows=[], error=str(refused))
        return render(request, LIST_TEMPLATE, context, status=400)
    # Rows of the annotated queryset; a keyset page's type does not carry the annotations.
    shown: list[Any] = page.rows
    context["sort"] = sort
    locked = lockouts.of_usernames(person.username for person in shown)
    context["rows"] = [
        (
            person,
            role_words(person),
            person.owned - len(person.named_subjects),
            _password_state(person),
            locked.get(person.username),
        )
        for person in shown
    ]
    context["next"] = next_query(data, page.next_cursor)
    # The whole list's, on every page of it and whatever role it is narrowed to.
    context["locked_addresses"] = lockouts.of_addresses()
    context["address_form"] = address_form or AddressLiftForm(auto_id="address_form_%s")
    return render(request, LIST_TEMPLATE, context, status=status)


@admin_only
@require_POST
def address_lift_lockout(request: SignedInRequest) -> HttpResponse:
    """Sign-ins from a locked-out address are tried again at once; answers with the
    People page (redirected to), or a refusal on it."""
    form = AddressLiftForm(request.POST, auto_id="address_form_%s")
    unknown = _unknown(request.POST, AddressLiftForm)
    if unknown:
        error = f"Unknown field: {', '.join(unknown)}. Nothing was lifted."
        return _people_response(request, error=error, status=400)
    if not form.is_valid():
        # An address the page did not list has no form to show its error beside.
        error = " ".join(str(problem) for problem in form["address"].errors)
        return _people_response(request, address_form=form, error=error, status=400)
    address = form.cleaned_data["address"]
    try:
        lockout_actions.lift_address_lockout(
            address, actor=Actor.for_user(request.user), reason=form.cleaned_data["reason"]
        )
    except Refusal as refusal:
        error = _place(form, refusal)
        return _people_response(request, address_form=form, error=error, status=refusal.status)
    return answer(
        request,
        redirect_to=reverse("people"),
        message=f"The lockout of {address} is lifted: sign-ins from it are tried again.",
    )


@admin_only
@require_http_methods(["GET", "POST"])
def person_new(request: SignedInRequest) -> HttpResponse:
    """A new person with a role, and an end user's subject. There is no password field:
    the person is e-mailed a link to choose their own."""
    if request.method == "GET":
        form = NewPersonForm(initial={"role": Role.END_USER})
        return render(request, NEW_TEMPLATE, {"form": form})
    form = NewPersonForm(request.POST)
    unknown = _unknown(request.POST, NewPersonForm)
    if unknown:
        error = f"Unknown field: {', '.join(unknown)}. Nobody was created."
        return render(request, NEW_TEMPLATE, {"form": form, "error": error}, status=400)
    if not form.is_valid():
        return render(request, NEW_TEMPLATE, {"form": form}, status=400)
    data = form.cleaned_data
    actor = Actor.for_user(request.user)
    try:
        person = actions.create_person(
            username=data["username"],
            email=data["email"],
            first_name=data["first_name"],
            last_name=data["last_name"],
            role=data["role"],
            subject_ref=data["subject_ref"],
            subject_name=data["subject_name"],
            reason=data["reason"],
            actor=actor,
            move_subject=False,
        )
    except actions.PersonExists as exists:
        form.add_error("username", f"{exists} Choose another username.")
        return render(request, NEW_TEMPLATE, {"form": form}, status=409)
    except Refusal as refusal:
        error = _place(form, refusal)
        return render(request, NEW_TEMPLATE, {"form": form, "error": error}, status=refusal.status)
    page = reverse("person", args=[person.username])
    try:
        sent_to = actions.send_password_link(person, actor=actor, reason=data["reason"])
    except Refusal as refusal:
        return answer(
            request,
            redirect_to=page,
            message=f"{person.username} was created, but no set-password link went out: "
            f"{refusal.detail} Send it again from this page.",
            level=messages.ERROR,
        )
    return answer(
        request,
        redirect_to=page,
        message=f"{person.username} was created; a set-password link went to {sent_to}.",
    )


@admin_only
@require_GET
def person_page(request: SignedInRequest, username: str) -> HttpResponse:
    return _person_response(request, _person_or_404(username))


type Change = Callable[[User, Actor, dict[str, Any]], str]


@admin_only
@require_POST
def person_role(request: SignedInRequest, username: str) -> HttpResponse:
    def apply(person: User, actor: Actor, data: dict[str, Any]) -> str:
        actions.change_role(person, actor=actor, role=data["role"], reason=data["reason"])
        return f"{person.username} is now {ROLE_WORDS[Role(data['role'])].lower()}."

    return _change(request, username, RoleForm, "role_form", apply)


@admin_only
@require_POST
def person_link(request: SignedInRequest, username: str) -> HttpResponse:
    def apply(person: User, actor: Actor, data: dict[str, Any]) -> str:
        subject = actions.link_subject(
            person,
            actor=actor,
            subject_ref=data["subject_ref"],
            subject_name=data["subject_name"],
            reason=data["reason"],
        )
        return f"{person.username} now owns {subject.name}."

    return _change(request, username, LinkForm, "link_form", apply)


@admin_only
@require_POST
def person_unlink(request: SignedInRequest, username: str) -> HttpResponse:
    def apply(person: User, actor: Actor, data: dict[str, Any]) -> str:
        subject = actions.unlink_subject(
            person, actor=actor, subject_ref=data["subject_ref"], reason=data["reason"]
        )
        return f"{person.username} no longer owns {subject.name}."

    return _change(request, username, UnlinkForm, "unlink_form", apply)


@admin_only
@require_POST
def person_disable(request: SignedInRequest, username: str) -> HttpResponse:
    def apply(person: User, actor: Actor, data: dict[str, Any]) -> str:
        actions.set_active(person, actor=actor, active=False, reason=data["reason"])
        return f"{person.username} is disabled: they can no longer sign in."

    return _change(request, username, ReasonOnlyForm, "access_form", apply)


@admin_only
@require_POST
def person_enable(request: SignedInRequest, username: str) -> HttpResponse:
    def apply(person: User, actor: Actor, data: dict[str, Any]) -> str:
        actions.set_active(person, actor=actor, active=True, reason=data["reason"])
        return f"{person.username} can sign in again."

    return _change(request, username, ReasonOnlyForm, "access_form", apply)


@admin_only
@require_POST
def person_password_link(request: SignedInRequest, username: str) -> HttpResponse:
    def apply(person: User, actor: Actor, data: dict[str, Any]) -> str:
        sent_to = actions.send_password_link(person, actor=actor, reason=data["reason"])
        return f"A set-password link went to {sent_to}."

    return _change(request, username, ReasonOnlyForm, "password_link_form", apply)


@admin_only
@require_POST
def person_lift_lockout(request: SignedInRequest, username: str) -> HttpResponse:
    def apply(person: User, actor: Actor, data: dict[str, Any]) -> str:
        lockout_actions.lift_person_lockout(person, actor=actor, reason=data["reason"])
        return f"{person.username}'s sign-in lockout is lifted: they can sign in at once."

    return _change(request, username, ReasonOnlyForm, "lockout_form", apply)


def _change(
    request: SignedInRequest,
    username: str,
    form_class: type[forms.Form],
    name: str,
    apply: Change,
) -> HttpResponse:
    """Check the form, make the change, and answer with the person page."""
    person = _person_or_404(username)
    form = form_class(request.POST, auto_id=f"{name}_%s")
    unknown = _unknown(request.POST, form_class)
    if unknown:
        error = f"Unknown field: {', '.join(unknown)}. Nothing was changed."
        return _person_response(request, person, error=error, status=400)
    if not form.is_valid():
        return _person_response(request, person, bound={name: form}, status=400)
    try:
        done = apply(person, Actor.for_user(request.user), form.cleaned_data)
    except Refusal as refusal:
        error = _place(form, refusal)
        person = _person_or_404(username)
        return _person_response(
            request, person, bound={name: form}, error=error, status=refusal.status
        )
    return answer(request, redirect_to=reverse("person", args=[person.username]), message=done)


def _place(form: forms.Form, refusal: Refusal) -> str:
    """Put the refusal beside its field when the form has it; else it is the page's."""
    field = REFUSAL_FIELDS.get(refusal.code, "")
    if field in form.fields:
        form.add_error(field, refusal.detail)
        return ""
    return refusal.detail


def _person_or_404(username: str) -> User:
    people = _with_last_link(User.objects.prefetch_related("groups"))
    return get_object_or_404(people, username=username)


def _with_last_link(people: QuerySet[User]) -> QuerySet[User]:
    """Each person with the last set-password link recorded for them: when, and whether
    the mail server took it (by username, which the audit chain seals)."""
    last = PersonChange.objects.filter(
        username=OuterRef("username"), field__in=LINK_FIELDS
    ).order_by("-changed_at", "-id")
    return people.annotate(
        last_link_at=Subquery(last.values("changed_at")[:1]),
        last_link_field=Subquery(last.values("field")[:1]),
    )


@dataclass(frozen=True)
class PasswordState:
    """Whether a person has chosen a password yet, and what became of their last link."""

    chosen: bool
    link_sent_at: datetime | None
    link_failed: bool


def _password_state(person: User) -> PasswordState:
    """For a person read through ``_with_last_link``."""
    field = getattr(person, "last_link_field", None)
    sent = field == Field.PASSWORD_LINK
    return PasswordState(
        chosen=person.has_usable_password(),
        link_sent_at=getattr(person, "last_link_at", None) if sent else None,
        link_failed=field == Field.PASSWORD_LINK_FAILED,
    )


@dataclass(frozen=True)
class HistoryRow:
    at: datetime
    who: str
    role: str
    what: str
    before: str
    after: str
    why: str


def _value_words(field: str, value: str) -> str:
    if not value:
        return "—"
    if field == Field.ROLE and value in actions.ROLES:
        return ROLE_WORDS[Role(value)].lower()
    if field == Field.ACCESS:
        return ACCESS_WORDS.get(value, value)
    return value


def _history(viewer: User, person: User) -> list[HistoryRow]:
    names = Names(viewer.get_username(), frozenset())
    # By username, not the person's row: the username is in the audit chain's seal, the
    # link to the row is not (it is cleared should the person be deleted).
    rows = PersonChange.objects.filter(username=person.get_username()).order_by(
        "-changed_at", "-id"
    )
    changes = [
        HistoryRow(
            at=row.changed_at,
            who=names.who(row.actor),
            role=ACTOR_ROLES.get(row.actor_role, row.actor_role),
            what=FIELD_WORDS.get(row.field, row.field),
            before=_value_words(row.field, row.before),
            after=_value_words(row.field, row.after),
            why=row.reason,
        )
        for row in rows[:HISTORY_SHOWN]
    ]
    # A lifted lockout is not a change to the person, but their history says it.
    lifts = LockoutLift.objects.filter(username=person.get_username())
    changes.extend(
        HistoryRow(
            at=lift.lifted_at,
            who=names.who(lift.actor),
            role=ACTOR_ROLES.get(lift.actor_role, lift.actor_role),
            what="Sign-in lockout",
            before=lockouts.Lockout(lift.username, "", lift.failures, lift.locked_until).words,
            after="lifted",
            why=lift.reason,
        )
        for lift in lifts.order_by("-lifted_at", "-id")[:HISTORY_SHOWN]
    )
    changes.sort(key=lambda row: row.at, reverse=True)
    return changes[:HISTORY_SHOWN]


def _person_response(
    request: SignedInRequest,
    person: User,
    *,
    bound: dict[str, forms.Form] | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    facts = actions.facts_about(person, viewer=request.user)
    moves = person_moves(facts)
    role_refusal = person_move_refusal(PersonMove.CHANGE_ROLE, facts)
    subjects = Subject.objects.filter(owner=person).order_by("ref")
    role = access.role_of(person)
    context: dict[str, Any] = {
        "person": person,
        "role": role_words(person),
        "facts": facts,
        "can": {move.value: move in moves for move in PersonMove},
        "kept_by_subjects": role_refusal is not None and role_refusal.code == OWNS_SUBJECTS,
        "password": _password_state(person),
        "subjects": list(subjects[:SUBJECTS_SHOWN]),
        "subject_count": subjects.count(),
        "history": _history(request.user, person),
        "lockout": lockouts.of_usernames([person.get_username()]).get(person.get_username()),
        "history_shown": HISTORY_SHOWN,
        "error": error,
        "role_form": RoleForm(auto_id="role_form_%s", initial={"role": role}),
        "link_form": LinkForm(auto_id="link_form_%s"),
        "unlink_form": UnlinkForm(auto_id="unlink_form_%s"),
        "access_form": ReasonOnlyForm(auto_id="access_form_%s"),
        "password_link_form": ReasonOnlyForm(auto_id="password_link_form_%s"),
        "lockout_form": ReasonOnlyForm(auto_id="lockout_form_%s"),
    }
    context.update(bound or {})
    return render(request, PERSON_TEMPLATE, context, status=status)
