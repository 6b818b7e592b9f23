from django.urls import path

from ledger.views import (
    as_of,
    complaints,
    history,
    home,
    memories,
    queues,
    recalls,
    reminders,
    retractions,
    runs,
    search,
    snapshots,
    subjects,
)
from ledger.views import ledger as ledger_views
from ledger.views.run_page import run_overview

urlpatterns = [
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
]
