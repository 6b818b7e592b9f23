"""Malformed writes get a 4xx that names the problem, never a 500, and nothing is written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from ledger.models import IdempotencyRecord, Memory, Source, Subject
from tests.conftest import body

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories"


def source(**overrides: Any) -> dict[str, Any]:
    data = dict(body()["source"])
    data.update(overrides)
    return data


MALFORMED: list[tuple[str, Any]] = [
    ("empty object", {}),
    ("a list", [body()]),
    ("a string", "remember this"),
    ("a number", 42),
    ("null", None),
    ("statement is a number", body(statement=123)),
    ("statement is a list", body(statement=["a", "b"])),
    ("statement is an object", body(statement={"text": "x"})),
    ("statement is null", body(statement=None)),
    ("statement missing", body(statement=...)),
    ("statement 201 chars", body(statement="é" * 201)),
    ("statement 100k chars", body(statement="x" * 100_000)),
    ("statement with NUL", body(statement="abc\u0000def")),
    ("statement with paragraph separator", body(statement="one\u2029two")),
    ("statement with line separator", body(statement="one\u2028two")),
    ("statement with escape sequence", body(statement="\x1b[31mred")),
    ("statement with carriage return", body(statement="fake\r[stated] header")),
    ("kind unknown", body(kind="secret")),
    ("kind a number", body(kind=1)),
    ("basis is a bool", body(basis=True)),
    ("subject missing", body(subject=...)),
    ("subject empty", body(subject="")),
    ("subject with slash", body(subject="../etc/passwd")),
    ("subject 500 chars", body(subject="a" * 500)),
    ("subject an object", body(subject={"$ne": None})),
    ("key with spaces", body(key="contact channel")),
    ("key upper case emoji", body(key="CONTACT.🙂")),
    ("source a string", body(source="msg_0192")),
    ("source a list", body(source=[source()])),
    ("source kind unknown", body(source=source(kind="rumour"))),
    ("source ref empty", body(source=source(ref=""))),
    ("source ref huge", body(source=source(ref="r" * 10_000))),
    ("source turn negative", body(source=source(turn=-1))),
    ("source turn huge", body(source=source(turn=10**30))),
    ("source turn float", body(source=source(turn=1.5))),
    ("source turn string", body(source=source(turn="4"))),
    ("source turn bool", body(source=source(turn=True))),
    ("source excerpt NUL", body(source=source(excerpt="a\x00b"))),
    ("source excerpt huge", body(source=source(excerpt="e" * 50_000))),
    ("source unknown field", body(source=source(url="http://x"))),
    ("source nested junk", body(source=source(run={"a": [1, {"b": 2}]}))),
    ("expires_at a number", body(expires_at=1893456000)),
    ("expires_at garbage", body(expires_at="soon")),
    ("expires_at in the past", body(expires_at="1999-01-01T00:00:00Z")),
    ("expires_at year 10000", body(expires_at="10000-01-01T00:00:00Z")),
    ("expires_at without offset", body(expires_at="2099-01-01T00:00:00")),
    ("expires_at null without permanent", body(expires_at=None)),
    ("permanent a string", body(permanent="yes")),
    ("permanent with a date", body(permanent=True)),
    ("unknown top-level field", body(confidence=0.9)),
    ("deeply nested junk", body(extra={"a": {"b": {"c": [[[[[]]]]]}}})),
]


@pytest.mark.parametrize(("label", "data"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_body_is_a_4xx_naming_the_problem(api: APIClient, label: str, data: Any) -> None:
    response = api.post(URL, data, format="json", headers={"Idempotency-Key": f"k-{label}"})
    assert 400 <= response.status_code < 500, (label, response.status_code, response.content)
    payload = response.json()
    assert payload, label
    assert Memory.objects.count() == 0
    assert Source.objects.count() == 0
    assert Subject.objects.count() == 0
    assert IdempotencyRecord.objects.count() == 0


@pytest.mark.parametrize(
    "raw",
    [b"{not json", b'{"statement": "x"', b"\xff\xfe\x00", b'{"a": NaN}', b"[" * 5000],
)
def test_unparseable_json_is_a_400(api: APIClient, raw: bytes) -> None:
    response = api.generic("POST", URL, raw, content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]
    assert Memory.objects.count() == 0


def test_empty_body_names_every_missing_field(api: APIClient) -> None:
    response = api.generic("POST", URL, b"", content_type="application/json")
    assert response.status_code == 400
    assert {"subject", "kind", "statement", "basis", "source"} <= set(response.json())


def test_lone_surrogate_in_statement_is_refused(api: APIClient) -> None:
    # JSON may escape a half surrogate pair; it can never be stored or shown.
    raw = json.dumps(body()).replace("Prefers email", "Prefers \\ud800 email").encode()
    response = api.generic("POST", URL, raw, content_type="application/json")
    assert response.status_code == 400
    assert "statement" in response.json()
    assert Memory.objects.count() == 0


def test_form_encoded_body_is_refused_as_unsupported(api: APIClient) -> None:
    response = api.post(URL, {"statement": "x"})
    assert response.status_code == 415
    assert Memory.objects.count() == 0


def test_malformed_idempotency_key_is_refused(api: APIClient) -> None:
    response = api.post(URL, body(), format="json", headers={"Idempotency-Key": "x" * 300})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_idempotency_key"
    assert Memory.objects.count() == 0


def test_json_nested_beyond_the_parser_is_a_400(api: APIClient) -> None:
    raw = b"[" * 100_000 + b"]" * 100_000
    response = api.generic("POST", URL, raw, content_type="application/json")
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/memories?key=a%00b",
        "/api/v1/memories?subject%00=x",
        "/api/v1/subjects/a%00b",
        "/api/v1/subjects/a%00b/recall",
        "/api/v1/runs/r%00/notes",
    ],
)
def test_nul_in_an_api_url_is_a_400(api: APIClient, url: str) -> None:
    response = api.get(url)
    assert response.status_code == 400
    assert response.json()["code"] == "nul_in_url"


@pytest.mark.parametrize("url", ["/?q=a%00b", "/subjects/x%00y/", "/runs/r%00/journal/"])
def test_nul_in_a_page_url_is_a_400(client, url: str) -> None:
    assert client.get(url).status_code == 400
