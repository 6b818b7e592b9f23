"""`make screenshots`: retake the README's screenshots from a fresh demo.

Starts its own server on a scratch SQLite database loaded with the demo, walks the pages a
newcomer sees in Debian's Chromium, and writes docs/screenshots/*.png.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
DANA = "acct_4b71c9e20d8af315"
MARCO = "acct_1f6b0c93d2e84a71"
PRIYA = "acct_9c2e47b1f06d3a58"
PASSWORD = "demo-password-1"


@contextmanager
def demo_server() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as scratch:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = os.environ | {
            "DEBUG": "1",
            "DATABASE_URL": f"sqlite:///{scratch}/demo.sqlite3",
            "DJANGO_RUNSERVER_HIDE_WARNING": "true",
        }
        manage = [sys.executable, "manage.py"]
        # verify_audit: the Audit page's chain status shows a verification, by the command line.
        for command in (["migrate", "-v", "0"], ["seed_demo"], ["verify_audit"]):
            subprocess.run(manage + command, cwd=ROOT, env=env, check=True, capture_output=True)
        server = subprocess.Popen(
            manage + ["runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(120):
                try:
                    urllib.request.urlopen(f"{base}/accounts/login/", timeout=1)
                    break
                except (urllib.error.URLError, OSError):
                    time.sleep(0.5)
            else:
                raise SystemExit(f"The demo server at {base} never answered.")
            yield base
        finally:
            server.terminate()
            server.wait(timeout=10)


def signed_in(browser: Any, base: str, username: str, width: int = 1280) -> Any:
    context = browser.new_context(
        viewport={"width": width, "height": 900},
        base_url=base,
        device_scale_factor=1,
        is_mobile=width < 600,
    )
    page = context.new_page()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    return page


def shoot(page: Any, name: str, *, full_page: bool = True) -> None:
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(OUT / f"{name}.png"), full_page=full_page)
    print(f"docs/screenshots/{name}.png")


def take(browser: Any, base: str) -> None:
    dana = signed_in(browser, base, "dana")
    dana.goto(f"/subjects/{DANA}/")
    shoot(dana, "user-01-overview-desktop")
    uses = dana.locator("details.uses").first
    uses.locator("summary").click()
    dana.wait_for_load_state("networkidle")
    uses.locator("xpath=ancestor::article").screenshot(path=str(OUT / "user-02-used-in.png"))
    print("docs/screenshots/user-02-used-in.png")
    take_untrusted_writes(dana)
    # Support's queue before Dana's correction below closes one of its possible conflicts.
    sam = signed_in(browser, base, "sam")
    sam.goto("/queues/conflicts/")
    shoot(sam, "support-08-conflicts-queue", full_page=False)

    card = dana.locator("article.memory", has_text="Prefers email over telephone")
    card.get_by_role("link", name="Correct").click()
    dana.get_by_label("Correct what the assistant remembers").fill(
        "Prefers email; a phone call only for a failed payment."
    )
    shoot(dana, "user-03-correct-inline")
    dana.get_by_role("button", name="Save correction").click()
    dana.wait_for_load_state("networkidle")
    card = dana.locator("article.memory", has_text="Account is on the Team plan")
    card.get_by_role("link", name="Delete").click()
    dana.get_by_role("button", name="Yes, delete it").click()
    dana.get_by_role("button", name="Undo").wait_for()
    shoot(dana, "user-04-deleted-with-undo")

    corrected = dana.locator("article.memory", has_text="a phone call only for a failed payment")
    corrected.get_by_role("link", name="History").click()
    shoot(dana, "user-08-history")

    dana.goto(f"/subjects/{DANA}/")
    dana.get_by_role("button", name="Pause memory").click()
    dana.get_by_role("button", name="Switch memory back on").wait_for()
    shoot(dana, "user-05-paused", full_page=False)
    dana.get_by_role("button", name="Switch memory back on").click()

    dana.goto(f"/subjects/{DANA}/erase/")
    shoot(dana, "user-06-erase-confirm", full_page=False)

    phone = signed_in(browser, base, "dana", width=390)
    phone.goto(f"/subjects/{DANA}/")
    shoot(phone, "user-09-overview-phone")

    sam.goto("/runs/run_77/journal/")
    shoot(sam, "run-journal")
    sam.goto("/runs/run_77/snapshots/")
    shoot(sam, "snapshot-timeline")
    sam.goto("/runs/run_77/snapshots/diff/")
    shoot(sam, "snapshot-diff")
    sam.goto("/reminders/")
    shoot(sam, "reminders-support")
    take_support(sam)
    take_admin(signed_in(browser, base, "alex"))
    # Last: the work it records would head the admin's audit screenshot.
    take_queue_work(sam)


def take_untrusted_writes(dana: Any) -> None:
    """What the write gate caught for Dana: a statement at odds with the ledger's commitment,
    and an instruction from a tool result held for her review."""
    commitment = dana.locator("section.conflict.possible", has_text="ledger commitment")
    commitment.screenshot(path=str(OUT / "user-10-possible-conflict.png"))
    print("docs/screenshots/user-10-possible-conflict.png")
    held = dana.locator("article.question", has_text="ignore previous instructions")
    held.screenshot(path=str(OUT / "user-11-held-for-review.png"))
    print("docs/screenshots/user-11-held-for-review.png")


def take_queue_work(sam: Any) -> None:
    """An item of the conflicts queue taken by sam, with its ticket and an internal note."""
    sam.goto("/queues/conflicts/")
    row = sam.locator("table.queue tbody tr").first
    row.get_by_role("button", name="Take it").click()
    row.locator("p.work-status", has_text="Assigned to").wait_for()
    row.get_by_label("Ticket").fill("HD-4471")
    row.get_by_role("button", name="Save ticket").click()
    row.locator("code.ticket").wait_for()
    row.locator("summary", has_text="Internal notes").click()
    row.get_by_label("New note").fill("Asked Dana by e-mail which delivery window holds.")
    row.get_by_role("button", name="Add note").click()
    row.get_by_text("Asked Dana by e-mail").wait_for()
    sam.goto("/queues/conflicts/?assigned=mine")
    if sam.locator("summary", has_text="Internal notes").count():
        sam.locator("summary", has_text="Internal notes").first.click()
    shoot(sam, "support-09-queue-work", full_page=False)


def take_support(sam: Any) -> None:
    """Support's tour: Marco's complaint, from the search box to a batch deletion."""
    sam.goto("/?q=phone")
    shoot(sam, "support-01-search")
    results = sam.locator("section[aria-labelledby=memory-results-title]")
    row = results.get_by_role("row").filter(has_text="Happy to be phoned about deliveries.")
    row.get_by_role("link", name="Trace").click()
    shoot(sam, "support-02-trace")
    sam.goto("/sources/msg_0588/")
    shoot(sam, "support-03-source")
    sam.goto(f"/complaints/?subject={MARCO}&phrase=phone")
    shoot(sam, "support-04-complaint")
    sam.goto(f"/subjects/{MARCO}/as-of/")
    shoot(sam, "support-05-as-of")
    sam.goto("/retractions/new/?source_ref=msg_0588")
    shoot(sam, "support-06-batch-preview")
    sam.goto("/")
    shoot(sam, "support-07-home-queues")


def take_admin(alex: Any) -> None:
    """The admin's tour: support's correction on the wrong account, found in the audit and
    about to be reverted; a policy change with its before and after, the agents (one in
    quarantine), a new key shown once, and people."""
    alex.goto("/audit/?role=support")
    shoot(alex, "admin-01-audit")
    alex.goto("/permissions/")
    shoot(alex, "admin-07-permissions")
    alex.goto(f"/audit/corrections/?subject={PRIYA}")
    row = alex.get_by_role("row").filter(has_text="Prefers to be addressed as Mrs Shah.")
    row.get_by_role("cell").first.get_by_role("link").click()
    alex.get_by_label("Why it is reverted").fill(
        "Ticket 4471 was about another customer: Priya asked to be called Priya."
    )
    shoot(alex, "admin-02-correction")
    alex.goto("/policy/")
    alex.get_by_label("Longest life of a guess").fill("14")
    alex.get_by_label("Why it changes").fill(
        "Stale guesses about contact channels reached the support queue: two weeks is enough."
    )
    alex.get_by_role("button", name="Save as version 2").click()
    alex.get_by_text("Saved as version 2.").wait_for()
    shoot(alex, "admin-03-policy")
    alex.goto("/agents/")
    shoot(alex, "admin-04-agents")
    alex.get_by_role("link", name="New agent…").click()
    alex.get_by_label("Name").fill("billing-assistant")
    alex.get_by_role("button", name="Create the agent and its key").click()
    alex.get_by_text("Store it now, it is never shown again.").wait_for()
    shoot(alex, "admin-05-new-key", full_page=False)
    alex.goto("/people/")
    shoot(alex, "admin-06-people")


def main() -> int:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with demo_server() as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        try:
            take(browser, base)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
