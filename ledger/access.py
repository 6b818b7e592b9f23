"""Who may see and change what. Every answer about the roles is a function here.

Three roles: the **end user** owns subjects and sees only those; **support** and
**admins** (together: staff) see every subject, its runs and its history. Querysets,
views, the API, templates and the reminder e-mails ask these functions; nothing else
looks at group names. The roles are Django groups, made after every ``migrate``.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    """The subjects ``user`` may see, as a filter on the subject reached through ``via``
    (``""`` on subjects themselves, ``"subject__"`` on memories, …).

    Staff see every subject; an end user only the ones they own; nobody signed in, none.
    """
    if role_of(user) is None:
        return Q(pk__in=[])
    if is_staff(user):
        return Q()
    return Q(**{f"{via}owner": user})


def may_use_support_tools(user: Person) -> bool:
    """Support's workbench: search across subjects, traces, queues, complaints, memory as of
    a date and batch retractions. Anyone else is answered as if none of it existed."""
    return is_staff(user)


def may_grant_staff_scope(actor: ActingAs) -> bool:
    """The ``staff`` API scope retracts memories across every subject: only an admin grants
    it, or whoever runs the command line (a system actor); never an agent."""
    if actor.agent is not None:
        return False
    return actor.user is None or role_of(actor.user) == Role.ADMIN


def may_change_any_write(scopes: Iterable[str]) -> bool:
    """A key with the ``staff`` scope is support's tooling, which an admin granted to clean
    up after any agent: it may change what another agent or a person wrote whatever the
    write policy says. Any other agent changes only its own writes unless the policy lets
    agents change each other's (``Policy.agents_change_others``)."""
    return Scope.STAFF in scopes


def may_administer(user: Person) -> bool:
    """The admin's pages: the audit, reverting corrections, erasure review, the write
    policy, agents and their keys, and people. Support and end users get a 404."""
    return role_of(user) == Role.ADMIN


def may_revert(actor: ActingAs) -> bool:
    """Reverting a correction overrules a person's or support's decision: an admin may, or
    whoever runs the command line (a system actor); never an agent or support."""
    if actor.agent is not None:
        return False
    return actor.user is None or may_administer(actor.user)


def may_see_runs(user: Person) -> bool:
    """Runs are agents' working state across subjects: journals, notes, compactions."""
    return is_staff(user)


def recalls_readable_by(agent: object) -> Q:
    """The recall records an agent may read: its own. Another agent's runs, goals and blocks
    are that agent's working state; support traces every read on the dashboard."""
    return Q(agent=agent)


def may_see_ledger_in_full(user: Person) -> bool:
    """Staff see every ledger entry with its source; the person only what binds them."""
    return is_staff(user)


def acts_for_person(user: Person, subject: OwnedSubject) -> bool:
    """Whether ``user`` is the person the subject is about, acting for themselves."""
    return (
        role_of(user) is not None and subject.owner_id is not None and subject.owner_id == user.pk
    )


def change_needs_reason(user: Person, subject: OwnedSubject) -> bool:
    """Anyone changing someone else's memory must say why; the person need not."""
    return not acts_for_person(user, subject)


def erasure_needs_approval(user: Person, subject: OwnedSubject) -> bool:
    """Support's erasure of someone is a request until an admin (a second person) approves
    it; the person erasing for themselves, and an admin, erase at once."""
    return role_of(user) == Role.SUPPORT and not acts_for_person(user, subject)


def may_decide_erasures(user: Person) -> bool:
    """Approving or declining support's erasure requests: an admin (the rules refuse the
    one who asked, should an admin have filed one)."""
    return may_administer(user)


def may_see_erasure_decisions(user: Person) -> bool:
    """Why an admin declined an erasure request, on the subject's page: staff (support
    filed it and reads the answer there); the person never asked for it."""
    return is_staff(user)


def may_withhold(user: Person | None, subject: OwnedSubject) -> bool:
    """Whether ``user`` may say of a memory "true, but don't use it", or lift that again.

    Only the person: it is their choice about how what is true about them is used, and
    staff never speak for the person. Support and admins see the choice and its history;
    a memory that must not be used at all they delete, with a reason.
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
