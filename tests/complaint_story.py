"""Marco's complaint, as support meets it: a message misread into two memories, read by
three later runs, then corrected by support. Built through the product's own writes, each
step at its own moment, so pages can be asked what was true before and after."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.contrib.auth.models import User

from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.lifecycle import correct_memory
from ledger.actions.recalls import record_recall
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Memory, Recall
from ledger.reads.recall import recall

MARCO = "acct_1f6b0c93d2e84a71"
WRONG = "Happy to be phoned about deliveries."
EVENING = "Best reached by phone after 6 pm."
UNRELATED = "Prefers short answers."
RIGHT = "Prefers e-mail about deliveries, never a phone call."
START = datetime(2027, 3, 1, 10, 0, tzinfo=UTC)
CORRECTED_AT = START + timedelta(days=5)


@dataclass(frozen=True)
class Story:
    wrong: Memory
    evening: Memory
    unrelated: Memory
    right: Memory
    recalls: list[Recall]


def _write(agent: Agent, statement: str, key: str, ref: str, turn: int) -> Memory:
    data = MemoryInput(
        subject=MARCO,
        kind="preference",
        basis="stated",
        statement=statement,
        key=key,
        source=SourceInput(kind="user_message", ref=ref, run="run_150", turn=turn),
    )
    result = write_memory(agent=agent, data=data)
    assert result.memory is not None, result.reason
    return result.memory


def build_story(
    *, agent: Agent, support: User, clock: Callable[[datetime], None], goal: str = ""
) -> Story:
    clock(START)
    unrelated = _write(agent, UNRELATED, "answers.length", "msg_0581", 1)
    # A minute apart, so that memories matching a phrase equally have a stable order.
    clock(START + timedelta(minutes=1))
    evening = _write(agent, EVENING, "contact.time", "msg_0588", 3)
    clock(START + timedelta(minutes=2))
    wrong = _write(agent, WRONG, "contact.channel", "msg_0588", 3)
    recalls = []
    for day, run in enumerate(("run_151", "run_152", "run_153"), start=1):
        clock(START + timedelta(days=day))
        result = recall(subject=wrong.subject, goal=goal or "arrange a delivery", k=5)
        recalls.append(record_recall(agent=agent, result=result, run_ref=run, turn=2))
    clock(CORRECTED_AT)
    right = correct_memory(
        memory=wrong,
        actor=Actor.for_user(support),
        statement=RIGHT,
        reason="Marco asked to be e-mailed, never called.",
    )
    clock(CORRECTED_AT + timedelta(hours=1))
    return Story(wrong=wrong, evening=evening, unrelated=unrelated, right=right, recalls=recalls)
