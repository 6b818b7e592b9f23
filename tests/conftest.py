"""Shared fixtures. Rows are made through the same write functions the product uses."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.people import create_person
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.api.throttling import limiter_for
from ledger.models import Agent, Memory

SUBJECT = "acct_4b71c9e20d8af315"


def _redis_of_this_test_process() -> str:
    """``CELERY_TEST_BROKER_URL`` for one test process: under pytest-xdist, worker ``gwN``
    takes the database N below the given one, so parallel workers never share a queue or
    a rate counter (each also has its own test database)."""
    url = os.environ.get("CELERY_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    server, _, number = url.rpartition("/")
    return f"{server}/{int(number or 0) - worker}"


# Redis for the tests that need a real broker or counter store.
TEST_REDIS_URL = _redis_of_this_test_process()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules marked ``long`` first. ``make test`` hands whole files to its workers in the
    order collected: a file of minutes handed out last keeps one worker busy long after the
    others have run out of work."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


VALID_BODY: dict[str, Any] = {
    "subject": SUBJECT,
    "kind": "preference",
    "key": "contact.channel",
    "statement": "Prefers email over telephone for billing questions.",
    "basis": "stated",
    "source": {
        "kind": "user_message",
        "ref": "msg_0192",
        "run": "run_77",
        "turn": 4,
        "excerpt": "please email me about invoices",
    },
    "expires_at": "2099-03-04T00:00:00Z",
}


def with_overrides(base: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """A copy of a valid request body with some fields replaced; ``...`` removes a field."""
    data = copy.deepcopy(base)
    for name, value in overrides.items():
        if value is ...:
            data.pop(name, None)
        else:
            data[name] = value
    return data


def body(**overrides: Any) -> dict[str, Any]:
    """A valid memory write body with some fields replaced."""
    return with_overrides(VALID_BODY, **overrides)


def agent_client(name: str, scopes: list[str]) -> tuple[APIClient, Agent]:
    agent, key = create_agent(name=name, scopes=scopes, actor=Actor.system("test"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client, agent


@pytest.fixture
def api(db: None) -> APIClient:
    """An agent with read and write scopes."""
    return agent_client("test-agent", ["read", "write"])[0]


@pytest.fixture
def api_agent(db: None) -> tuple[APIClient, Agent]:
    return agent_client("test-agent-2", ["read", "write"])


@pytest.fixture
def reader(db: None) -> APIClient:
    return agent_client("reader", ["read"])[0]


@pytest.fixture
def writer(db: None) -> APIClient:
    return agent_client("writer", ["write"])[0]


@pytest.fixture
def agent(db: None) -> Agent:
    return create_agent(name="fixture-agent", scopes=["read", "write"], actor=Actor.system("test"))[
        0
    ]


@pytest.fixture
def remember(agent: Agent) -> Callable[..., Memory]:
    """Write a memory through the gate, as an agent would."""

    def write(statement: str, **fields: Any) -> Memory:
        source = fields.pop("source", None) or SourceInput(kind="user_message", ref="msg_1")
        data = MemoryInput(
            subject=fields.pop("subject", SUBJECT),
            kind=fields.pop("kind", "preference"),
            basis=fields.pop("basis", "stated"),
            statement=statement,
            source=source,
            **fields,
        )
        result = write_memory(agent=agent, data=data)
        assert result.memory is not None, result.reason
        return result.memory

    return write


PASSWORD = "a-long-test-password"


def signed_in(person: User | str) -> Client:
    """A browser-less client signed in as ``person`` (a user, or a username)."""
    username = person if isinstance(person, str) else person.username
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    # People in tests are made to sign in, not to test key stretching, which costs ~1 s each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session", autouse=True)
def audit_checkpoints_of_this_worker(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Checkpoints the suite records outside a test (the upgrade migrations' while the test
    database is made) and in the processes it starts (workers, ``make run``) go to this test
    process's own file, never into the checkout's ``var/state``."""
    from django.conf import settings

    path = str(tmp_path_factory.mktemp("audit") / "audit-checkpoints.jsonl")
    # The environment for the processes started from here; the setting for this one, whose
    # settings were read before any conftest.
    os.environ["MEMORYADMIN_AUDIT_CHECKPOINTS"] = path
    settings.MEMORYADMIN_AUDIT_CHECKPOINTS = path


@pytest.fixture(autouse=True)
def rate_limits_from_zero() -> None:
    # Without REDIS_URL the API's limits are counted in the process's memory, which outlives
    # a test: another test's failed keys from 127.0.0.1 would count against this one.
    limiter_for("").storage.reset()


@pytest.fixture(autouse=True)
def audit_checkpoints_apart(settings: Any, tmp_path: Path) -> None:
    # Each test's database starts over: a checkpoint another test left would accuse it.
    settings.MEMORYADMIN_AUDIT_CHECKPOINTS = str(tmp_path / "audit-checkpoints.jsonl")


@pytest.fixture
def make_person(db: None) -> Callable[..., User]:
    def make(username: str, role: str = "user", subject: str = "") -> User:
        return create_person(
            username=username,
            password=PASSWORD,
            role=role,
            subject_ref=subject,
            actor=Actor.system("test"),
        )

    return make


@pytest.fixture
def chromium() -> Any:
    """Debian's Chromium, driven by Playwright (a test tool's own browser download fails here)."""
    import os

    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls the test makes
    # around it are still synchronous and safe.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium: Any, live_server: Any) -> Any:
    """A desktop-sized page on the live server; ``page.base`` is the server's URL."""
    context = chromium.new_context(
        viewport={"width": 1280, "height": 900}, base_url=live_server.url
    )
    page = context.new_page()
    yield page
    context.close()


def sign_in(page: Any, username: str, password: str = PASSWORD) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


ARTIFACTS = __import__("pathlib").Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture
def clock() -> Iterator[Callable[[datetime], None]]:
    """Move the clock to a moment and keep it there until the next move."""
    travellers: list[Any] = []

    def move(moment: datetime) -> None:
        if travellers:
            travellers.pop().stop()
        traveller = time_machine.travel(moment, tick=False)
        traveller.start()
        travellers.append(traveller)

    yield move
    for traveller in travellers:
        traveller.stop()
