from typing import Any
import pytest
from tests.conftest import ARTIFACTS, sign_in, SUBJECT
from tests.test_ledger_pages import ledger, subject, frozen, LEDGER  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

def test_shot(browser_page: Any, ledger: Any, make_person: Any) -> None:
    make_person("sam", role="support")
    make_person("dana", subject=SUBJECT)
    sign_in(browser_page, "sam")
    browser_page.goto(LEDGER)
    browser_page.screenshot(path=ARTIFACTS / "tmp-ledger-staff.png", full_page=True)
    browser_page.context.clear_cookies()
    sign_in(browser_page, "dana")
    browser_page.goto(LEDGER)
    browser_page.screenshot(path=ARTIFACTS / "tmp-ledger-owner.png", full_page=True)
