"""The OpenAPI schema is the truth: schemathesis sends every operation valid and invalid
requests, with a real key against real rows, and every answer must be one the schema
documents, in the shape it documents (all of schemathesis's checks)."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.utils import timezone
from drf_spectacular.generators import EndpointEnumerator
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from rest_framework.test import APIClient
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup

import ledger.api
from ledger.actions.agents import create_agent
from ledger.actors import Actor
from ledger.models import Policy
from ledger.rules.refusals import Refusal
from ledger.rules.text import forbidden_character, forbidden_in_excerpt
from tests.conftest import SUBJECT, VALID_BODY
from tests.test_snapshots_api import snapshot_body

# Minutes long: started first (tests/conftest.py), so it never ends the run alone.
pytestmark = [pytest.mark.django_db, pytest.mark.long]

# make test runs a bounded, repeatable sample; make fuzz raises it.
EXAMPLES = int(os.environ.get("OPENAPI_EXAMPLES", "8"))
RUN = "run_77"
NOTE = "next_step"
# Valid input may still be refused for the state it meets: a stale If-Match (412), the gate's
# or a check's refusal (422), memory paused for the subject (423). Never a 400.
ACCEPTED = ["2xx", "401", "403", "404", "409", "412", "422", "423", "429"]
# Free JSON (an intent, an outcome, a state document): OpenAPI 3.0 cannot constrain the keys
# of an object of any shape, so the description says that no key or string at any depth may
# hold invisible characters, and valid examples are kept to it.
FREE_JSON = ("intent", "effect", "verification", "document")


@dataclass
class Seeded:
    """A real key, and real rows for the path parameters, so operations get past their 404."""

    key: str
    ids: dict[tuple[str, str], str]


def created(response: Any) -> dict[str, Any]:
    assert response.status_code in (200, 201), response.content
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
def seeded(db: None) -> Seeded:
    _, key = create_agent(
        name="fuzzer", scopes=["read", "write", "staff"], actor=Actor.system("test")
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    memory = created(client.post("/api/v1/memories", VALID_BODY, format="json"))["memory"]
    entry = created(
        client.post(
            f"/api/v1/subjects/{SUBJECT}/ledger",
            {
                "fact": "Invoice 1042 was paid in full on 2026-11-02.",
                "kind": "established",
                "source": {"kind": "tool_result", "ref": "billing:inv-1042"},
                "run": RUN,
            },
            format="json",
        )
    )["entry"]
    journal = created(
        client.post(
            f"/api/v1/runs/{RUN}/journal",
            {"idempotency_key": "refund-5521", "action": "payments.refund", "intent": {}},
            format="json",
        )
    )
    created(client.put(f"/api/v1/runs/{RUN}/notes/{NOTE}", {"value": "ask"}, format="json"))
    created(client.post(f"/api/v1/runs/{RUN}/snapshots", snapshot_body(), format="json"))
    created(client.get(f"/api/v1/subjects/{SUBJECT}/recall", {"run": RUN, "goal": "billing"}))
    # A recall that names no run: its record is served with "run": null.
    created(client.get(f"/api/v1/subjects/{SUBJECT}/recall", {"goal": "billing"}))
    other = {
        **VALID_BODY,
        "key": "",
        "statement": "Ships parcels to the Leeds office.",
        "source": {"kind": "user_message", "ref": "msg_0601", "run": "run_other"},
    }
    created(client.post("/api/v1/memories", other, format="json"))
    retraction = created(
        client.post("/api/v1/retractions", {"run": "run_other", "reason": "x"}, format="json")
    )
    ids = {
        ("/api/v1/memories/{id}", "id"): memory["id"],
        ("/api/v1/ledger/{id}", "id"): entry["id"],
        ("/api/v1/journal/{key}", "key"): journal["entry"]["idempotency_key"],
        ("/api/v1/retractions/{id}", "id"): retraction["id"],
        ("/api/v1/runs/{ref}", "ref"): RUN,
        ("/api/v1/runs/{ref}/notes/{key}", "key"): NOTE,
        ("/api/v1/subjects/{ref}", "ref"): SUBJECT,
    }
    return Seeded(key=key, ids=ids)


@pytest.fixture(autouse=True)
def high_limits(settings: Any) -> None:
    # Raised, never switched off: the run sends more requests a minute than an agent may.
    settings.MEMORYADMIN_RATE_READS = "100000/min"
    settings.MEMORYADMIN_RATE_WRITES = "100000/min"
    # schemathesis tries keys that do not work, all from this one address.
    settings.MEMORYADMIN_RATE_FAILED_KEYS = "100000/min"


@pytest.fixture
def in_process() -> Iterator[None]:
    """The WSGI app shares the test's transaction, as Django's test client arranges: the
    request signals must not close the connection the test's rows live on."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture
def operations(db: None) -> list[Any]:
    raw = APIClient().get("/api/schema/?format=json").json()
    for path in raw["paths"].values():
        for operation in path.values():
            # A cursor is valid only if this API gave it out, which no schema can say; a made
            # up one is a 400 (test_memory_api.py), so none is generated here.
            operation["parameters"] = [
                p for p in operation.get("parameters", []) if p["name"] != "cursor"
            ]
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = get_wsgi_application()
    # The key is the test's own (a real one); schemathesis checks what happens without it.
    schema.config.generation.update(with_security_parameters=False)
    schema.config.checks.positive_data_acceptance.expected_statuses = ACCEPTED
    # A body over DATA_UPLOAD_MAX_MEMORY_SIZE is refused unread, as its documented 413.
    rejected = schema.config.checks.negative_data_rejection.expected_statuses
    schema.config.checks.negative_data_rejection.expected_statuses = [*rejected, "413"]
    return [result.ok() for result in schema.get_all_operations()]


def pinned(seeded: Seeded, operation: Any) -> dict[str, str]:
    """The seeded value of each path parameter this path has (a prefix is enough). A PUT
    makes what its path names, so only the parents of that are pinned: its examples create
    (201) as well as overwrite (200)."""
    values: dict[str, str] = {}
    path, creates = operation.path, operation.method.upper() == "PUT"
    for (template, name), value in seeded.ids.items():
        if (path == template and not creates) or path.startswith(template + "/"):
            values[name] = value
    return values


def _visible(value: Any) -> Any:
    """A JSON value with the characters the API refuses in it taken out, keys included."""
    if isinstance(value, dict):
        return {_clean(str(k), forbidden_character): _visible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible(item) for item in value]
    if isinstance(value, str):
        return _clean(value, forbidden_in_excerpt)
    return value


def _clean(text: str, check: Any) -> str:
    return "".join(ch for ch in text if ch != "\x00" and not check(ch))


def within_rules(case: Any, cap: int) -> Any:
    """Keep a valid example inside the rules its schema states in words only: a time that
    must lie in the future, ``k`` within the policy's cap (an admin's, changed at run time),
    free JSON without invisible characters, a ledger filter not both active and stale, a
    time window that runs forwards, a snapshot's subject that exists."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return case
    if isinstance(case.body, dict):
        window = [case.body.get("written_after"), case.body.get("written_before")]
        if all(isinstance(t, str) for t in window):
            after, before = sorted(window, key=datetime.fromisoformat)
            if datetime.fromisoformat(after) < datetime.fromisoformat(before):
                case.body.update(written_after=after, written_before=before)
            else:
                case.body.pop("written_before")
        if case.operation.path.endswith("/snapshots") and "subject" in case.body:
            case.body["subject"] = SUBJECT
        expires = case.body.get("expires_at")
        if isinstance(expires, str) and datetime.fromisoformat(expires) <= timezone.now():
            later = timezone.now() + timedelta(days=1 + datetime.fromisoformat(expires).day)
            case.body["expires_at"] = later.isoformat()
        for name in FREE_JSON:
            if name in case.body:
                case.body[name] = _visible(case.body[name])
    if isinstance(case.query, dict):
        if isinstance(case.query.get("k"), int):
            case.query["k"] = 1 + (case.query["k"] - 1) % cap
        # Booleans reach the query string as True or as the word, depending on the example.
        if case.query.get("active") in (True, "true"):
            case.query.pop("stale", None)
    return case


def exercise(operation: Any, mode: GenerationMode, seeded: Seeded) -> list[str]:
    """Every failure of schemathesis's checks on ``EXAMPLES`` requests in one mode."""
    failures: list[str] = []
    cap = Policy.current().recall_cap
    strategy = operation.as_strategy(
        generation_mode=mode, path_parameters=pinned(seeded, operation) or None
    ).map(lambda case: within_rules(case, cap))

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        headers = {"Authorization": f"Bearer {seeded.key}"}
        response = case.call(headers=headers)
        if response.status_code == 429:
            # A 429 is documented, so every check would pass it: the limits must never bite.
            failures.append(f"{operation.label} ({mode.value}) throttled: {response.text}")
            return
        try:
            case.validate_response(
                response,
                headers=headers,
                transport_kwargs={"headers": headers},
            )
        except FailureGroup as group:
            failures.extend(
                f"{operation.label} ({mode.value}) {failure.title}: "
                f"{' | '.join((failure.message or '').splitlines()[:3])}"
                f" for query={case.query!r} body={str(case.body)[:300]}"
                f" -> {response.status_code} {response.text[:200]}"
                for failure in group.exceptions
            )

    try:
        run()
    except Unsatisfiable:
        # Nothing in this operation can be made invalid (no parameters, no body).
        assert mode == GenerationMode.NEGATIVE
    return failures


def test_every_operation_answers_as_its_schema_says(
    seeded: Seeded, operations: list[Any], in_process: None
) -> None:
    failures = [
        failure
        for operation in operations
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        for failure in exercise(operation, mode, seeded)
    ]
    assert failures == [], "\n".join(sorted(set(failures)))


def test_every_error_an_operation_can_give_is_documented_with_its_body(db: None) -> None:
    paths = APIClient().get("/api/schema/?format=json").json()["paths"]
    for path, item in paths.items():
        for method, operation in item.items():
            responses = operation["responses"]
            expected = {"401", "403", "429"} if operation.get("security") else set()
            if "{" in path:
                expected.add("404")
            if method != "get":
                expected.add("400")
            if "requestBody" in operation:
                expected.add("413")
            missing = expected - set(responses)
            assert not missing, f"{method.upper()} {path} leaves out {sorted(missing)}"
            for code in expected:
                assert "application/json" in responses[code]["content"], (method, path, code)
            if "429" in expected:
                assert "Retry-After" in responses["429"]["headers"]


def test_the_schema_generates_without_a_warning() -> None:
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)


def test_the_idempotency_key_is_documented_on_the_writes_that_honour_it(db: None) -> None:
    paths = APIClient().get("/api/schema/?format=json").json()["paths"]

    def headers(method: str, path: str) -> list[str]:
        parameters = paths[path][method].get("parameters", [])
        return [p["name"] for p in parameters if p["in"] == "header"]

    assert headers("post", "/api/v1/memories") == ["Idempotency-Key"]
    assert headers("patch", "/api/v1/journal/{key}") == ["Idempotency-Key"]
    # A journal intent carries its own key in the body.
    assert headers("post", "/api/v1/runs/{ref}/journal") == []


def test_every_write_that_honours_an_idempotency_key_declares_it() -> None:
    """The schema offers the header where a view declares ``idempotent_writes``: the
    declarations must name exactly the view methods whose code calls ``idempotent``."""
    calling, declared = set(), set()
    for path in sorted(Path(ledger.api.__file__).parent.glob("*.py")):
        module = importlib.import_module(f"ledger.api.{path.stem}")
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.ClassDef):
                continue
            for method in node.body:
                calls = [c for c in ast.walk(method) if isinstance(c, ast.Call)]
                if isinstance(method, ast.FunctionDef) and any(
                    isinstance(c.func, ast.Name) and c.func.id == "idempotent" for c in calls
                ):
                    calling.add((path.stem, node.name, method.name))
            writes = getattr(getattr(module, node.name), "idempotent_writes", ())
            declared |= {(path.stem, node.name, method) for method in writes}
    assert len(calling) >= 13
    assert calling == declared


def _calls(function: Any) -> list[ast.Call]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _status(call: ast.Call, names: dict[str, Any]) -> int:
    """The status a ``Refusal(code, detail, status)`` call gives: a literal or a constant."""
    given = {keyword.arg: keyword.value for keyword in call.keywords}
    node = given.get("status", call.args[2] if len(call.args) > 2 else None)
    if node is None:
        return 422
    value = node.value if isinstance(node, ast.Constant) else names[ast.unparse(node)]
    assert isinstance(value, int), ast.unparse(call)
    return value


def _subclass_status(refusal: type[Refusal]) -> int:
    init = refusal.__init__
    (call,) = [c for c in _calls(init) if ast.unparse(c.func) == "super().__init__"]
    return _status(call, init.__globals__)


def _refusal_statuses(function: Any, seen: set[Any]) -> set[int]:
    """The statuses of the ``Refusal``s ``function`` raises itself or through the ledger
    functions it calls by name. A lower bound: calls through an object are not followed."""
    function = inspect.unwrap(function)
    if not isinstance(function, types.FunctionType) or function in seen:
        return set()
    if not function.__module__.startswith("ledger."):
        return set()
    seen.add(function)
    found: set[int] = set()
    names = function.__globals__
    for call in _calls(function):
        callee = None
        if isinstance(call.func, ast.Name):
            callee = names.get(call.func.id)
        elif isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            module = names.get(call.func.value.id)
            if isinstance(module, types.ModuleType):
                callee = getattr(module, call.func.attr, None)
        if callee is Refusal:
            found.add(_status(call, names))
        elif isinstance(callee, type) and issubclass(callee, Refusal):
            found.add(_subclass_status(callee))
        elif callee is not None:
            found |= _refusal_statuses(callee, seen)
    return found


def test_every_refusal_an_operation_raises_is_in_its_schema(db: None) -> None:
    """A view's ``refusals`` can drift from the code: every status of a ``Refusal`` its
    method can reach by name must be among the operation's documented responses."""
    paths = APIClient().get("/api/schema/?format=json").json()["paths"]
    undocumented, reached = [], 0
    for path, _, method, callback in EndpointEnumerator().get_api_endpoints():
        view = callback.cls
        actions = getattr(callback, "actions", None) or {}
        handler = getattr(view, actions.get(method.lower(), method.lower()))
        if not path.startswith("/api/v1/"):
            continue  # the schema and its docs pages
        # The schema calls a primary key `id` (drf-spectacular's SCHEMA_COERCE_PATH_PK).
        documented = set(paths[path.replace("{pk}", "{id}")][method.lower()]["responses"])
        raised = _refusal_statuses(handler, set())
        reached += bool(raised)
        undocumented += [f"{method} {path} {s}" for s in raised if str(s) not in documented]
    assert reached >= 12
    assert undocumented == [], "\n".join(undocumented)


def test_a_blank_page_size_is_refused_as_the_schema_says(api: APIClient) -> None:
    response = api.get("/api/v1/memories", {"page_size": ""})
    assert response.status_code == 400
    assert "page_size" in response.json()
