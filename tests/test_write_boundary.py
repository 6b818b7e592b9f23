"""Only ``ledger.actions`` writes tracked models: checked in the source, and refused at run time.

The action functions check the policy and record who and why; any other write would skip
both. This walks every module outside ``ledger/actions/`` (and the migrations) and fails
on a write it can see: ``.save()`` or ``.delete()`` on a row, a write through a tracked
model's manager or queryset (``create``, ``update``, ``delete``, ``bulk_*``, …), or a use
of the private ``ledger.actions._tracking`` helpers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.apps import apps

from ledger.models import Subject
from ledger.signals import UntrackedWrite

ROOT = Path(__file__).resolve().parent.parent
SCANNED = [ROOT / "ledger", ROOT / "memoryadmin"]
# Delivery keeps the webhook outbox's own bookkeeping (each attempt, and forgetting settled
# ones): untracked rows, which it wrote as part of the actions before it had a package.
EXEMPT = [ROOT / "ledger" / "actions", ROOT / "ledger" / "delivery", ROOT / "ledger" / "migrations"]
ROW_WRITES = {"save", "delete"}
QUERY_WRITES = {
    "create",
    "update",
    "delete",
    "get_or_create",
    "update_or_create",
    "bulk_create",
    "bulk_update",
}
PRIVATE = "ledger.actions._tracking"


def tracked_models() -> set[str]:
    """The ledger models with a history: the ones whose changes must say who and why."""
    return {
        model.__name__
        for model in apps.get_app_config("ledger").get_models()
        if hasattr(model, "history")
    }


def _chain(node: ast.expr) -> list[str]:
    """``Memory.objects.filter(...).update`` → ["Memory", "objects", "filter", "update"]."""
    names: list[str] = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            names.append(node.id)
            return names[::-1]
        else:
            return names[::-1]


def violations(source: str, filename: str, tracked: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ImportFrom) and (
            node.module == PRIVATE
            or (node.module == "ledger.actions" and any(a.name == "_tracking" for a in node.names))
        ):
            found.append(f"{filename}:{node.lineno}: imports {PRIVATE}")
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        chain = _chain(node.func)
        method = chain[-1]
        through_model = chain[0] in tracked and "objects" in chain
        if method in QUERY_WRITES and through_model:
            found.append(f"{filename}:{node.lineno}: {'.'.join(chain)}() writes {chain[0]}")
        elif method in ROW_WRITES and not through_model:
            found.append(f"{filename}:{node.lineno}: {'.'.join(chain)}() writes a row")
    return found


def scanned_files() -> list[Path]:
    return [
        path
        for folder in SCANNED
        for path in sorted(folder.rglob("*.py"))
        if not any(path.is_relative_to(exempt) for exempt in EXEMPT)
    ]


def test_only_actions_write_tracked_models() -> None:
    tracked = tracked_models()
    found = [
        line
        for path in scanned_files()
        for line in violations(path.read_text(), str(path.relative_to(ROOT)), tracked)
    ]
    assert found == []


def test_the_scan_covers_the_views_the_api_the_admin_tasks_and_commands() -> None:
    scanned = {str(path.relative_to(ROOT)) for path in scanned_files()}
    for module in (
        "ledger/views/memories.py",
        "ledger/api/memories.py",
        "ledger/admin.py",
        "ledger/tasks.py",
        "ledger/management/commands/seed_demo.py",
    ):
        assert module in scanned
    assert not any(name.startswith(("ledger/actions/", "ledger/migrations/")) for name in scanned)


def test_tracked_models_are_the_ones_people_and_agents_change() -> None:
    assert {"Memory", "Subject", "Conflict", "LedgerEntry", "JournalEntry", "Policy"} <= (
        tracked_models()
    )


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("memory.save()", "writes a row"),
        ("memory.save(update_fields=['status'])", "writes a row"),
        ("note.delete()", "writes a row"),
        ("Memory.objects.filter(pk=pk).update(status='retracted')", "writes Memory"),
        ("Subject.objects.create(ref='acct_x')", "writes Subject"),
        ("Conflict.objects.bulk_create([])", "writes Conflict"),
        ("Policy.objects.get_or_create(pk=1)", "writes Policy"),
    ],
)
def test_a_write_added_to_a_view_is_caught(line: str, reason: str) -> None:
    view = f"def memory_edit(request, pk):\n    memory = note = pk\n    {line}\n"
    found = violations(view, "ledger/views/memories.py", tracked_models())
    assert len(found) == 1 and reason in found[0]


def test_using_the_private_save_helper_outside_actions_is_caught() -> None:
    for line in (
        "from ledger.actions._tracking import save_tracked",
        "from ledger.actions import _tracking",
    ):
        assert violations(line, "ledger/views/x.py", tracked_models())


def test_reads_and_untracked_writes_are_not_flagged() -> None:
    source = (
        "Memory.objects.filter(pk=1).first()\n"
        "context.update(a=1)\n"
        "IdempotencyRecord.objects.create(key='k')\n"
    )
    assert violations(source, "ledger/api/x.py", tracked_models()) == []


@pytest.mark.django_db
def test_a_tracked_row_saved_outside_the_actions_is_refused_at_run_time() -> None:
    with pytest.raises(UntrackedWrite, match="outside ledger.actions"):
        Subject(ref="acct_saved_behind_the_gate").save()
    assert not Subject.objects.filter(ref="acct_saved_behind_the_gate").exists()
