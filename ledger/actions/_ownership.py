"""Whether an agent may change what it did not write, asked by the actions on their rows.

Private to ``ledger.actions``. Which keys may change anyone's writes is
``access.may_change_any_write``; the write policy's switch and the refusal's words are
``rules.agents``'. The two layers may not import each other, so they meet here, where
every caller (the API, the MCP tools, the client, a command) reaches the same answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ledger import access
from ledger.actors import Actor
from ledger.models import Agent, Policy
from ledger.rules.agents import refuse_others_write, refuse_others_writes


def refuse_unless_own(
    *, actor: Actor, writer_id: int | None, what: str, in_force: Policy | None = None
) -> None:
    """Refuse an agent's change to a row another agent or a person wrote (``writer_id``: the
    row's agent), unless its key or the write policy allows it. A person's change (the
    person, support, an admin) and the system's are not an agent's: never refused here.

    The policy (unless ``in_force`` is given) and the writer's name are read only when the
    writer is someone else: an agent changing its own rows pays nothing for the check.
    """
    agent = actor.agent
    if agent is None or writer_id == agent.pk or access.may_change_any_write(agent.scopes):
        return
    current = in_force or Policy.current()
    writer = (
        None
        if writer_id is None
        else Agent.objects.filter(pk=writer_id).values_list("name", flat=True).first()
    )
    refuse_others_write(
        agent=agent.name, writer=writer, what=what, others_allowed=current.agents_change_others
    )


def refuse_unless_all_own(*, actor: Actor, writer_ids: Iterable[int | None], what: str) -> None:
    """``refuse_unless_own`` for many rows at once: all or nothing (a batch deletion)."""
    agent = actor.agent
    if agent is None or access.may_change_any_write(agent.scopes):
        return
    others = Counter(writer for writer in writer_ids if writer != agent.pk)
    if not others:
        return
    names = dict(Agent.objects.filter(pk__in=[w for w in others if w]).values_list("pk", "name"))
    by_writer: Counter[str | None] = Counter()
    for writer, count in others.items():
        by_writer[names.get(writer) if writer else None] += count
    refuse_others_writes(
        agent=agent.name,
        others=by_writer,
        what=what,
        others_allowed=Policy.current().agents_change_others,
    )
