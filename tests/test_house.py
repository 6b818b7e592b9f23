"""The house's rules that no linter checks: small modules, a short README, and querysets
that name the models they read (import-linter checks the layers in ``make lint``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [ROOT / "ledger", ROOT / "memoryadmin", ROOT / "clients" / "python"]
LONGEST_MODULE = 800
LONGEST_README = 300


def product_modules() -> list[Path]:
    return [
        path
        for folder in PRODUCT
        for path in sorted(folder.rglob("*.py"))
        if "migrations" not in path.parts
    ]


def test_no_product_module_is_longer_than_800_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): length
        for path in product_modules()
        if (length := len(path.read_text().splitlines())) > LONGEST_MODULE
    }
    assert long == {}


def test_the_scan_covers_the_app_the_settings_and_the_client() -> None:
    scanned = {str(path.relative_to(ROOT)) for path in product_modules()}
    assert {
        "ledger/models/memories.py",
        "memoryadmin/settings.py",
        "clients/python/memoryadmin_client/sync_client.py",
    } <= scanned


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= LONGEST_README


def test_no_query_reaches_a_model_by_reflection() -> None:
    """A QuerySet names the model it reads, so the import graph shows it; never
    ``self.model._meta.get_field(...).related_model``."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "ledger" / "models").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "related_model"
    ]
    assert found == []
