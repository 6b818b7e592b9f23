from django.urls import path

from ledger.views import (
    agents,
    as_of,
    complaints,
    corrections,
    erasure_requests,
    history,
    home,
    memories,
    people,
    permissions,
    queues,
    recalls,
    reminders,
    retractions,
    runs,
    search,
    snapshots,
    subjects,
    webhooks,
)
from ledger.views import ledger as ledger_views
from ledger.views.audit import audit_chain, audit_export, audit_log, audit_verify
from ledger.views.change_password import LimitedPasswordChangeView
from ledger.views.policy_page import policy_page
from ledger.views.run_page import run_overview
from ledger.views.set_password import SetPasswordView

urlpatterns = [
    path(
        "accounts/password/",
        LimitedPasswordChangeView.as_view(),
        name="password_change",
    ),
    # The link an admin sends from the People page; it works once.
    path(
        "accounts/set-password/<uidb64>/<token>/",
        SetPasswordView.as_view(),
        name="password_reset_confirm",
    ),
    path("", home.home, name="home"),
    path("subjects/<str:ref>/", memories.subject_page, name="subject"),
    path("subjects/<str:ref>/pause/", subjects.subject_pause, name="subject-pause"),
    path("subjects/<str:ref>/export/", subjects.subject_export, name="subject-export"),
    path("subjects/<str:ref>/erase/", subjects.subject_erase, name="subject-erase"),
    path("memories/<uuid:pk>/", memories.memory_card, name="memory"),
    path("memories/<uuid:pk>/edit/", memories.memory_edit, name="memory-edit"),
    path("memories/<uuid:pk>/delete/", memories.memory_delete, name="memory-delete"),
    path("memories/<uuid:pk>/undo/", memories.memory_undo, name="memory-undo"),
    path("memories/<uuid:pk>/answer/", memories.memory_answer, name="memory-answer"),
    path("memories/<uuid:pk>/renew/", memories.memory_renew, name="memory-renew"),
    path("memories/<uuid:pk>/use/", memories.memory_withhold, name="memory-withhold"),
    path("memories/<uuid:pk>/uses/", memories.memory_uses, name="memory-uses"),
    path("memories/<uuid:pk>/history/", history.memory_history, name="memory-history"),
    path("conflicts/<int:pk>/resolve/", memories.conflict_resolve, name="conflict-resolve"),
    path("conflicts/<int:pk>/dismiss/", memories.conflict_dismiss, name="conflict-dismiss"),
    path("reminders/", reminders.reminders, name="reminders"),
    path("reminders/<int:pk>/read/", reminders.reminder_read, name="reminder-read"),
    path("subjects/<str:ref>/ledger/", ledger_views.subject_ledger, name="subject-ledger"),
    path("runs/<str:ref>/journal/", runs.run_journal, name="run-journal"),
    path("runs/<str:ref>/notes/", runs.run_notes, name="run-notes"),
    path("runs/<str:ref>/snapshots/", snapshots.timeline, name="run-snapshots"),
    path("runs/<str:ref>/snapshots/diff/", snapshots.diff, name="snapshot-diff"),
    # Support's workbench: search, sources and queues.
    path("sources/<path:ref>/", search.source, name="source"),
    path("queues/", queues.queues, name="queues"),
    path("queues/<str:name>/", queues.queue, name="queue"),
    path("queues/pending/confirm/", queues.confirm_pending, name="queue-confirm"),
    path("queues/items/<str:kind>/<str:pk>/<str:what>/", queues.work_item, name="queue-work"),
    path("journal/<int:pk>/resolve/", queues.journal_resolve, name="journal-resolve"),
    # Support's workbench: traces and recalls.
    path("recalls/<int:pk>/", recalls.recall_page, name="recall"),
    # Support's workbench: runs, complaints and memory as of a date.
    path("runs/<str:ref>/", run_overview, name="run"),
    path("complaints/", complaints.complaint_page, name="complaints"),
    path("subjects/<str:ref>/as-of/", as_of.subject_as_of, name="subject-as-of"),
    # Support's workbench: batch retractions.
    path("retractions/", retractions.batch_list, name="retractions"),
    path("retractions/new/", retractions.batch_new, name="retraction-new"),
    path("retractions/<uuid:pk>/", retractions.batch_page, name="retraction"),
    path("retractions/<uuid:pk>/undo/", retractions.batch_undo, name="retraction-undo"),
    # Admin: the audit log (H1).
    path("audit/", audit_log, name="audit"),
    path("audit/export.csv", audit_export, name="audit-export"),
    path("audit/chain/", audit_chain, name="audit-chain"),
    path("audit/verify/", audit_verify, name="audit-verify"),
    # Admin: corrections, reverts and erasures (H2).
    path("audit/corrections/", corrections.corrections, name="audit-corrections"),
    path("audit/corrections/<uuid:pk>/", corrections.correction, name="audit-correction"),
    path(
        "audit/corrections/<uuid:pk>/revert/",
        corrections.correction_revert,
        name="audit-correction-revert",
    ),
    path("audit/erasures/", corrections.erasures, name="audit-erasures"),
    path("audit/erasure-requests/", erasure_requests.erasure_requests, name="erasure-requests"),
    path(
        "audit/erasure-requests/<int:pk>/approve/",
        erasure_requests.erasure_request_approve,
        name="erasure-request-approve",
    ),
    path(
        "audit/erasure-requests/<int:pk>/decline/",
        erasure_requests.erasure_request_decline,
        name="erasure-request-decline",
    ),
    # Admin: agents and their keys (H4).
    path("agents/", agents.agent_list, name="agents"),
    path("agents/new/", agents.agent_new, name="agent-new"),
    path("agents/<str:name>/", agents.agent_page, name="agent"),
    path("agents/<str:name>/rotate/", agents.agent_rotate, name="agent-rotate"),
    path("agents/<str:name>/revoke/", agents.agent_revoke, name="agent-revoke"),
    path("agents/<str:name>/restrict/", agents.agent_restrict, name="agent-restrict"),
    # Admin: people (H5).
    path("people/", people.people, name="people"),
    path("people/new/", people.person_new, name="person-new"),
    path("people/<str:username>/", people.person_page, name="person"),
    path("people/<str:username>/role/", people.person_role, name="person-role"),
    path("people/<str:username>/subjects/", people.person_link, name="person-link"),
    path("people/<str:username>/subjects/unlink/", people.person_unlink, name="person-unlink"),
    path("people/<str:username>/disable/", people.person_disable, name="person-disable"),
    path("people/<str:username>/enable/", people.person_enable, name="person-enable"),
    path(
        "people/<str:username>/set-password-link/",
        people.person_password_link,
        name="person-password-link",
    ),
    path(
        "people/<str:username>/lockout/lift/",
        people.person_lift_lockout,
        name="person-lift-lockout",
    ),
    path("people/addresses/lift/", people.address_lift_lockout, name="address-lift-lockout"),
    # Staff: who may do what, asked of ledger/access.py.
    path("permissions/", permissions.permissions_page, name="permissions"),
    # Admin: the write policy (H6).
    path("policy/", policy_page, name="policy"),
    # Admin: webhooks.
    path("webhooks/", webhooks.webhook_list, name="webhooks"),
    path("webhooks/<int:pk>/", webhooks.webhook_page, name="webhook"),
    path("webhooks/<int:pk>/active/", webhooks.webhook_active, name="webhook-active"),
    path("webhooks/<int:pk>/rotate/", webhooks.webhook_rotate, name="webhook-rotate"),
    path("webhooks/<int:pk>/test/", webhooks.webhook_test, name="webhook-test"),
    path("webhooks/<int:pk>/delete/", webhooks.webhook_delete, name="webhook-delete"),
    path(
        "webhooks/<int:pk>/deliveries/<int:delivery>/retry/",
        webhooks.webhook_retry,
        name="webhook-retry",
    ),
]
