"""The Django admin is read-only for gated models: changes go through the write functions.

Only the write policy is editable here, and even that is saved with who and why.
"""

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from simple_history.admin import SimpleHistoryAdmin

from ledger import models
from ledger.actions.policy import change_policy
from ledger.actors import Actor
from ledger.policy import KEY_PATTERN


# simple-history ships no types, so its admin is Any to the type checker.
class NoHistoryRevert(SimpleHistoryAdmin):  # type: ignore[misc]
    """simple-history's revert form saves a row behind the write functions: refuse it."""

    def history_form_view(
        self,
        request: HttpRequest,
        object_id: str,
        version_id: str,
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method != "GET":
            raise PermissionDenied("Changes go through memoryadmin's own pages and API.")
        response: HttpResponse = super().history_form_view(
            request, object_id, version_id, extra_context
        )
        return response


class ReadOnlyAdmin(NoHistoryRevert):
    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(models.Memory)
class MemoryAdmin(ReadOnlyAdmin):
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
    search_fields = ["statement", "subject__ref", "key"]


@admin.register(models.Subject)
class SubjectAdmin(ReadOnlyAdmin):
    list_display = ["ref", "display_name", "owner", "memory_paused"]
    search_fields = ["ref", "display_name"]


@admin.register(models.Agent)
class AgentAdmin(ReadOnlyAdmin):
    list_display = ["name", "scopes", "is_active", "created_at"]


@admin.register(models.LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = ["fact", "subject", "kind", "status", "immutable", "expires_at"]
    list_filter = ["kind", "status"]


@admin.register(models.JournalEntry)
class JournalEntryAdmin(ReadOnlyAdmin):
    list_display = ["action", "idempotency_key", "run", "state", "created_at"]
    list_filter = ["state"]


@admin.register(models.WriteDecision)
class WriteDecisionAdmin(ReadOnlyAdmin):
    list_display = ["decided_at", "outcome", "code", "agent", "subject", "reason"]
    list_filter = ["outcome", "code"]


@admin.register(models.RetractionBatch)
class RetractionBatchAdmin(ReadOnlyAdmin):
    list_display = ["retracted_at", "retracted_by", "reason", "undone_at", "undone_by"]
    list_filter = ["undone_at"]


if TYPE_CHECKING:
    PolicyModelForm = forms.ModelForm[models.Policy]
else:
    # ModelForm takes no type argument at runtime.
    PolicyModelForm = forms.ModelForm


class PolicyForm(PolicyModelForm):
    """Bounds that keep every write computable: dates within reach, keys that are keys."""

    LONGEST_DAYS = 36_500

    class Meta:
        model = models.Policy
        fields = [
            "ttl_preference_days",
            "ttl_account_fact_days",
            "ttl_episode_days",
            "inferred_max_days",
            "inferred_sources_required",
            "system_of_record_keys",
            "subject_active_cap",
            "recall_cap",
            "review_preference_days",
            "review_account_fact_days",
            "review_episode_days",
        ]

    def clean(self) -> dict[str, Any]:
        # A ModelForm's clean() returns cleaned_data itself, which is never None.
        super().clean()
        data = self.cleaned_data
        for name, value in list(data.items()):
            if name.endswith("_days") and value is not None and value > self.LONGEST_DAYS:
                self.add_error(name, f"At most {self.LONGEST_DAYS} days (a hundred years).")
        return data

    def clean_system_of_record_keys(self) -> list[str]:
        keys = self.cleaned_data["system_of_record_keys"]
        if not isinstance(keys, list) or not all(
            isinstance(k, str) and KEY_PATTERN.match(k) for k in keys
        ):
            raise forms.ValidationError(
                'A JSON list of slot keys, e.g. ["billing.address", "contact.email"].'
            )
        return keys


@admin.register(models.Policy)
class PolicyAdmin(NoHistoryRevert):
    form = PolicyForm

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: models.Policy, form: PolicyForm, change: bool
    ) -> None:
        # The admin lets only a signed-in member of staff this far.
        assert isinstance(request.user, User)
        changed = ", ".join(form.changed_data) or "nothing"
        change_policy(
            actor=Actor.for_user(request.user),
            reason=f"Policy changed in the admin: {changed}.",
            **{name: form.cleaned_data[name] for name in form.changed_data},
        )
