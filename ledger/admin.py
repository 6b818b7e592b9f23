"""The Django admin reads; it changes nothing.

Every model here, people and groups included, is shown read-only, its values as text: the
gated models change through the write functions, people on the People page, the policy on
the policy page, and a superuser is made only on the command line. So the admin role,
which holds only ``view_*`` permissions, has no route here to superuser or staff status,
to a group, or to anyone's password; and neither does anyone else.

Models with a history (``tracked()``) get simple-history's history pages, read-only too,
in memoryadmin's words: who acted (``history_actor``), in what role, why and what changed;
models without one keep Django's own, which works for them. Labels and help texts are the
ones a reader needs (the policy's are the policy page's), not Django's advice on editing.
"""

import dataclasses
from collections.abc import Hashable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.functional import cached_property
from simple_history.admin import SimpleHistoryAdmin
from simple_history.template_utils import HistoricalRecordContextHelper

from ledger import models
from ledger.choices import ActorRole
from ledger.dates import when
from ledger.models import MemoryQuerySet
from ledger.reads.names import Names
from ledger.rules.write_policy import POLICY_SETTINGS

if TYPE_CHECKING:
    ModelAdmin = admin.ModelAdmin[Any]
    UserModelAdmin = UserAdmin[User]
    ModelForm = forms.ModelForm[Any]
    AnyPaginator = Paginator[Any]
else:
    # ModelAdmin, ModelForm and Paginator take no type argument at runtime.
    ModelAdmin = admin.ModelAdmin
    UserModelAdmin = UserAdmin
    ModelForm = forms.ModelForm
    AnyPaginator = Paginator


# How many rows an admin list counts at most: five pages of a hundred. A count of every row
# is a scan of the whole table on each page of it (and a search's words are tested on each
# row counted), and a table of millions says nothing more by its exact size: past this, the
# list says "more than", and the filters or the search narrow it.
COUNT_CAP = 500


class CappedPaginator(AnyPaginator):
    """Pages of an admin list, counting at most ``COUNT_CAP`` rows (one bounded query)."""

    cap = COUNT_CAP

    @cached_property
    def counted(self) -> int:
        # The admin pages querysets. Unordered: the first rows found are counted, wherever
        # they come in the list.
        rows = cast(QuerySet[Any], self.object_list)
        return rows.order_by()[: self.cap + 1].count()

    @cached_property
    def count(self) -> int:
        return min(self.counted, self.cap)

    @property
    def capped(self) -> bool:
        """Whether there are more rows than are counted (and paged through)."""
        return self.counted > self.cap


class ReadOnly(ModelAdmin):
    """No add, change or delete for anyone, superusers included; every field as text.

    Lists are counted up to a cap, never in full (``CappedPaginator``), and sort only by
    the columns an index keeps in order (``sortable_by``), so that a list of millions of
    rows costs what a list of hundreds does."""

    paginator = CappedPaginator
    show_full_result_count = False
    # The admin's rendering of a row is most of a list's time (about half a millisecond a
    # row, nine columns each through its display machinery): fifty a page, not a hundred.
    list_per_page = 50

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def get_readonly_fields(
        self, request: HttpRequest, obj: Model | None = None
    ) -> list[str] | tuple[str, ...]:
        # Django shows a change page as text when it cannot be changed, but simple-history's
        # page of a past version renders the form itself: naming every field read-only
        # makes that page text as well, not inputs that look editable and are not.
        meta = self.model._meta
        fields = [*meta.fields, *meta.many_to_many]
        return [f.name for f in fields if f.editable and not f.auto_created]


class ReadOnlyAdmin(ReadOnly):
    """A model without a history: Django's own history page (its log) works for it."""


ACTOR_ROLES: dict[str, str] = dict(ActorRole.choices)


# simple-history ships no types, so its classes are Any to the type checker.
class LabelledChanges(HistoricalRecordContextHelper):  # type: ignore[misc]
    """What changed between two versions, in words: each field by its label on our pages,
    a choice by its label, a moment as the pages write one."""

    def __init__(self, model: type[Model], record: Any, labels: dict[str, str]) -> None:
        super().__init__(model, record)
        self.labels = labels

    def format_delta_change(self, change: Any) -> Any:
        formatted = super().format_delta_change(change)
        return dataclasses.replace(formatted, field=self.labels.get(change.field, formatted.field))

    def prepare_delta_change_value(self, change: Any, value: Any) -> Any:
        if value is None:
            return "none"
        if isinstance(value, datetime):
            return when(value)
        choices = dict(self.model._meta.get_field(change.field).flatchoices)
        if choices and isinstance(value, Hashable) and value in choices:
            return choices[value]
        return super().prepare_delta_change_value(change, value)


class TrackedReadOnlyAdmin(ReadOnly, SimpleHistoryAdmin):  # type: ignore[misc]
    """A tracked model: its history with who (and in what role), why and what changed,
    read-only (``templates/simple_history/object_history_list.html``)."""

    # Field labels in the history's changes, where the model's own would not do.
    field_labels: dict[str, str] = {}

    def get_historical_record_context_helper(self, request: HttpRequest, record: Any) -> Any:
        return LabelledChanges(self.model, record, self.field_labels)

    def set_history_delta_changes(
        self, request: HttpRequest, historical_records: Sequence[Any], **kwargs: Any
    ) -> None:
        """What changed in each version, and who made it in words: Django's
        ``history_user`` is not ours to set (people, agents and the system all act)."""
        super().set_history_delta_changes(request, historical_records, **kwargs)
        names = Names.for_labels(request.user, [r.history_actor for r in historical_records])
        for record in historical_records:
            # The oldest on the page has nothing to be compared with.
            record.compared = hasattr(record, "history_delta_changes")
            record.who_words = names.who(record.history_actor)
            record.role_words = ACTOR_ROLES.get(record.history_role, record.history_role)

    def _refuse_malformed_id(self, object_id: str) -> None:
        # simple-history looks the id up as given: one that is no id of this model (a typed
        # address, "<id>/change" caught by its pattern) is a page that does not exist.
        try:
            self.model._meta.pk.to_python(unquote(object_id))
        except ValidationError as invalid:
            raise Http404 from invalid

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        self._refuse_malformed_id(object_id)
        response: HttpResponse = super().history_view(request, object_id, extra_context)
        return response

    def history_form_view(
        self,
        request: HttpRequest,
        object_id: str,
        version_id: str,
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # simple-history's page of a past version would save a posted form behind the
        # write functions (a "revert"): only reading it is allowed.
        if request.method != "GET":
            raise PermissionDenied("Changes go through memoryadmin's own pages and API.")
        self._refuse_malformed_id(object_id)
        response: HttpResponse = super().history_form_view(
            request, object_id, version_id, extra_context
        )
        return response


@admin.register(models.Memory)
class MemoryAdmin(TrackedReadOnlyAdmin):
    list_display = [
        "statement",
        "subject",
        "kind",
        "basis",
        "status",
        "withheld",
        "written_at",
        "expires_at",
    ]
    list_filter = ["status", "withheld", "kind", "basis"]
    # The box is shown for these; ``get_search_results`` decides how a term is looked up.
    search_fields = ["statement"]
    search_help_text = (
        "A memory's id, a subject's reference or a slot (such as contact.channel), exactly; "
        "anything else is searched for in the statements, as words."
    )
    sortable_by = ["written_at"]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        # The admin narrows the model's own queryset (its filters already applied).
        memories = cast(MemoryQuerySet, queryset)
        return memories.looked_up(search_term.strip()), False


@admin.register(models.Subject)
class SubjectAdmin(TrackedReadOnlyAdmin):
    list_display = ["ref", "display_name", "owner", "memory_paused"]
    # A part of a reference or a name: trigram indexes serve it on PostgreSQL (0010).
    search_fields = ["ref", "display_name"]
    sortable_by = ["ref"]


@admin.register(models.Agent)
class AgentAdmin(TrackedReadOnlyAdmin):
    list_display = ["name", "scopes", "is_active", "created_at"]


@admin.register(models.LedgerEntry)
class LedgerEntryAdmin(TrackedReadOnlyAdmin):
    list_display = ["fact", "subject", "kind", "status", "immutable", "expires_at"]
    list_filter = ["kind", "status"]
    # Newest first, as an index keeps them; no column re-sorts the whole table.
    sortable_by = ()


@admin.register(models.JournalEntry)
class JournalEntryAdmin(TrackedReadOnlyAdmin):
    list_display = ["action", "idempotency_key", "run", "state", "created_at"]
    list_filter = ["state"]
    sortable_by = ["created_at"]


@admin.register(models.RetractionBatch)
class RetractionBatchAdmin(TrackedReadOnlyAdmin):
    list_display = ["retracted_at", "retracted_by", "reason", "undone_at", "undone_by"]
    list_filter = ["undone_at"]


class PolicyForm(ModelForm):
    """Each setting by the words of the policy page."""

    class Meta:
        model = models.Policy
        fields: tuple[str, ...] = ()
        labels = {setting.name: setting.label for setting in POLICY_SETTINGS}
        help_texts = {
            setting.name: f"{setting.meaning} {setting.bounds[:1].upper()}{setting.bounds[1:]}."
            for setting in POLICY_SETTINGS
        }


@admin.register(models.Policy)
class PolicyAdmin(TrackedReadOnlyAdmin):
    """Read here; changed, with a reason and its bounds explained, on the policy page
    (``templates/admin/ledger/policy/change_form.html`` links to it)."""

    form = PolicyForm
    field_labels = PolicyForm.Meta.labels
    list_display = ["__str__", "version"]


@admin.register(models.WriteDecision)
class WriteDecisionAdmin(ReadOnlyAdmin):
    list_display = ["decided_at", "outcome", "code", "agent", "subject", "reason"]
    # A filter by code would list every code there is: a scan of every decision, each page.
    list_filter = ["outcome"]
    search_fields = ["code"]
    search_help_text = "A refusal's code, exactly (such as system_of_record)."
    sortable_by = ["decided_at"]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        term = search_term.strip()
        return (queryset.filter(code=term) if term else queryset), False


# What the people admin shows. The password (its hash) is nobody's to read, and permissions
# given to one person are never used: a role is a group.
PERSON_SECTIONS: tuple[tuple[str | None, tuple[str, ...]], ...] = (
    (None, ("username", "first_name", "last_name", "email")),
    ("Role and access", ("is_active", "is_staff", "is_superuser", "groups")),
    ("Dates", ("last_login", "date_joined")),
)

# Django's help texts tell someone editing a person what to type; here they are read.
PERSON_HELP = {
    "username": "",
    "is_active": "Whether they can sign in: disabled and enabled again on their People page.",
    "is_staff": "Lets them read this admin. It follows the Admin role.",
    "is_superuser": "Every permission there is: given on the server's command line only.",
    "groups": "Their role: support or admin (an end user is in none). Changed on their "
    "People page.",
}


class PersonForm(ModelForm):
    class Meta:
        model = User
        fields: tuple[str, ...] = ()
        help_texts = PERSON_HELP


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class PersonAdmin(ReadOnly, UserModelAdmin):
    """People, read-only: no add page, no change, no password page (403). They are
    managed on the People page (``templates/admin/auth/user/change_form.html`` links to
    it); a superuser only on the command line."""

    form = PersonForm
    fieldsets = tuple((title, {"fields": names}) for title, names in PERSON_SECTIONS)

    def get_readonly_fields(
        self, request: HttpRequest, obj: Model | None = None
    ) -> list[str] | tuple[str, ...]:
        return [name for _, names in PERSON_SECTIONS for name in names]


@admin.register(Group)
class RoleGroupAdmin(ReadOnly, GroupAdmin):
    """The role groups, read-only: a role is given on the People page."""
