"""Every staff filter and search keeps what was asked in the address: a filtered view can be
shared, reloaded, and Back restores it (the audit page and the queues have their own tests)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User

from ledger.models import Memory
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/?q=email",
        "/complaints/",
        "/audit/corrections/",
        "/retractions/new/",
        f"/subjects/{SUBJECT}/",
    ],
)
def test_filter_forms_are_get_forms_and_htmx_ones_push_the_address(
    make_person: Callable[..., User], remember: Callable[..., Memory], url: str
) -> None:
    remember("Prefers email over telephone.")
    response = signed_in(make_person("ada", role="admin")).get(url)
    assert response.status_code == 200
    forms = re.findall(r"<form\b[^>]*>", response.content.decode())
    filters = [form for form in forms if 'method="get"' in form and "hx-get" in form]
    assert filters, url
    for form in filters:
        assert 'hx-push-url="true"' in form, form
