"""An agent loop against memoryadmin, end to end, through the Python client alone.

A scripted "model" (no network but memoryadmin, no weights, the same decisions every time)
talks with Robin of Harbour Lane Books about a delivery. It writes memories from what is
said and what a tool returns, recalls them before replying, records a commitment in the
ledger, journals a text message whose outcome is unknown and resolves it on resume, and
compacts its context twice: the second summary drops the commitment and is rejected.

    make run                                   # in one terminal
    .venv/bin/python examples/agent_loop.py    # in another

``--base-url`` / ``MEMORYADMIN_URL`` and ``--key`` / ``MEMORYADMIN_KEY`` point it elsewhere.
Every invocation is a new run (``example-<time>``), so it can be run again and again: what
repeats is reported by the write gate as a repeat. Exit status: 0 when the story ran as
told, 1 when memoryadmin answered otherwise, 2 when it is not reachable, 3 when the key is
refused.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from datetime import UTC, datetime
from typing import Any

from memoryadmin_client import (
    AuthenticationFailed,
    ConnectionFailed,
    MemoryAdminError,
    MemoryClient,
    PermissionDenied,
    SnapshotRejected,
    SystemOfRecord,
)

DEFAULT_URL = "http://127.0.0.1:8000"
DEMO_KEY = "ma_demo00000000_local-demo-key-do-not-use-in-production"
# A subject of its own, so the demo's tour is left as it is and its page tells only this story.
SUBJECT = "acct_example_agent_loop"
# The demo's support person sees every subject and run; the end user dana sees only her own.
SIGN_IN_AS = "sam"
SIGN_IN_ROLE = "support"
DEMO_PASSWORD = "demo-password-1"

GREETING = (
    "Hi, it's Robin at Harbour Lane Books. When a delivery is on its way, please text me "
    "rather than ring, I'm usually on the shop floor."
)
PREFERENCE = "Prefers a text message to a phone call when a delivery is on its way."
ORDER_HISTORY = "9 of the last 10 orders were placed on a Tuesday"
GUESS = "Usually orders new stock on Tuesdays."
EMAIL_MESSAGE = "My e-mail is robin@harbourlane.example, keep it on file."
EMAIL = "E-mail address is robin@harbourlane.example."
SATURDAYS = "And never deliver on a Saturday, the shop is closed."
COMMITMENT = "Never deliver on a Saturday: the shop is closed."
GOAL = "tell Robin that order HLB-1042 is on its way"
ORDER = "HLB-1042"


class Unexpected(Exception):
    """memoryadmin answered, but not as the story expects."""


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    try:
        with MemoryClient(options.base_url, options.key, timeout=10.0) as client:
            Story(client, options.base_url.rstrip("/")).run()
    except ConnectionFailed as error:
        return fail(
            2,
            f"memoryadmin is not reachable at {options.base_url} ({error.detail}).\n"
            "Start it with `make run` first (or give --base-url).",
        )
    except AuthenticationFailed as error:
        return fail(3, f"The key was refused: {error.detail} Give a valid one with --key.")
    except PermissionDenied as error:
        return fail(3, f"The key may not do this: {error.detail} It needs read and write.")
    except MemoryAdminError as error:
        return fail(1, f"memoryadmin refused a call the story needs: {error}")
    except Unexpected as error:
        return fail(1, f"The story did not go as expected: {error}")
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="A scripted agent's conversation against memoryadmin, end to end."
    )
    parser.add_argument(
        "--base-url",
        default=os.environ.get("MEMORYADMIN_URL", DEFAULT_URL),
        help=f"where memoryadmin runs (MEMORYADMIN_URL; default {DEFAULT_URL})",
    )
    parser.add_argument(
        "--key",
        default=os.environ.get("MEMORYADMIN_KEY", DEMO_KEY),
        help="an agent key with read and write scopes (MEMORYADMIN_KEY; default: the demo's)",
    )
    options = parser.parse_args(argv)
    if not options.base_url.startswith(("http://", "https://")):
        parser.error(f"--base-url must start with http:// or https://, not {options.base_url!r}")
    return options


def fail(status: int, message: str) -> int:
    print(f"\n{message}", file=sys.stderr)
    return status


def say(who: str, text: str) -> None:
    """One line of the story: who acted (the user, the model, the gate …) and what."""
    lines = textwrap.wrap(text, width=90, break_long_words=False, break_on_hyphens=False) or [""]
    print(f"  {who:<7}{lines[0]}")
    for line in lines[1:]:
        print(f"  {'':<7}{line}")


def heading(text: str) -> None:
    print(f"\n{text}")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class SmsGateway:
    """The outside world the model acts on, scripted: the send times out, and its delivery
    log, read afterwards, shows the message arrived."""

    def send(self, to: str, text: str) -> dict[str, Any]:
        raise TimeoutError("SMS gateway timed out after 30 s")

    def delivery_log(self, order: str) -> dict[str, Any]:
        return {"order": order, "status": "delivered", "provider_id": "sms_5521", "at": now()}


class Story:
    def __init__(self, client: MemoryClient, base_url: str) -> None:
        self.client = client
        self.base_url = base_url
        self.run_ref = "example-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")[:-3]
        self.turn = 0

    def run(self) -> None:
        # The first call tells an unreachable server or a refused key apart from the story.
        self.client.tools()
        print(f"memoryadmin agent loop: run {self.run_ref} about subject {SUBJECT}")
        print(f"  server {self.base_url}")
        preference = self.remember_from_messages()
        recall_id = self.recall()
        self.keep_commitment()
        journal_key = self.send_text_message()
        generation = self.compact(journal_key)
        self.show_where(preference, recall_id, generation)
        print("\nThe story ran as expected.")

    def message(self, excerpt: str) -> dict[str, Any]:
        """The source of what the user said on the next turn: a message of this run."""
        self.turn += 1
        ref = f"{self.run_ref}-msg-{self.turn}"
        return {
            "kind": "user_message",
            "ref": ref,
            "run": self.run_ref,
            "turn": self.turn,
            "excerpt": excerpt,
        }

    def tool_result(self, tool: str, excerpt: str) -> dict[str, Any]:
        self.turn += 1
        ref = f"{self.run_ref}-{tool}-{self.turn}"
        return {
            "kind": "tool_result",
            "ref": ref,
            "run": self.run_ref,
            "turn": self.turn,
            "excerpt": excerpt,
        }

    def remember_from_messages(self) -> str:
        heading("1. The model writes memories from the conversation; the write gate decides")
        say("user", f"“{GREETING}”")
        say("model", f"remember (stated preference, slot contact.delivery_notice): “{PREFERENCE}”")
        written = self.client.remember(
            subject=SUBJECT,
            kind="preference",
            key="contact.delivery_notice",
            statement=PREFERENCE,
            basis="stated",
            source=self.message("please text me rather than ring"),
        )
        self.gate_said(written)
        preference: str = written["memory"]["id"]

        say("tool", f"order_history(“Harbour Lane Books”) → {ORDER_HISTORY}")
        say("model", f"remember (inferred account fact, slot order.weekday): “{GUESS}”")
        guessed = self.client.remember(
            subject=SUBJECT,
            kind="account_fact",
            key="order.weekday",
            statement=GUESS,
            basis="inferred",
            source=self.tool_result("order-history", ORDER_HISTORY),
        )
        self.gate_said(guessed)
        if guessed["memory"]["status"] == "active":
            say("", "(a person has confirmed this guess since an earlier run: it is served)")

        say("user", f"“{EMAIL_MESSAGE}”")
        say("model", f"remember (stated account fact, slot contact.email): “{EMAIL}”")
        try:
            self.client.remember(
                subject=SUBJECT,
                kind="account_fact",
                key="contact.email",
                statement=EMAIL,
                basis="stated",
                source=self.message(EMAIL_MESSAGE),
            )
        except SystemOfRecord as refused:
            say("gate", f"refused ({refused.status} {refused.code}): {refused.detail}")
        else:
            raise Unexpected("the write gate kept an e-mail address, a system-of-record key.")
        return preference

    def gate_said(self, answer: dict[str, Any]) -> None:
        decision = answer["decision"]
        outcome = decision["outcome"]
        if outcome == "merged":
            say("gate", f"repeat: {decision['reason']}")
        else:
            say("gate", f"{outcome}: {decision['reason']}")
        if answer.get("conflict"):
            say("", "(it disagrees with another memory in its slot: a conflict is open)")

    def recall(self) -> int:
        heading("2. Before replying, the model recalls what is remembered, with a goal")
        say("model", f"recall(goal=“{GOAL}”, k=5)")
        recalled = self.client.recall(SUBJECT, goal=GOAL, k=5, run=self.run_ref, turn=self.turn)
        say(
            "memory",
            f"recall #{recalled.id} recorded: {len(recalled.memories)} served, "
            f"{len(recalled.conflicts)} open conflicts. The block for the model's prompt:",
        )
        if PREFERENCE not in recalled.block:
            raise Unexpected("the recall block does not hold the stated preference.")
        for line in recalled.block.splitlines():
            print(f"    {line}")
        if GUESS not in recalled.block:
            say("", "The guess is not in it: it waits for a second agent or a person.")
        return recalled.id

    def keep_commitment(self) -> None:
        heading("3. A commitment goes into the ledger, outside the context window")
        say("user", f"“{SATURDAYS}”")
        say("model", f"ledger_add(kind=commitment): “{COMMITMENT}”")
        source = self.message(SATURDAYS)
        in_force = self.client.ledger_in_force(SUBJECT, kind="commitment")
        kept = next((entry for entry in in_force if entry["fact"] == COMMITMENT), None)
        if kept is not None:
            # An immutable commitment already binds every run about Robin: one is enough.
            say(
                "ledger",
                f"already in force since {kept['recorded_at'][:10]} (run {kept['run']}): "
                "not recorded twice",
            )
            return
        added = self.client.ledger_add(
            SUBJECT,
            fact=COMMITMENT,
            kind="commitment",
            immutable=True,
            run=self.run_ref,
            source=source,
        )
        say("ledger", f"recorded: {added['entry']['label']}")

    def send_text_message(self) -> str:
        heading("4. A side effect is journaled before it happens, and resolved on resume")
        gateway = SmsGateway()
        text = f"Order {ORDER} is on its way and arrives on Tuesday."
        intended = self.client.journal_intent(
            self.run_ref,
            action="send_sms",
            intent={"to": "Robin (text message, as preferred)", "order": ORDER, "text": text},
        )
        key: str = intended["entry"]["idempotency_key"]
        say("model", f"journal_intent(send_sms) → {intended['entry']['state']}, key {key}")
        try:
            gateway.send("Robin", text)
        except TimeoutError as error:
            say("tool", f"send_sms → {error}")
            unknown = self.client.journal_result(key, state="unknown", effect={"error": str(error)})
            say("model", f"journal_result → {unknown['state']}: sent, and nothing verified it")
        else:
            raise Unexpected("the scripted gateway answered; it is meant to time out.")

        say("", "… the agent restarts, and before any retry asks what needs resolving:")
        pending = self.client.resume()
        say("model", f"resume() → {len(pending)} to resolve before any retry")
        for entry in pending:
            whose = "this run" if entry["run"] == self.run_ref else f"{entry['run']}, another run"
            say("", f"- {entry['idempotency_key']} ({entry['action']}, {whose}): {entry['state']}")
        if key not in {entry["idempotency_key"] for entry in pending}:
            raise Unexpected(f"resume() did not list {key}, whose outcome is unknown.")
        log = gateway.delivery_log(ORDER)
        say("tool", f"sms_delivery_log({ORDER}) → {log['status']} ({log['provider_id']})")
        done = self.client.journal_result(key, state="done", verification=log)
        say("model", f"journal_result → {done['state']}, verified; not sent a second time")
        return key

    def compact(self, journal_key: str) -> int:
        """The two compactions; the generation of the accepted one."""
        heading("5. The context is compacted twice; each state document is checked by shape")
        commitments = [e["fact"] for e in self.client.ledger_in_force(SUBJECT, kind="commitment")]
        document = self.state_document(journal_key, commitments)
        budget = {"system_prompt": 900, "tool_definitions": 1800, "goal": 60, "summary": 1500}
        first = self.client.snapshot_post(
            self.run_ref,
            document,
            subject=SUBJECT,
            tokens_before=24000,
            tokens_after=6100,
            budget={**budget, "recent_turns": 1840},
            narrative="Robin wants texts; the notice was sent and verified; no date yet.",
        )
        say(
            "model",
            f"snapshot_post generation {first['generation']} (24,000 → 6,100 tokens), "
            "carrying every commitment in force",
        )
        if first["status"] != "accepted":
            raise Unexpected(f"the first snapshot was {first['status']}: {first['problems']}")
        say("gate", "accepted")

        # A lossy summary: everything kept but the commitment, which is dropped.
        lossy = {**document, "commitments": [c for c in commitments if c != COMMITMENT]}
        say(
            "model",
            f"snapshot_post generation {first['generation'] + 1} (26,500 → 4,800 tokens): "
            "the summary dropped the commitment",
        )
        try:
            self.client.snapshot_post(
                self.run_ref,
                lossy,
                tokens_before=26500,
                tokens_after=4800,
                budget={**budget, "recent_turns": 540},
            )
        except SnapshotRejected as rejected:
            say("gate", "rejected, stored with every problem so people can see what was lost:")
            for problem in rejected.problems:
                say("", f"- {problem['check']}/{problem['code']}: {problem['message']}")
            if not any(COMMITMENT in problem["items"] for problem in rejected.problems):
                raise Unexpected("the rejection does not name the dropped commitment.") from None
        else:
            raise Unexpected("a snapshot that dropped a commitment in force was accepted.")
        generation: int = first["generation"]
        return generation

    def state_document(self, journal_key: str, commitments: list[str]) -> dict[str, Any]:
        return {
            "task": {
                "text": f"Tell Robin that order {ORDER} is on its way, the way Robin prefers.",
                "items": ["contact channel", "delivery notice", "delivery date"],
            },
            "findings": [
                {
                    "item": "contact channel",
                    "status": "resolved",
                    "evidence": PREFERENCE,
                    "source": {"ref": f"{self.run_ref}-msg-1", "at": now()},
                },
                {
                    "item": "delivery notice",
                    "status": "resolved",
                    "evidence": "The text message was delivered (sms_5521).",
                    "source": {"ref": journal_key, "at": now()},
                },
            ],
            "open": [{"item": "delivery date", "blocked_by": "the warehouse has not confirmed it"}],
            "queries_run": ["order_history Harbour Lane Books", f"sms_delivery_log {ORDER}"],
            "commitments": commitments,
            "artifacts": [
                {
                    "url": "https://sms.example/log/sms_5521",
                    "fetched_at": now(),
                    "gist": "the delivery report of the text message",
                }
            ],
        }

    def show_where(self, preference: str, recall_id: int, generation: int) -> None:
        heading(f"6. See it all in the dashboard: {self.base_url}/")
        print(f"    Sign in as {SIGN_IN_AS} ({SIGN_IN_ROLE}), password {DEMO_PASSWORD}, and open:")
        run = f"/runs/{self.run_ref}"
        pages = [
            ("Robin's memories", f"/subjects/{SUBJECT}/"),
            ("the memory's trace", f"/memories/{preference}/history/"),
            ("the recall", f"/recalls/{recall_id}/"),
            ("the ledger", f"/subjects/{SUBJECT}/ledger/"),
            ("this run", f"{run}/"),
            ("its journal", f"{run}/journal/"),
            ("its compactions", f"{run}/snapshots/"),
            ("what gen. 2 lost", f"{run}/snapshots/diff/?a={generation}&b={generation + 1}"),
        ]
        for name, path in pages:
            print(f"    {name + ':':<20}{self.base_url}{path}")


if __name__ == "__main__":
    sys.exit(main())
