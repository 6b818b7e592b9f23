"""Why a write lands pending for a person, whatever the rest of the policy says: an
admin's restriction on its agent, or text unsafe to hand an assistant."""

from __future__ import annotations

from dataclasses import dataclass

from ledger.choices import (
    Basis,
    MemoryStatus,
    SourceKind,
)
from ledger.rules import poison
from ledger.rules.agents import RestrictedRefusal, Restriction
from ledger.rules.facts import AgentFacts
from ledger.rules.refusals import Refusal
from ledger.rules.text import sentence

# The decision's code for a write held because its text is unsafe to hand an assistant.
HELD_FOR_REVIEW = "held_for_review"


@dataclass(frozen=True)
class Hold:
    """Why an agent's write lands pending whatever the rest of the policy says: an admin's
    restriction on the agent (with the admin's reason, ``because``), or a finding of
    ``ledger.rules.poison`` in its text."""

    restriction: Restriction | None
    because: str
    reason: str

    @property
    def code(self) -> str:
        return self.restriction.code if self.restriction else HELD_FOR_REVIEW


def hold_for_text(statement: str) -> Hold | None:
    """A statement that speaks to the model, carries a link or markup, holds a secret or
    is a standing order waits for a person, whoever wrote it and on whatever basis."""
    found = poison.finding(statement)
    if found is None:
        return None
    return Hold(
        None,
        "",
        f"Held for a person's review: {found.message} Agents are not given it until a "
        "person confirms it.",
    )


def refuse_unsafe_text(text: str, *, what: str) -> None:
    """Text that has no pending state to wait in (``what``: a ledger fact) is refused when
    it would be unsafe to hand an assistant: agents are given it verbatim once it is stored.
    A standing order is not refused: a ledger commitment or proposal is by nature what the
    organisation will do ("Refund 49.00 EUR of INV-2291"), and it is a ledger entry's kind,
    not a memory about the person (``finding`` names an order only when nothing else is
    found)."""
    found = poison.finding(text)
    if found is None or found.category == poison.Category.STANDING_ORDER:
        return
    raise Refusal(
        "unsafe_text",
        f"{what} is handed to agents verbatim and cannot wait for a person's review, so it "
        f"is refused: {found.message} Nothing was written.",
    )


def held_words(*, status: str, statement: str) -> str:
    """What in a pending memory's words held it for review (the finding's message); empty
    when nothing in them was unsafe, or it is not pending."""
    found = poison.finding(statement) if status == MemoryStatus.PENDING else None
    return found.message if found else ""


def held_for_review(*, status: str, statement: str) -> str:
    """Why a memory waiting for a person was held for its words, for whoever answers it;
    empty when nothing in them was unsafe."""
    words = held_words(status=status, statement=statement)
    return f"Held for review: {words}" if words else ""


def reviewers_of_own_words(*, by_person: bool) -> str:
    """Who reviews words held for review that a person wrote: someone other than them.
    ``by_person``: the person the memory is about wrote them; else support (or an admin)."""
    return "support" if by_person else "the person or another member of staff"


def waiting_for_review(*, status: str, statement: str, by_person: bool) -> str:
    """What the writer of held words is told on their own card: who must review them, and
    why; empty when the memory is not held for its words."""
    words = held_words(status=status, statement=statement)
    if not words:
        return ""
    return f"Waiting for review by {reviewers_of_own_words(by_person=by_person)}, because: {words}"


def refuse_confirming_own_held_words(
    *, held: str, written_by: str, confirmer: str, by_person: bool
) -> None:
    """Words held for review need a second pair of eyes: whoever wrote them (``written_by``,
    an ``Actor.label``) may delete or correct them, but not confirm them in the same breath
    as writing them. ``held``: why they were held (``held_for_review``)."""
    if not held or written_by != confirmer:
        return
    raise Refusal(
        "own_held_words",
        f"You wrote these words yourself, and they are held for review. {sentence(held)} "
        f"{reviewers_of_own_words(by_person=by_person).capitalize()} must confirm them before "
        "the assistant may use them; you may delete them, or correct them again. Nothing "
        "was changed.",
        403,
    )


def refuse_paused_agent(agent: AgentFacts | None) -> None:
    """A paused agent's memory, ledger and new journal writes are refused; None is a person."""
    if agent is None or not agent.writes_paused:
        return
    because = agent.writes_paused_because
    raise RestrictedRefusal(
        Restriction.WRITES_PAUSED,
        because,
        f"An admin paused this agent's writes: {sentence(because)} Nothing was written; "
        "writes work again once an admin lifts the pause.",
    )


def refuse_unheld_change(agent: AgentFacts | None, *, what: str) -> None:
    """A change that cannot wait for a person's confirmation (``what``: a deletion, a ledger
    entry) is refused while the agent is paused or quarantined."""
    refuse_paused_agent(agent)
    if agent is None or not agent.quarantined:
        return
    because = agent.quarantined_because
    raise RestrictedRefusal(
        Restriction.QUARANTINED,
        because,
        f"An admin quarantined this agent: {sentence(because)} Its memories wait for a "
        f"person's confirmation, but {what} cannot wait, so it is refused. Nothing was written.",
    )


# Sources by which an agent says the person said it: their message, or an older system's
# record of what they stated (an import).
PERSONS_WORD = (SourceKind.USER_MESSAGE, SourceKind.IMPORT)


def hold_for(agent: AgentFacts, *, basis: str, source_kind: str, statement: str) -> Hold | None:
    """Why this agent's memory write lands pending, or None: quarantined, everything it
    writes; not trusted for stated memories, a statement it says came from the person
    (in a message, or in an import); and from anyone, a statement unsafe to hand an
    assistant."""
    if agent.quarantined:
        because = agent.quarantined_because
        return Hold(
            Restriction.QUARANTINED,
            because,
            f"Quarantined by an admin: {sentence(because)} Everything this agent writes "
            "waits for a person's confirmation before agents may use it.",
        )
    if agent.stated_untrusted and basis == Basis.STATED and source_kind in PERSONS_WORD:
        because = agent.stated_untrusted_because
        return Hold(
            Restriction.STATED_UNTRUSTED,
            because,
            f"This agent is not trusted for what people said: {sentence(because)} Its "
            "report of the person's message is taken as its own claim, and waits for a "
            "person's confirmation before agents may use it.",
        )
    return hold_for_text(statement)


def hold_for_repeat(*, writer: AgentFacts | None, statement: str) -> Hold | None:
    """A pending memory a quarantined agent wrote, or one unsafe to hand an assistant, waits
    for a person, whoever repeats it: another agent's repeat is no confirmation."""
    if writer is None or not writer.quarantined:
        return hold_for_text(statement)
    because = writer.quarantined_because
    return Hold(
        Restriction.QUARANTINED,
        because,
        f"It was first written by '{writer.name}', which an admin quarantined: "
        f"{sentence(because)} Only a person's confirmation makes it active.",
    )


def held_by_quarantine(*, status: str, writer: AgentFacts | None, for_person: bool) -> str:
    """Why a memory waiting for a person can only be made active by one: the agent that wrote
    it is quarantined, so no agent's repeat confirms it (``hold_for_repeat``). Staff read
    which agent and the admin's reason, to judge the write by; the person (``for_person``)
    what it means for their answer: the program that wrote it is under an admin's review,
    so it is used only if they confirm it (the admin's note about the agent stays in the
    memory's history). Empty when its writer is not quarantined, or it is not waiting."""
    if status != MemoryStatus.PENDING or writer is None or not writer.quarantined:
        return ""
    if for_person:
        return (
            "Held for your confirmation: an admin is reviewing the program that wrote it, "
            "so nothing that program writes is used until you confirm it."
        )
    return (
        f"Held because an admin quarantined {writer.name}: "
        f"{sentence(writer.quarantined_because)} Only a person's confirmation makes it active."
    )


def refuse_untrusted_statement(agent: AgentFacts | None, *, source_kind: str, what: str) -> None:
    """Not trusted for stated memories: ``what`` (an established fact, an agreement) resting
    on the person's message would be the agent's claim passed off as the person's word."""
    if agent is None or not agent.stated_untrusted or source_kind not in PERSONS_WORD:
        return
    because = agent.stated_untrusted_because
    raise RestrictedRefusal(
        Restriction.STATED_UNTRUSTED,
        because,
        f"An admin marked this agent not trusted for what people said: {sentence(because)} "
        f"{what} on the strength of the person's message is refused; record it as an "
        "interpretation instead. Nothing was written.",
    )
