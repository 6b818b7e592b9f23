"""An admin's webhook in a real browser: registered, its secret shown once (a reload
neither shows it again nor registers a second endpoint), a test event sent to a receiver on
loopback, and the delivery with its attempt on the endpoint's page."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from memoryadmin_client.signatures import verify_signature
from playwright.sync_api import expect

from ledger.models import WebhookEndpoint
from memoryadmin.celery import app
from tests.conftest import sign_in
from tests.test_webhooks import Receiver, receiving

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as got:
        yield got


@pytest.fixture
def eager_in_the_server() -> Iterator[None]:
    """The live server's requests deliver on commit, in their own thread (its Celery app
    is the project's, whichever app this thread made current)."""
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def test_an_admin_registers_an_endpoint_and_sees_its_test_event_delivered(
    browser_page: Any,
    make_person: Callable[..., User],
    receiver: Receiver,
    eager_in_the_server: None,
    settings: Any,
) -> None:
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    make_person("ada", role="admin")
    page = browser_page
    sign_in(page, "ada")
    page.goto("/webhooks/")
    page.get_by_label("Address (http or https)").fill(receiver.url)
    page.get_by_label("Description").fill("The CRM's mirror")
    page.get_by_label("memory.written", exact=False).check()
    page.get_by_role("button", name="Register, and show its secret").click()

    expect(page.get_by_role("heading", name="Its signing secret, shown this once")).to_be_visible()
    secret = page.locator("#webhook-secret").inner_text()
    hook = WebhookEndpoint.objects.get()
    assert secret == hook.secret and secret.startswith("whsec_")
    assert hook.events == ["memory.written"]
    # Post/Redirect/Get: the page is the endpoint's own, and a reload sends no form again.
    assert page.url.endswith(f"/webhooks/{hook.pk}/")
    page.reload()
    expect(page.get_by_role("heading", name="Webhook")).to_be_visible()
    expect(page.locator("#webhook-secret")).to_have_count(0)
    assert WebhookEndpoint.objects.count() == 1

    page.get_by_role("button", name="Send a test event").click()
    row = page.locator("table.webhook-deliveries tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("webhook.test")
    expect(row).to_contain_text("delivered")
    expect(row.locator("ol.attempts li")).to_have_count(1)
    expect(row.locator("ol.attempts li")).to_contain_text("HTTP 200")
    # Shown once: the page after the test event no longer holds it.
    expect(page.locator("#webhook-secret")).to_have_count(0)
    assert secret not in page.content()

    (headers, raw) = receiver.received[0]
    assert len(receiver.received) == 1
    assert verify_signature(secret, raw, headers["Memoryadmin-Signature"])
    event = json.loads(raw)
    assert event["type"] == "webhook.test"
    expect(row).to_contain_text(event["id"])
