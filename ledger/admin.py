"""The Django admin is read-only for gated models: changes go through the write functions.

Only the write policy is editable here, and even that is saved with who and why.
"""

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from simple_history.admin import SimpleHistoryAdmin

from ledger import models
from ledger.actions.tracking import save_tracked
from ledger.actors import Actor


class NoHistoryRevert(SimpleHistoryAdmin):
    """simple-history's revert form saves a row behind the write functions: refuse it."""

    def history_form_view(
        self, request: HttpRequest, object_id: str, version_id: str, extra_context: Any = None
    ) -> HttpResponse:
        if request.method != "GET":
            raise PermissionDenied("Changes go through memoryadmin's own pages and API.")
        return super().history_form_view(request, object_id, version_id, extra_context)


class ReadOnlyAdmin(NoHistoryRevert):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.Memory)
class MemoryAdmin(ReadOnlyAdmin):
    list_display = ["statement", "subject", "kind", "basis", "status", "written_at", "expires_at"]
    list_filter = ["status", "kind", "basis"]
    search_fields = ["statement", "subject__ref", "key"]


@admin.register(models.Subject)
class SubjectAdmin(ReadOnlyAdmin):
    list_display = ["ref", "display_name", "owner", "memory_paused"]
    search_fields = ["ref", "display_name"]


@admin.register(models.Agent)
class AgentAdmin(ReadOnlyAdmin):
    list_display = ["name", "key_prefix", "scopes", "is_active", "created_at"]
    exclude = ["key_hash"]


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


@admin.register(models.Policy)
class PolicyAdmin(NoHistoryRevert):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        changed = ", ".join(form.changed_data) or "nothing"
        save_tracked(
            obj,
            actor=Actor.for_user(request.user),
            reason=f"Policy changed in the admin: {changed}.",
        )
