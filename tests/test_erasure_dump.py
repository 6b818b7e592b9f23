"""After an erasure, a real ``pg_dump`` of the database holds none of the person's words.

A canary is written into every text column (CharField, TextField, JSONField) of every row
reachable from the subject, history rows included, after the subject's data was written
through every route the canary test uses. Columns and tables are found by introspection
over ``django.apps``, so a column or table added later gets the canary too, and the test
fails until erasure covers it or the allow-lists below say, with a reason, why it cannot
hold a person's words. Then the person erases themselves on the dashboard and the test
database is dumped with ``pg_dump``, as a backup would be.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.db import connection, models
from django.test import Client
from django.urls import reverse

from ledger.actions.erasure_requests import decline_erasure, request_erasure
from ledger.actors import Actor
from ledger.models import ErasureRequest, Subject
from tests import test_erasure_canary
from tests.test_erasure_canary import ok

pytestmark = pytest.mark.django_db(transaction=True)

# Different from the canary test's: the rows it wrote say theirs in places we do not touch.
CANARY = "qxdumpcanary"

# Dana, with her data written through every route that stores any (the canary test's).
dana = test_erasure_canary.dana
support = test_erasure_canary.support
everywhere = test_erasure_canary.everywhere

# Tables a subject's rows point at that are not about the subject: the search stops there.
NOT_THE_SUBJECTS = {
    # The person's account: kept, so that they can still sign in and see that the erasure
    # happened (docs/end-users.md); their name and address are account data, not memory.
    "auth.User",
    # Agents and webhook endpoints are the product's configuration, shared by every subject.
    "ledger.Agent",
    "ledger.WebhookEndpoint",
}

# Columns that cannot hold a person's words, by model label ("*" for every model), and why.
NOT_WORDS = {
    # The subject's ref is an opaque account id (``acct_…``) and erasure keeps it, so that
    # the person still finds their page and sees what happened.
    ("ledger.Subject", "ref"),
    # Who acted, as history labels ("user:sam", "agent:crm-bot", "system:expiry"): the
    # skeleton an erasure keeps on purpose. Accounts' names, not anything said.
    ("*", "history_actor"),
    ("ledger.RetractionBatch", "retracted_by"),
    ("ledger.RetractionBatch", "undone_by"),
    ("ledger.Erasure", "erased_by"),
    ("ledger.ErasureRequest", "requested_by"),
    ("ledger.ErasureRequest", "decided_by"),
    # A MAC over the history row: a keyed hash, recomputable from nothing personal.
    ("*", "history_mac"),
    # How a memory became stated: a code from ``choices.StatedBy``.
    ("ledger.Memory", "stated_by"),
    # The gate's refusal code, from a fixed list (its reason, which quotes, is blanked).
    ("ledger.WriteDecision", "code"),
    # How a read was ranked ("words", "meaning") and the embedding model's name.
    ("ledger.Recall", "semantic"),
    ("ledger.Recall", "model"),
    ("ledger.RecallItem", "via"),
    # Token counts only: the API takes integers there (``BudgetSerializer``).
    ("ledger.Snapshot", "budget"),
    # A webhook's event type (a fixed list), and what went wrong delivering it: errors about
    # the endpoint, never the receiver's answer (its body is not read).
    ("ledger.WebhookDelivery", "event"),
    ("ledger.WebhookDelivery", "last_error"),
    ("ledger.WebhookDelivery", "attempt_log"),
    # Who asked for the erasure and how, as staff recorded it, and why an admin declined
    # one: the erasure review's evidence, kept with the erasure's own record (the forms say
    # to write it without personal details).
    ("ledger.Erasure", "requested_by"),
    ("ledger.ErasureRequest", "reason"),
    ("ledger.ErasureRequest", "decision_reason"),
    # The request's versions say why each step was taken in the same staff words.
    ("ledger.HistoricalErasureRequest", "history_change_reason"),
}

TEXT = (models.CharField, models.TextField, models.JSONField)


def _label(model: type[models.Model]) -> str:
    return str(model._meta.label)


def _tracked(model: type[models.Model]) -> type[models.Model] | None:
    """The tracked model a history model records; None for any other model."""
    return getattr(model, "instance_type", None) if hasattr(model, "history_id") else None


def _text_columns(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    """The columns of ``model`` that can hold text, less codes and the allow-list. A column
    with choices holds a code from a fixed list, never a person's words."""
    tracked = _tracked(model)
    labels = {_label(model), *([_label(tracked)] if tracked else [])}
    return [
        field
        for field in model._meta.concrete_fields
        if isinstance(field, TEXT)
        and not field.choices
        and not any((label, field.name) in NOT_WORDS for label in (*labels, "*"))
    ]


def reachable(subject: Subject) -> dict[type[models.Model], set[Any]]:
    """Every row reachable from ``subject`` by foreign keys, either way, and each tracked
    row's history; stopping at the tables that are not about the subject."""
    candidates = [
        model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and _label(model) not in NOT_THE_SUBJECTS
    ]
    reached: dict[type[models.Model], set[Any]] = {Subject: {subject.pk}}

    def add(model: type[models.Model], pks: set[Any]) -> bool:
        new = pks - reached.get(model, set())
        if new:
            reached.setdefault(model, set()).update(new)
        return bool(new)

    grew = True
    while grew:
        grew = False
        for model in candidates:
            rows = model._default_manager.all()
            for field in model._meta.concrete_fields:
                target = field.related_model
                if not isinstance(target, type) or _label(target) in NOT_THE_SUBJECTS:
                    continue
                if target in reached:  # rows pointing at reached rows
                    children = rows.filter(**{f"{field.attname}__in": reached[target]})
                    grew |= add(model, set(children.values_list("pk", flat=True)))
                if model in reached:  # rows that reached rows point at
                    parents = rows.filter(
                        pk__in=reached[model], **{f"{field.attname}__isnull": False}
                    )
                    grew |= add(target, set(parents.values_list(field.attname, flat=True)))
            tracked = _tracked(model)
            if tracked is not None:
                versions = rows.filter(history_subject_id=subject.pk)
                if tracked in reached:
                    versions = versions | rows.filter(id__in=reached[tracked])
                grew |= add(model, set(versions.values_list("pk", flat=True)))
    return reached


def write_canary(reached: dict[type[models.Model], set[Any]]) -> list[str]:
    """The canary (with each row's id, for unique columns) into every text column of every
    reached row; the ``table.column`` written."""
    written = []
    with connection.cursor() as cursor:
        for model, pks in reached.items():
            table, pk = model._meta.db_table, model._meta.pk.column
            for field in _text_columns(model):
                value = f'%s || "{pk}"::text'
                if isinstance(field, models.JSONField):
                    value = f"to_jsonb({value})"
                # Names come from the models; the canary and the ids are parameters.
                cursor.execute(
                    f'UPDATE "{table}" SET "{field.column}" = {value} WHERE "{pk}" = ANY(%s)',
                    [CANARY, list(pks)],
                )
                written.append(f"{table}.{field.column}")
    return written


def pg_dump() -> str:
    """The test database as ``pg_dump`` writes it: every table's rows as a backup has them."""
    db = connection.settings_dict
    command = ["pg_dump", "--no-owner", "--dbname", db["NAME"]]
    for option, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
        if db.get(key):
            command += [option, str(db[key])]
    env = {**os.environ, "PGPASSWORD": str(db.get("PASSWORD") or "")}
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout


def where_in(dump: str) -> list[str]:
    """The tables (``COPY`` sections) of ``dump`` whose rows hold the canary."""
    found = []
    table = ""
    for line in dump.splitlines():
        if match := re.match(r"COPY (\S+) \((.*)\) FROM stdin;", line):
            table = f"{match[1]} ({match[2]})"
        elif CANARY in line.casefold():
            found.append(f"{table}: {line[:200]}")
    return found


@pytest.fixture
def requested(everywhere: Subject, make_person: Callable[..., User]) -> Subject:
    """An erasure support asked for, which an admin declined: the request and its history
    are among the subject's rows too."""
    sam = User.objects.get(username="sam")
    ada = make_person("ada", role="admin")
    filed = request_erasure(
        subject=everywhere, actor=Actor.for_user(sam), reason="the person, by phone, ticket 7"
    )
    decline_erasure(request=filed, actor=Actor.for_user(ada), reason="ticket was withdrawn")
    return everywhere


def test_a_dump_after_the_erasure_holds_no_canary_in_any_text_column(
    dana: Client, requested: Subject
) -> None:
    reached = reachable(requested)
    # The search finds what the routes wrote: a sample of tables, live and history.
    assert {
        Subject,
        ErasureRequest,
        apps.get_model("ledger", "Memory"),
        apps.get_model("ledger", "HistoricalRun"),
        apps.get_model("ledger", "RetractionBatch"),
        apps.get_model("ledger", "HistoricalRetractionBatch"),
        apps.get_model("ledger", "IdempotencyRecord"),
        apps.get_model("ledger", "WebhookDelivery"),
    } <= set(reached)
    written = write_canary(reached)
    assert {"ledger_run.ref", "ledger_historicalretractionbatch.reason"} <= set(written)
    before = where_in(pg_dump())
    assert before, "the canary was not written"

    # The person types their account id (their display name is now the canary).
    ok(
        dana.post(reverse("subject-erase", args=[requested.ref]), {"confirm_name": requested.ref}),
        302,
    )

    left = where_in(pg_dump())
    assert left == [], "the canary survived the erasure in:\n" + "\n".join(left)
