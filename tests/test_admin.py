"""The Django admin: admins read everything and change the policy; nothing else is written there."""

from __future__ import annotations

import pytest

from ledger.models import Memory, Policy
from tests.conftest import signed_in

pytestmark = pytest.mark.django_db


def policy_form(**changes: object) -> dict[str, object]:
    policy = Policy.current()
    data: dict[str, object] = {
        f.name: getattr(policy, f.name) for f in Policy._meta.fields if f.name != "id"
    }
    data["system_of_record_keys"] = '["billing.address"]'
    data.update(changes)
    return data


def test_an_admin_changes_the_policy_with_history(make_person) -> None:
    make_person("alex", role="admin")
    alex = signed_in("alex")
    assert alex.get("/admin/ledger/policy/1/change/").status_code == 200
    response = alex.post("/admin/ledger/policy/1/change/", policy_form(inferred_max_days=14))
    assert response.status_code == 302
    policy = Policy.current()
    assert policy.inferred_max_days == 14
    assert policy.system_of_record_keys == ["billing.address"]
    latest = policy.history.first()
    assert latest.history_actor == "user:alex"
    assert "inferred_max_days" in latest.history_change_reason


@pytest.mark.parametrize(
    ("field", "value"),
    [("ttl_preference_days", 10_000_000), ("system_of_record_keys", '"billing.address"')],
)
def test_the_policy_refuses_values_that_would_break_writes(make_person, field, value) -> None:
    make_person("alex", role="admin")
    before = Policy.current()
    response = signed_in("alex").post(
        "/admin/ledger/policy/1/change/", policy_form(**{field: value})
    )
    assert response.status_code == 200
    assert "errornote" in response.content.decode()
    after = Policy.current()
    assert after.ttl_preference_days == before.ttl_preference_days
    assert after.system_of_record_keys == before.system_of_record_keys


def test_memories_are_read_only_in_the_admin_and_history_cannot_be_reverted(
    make_person, remember
) -> None:
    make_person("alex", role="admin")
    memory = remember("Prefers email.")
    alex = signed_in("alex")
    assert alex.get(f"/admin/ledger/memory/{memory.pk}/change/").status_code == 200
    version = memory.history.first().history_id
    revert = f"/admin/ledger/memory/{memory.pk}/history/{version}/"
    response = alex.post(revert, {"statement": "Injected.", "status": "active"})
    assert response.status_code == 403
    assert Memory.objects.get(pk=memory.pk).statement == "Prefers email."


def test_support_staff_do_not_use_the_django_admin(make_person) -> None:
    make_person("sam", role="support")
    response = signed_in("sam").get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
