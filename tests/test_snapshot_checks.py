"""The checks a state document must pass, and the diff between two generations.

Pure functions: documents in, named problems out, no database.
"""

from __future__ import annotations

import copy
from typing import Any

from ledger.rules.snapshots.checks import (
    check_commitments,
    check_document,
    check_monotonic,
    check_partition,
    check_references,
    check_schema,
)
from ledger.rules.snapshots.diff import count_document, diff_documents, pair_rewordings

COMMITMENT = "report.md keeps one H2 per company in the order the user gave"

DOCUMENT: dict[str, Any] = {
    "task": {
        "text": "For each of 4 competitors: is there a public DORA statement, and what is in it?",
        "items": ["Sparkassen Digital", "Nordlys Betaling", "Adriatica Pay", "Vlaamse Clearing"],
    },
    "findings": [
        {
            "item": "Sparkassen Digital",
            "status": "resolved",
            "evidence": "ICT third-party register published annually; 4h RTO",
            "source": {"ref": "https://example.com/dora", "at": "2026-03-11T09:41:00Z"},
        },
        {
            "item": "Nordlys Betaling",
            "status": "not_found",
            "evidence": "site search and 3 web queries (EN/NO), investor page checked",
        },
    ],
    "open": [
        {
            "item": "Adriatica Pay",
            "blocked_by": "PDF behind a cookie wall; fetch returned 403 twice",
        },
        {"item": "Vlaamse Clearing", "blocked_by": "not started"},
    ],
    "queries_run": [
        "Sparkassen Digital DORA compliance statement",
        "Nordlys Betaling DORA samsvar",
    ],
    "commitments": [COMMITMENT],
    "artifacts": [
        {"path": "report.md", "revision": 14, "gist": "sections for 2 of 4 companies"},
        {
            "url": "https://example.com/dora",
            "fetched_at": "2026-03-11T09:41:00+00:00",
            "gist": "Sparkassen's DORA page",
        },
    ],
    "relational_note": "The user is in a hurry; keep updates short.",
}


def doc(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(DOCUMENT)
    for name, value in changes.items():
        if value is ...:
            data.pop(name)
        else:
            data[name] = value
    return data


def codes(problems: list[Any]) -> list[tuple[str, str]]:
    return [(p.check, p.code) for p in problems]


def test_a_well_formed_document_passes_every_check() -> None:
    assert check_document(doc(), in_force=[COMMITMENT], previous=doc()) == []


# schema


def test_a_document_missing_a_section_fails_the_schema() -> None:
    problems = check_schema(doc(open=...))
    assert codes(problems) == [("schema", "invalid")]
    assert "'open' is a required property" in problems[0].message


def test_unknown_fields_and_wrong_types_are_located() -> None:
    data = doc(extra="x")
    data["findings"][0]["status"] = "maybe"
    data["queries_run"] = "one long string"
    messages = [p.message for p in check_schema(data)]
    assert any("'extra' was unexpected" in m for m in messages)
    assert any(m.startswith("/findings/0/status:") and "'maybe'" in m for m in messages)
    assert any(m.startswith("/queries_run:") for m in messages)


def test_an_item_name_with_a_line_break_is_refused_in_words() -> None:
    data = doc()
    data["task"]["items"][0] = "Sparkassen\nDigital"
    (problem,) = check_schema(data)
    assert problem.items == ("/task/items/0",)
    assert "must be one line" in problem.message


def test_a_fetched_time_without_offset_is_not_a_date_time() -> None:
    data = doc()
    data["artifacts"][1]["fetched_at"] = "2026-03-11T09:41:00"
    (problem,) = check_schema(data)
    assert "UTC offset" in problem.message


def test_a_document_that_fails_the_schema_gets_only_schema_problems() -> None:
    data = doc(findings=[{"item": "Sparkassen Digital"}])  # no status, and three items lost
    problems = check_document(data)
    assert {p.check for p in problems} == {"schema"}


def test_a_flood_of_schema_errors_is_summarised() -> None:
    data = doc(queries_run=[1] * 50)
    problems = check_schema(data)
    assert len(problems) == 21
    assert problems[-1].message == "30 more schema errors not listed."


# partition


def test_partition_passes_when_each_item_is_in_exactly_one_list() -> None:
    assert check_partition(doc()) == []


def test_an_item_in_neither_list_is_named() -> None:
    data = doc(open=[{"item": "Adriatica Pay", "blocked_by": "403"}])
    (problem,) = check_partition(data)
    assert problem.code == "missing"
    assert problem.items == ("Vlaamse Clearing",)
    assert problem.message == ("1 task item is in neither findings nor open: “Vlaamse Clearing”.")


def test_an_item_in_both_lists_is_named() -> None:
    data = doc()
    data["open"].append({"item": "Sparkassen Digital", "blocked_by": "double-check"})
    (problem,) = check_partition(data)
    assert problem.code == "in_both"
    assert problem.items == ("Sparkassen Digital",)


def test_an_entry_for_an_item_the_task_does_not_list_is_named() -> None:
    data = doc()
    data["open"].append({"item": "Some Other Bank", "blocked_by": "not started"})
    (problem,) = check_partition(data)
    assert problem.code == "not_a_task_item"
    assert problem.items == ("Some Other Bank",)


def test_an_item_listed_twice_in_findings_is_named() -> None:
    data = doc()
    data["findings"].append(dict(data["findings"][0]))
    (problem,) = check_partition(data)
    assert problem.code == "repeated"
    assert problem.items == ("Sparkassen Digital",)


def test_many_missing_items_are_counted_and_all_listed() -> None:
    items = [f"Company {n:02}" for n in range(15)]
    data = doc(task={"text": "t", "items": items}, findings=[], open=[])
    (problem,) = check_partition(data)
    assert problem.message.startswith("15 task items are in neither findings nor open:")
    assert problem.message.endswith("and 5 more.")
    assert list(problem.items) == items


# monotonic


def test_the_first_generation_has_nothing_to_lose() -> None:
    assert check_monotonic(doc(findings=[], open=[]), None) == []


def test_more_resolved_findings_than_before_pass() -> None:
    before = doc()
    before["findings"].pop()
    before["open"].append({"item": "Nordlys Betaling", "blocked_by": "not started"})
    assert check_monotonic(doc(), before, 1) == []


def test_a_resolved_finding_dropped_is_counted_and_named() -> None:
    now = doc()
    now["findings"].pop()  # Nordlys Betaling's negative result
    (problem,) = check_monotonic(now, doc(), 3)
    assert problem.code == "resolved_lost"
    assert problem.items == ("Nordlys Betaling",)
    assert problem.message == (
        "1 item resolved in generation 3 is missing or no longer resolved: “Nordlys Betaling”."
    )


def test_a_resolved_finding_downgraded_to_partial_counts_as_lost() -> None:
    now = doc()
    now["findings"][0]["status"] = "partial"
    (problem,) = check_monotonic(now, doc(), 2)
    assert problem.items == ("Sparkassen Digital",)


def test_a_resolved_item_moved_back_to_open_counts_as_lost() -> None:
    now = doc()
    moved = now["findings"].pop(0)
    now["open"].append({"item": moved["item"], "blocked_by": "re-checking"})
    (problem,) = check_monotonic(now, doc(), 2)
    assert problem.items == ("Sparkassen Digital",)


# commitments


def test_a_commitment_carried_verbatim_passes() -> None:
    assert check_commitments(doc(), [], [COMMITMENT]) == []


def test_a_commitment_carried_in_pinned_passes() -> None:
    assert check_commitments(doc(commitments=[]), [COMMITMENT], [COMMITMENT]) == []


def test_outer_white_space_is_not_a_paraphrase() -> None:
    assert check_commitments(doc(commitments=[f"  {COMMITMENT}\n"]), [], [COMMITMENT]) == []


def test_a_paraphrased_commitment_does_not_count() -> None:
    paraphrase = "report.md keeps one H2 per company, in the user's order"
    (problem,) = check_commitments(doc(commitments=[paraphrase]), [], [COMMITMENT])
    assert problem.code == "not_verbatim"
    assert problem.items == (COMMITMENT,)
    assert f"appears only as “{paraphrase}”" in problem.message


def test_a_change_of_case_is_a_paraphrase() -> None:
    (problem,) = check_commitments(doc(commitments=[COMMITMENT.upper()]), [], [COMMITMENT])
    assert problem.items == (COMMITMENT,)


def test_without_commitments_in_force_the_check_passes() -> None:
    assert check_commitments(doc(commitments=[]), [], []) == []


# references


def test_artifacts_with_a_key_and_findings_with_a_source_or_claim_pass() -> None:
    assert check_references(doc()) == []


def test_an_artifact_with_no_key_is_named() -> None:
    data = doc()
    data["artifacts"].append({"gist": "notes from the call"})
    (problem,) = check_references(data)
    assert problem.code == "artifact_without_key"
    assert problem.items == ("notes from the call",)


def test_a_path_without_a_revision_does_not_reproduce_the_file() -> None:
    data = doc(artifacts=[{"path": "report.md", "gist": "the report"}])
    (problem,) = check_references(data)
    assert problem.items == ("report.md",)


def test_a_url_without_a_fetched_time_is_not_a_key() -> None:
    data = doc(artifacts=[{"url": "https://example.com/x", "gist": "a page"}])
    (problem,) = check_references(data)
    assert problem.items == ("https://example.com/x",)


def test_a_finding_with_neither_source_nor_claim_is_named() -> None:
    data = doc()
    data["findings"][1] = {"item": "Nordlys Betaling", "status": "not_found", "tried": "3 queries"}
    (problem,) = check_references(data)
    assert problem.code == "finding_without_claim"
    assert problem.items == ("Nordlys Betaling",)


def test_every_failing_check_is_reported_together() -> None:
    data = doc(commitments=[])
    data["open"].pop()
    data["artifacts"].append({"gist": "orphan"})
    problems = check_document(data, in_force=[COMMITMENT], previous=doc(), previous_generation=1)
    assert codes(problems) == [
        ("partition", "missing"),
        ("commitments", "not_verbatim"),
        ("references", "artifact_without_key"),
    ]


# diff


def test_identical_documents_have_an_empty_diff() -> None:
    changes = diff_documents(doc(), doc())
    assert changes.is_empty
    assert changes.losses == 0


def test_diff_shows_items_moving_between_open_and_findings() -> None:
    after = doc()
    after["open"].pop(0)
    after["findings"].append(
        {"item": "Adriatica Pay", "status": "resolved", "evidence": "PDF read"}
    )
    reopened = after["findings"].pop(0)
    after["open"].append({"item": reopened["item"], "blocked_by": "page changed"})
    changes = diff_documents(doc(), after)
    moves = {(m.item, m.before, m.after, m.status) for m in changes.moved}
    assert moves == {
        ("Adriatica Pay", "open", "findings", "resolved"),
        ("Sparkassen Digital", "findings", "open", ""),
    }


def test_diff_shows_findings_that_vanished() -> None:
    after = doc()
    after["findings"].pop()
    changes = diff_documents(doc(), after)
    assert changes.vanished_findings == ["Nordlys Betaling"]
    assert changes.losses == 1


def test_diff_pairs_a_reworded_commitment_and_keeps_a_dropped_one() -> None:
    before = doc(commitments=[COMMITMENT, "do not email the supplier Acme"])
    reworded = "report.md keeps one H2 per company in the order given by the user"
    after = doc(commitments=[reworded, "never call the user after 18:00"])
    changes = diff_documents(before, after)
    (reword,) = changes.commitments_reworded
    assert (reword.before, reword.after) == (COMMITMENT, reworded)
    assert reword.percent >= 60
    assert changes.commitments_dropped == ["do not email the supplier Acme"]
    assert changes.commitments_added == ["never call the user after 18:00"]


def test_diff_lists_queries_added_and_dropped() -> None:
    after = doc(queries_run=["Nordlys Betaling DORA samsvar", "Adriatica Pay DORA PDF"])
    changes = diff_documents(doc(), after)
    assert changes.queries_added == ["Adriatica Pay DORA PDF"]
    assert changes.queries_dropped == ["Sparkassen Digital DORA compliance statement"]


def test_diff_shows_artifacts_whose_revision_changed() -> None:
    after = doc()
    after["artifacts"][0]["revision"] = 15
    after["artifacts"].append({"path": "notes.md", "revision": "a1b2", "gist": "notes"})
    changes = diff_documents(doc(), after)
    (change,) = changes.artifacts_changed
    assert (change.artifact, change.before, change.after) == (
        "report.md",
        "revision 14",
        "revision 15",
    )
    assert changes.artifacts_added == ["notes.md"]


def test_diff_reads_a_malformed_rejected_document_without_failing() -> None:
    junk = {"findings": "nope", "open": [1, None, {"item": 3}], "commitments": [None, "x"]}
    changes = diff_documents(doc(), junk)
    assert set(changes.vanished_findings) == {"Sparkassen Digital", "Nordlys Betaling"}
    assert changes.commitments_added == ["x"]
    assert count_document(junk).open == 1  # the one entry that is an object


def test_counts_say_how_much_a_document_carries() -> None:
    counts = count_document(doc())
    assert (counts.task_items, counts.findings, counts.resolved, counts.open) == (4, 2, 2, 2)
    assert (counts.queries, counts.commitments, counts.artifacts) == (2, 1, 2)


def test_rewordings_are_not_paired_when_too_many_commitments_change_at_once() -> None:
    dropped = [f"Never e-mail supplier number {n} about invoices." for n in range(60)]
    added = [f"Never e-mail supplier no. {n} about invoices." for n in range(60)]
    assert pair_rewordings(dropped[:3], added[:3])
    assert pair_rewordings(dropped, added) == []
