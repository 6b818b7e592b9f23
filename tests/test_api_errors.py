"""Every answer under /api/ is JSON in the API's error shape, ``{"detail", "code"}``: a URL no
route matches (404), a request Django will not read (400), a body over the size limit (413),
a crash (500, with no traceback). The dashboard's pages keep their HTML error pages."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.test import APIClient
from rest_framework.views import APIView

from ledger.actions.agents import create_agent
from ledger.actors import Actor
from ledger.models import Memory
from memoryadmin.urls import handler400, handler404, handler500
from memoryadmin.urls import urlpatterns as site
from tests.conftest import SUBJECT

pytestmark = pytest.mark.django_db

NOT_FOUND = {"detail": "Not found.", "code": "not_found"}
LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json", response.content[:300]
    answer: dict[str, Any] = response.json()
    assert set(answer) == {"detail", "code"}
    assert answer["code"] == code
    assert isinstance(answer["detail"], str) and answer["detail"]
    return answer


@pytest.mark.parametrize(
    ("method", "url"),
    [
        # memories
        ("get", "/api/v1/memories/0.5"),
        ("get", "/api/v1/memories/0.5/history"),
        ("get", "/api/v1/memories/0.5/recalls"),
        ("post", "/api/v1/memories/0.5/corrections"),
        ("get", "/api/v1/memories/"),
        # journal
        ("get", "/api/v1/journal/%C2%84"),
        ("patch", "/api/v1/journal/%C2%84"),
        ("get", "/api/v1/runs/run_77/journal/0.5"),
        # ledger
        ("get", "/api/v1/ledger/0.5"),
        ("get", f"/api/v1/subjects/{SUBJECT}/ledger/0.5"),
        # runs
        ("get", "/api/v1/runs/run_77"),
        ("get", "/api/v1/runs/"),
        # notes
        ("put", "/api/v1/runs/run_77/notes/a/b"),
        ("get", "/api/v1/runs//notes"),
        # snapshots
        ("get", "/api/v1/runs/run_77/snapshots/0.5"),
        ("post", "/api/v1/runs/run_77/snapshots/latest/0.5"),
        # subjects
        ("get", f"/api/v1/subjects/{SUBJECT}/recall/0.5"),
        ("get", "/api/v1/subjects/"),
        # retractions
        ("get", "/api/v1/retractions/0.5"),
        ("post", "/api/v1/retractions/0.5/undo"),
        # imports
        ("post", "/api/v1/imports/0.5"),
        # no family at all
        ("get", "/api/v1/nothing"),
        ("get", "/api/v2/memories"),
        ("get", "/api/"),
    ],
)
def test_a_url_no_api_route_matches_is_a_json_404(api: APIClient, method: str, url: str) -> None:
    answer = assert_error(getattr(api, method)(url), 404, "not_found")
    assert answer == NOT_FOUND


def test_a_route_that_finds_nothing_and_a_url_that_matches_none_answer_alike(
    api: APIClient,
) -> None:
    missing = api.get("/api/v1/memories/00000000-0000-0000-0000-000000000000")
    assert assert_error(missing, 404, "not_found") == NOT_FOUND


@pytest.mark.parametrize("url", ["/nothing-here", "/memories/0.5", "/accounts/nothing-here"])
def test_a_page_that_does_not_exist_is_still_an_html_404(url: str) -> None:
    response = Client().get(url)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert b"Not Found" in response.content


@pytest.mark.parametrize(
    ("method", "url", "scopes"),
    [
        ("post", "/api/v1/memories", ["write"]),
        ("post", "/api/v1/imports", ["write"]),
        ("put", "/api/v1/runs/run_77/notes/next_step", ["write"]),
        ("post", "/api/v1/runs/run_77/snapshots", ["write"]),
        ("post", "/api/v1/retractions", ["staff"]),
    ],
)
def test_a_body_over_the_limit_is_a_json_413_naming_the_limit(
    method: str, url: str, scopes: list[str]
) -> None:
    _, key = create_agent(name="big-writer", scopes=scopes, actor=Actor.system("test"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    oversized = '{"statement": "' + "x" * LIMIT + '"}'
    response = getattr(client, method)(url, data=oversized, content_type="application/json")
    answer = assert_error(response, 413, "body_too_large")
    assert f"{LIMIT:,} bytes" in answer["detail"]
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in answer["detail"]
    assert not Memory.objects.exists()


def test_a_body_at_the_limit_is_read(writer: APIClient) -> None:
    start = '{"subject": "' + SUBJECT + '", "kind": "nonsense"'
    body = start + " " * (LIMIT - len(start) - 1) + "}"
    assert len(body.encode()) == LIMIT
    response = writer.post("/api/v1/memories", data=body, content_type="application/json")
    assert response.status_code == 400
    assert "kind" in response.json()


def test_over_a_real_server_a_body_over_the_limit_is_a_json_413(live_server: Any) -> None:
    _, key = create_agent(name="big-writer", scopes=["write"], actor=Actor.system("test"))
    response = httpx.post(
        f"{live_server.url}/api/v1/memories",
        content=b'{"statement": "' + b"x" * LIMIT + b'"}',
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 413, response.text[:300]
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["code"] == "body_too_large"
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in response.json()["detail"]
    assert not Memory.objects.exists()


def test_over_a_real_server_a_malformed_path_is_a_json_404(live_server: Any) -> None:
    response = httpx.get(f"{live_server.url}/api/v1/journal/%C2%84", timeout=30)
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == NOT_FOUND


def test_a_request_django_will_not_read_is_a_json_400(api: APIClient) -> None:
    # More query parameters than DATA_UPLOAD_MAX_NUMBER_FIELDS: refused before any view.
    query = "&".join(f"p{n}=1" for n in range(1001))
    assert_error(api.get(f"/api/v1/memories?{query}"), 400, "bad_request")
    page = Client().get(f"/accounts/login/?{query}")
    assert page.status_code == 400
    assert page["Content-Type"].startswith("text/html")


def test_a_method_an_operation_does_not_take_is_a_json_405(api: APIClient) -> None:
    assert_error(api.delete("/api/v1/memories"), 405, "method_not_allowed")


class Crash(APIView):
    authentication_classes = ()
    permission_classes = ()

    def get(self, request: Request) -> Response:
        raise RuntimeError("a secret in the traceback")


def crash(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a secret in the traceback")


# The site's own URLs and error handlers, and views that crash (tests.test_api_errors as
# ROOT_URLCONF): a 500 is the handlers' answer, whatever failed.
urlpatterns = [
    path("api/v1/crash", Crash.as_view()),
    path("api/v1/plain-crash", crash),
    path("crash", crash),
    *site,
]
__all__ = ["handler400", "handler404", "handler500", "urlpatterns"]


@pytest.mark.urls("tests.test_api_errors")
@pytest.mark.parametrize("url", ["/api/v1/crash", "/api/v1/plain-crash"])
def test_a_crash_under_the_api_is_a_json_500_without_its_traceback(url: str) -> None:
    response = Client(raise_request_exception=False).get(url)
    answer = assert_error(response, 500, "server_error")
    assert "secret" not in answer["detail"]
    assert b"Traceback" not in response.content


@pytest.mark.urls("tests.test_api_errors")
def test_a_crash_on_a_page_is_still_the_html_500() -> None:
    response = Client(raise_request_exception=False).get("/crash")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
