"""A person can sign in through a real browser and lands on their dashboard."""

import pytest

from tests.conftest import ARTIFACTS, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_end_user_signs_in_and_sees_their_dashboard(browser_page, make_person) -> None:
    make_person("dana", subject="acct_4b71c9e20d8af315")
    sign_in(browser_page, "dana")
    assert browser_page.get_by_role("heading", level=1).inner_text() == (
        "What the assistant remembers about you"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    browser_page.screenshot(path=ARTIFACTS / "home.png")


def test_wrong_password_says_so(browser_page, make_person) -> None:
    make_person("dana", subject="acct_4b71c9e20d8af315")
    browser_page.goto("/accounts/login/")
    browser_page.get_by_label("Username").fill("dana")
    browser_page.get_by_label("Password").fill("not-the-password")
    browser_page.get_by_role("button", name="Sign in").click()
    assert "did not match" in browser_page.get_by_role("alert").inner_text()
