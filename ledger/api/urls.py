from django.urls import include, path
from rest_framework.routers import SimpleRouter

from ledger.api.imports import ImportsView
from ledger.api.journal import JournalViewSet, RunJournalView
from ledger.api.ledger import LedgerEntryViewSet, SubjectLedgerView
from ledger.api.memories import MemoryViewSet, SubjectViewSet
from ledger.api.notes import RunNotesView, RunNoteView
from ledger.api.recall import MemoryRecallsView, SubjectRecallView
from ledger.api.retractions import RetractionsView, RetractionUndoView, RetractionView
from ledger.api.schemas import ExportSchemaView, StateDocumentSchemaView
from ledger.api.snapshots import LatestSnapshotView, RunSnapshotsView
from ledger.api.tools import ToolsView

router = SimpleRouter(trailing_slash=False)
router.register("memories", MemoryViewSet, basename="memory")
router.register("subjects", SubjectViewSet, basename="subject")
router.register("ledger", LedgerEntryViewSet, basename="ledger-entry")
router.register("journal", JournalViewSet, basename="journal")

urlpatterns = [
    path("subjects/<str:ref>/recall", SubjectRecallView.as_view(), name="api-subject-recall"),
    path("memories/<uuid:pk>/recalls", MemoryRecallsView.as_view(), name="api-memory-recalls"),
    path("subjects/<str:ref>/ledger", SubjectLedgerView.as_view(), name="api-subject-ledger"),
    path("", include(router.urls)),
    path("runs/<str:ref>/journal", RunJournalView.as_view(), name="api-run-journal"),
    path("runs/<str:ref>/notes", RunNotesView.as_view(), name="api-run-notes"),
    path("runs/<str:ref>/notes/<str:key>", RunNoteView.as_view(), name="api-run-note"),
    path("tools", ToolsView.as_view(), name="api-tools"),
    path("imports", ImportsView.as_view(), name="api-imports"),
    path("retractions", RetractionsView.as_view(), name="api-retractions"),
    path("retractions/<uuid:pk>", RetractionView.as_view(), name="api-retraction"),
    path("retractions/<uuid:pk>/undo", RetractionUndoView.as_view(), name="api-retraction-undo"),
    path("runs/<str:ref>/snapshots", RunSnapshotsView.as_view(), name="api-run-snapshots"),
    path(
        "runs/<str:ref>/snapshots/latest",
        LatestSnapshotView.as_view(),
        name="api-run-snapshot-latest",
    ),
    path(
        "schemas/state-document",
        StateDocumentSchemaView.as_view(),
        name="state-document-schema",
    ),
    path("schemas/export", ExportSchemaView.as_view(), name="export-schema"),
]
