"""Who may see and change what. Every answer about the roles is a function here.

Three roles: the **end user** owns subjects and sees only those; **support** and
**admins** (together: staff) see every subject, its runs and its history. Querysets,
views, the API, templates and the reminder e-mails ask these functions; nothing else
looks at group names. The roles are Django groups, made after every ``migrate``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from django.contrib.auth.models import AnonymousUser, Group, Permission, User
from django.db.models import Exists, OuterRef, Q, QuerySet

from ledger.choices import Scope

type Person = User | AnonymousUser


# What these rules read of a subject and of an actor (``ledger.models.Subject``,
# ``ledger.actors.Actor``): access sits below both, so it names only what it looks at.
class OwnedSubject(Protocol):
    @property
    def owner_id(self) -> int | None: ...


class ActingAs(Protocol):
    @property
    def user(self) -> User | None: ...
    @property
    def agent(self) -> object | None: ...


class Role(StrEnum):
    END_USER = "user"
    SUPPORT = "support"
    ADMIN = "admin"


STAFF_ROLES = (Role.SUPPORT, Role.ADMIN)

# In the Django admin, admins only read (people, groups and every ledger model's view_*):
# people, the policy and everything else change through memoryadmin's own pages, so the
# admin role can never grant itself superuser or staff status, groups or a password there.
ADMIN_CAN = [
    ("auth", "view_user"),
    ("auth", "view_group"),
]

# Where a person's role is kept for the rest of the request once it has been looked up.
_ROLE_CACHE = "_memoryadmin_role"


def role_of(user: Person) -> Role | None:
    """The person's role; None when nobody is signed in. One query, then remembered."""
    if not isinstance(user, User) or not user.is_authenticated:
        return None
    cached: Role | None = getattr(user, _ROLE_CACHE, None)
    if cached is not None:
        return cached
    role = _role_from_groups(user, {group.name for group in user.groups.all()})
    setattr(user, _ROLE_CACHE, role)
    return role


def _role_from_groups(user: User, names: set[str]) -> Role:
    if user.is_superuser or Role.ADMIN in names:
        return Role.ADMIN
    if Role.SUPPORT in names:
        return Role.SUPPORT
    return Role.END_USER


def is_staff(user: Person) -> bool:
    """Support or an admin: someone who works on other people's memories."""
    return role_of(user) in STAFF_ROLES


def visible_subjects(user: Person, via: str = "") -> Q:
    """Staff see every subject, because their work is other people's memories; an end user
    sees only the subjects they own; nobody signed in sees none.

    The subjects ``user`` may see, as a filter on the subject reached through ``via``
    (``""`` on subjects themselves, ``"subject__"`` on memories, …).
    """
    if role_of(user) is None:
        return Q(pk__in=[])
    if is_staff(user):
        return Q()
    return Q(**{f"{via}owner": user})


def may_use_support_tools(user: Person) -> bool:
    """Support's workbench (search across subjects, traces, queues, complaints, memory as
    of a date, batch deletions and their undo) reaches into every subject, so it is staff's
    alone. Anyone else is answered as if none of it existed."""
    return is_staff(user)


def may_work_queues(user: Person) -> bool:
    """Taking a queue item, being handed one, its ticket and its internal notes: staff only,
    because the notes are staff's words about a person, shown on staff pages only."""
    return is_staff(user)


def queue_workers() -> QuerySet[User]:
    """Whom a queue item can be handed to: ``may_work_queues`` as a query, for the list."""
    staff = people_in_role(Role.SUPPORT) | people_in_role(Role.ADMIN)
    return User.objects.filter(staff, is_active=True).order_by("username")


def may_grant_staff_scope(actor: ActingAs) -> bool:
    """A key with the staff scope deletes memories across every subject, so only an admin
    gives a key that scope, or whoever runs memoryadmin's command line; never an agent.

    The command line acts as a system actor (no user, no agent).
    """
    if actor.agent is not None:
        return False
    return actor.user is None or role_of(actor.user) == Role.ADMIN


def may_change_any_write(scopes: Iterable[str]) -> bool:
    """A key with the staff scope is support's tooling, which an admin gave it to clean up
    after any agent: it may change what another agent or a person wrote, whatever the write
    policy says. Any other agent changes only its own writes, unless the write policy lets
    agents change each other's.

    That switch of the policy is ``Policy.agents_change_others``.
    """
    return Scope.STAFF in scopes


def may_see_permissions(user: Person) -> bool:
    """The permission page: staff. Support reads there what it may do to any subject and
    why, before doing it; an admin what every role and API scope may do. An end user has
    one role, and their own pages offer what it allows."""
    return is_staff(user)


def may_pause_memory(user: Person, subject: OwnedSubject) -> bool:
    """Pausing stops every new write about the subject and loses nothing, so whoever may see
    the subject may pause it, support included and with no second person: it is the safe
    first step while a complaint or an erasure request is looked into."""
    return acts_for_person(user, subject) or is_staff(user)


def scope_needed(method: str, required: str | None) -> str:
    """Reading needs the read scope and changing needs the write scope, except where an
    operation needs a scope of its own (batch deletions need the staff scope). A key holds
    the scopes an admin gave it; a key without the scope a request needs is refused (403).

    ``required`` is the view's own scope, if it has one; ``None``: by the method.
    """
    if required is not None:
        return required
    return Scope.READ if method.upper() in ("GET", "HEAD", "OPTIONS") else Scope.WRITE


def may_administer(user: Person) -> bool:
    """The admin's pages (the audit, reverting corrections, erasure review, the write
    policy, agents and their keys, people) change how memoryadmin works for everyone, so
    only an admin reaches them. Support and end users get a 404."""
    return role_of(user) == Role.ADMIN


def may_revert(actor: ActingAs) -> bool:
    """Reverting a correction overrules a person's or support's decision, so only an admin
    may, or whoever runs memoryadmin's command line; never an agent, and never support.

    The command line acts as a system actor (no user, no agent).
    """
    if actor.agent is not None:
        return False
    return actor.user is None or may_administer(actor.user)


def may_see_runs(user: Person) -> bool:
    """Runs are agents' working state across subjects (journals, notes, compactions), so
    only staff, who see every subject, see them."""
    return is_staff(user)


def recalls_readable_by(agent: object) -> Q:
    """The recall records an agent may read: its own. Another agent's runs, goals and blocks
    are that agent's working state; support traces every read on the dashboard."""
    return Q(agent=agent)


def may_see_ledger_in_full(user: Person) -> bool:
    """Staff see every ledger entry with its source, to trace where a commitment came from;
    the person sees only what binds them."""
    return is_staff(user)


def acts_for_person(user: Person, subject: OwnedSubject) -> bool:
    """Whether ``user`` is the person the subject is about, acting for themselves."""
    return (
        role_of(user) is not None and subject.owner_id is not None and subject.owner_id == user.pk
    )


def change_needs_reason(user: Person, subject: OwnedSubject) -> bool:
    """Anyone changing someone else's memory must say why, and the person reads that reason
    in their history; the person changing their own need not."""
    return not acts_for_person(user, subject)


def erasure_needs_approval(user: Person, subject: OwnedSubject) -> bool:
    """Support's erasure of someone is a request until an admin (a second person) approves
    it; the person erasing for themselves, and an admin, erase at once."""
    return role_of(user) == Role.SUPPORT and not acts_for_person(user, subject)


def may_decide_erasures(user: Person) -> bool:
    """Approving or declining support's erasure requests is an admin's: a second person,
    never the one who asked.

    The rules (not this function) refuse the one who asked, should an admin have filed one.
    """
    return may_administer(user)


def may_see_erasure_decisions(user: Person) -> bool:
    """Why an admin declined an erasure request, on the subject's page: staff (support
    filed it and reads the answer there); the person never asked for it."""
    return is_staff(user)


def may_withhold(user: Person | None, subject: OwnedSubject) -> bool:
    """Only the person may say of a memory "true, but don't use it", or lift that again: it
    is their choice about how what is true about them is used, and staff never speak for
    the person. Support and admins see the choice and its history; a memory that must not
    be used at all they delete, with a reason.

    ``user`` is None when nobody is signed in.
    """
    return user is not None and acts_for_person(user, subject)


def staff_usernames(usernames: Iterable[str]) -> set[str]:
    """Which of these people are staff, in one query (history pages name who acted)."""
    return {name for name, role in roles_of(usernames).items() if role in STAFF_ROLES}


def roles_of(usernames: Iterable[str]) -> dict[str, Role]:
    """The role of each of these people who still exists, in one query (the export names
    who acted as "the person", "support" or "an admin")."""
    names = set(usernames)
    if not names:
        return {}
    people = User.objects.filter(username__in=names).prefetch_related("groups")
    return {
        person.username: _role_from_groups(person, {group.name for group in person.groups.all()})
        for person in people
    }


def support_people() -> QuerySet[User]:
    """Support staff who can be e-mailed the support queue's reminders."""
    return (
        User.objects.filter(groups__name=Role.SUPPORT, is_active=True)
        .exclude(email="")
        .order_by("pk")
        .distinct()
    )


def admin_people() -> QuerySet[User]:
    """Admins who can be e-mailed an erasure request waiting for one of them."""
    return (
        User.objects.filter(people_in_role(Role.ADMIN), is_active=True)
        .exclude(email="")
        .order_by("pk")
        .distinct()
    )


def groups_for(role: Role) -> list[Group]:
    """The groups that give ``role``; an end user is in none."""
    if role == Role.END_USER:
        return []
    # get_or_create: a migration makes the group, but a test database may have been flushed.
    return [Group.objects.get_or_create(name=role)[0]]


def forget_role(user: Person) -> None:
    """Drop the remembered role after the person's groups changed."""
    if hasattr(user, _ROLE_CACHE):
        delattr(user, _ROLE_CACHE)


def ensure_roles(**kwargs: Any) -> None:
    """The staff groups and the admin's permissions, made after every ``migrate``.

    The admin group's permissions are *set*, not added to: an install that ran an older
    migration gave admins ``auth.change_user`` (a way to make themselves superuser), and
    the next ``migrate`` takes it away again.
    """
    Group.objects.get_or_create(name=Role.SUPPORT)
    admin, _ = Group.objects.get_or_create(name=Role.ADMIN)
    views = Permission.objects.filter(
        content_type__app_label="ledger", codename__startswith="view_"
    )
    named = Permission.objects.filter(
        content_type__app_label__in={app for app, _ in ADMIN_CAN},
        codename__in=[codename for _, codename in ADMIN_CAN],
    )
    admin.permissions.set([*views, *named])


def people_in_role(role: Role) -> Q:
    """A filter on people for those whose role is ``role``, as ``role_of`` decides it (a
    superuser is an admin; an admin who is also in the support group is an admin)."""
    admins = Q(is_superuser=True) | Q(
        Exists(Group.objects.filter(user=OuterRef("pk"), name=Role.ADMIN))
    )
    if role == Role.ADMIN:
        return admins
    support = Exists(Group.objects.filter(user=OuterRef("pk"), name=Role.SUPPORT))
    if role == Role.SUPPORT:
        return Q(support) & ~admins
    return ~Q(support) & ~admins


# The permission page: what each role and each API scope may do, asked of the rules above
# for a stand-in of each role, so the page cannot say other than what they decide.


@dataclass(frozen=True)
class _Subject:
    owner_id: int | None


@dataclass(frozen=True)
class _Acting:
    user: User | None
    agent: object | None = None


def stand_in(role: Role) -> User:
    """An unsaved person of ``role`` for the rules to judge: its role is given, not looked up."""
    user = User(pk=-1, username=f"a stand-in for {role}")
    setattr(user, _ROLE_CACHE, role)
    return user


def _own(user: User) -> _Subject:
    return _Subject(owner_id=user.pk)


# Someone else's subject: owned by nobody the stand-ins are.
_OTHERS = _Subject(owner_id=None)


def _yes(answer: bool) -> str:
    return "yes" if answer else "no"


def _on_others(user: User, answer: str) -> str:
    """Nobody acts on a subject they cannot see: for them the question is "no" (a 404)."""
    return answer if visible_subjects(user) == Q() else "no"


@dataclass(frozen=True)
class Question:
    """One thing a person may ask to do, the rule here that decides it, and the answer that
    rule gives a person of each role, in words."""

    action: str
    rule: Callable[..., object]
    answer: Callable[[User], str]
    # About a subject the asker does not own: what support may do to anyone's.
    about_others: bool = False
    # What the change makes of the memory, when the answer alone does not say.
    means: str = ""


QUESTIONS: tuple[Question, ...] = (
    Question(
        "See whose memories",
        visible_subjects,
        lambda u: "every subject's" if visible_subjects(u) == Q() else "only their own",
    ),
    Question(
        "Correct or delete someone else's memory",
        change_needs_reason,
        lambda u: _on_others(u, "with a reason" if change_needs_reason(u, _OTHERS) else "yes"),
        about_others=True,
    ),
    Question(
        "Confirm a guess or a held write about someone else",
        change_needs_reason,
        lambda u: _on_others(u, "with a reason" if change_needs_reason(u, _OTHERS) else "yes"),
        about_others=True,
        means="Confirmed, it becomes stated: the assistant may use it as something said, not"
        " guessed, and keeps it as long as what the person says. It is shown everywhere as"
        " confirmed by support, never as the person's own words. A held write is confirmed"
        " by someone other than whoever wrote it.",
    ),
    Question(
        "Settle or dismiss a possible conflict about someone else",
        change_needs_reason,
        lambda u: _on_others(u, "with a reason" if change_needs_reason(u, _OTHERS) else "yes"),
        about_others=True,
        means="Settling keeps one statement (or the right one, written in) and deletes the"
        " others; dismissing says it is not a conflict and keeps both.",
    ),
    Question(
        "Correct or delete their own memory",
        change_needs_reason,
        lambda u: "with a reason" if change_needs_reason(u, _own(u)) else "yes, no reason needed",
    ),
    Question(
        "Pause memory about someone else",
        may_pause_memory,
        lambda u: _yes(may_pause_memory(u, _OTHERS)),
        about_others=True,
    ),
    Question(
        "Erase everything about someone else",
        erasure_needs_approval,
        lambda u: _on_others(
            u,
            "only as a request an admin approves"
            if erasure_needs_approval(u, _OTHERS)
            else "yes, at once",
        ),
        about_others=True,
    ),
    Question(
        "Erase everything about themselves",
        erasure_needs_approval,
        lambda u: "request only" if erasure_needs_approval(u, _own(u)) else "yes, at once",
    ),
    Question(
        "Say “don't use this” of a memory",
        may_withhold,
        lambda u: (
            "of anyone's"
            if may_withhold(u, _OTHERS)
            else "of their own only"
            if may_withhold(u, _own(u))
            else "no"
        ),
    ),
    Question(
        "Approve or decline support's erasure requests",
        may_decide_erasures,
        lambda u: _yes(may_decide_erasures(u)),
    ),
    Question(
        "Read why an erasure request was declined",
        may_see_erasure_decisions,
        lambda u: _yes(may_see_erasure_decisions(u)),
    ),
    Question(
        "Say “don't use this” of someone else's memory",
        may_withhold,
        lambda u: _yes(may_withhold(u, _OTHERS)),
        about_others=True,
    ),
    Question(
        "Revert a correction",
        may_revert,
        lambda u: _yes(may_revert(_Acting(u))),
        about_others=True,
    ),
    Question(
        "Use support's tools (search, queues, traces, complaints, batch deletions)",
        may_use_support_tools,
        lambda u: _yes(may_use_support_tools(u)),
    ),
    Question(
        "Delete in a batch across subjects, and undo the batch",
        may_use_support_tools,
        lambda u: _yes(may_use_support_tools(u)),
        about_others=True,
        means="One reason covers the whole batch; a batch is undone once, as one, leaving"
        " alone any memory changed since.",
    ),
    Question(
        "Take, hand over and note queue items",
        may_work_queues,
        lambda u: _yes(may_work_queues(u)),
        about_others=True,
    ),
    Question("See agents' runs", may_see_runs, lambda u: _yes(may_see_runs(u))),
    Question(
        "See every ledger entry with its source",
        may_see_ledger_in_full,
        lambda u: _yes(may_see_ledger_in_full(u)),
    ),
    Question(
        "Administer (audit, policy, agents, people, webhooks)",
        may_administer,
        lambda u: _yes(may_administer(u)),
        about_others=True,
    ),
    Question(
        "Grant an API key the staff scope",
        may_grant_staff_scope,
        lambda u: _yes(may_grant_staff_scope(_Acting(u))),
    ),
    Question(
        "Read this permission page",
        may_see_permissions,
        lambda u: _yes(may_see_permissions(u)),
    ),
)


@dataclass(frozen=True)
class ScopeQuestion:
    """One thing an agent may ask to do with a key holding only ``scope``, and its rule."""

    action: str
    rule: Callable[..., object]
    answer: Callable[[str], str]


SCOPE_QUESTIONS: tuple[ScopeQuestion, ...] = (
    ScopeQuestion(
        "Change what another agent or a person wrote, whatever the write policy says",
        may_change_any_write,
        lambda scope: _yes(may_change_any_write([scope])),
    ),
    ScopeQuestion(
        "Revert a correction",
        may_revert,
        lambda scope: _yes(may_revert(_Acting(None, agent=scope))),
    ),
    ScopeQuestion(
        "Grant a key the staff scope",
        may_grant_staff_scope,
        lambda scope: _yes(may_grant_staff_scope(_Acting(None, agent=scope))),
    ),
)
