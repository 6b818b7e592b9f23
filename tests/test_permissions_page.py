"""The permission page says what ``ledger.access`` decides, and cannot drift from it: each
cell is checked against the rule called for that role, every rule of the module is on the
page, and what it says of a key's scopes is what the API does."""

from __future__ import annotations

import inspect
from html.parser import HTMLParser
from typing import Any

import pytest

from ledger import access
from ledger.choices import Scope
from tests.conftest import agent_client, body, signed_in

pytestmark = pytest.mark.django_db

ROLES = (access.Role.END_USER, access.Role.SUPPORT, access.Role.ADMIN)


class Tables(HTMLParser):
    """The text of each table's rows' cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def rows_of(html: str, table: int) -> dict[str, list[str]]:
    """A table's rows by their heading (the first cell): 0 the roles', 1 the scopes'."""
    parser = Tables()
    parser.feed(html)
    return {row[0]: row[1:] for row in parser.tables[table]}


@pytest.fixture
def page(make_person: Any) -> str:
    make_person("sam", role="support")
    response = signed_in("sam").get("/permissions/")
    assert response.status_code == 200
    return response.content.decode()


def yes(answer: bool) -> str:
    return "yes" if answer else "no"


def test_each_roles_cell_is_what_the_access_rule_answers_for_that_role(page: str) -> None:
    rows = rows_of(page, 0)
    for question in access.QUESTIONS:
        cells = rows[question.action]
        assert cells[:3] == [question.answer(access.stand_in(role)) for role in ROLES]
        # Beside it, the rule's name and its why: the first paragraph of its docstring.
        assert f"access.{question.rule.__name__}" in cells[3]
        plain_why = (inspect.getdoc(question.rule) or "").split("\n\n")[0]
        assert plain_why and " ".join(plain_why.split()) in cells[3]
    # And the answers themselves, asked of the rules directly rather than of the registry.
    person, support, admin = (access.stand_in(role) for role in ROLES)
    assert (
        rows["Administer (audit, policy, agents, people, webhooks)"][:3]
        == [yes(access.may_administer(u)) for u in (person, support, admin)]
        == ["no", "no", "yes"]
    )
    assert rows["Revert a correction"][:3] == ["no", "no", "yes"]
    assert rows["Use support's tools (search, queues, traces, complaints, batch deletions)"][
        :3
    ] == [yes(access.may_use_support_tools(u)) for u in (person, support, admin)]
    assert rows["Erase everything about someone else"][:3] == [
        "no",
        "only as a request an admin approves",
        "yes, at once",
    ]


def test_every_rule_of_the_access_module_is_on_the_page(page: str) -> None:
    # A rule added to ledger/access.py and not to its questions fails here: deciding who
    # may do something new includes saying so on this page.
    rules = {
        name
        for name, function in inspect.getmembers(access, inspect.isfunction)
        if function.__module__ == access.__name__
        and (name.startswith("may_") or name.endswith(("_needs_reason", "_needs_approval")))
    }
    rules |= {"visible_subjects", "scope_needed"}
    asked = {q.rule.__name__ for q in access.QUESTIONS}
    asked |= {q.rule.__name__ for q in access.SCOPE_QUESTIONS}
    # scope_needed is asked of every API path, in the scopes' table.
    assert rules - {"scope_needed"} <= asked
    for name in rules:
        assert f"access.{name}" in page


def support_lists(html: str) -> tuple[str, str]:
    """The text of the support section's two lists: what support may do, and may not."""
    said = " ".join(html.split())
    may = said.split('aria-label="What support may do"')[1].split("</ul>")[0]
    may_not = said.split('aria-label="What support may not do"')[1].split("</ul>")[0]
    return may, may_not


def test_support_reads_what_it_may_do_to_anyones_memory_and_why(page: str) -> None:
    may, may_not = support_lists(page)
    assert "Correct or delete someone else&#x27;s memory: with a reason." in may
    assert "Pause memory about someone else: yes." in may
    assert "Erase everything about someone else: only as a request an admin approves." in may
    assert "a second person" in may  # the why of the erasure's approval and of the pause
    # Everything else support does to anyone's memory, with what it means for the memory.
    assert "Confirm a guess or a held write about someone else: with a reason." in may
    assert "it becomes stated" in may and "confirmed by support" in may
    assert "Settle or dismiss a possible conflict about someone else: with a reason." in may
    assert "Delete in a batch across subjects, and undo the batch: yes." in may
    assert "Take, hand over and note queue items: yes." in may
    # And what it may not do, each with the rule's why.
    assert "Revert a correction." in may_not
    assert "Say “don&#x27;t use this” of someone else&#x27;s memory." in may_not
    assert "Administer (audit, policy, agents, people, webhooks)." in may_not
    assert "only an admin may" in may_not and "staff never speak for the person" in may_not
    # Each line is the rule's answer for support, and names the rule.
    support = access.stand_in(access.Role.SUPPORT)
    for question in access.QUESTIONS:
        if question.about_others:
            listed = may_not if question.answer(support) == "no" else may
            assert f"access.{question.rule.__name__}" in listed
            assert question.action.replace("'", "&#x27;") in listed


def test_each_why_is_in_plain_words_without_the_codes_notes(page: str) -> None:
    said = " ".join(page.split())
    # The notes for whoever reads the code stay in the code.
    assert "reached through" not in said and "subject__" not in said
    assert "Policy.agents_change_others" not in said and "system actor" not in said
    assert "Staff see every subject, because their work is other people&#x27;s memories" in said
    # The scopes' rule is a sentence of its own, not spliced after a colon.
    assert "may call: " not in said
    assert "may call. Reading needs the read scope and changing needs the write scope" in said


def test_what_the_page_says_of_a_scope_is_what_the_api_does(page: str) -> None:
    rows = rows_of(page, 1)
    assert rows["/api/v1/memories"][:3] == ["GET", "POST", "no"]
    assert rows["/api/v1/retractions"][:3] == ["no", "no", "POST"]
    assert rows["/api/v1/schemas/export"][:3] == ["any caller"] * 3
    for question in access.SCOPE_QUESTIONS:
        assert rows[question.action][:3] == [question.answer(scope) for scope in Scope]
    assert rows["Change what another agent or a person wrote, whatever the write policy says"][
        :3
    ] == [yes(access.may_change_any_write([scope])) for scope in Scope]
    assert rows["/api/v1/runs/<ref>/notes/<key>"][:3] == ["no", "PUT, DELETE", "no"]
    # And the API agrees: a read key is refused the write, a write key allowed it.
    reader, _ = agent_client("reader", [Scope.READ])
    assert reader.post("/api/v1/memories", body(), format="json").status_code == 403
    writer, _ = agent_client("writer", [Scope.WRITE])
    assert writer.post("/api/v1/memories", body(), format="json").status_code == 201
    assert writer.get("/api/v1/memories").status_code == 403


def test_an_end_user_gets_no_permission_page(make_person: Any) -> None:
    make_person("pat")
    assert signed_in("pat").get("/permissions/").status_code == 404
    make_person("ada", role="admin")
    assert signed_in("ada").get("/permissions/").status_code == 200


def test_the_header_leads_staff_to_the_permission_page(make_person: Any) -> None:
    make_person("sam", role="support")
    make_person("ada", role="admin")
    make_person("pat")
    support = signed_in("sam").get("/reminders/").content.decode()
    assert '<li><a href="/permissions/">Permissions</a></li>' in support
    assert "nav-menu" not in support  # support has no admin's pages to group
    admin = signed_in("ada").get("/reminders/").content.decode()
    menu = admin.split('<li class="nav-menu">', 1)[1].split("</details>", 1)[0]
    assert "<summary>Admin</summary>" in menu
    for url in ("/audit/", "/agents/", "/people/", "/webhooks/", "/permissions/"):
        assert f'href="{url}"' in menu
    assert "/permissions/" not in signed_in("pat").get("/reminders/").content.decode()
