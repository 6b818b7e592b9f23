"""Webhooks, the pure part: the events, what each one's payload holds, the body that is
signed, when a failed delivery is tried again, and which addresses may receive (the
address's form here, and which IP addresses are public; resolving the host name is I/O,
done by ``ledger.actions.webhooks``).

A leaf beside ``ledger.choices``: the models import it, and it imports no model, so what
a payload holds is decided here and written by ``ledger.actions.webhooks``.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.db import models


class Event(models.TextChoices):
    """What an endpoint may subscribe to, in the order the admin page lists them."""

    MEMORY_WRITTEN = (
        "memory.written",
        "a memory is written (accepted or held pending), or an undone batch deletion puts it back",
    )
    MEMORY_CORRECTED = "memory.corrected", "a memory is corrected"
    MEMORY_RETRACTED = "memory.retracted", "a memory is deleted (retracted), alone or in a batch"
    MEMORY_EXPIRED = "memory.expired", "a memory expires"
    # Every other move a memory makes (``rules.memories.MEMORY_MOVES``), named in the payload's
    # ``change`` by the move (``confirm``, ``renew``, ``withhold``, ``allow``, ``revert``), so a
    # receiver that mirrors memories misses no change of status, expiry or use.
    MEMORY_CHANGED = (
        "memory.changed",
        "a memory is confirmed (by a person, or by agents corroborating a guess), renewed, "
        "withheld from the assistant or let be used again, or a correction is reverted",
    )
    SUBJECT_ERASED = "subject.erased", "a subject is erased"
    CONFLICT_OPENED = "conflict.opened", "a conflict is opened"
    SNAPSHOT_REJECTED = "snapshot.rejected", "a compaction snapshot is rejected"
    JOURNAL_UNKNOWN = "journal.unknown", "a journal entry's outcome becomes unknown"


# Sent to one endpoint on an admin's request, whatever it subscribes to.
TEST_EVENT = "webhook.test"
# The outcome of a ``memory.written`` event about a memory an undo put back (a person's
# Undo, or an undone batch deletion): a receiver that dropped it on ``memory.retracted``
# takes it back.
RESTORED = "restored"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "waiting to be sent"
    DELIVERED = "delivered", "delivered"
    FAILED = "failed", "failed: no more attempts"


# What an erasure removes from every earlier event about the subject: all of the payload.
# Ids and times stay in the delivery's own columns (event id, type, when).
ERASED_PAYLOAD: dict[str, Any] = {"erased": True}

URL_MAX = 500
DESCRIPTION_MAX = 200
# Kept from an error or a receiver's answer, for the admin page; never the answer's body.
ERROR_MAX = 300


class BadEndpoint(ValueError):
    """An endpoint's address or events that cannot be registered, in words for the admin."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def checked_url(url: str) -> str:
    """``url`` if a webhook may be sent to it: http or https, a host, no credentials in it."""
    url = url.strip()
    if not url:
        raise BadEndpoint("url", "Give the address to send events to, such as https://…/hooks.")
    if len(url) > URL_MAX:
        raise BadEndpoint("url", f"Keep the address to {URL_MAX} characters.")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise BadEndpoint("url", "Only http:// and https:// addresses can receive webhooks.")
    if not parts.hostname:
        raise BadEndpoint("url", "The address has no host name.")
    if parts.username or parts.password:
        raise BadEndpoint(
            "url",
            "Leave user names and passwords out of the address: the signature proves who sent it.",
        )
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise BadEndpoint("url", "The address holds a space or a control character.")
    return url


# IPv6 forms whose last 32 bits are the IPv4 address a connection to them reaches (through
# a NAT64 gateway, a dual-stack socket or a stateless translator): judged as that address,
# so 64:ff9b::a9fe:a9fe is the metadata service 169.254.169.254 it leads to.
_CARRIES_IPV4 = (
    ("NAT64", ipaddress.IPv6Network("64:ff9b::/96")),
    ("IPv4-mapped", ipaddress.IPv6Network("::ffff:0:0/96")),
    ("IPv4-translated", ipaddress.IPv6Network("::ffff:0:0:0/96")),
)
# Never a public destination, whatever they carry. Named one by one: ``is_global`` calls
# most of them global, or did in some Python release (its lists changed in 3.12 and 3.13).
_NEVER_PUBLIC = (
    # Deprecated (RFC 4291); an old stack sends ::127.0.0.1 to 127.0.0.1.
    ("IPv4-compatible", ipaddress.IPv6Network("::/96")),
    # A network's own NAT64 prefix (RFC 8215): where it leads is the network's business.
    ("local-use NAT64", ipaddress.IPv6Network("64:ff9b:1::/48")),
    # Tunnels to an IPv4 address through whatever relay answers (RFC 7526, RFC 4380).
    ("6to4", ipaddress.IPv6Network("2002::/16")),
    ("Teredo", ipaddress.IPv6Network("2001::/32")),
    ("site-local", ipaddress.IPv6Network("fec0::/10")),
    ("documentation", ipaddress.IPv6Network("2001:db8::/32")),
    ("documentation", ipaddress.IPv6Network("3fff::/20")),
)


def refused_address(address: str) -> str | None:
    """What kind of non-public address ``address`` (an IP address as text) is, in words
    ("a loopback address", "a NAT64 address of 127.0.0.1, a loopback address"); None when
    a webhook may go to it. The worker POSTs from inside the network and the endpoint's page
    shows the connect error, so an internal address would let an admin's page probe
    internal hosts (or a cloud's metadata service)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone ("%eth0") aside
    if isinstance(ip, ipaddress.IPv6Address):
        for form, network in _CARRIES_IPV4:
            if ip in network:
                inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
                kind = refused_address(str(inner))
                return None if kind is None else f"{_a(form)} address of {inner}, {kind}"
    kinds = (
        ("loopback", ip.is_loopback),
        ("unspecified", ip.is_unspecified),
        ("link-local", ip.is_link_local),
        # ``is_global`` alone lets most multicast through (224.0.0.1 is "global").
        ("multicast", ip.is_multicast),
        *((form, ip in network) for form, network in _NEVER_PUBLIC if ip.version == 6),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
        ("non-public", not ip.is_global),
    )
    kind = next((kind for kind, true in kinds if true), None)
    if kind is None:
        return None
    carried = ip.sixtofour if isinstance(ip, ipaddress.IPv6Address) else None
    if kind == "IPv4-compatible":
        carried = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return f"{_a(kind)} address" + (f" (carrying {carried})" if carried else "")


def _a(word: str) -> str:
    return f"{'an' if word[0].lower() in 'aeiou' else 'a'} {word}"


def checked_addresses(host: str, addresses: Iterable[str]) -> None:
    """Refuse ``host`` when any address it resolves to is not public (an attacker's name can
    resolve to a public address and a private one at once)."""
    for address in addresses:
        kind = refused_address(address)
        if kind is None:
            continue
        named = address if address == host else f"{host} ({address})"
        raise BadEndpoint(
            "url",
            f"{named} is {kind}: webhooks go only to public addresses, since they"
            " are sent from inside the network. MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE=1 allows"
            " them, for development.",
        )


def checked_events(events: Sequence[str]) -> list[str]:
    """The events, known and once each, in the list's order; at least one."""
    unknown = sorted(set(events) - set(Event.values))
    if unknown:
        raise BadEndpoint(
            "events",
            f"Unknown event(s): {', '.join(unknown)}. Choose from {', '.join(Event.values)}.",
        )
    if not events:
        raise BadEndpoint("events", "Choose at least one event to send.")
    return [event for event in Event.values if event in events]


def quoted_event(event: str) -> str:
    """What an endpoint's events, as JSON text, contain when it subscribes to ``event``
    (``WebhookEndpointQuerySet.subscribed_to``): the name in quotes, as JSON writes it."""
    return json.dumps(event)


def retry_after(attempts: int, schedule: Sequence[int]) -> timedelta | None:
    """How long after its ``attempts``-th failed attempt a delivery is tried again; None
    when that was the last (``schedule`` holds one wait per retry)."""
    if attempts > len(schedule):
        return None
    return timedelta(seconds=schedule[attempts - 1])


def body(*, event_id: str, event: str, created_at: datetime, data: Mapping[str, Any]) -> bytes:
    """The exact bytes POSTed and signed: compact, keys sorted, so a resend is byte-equal."""
    envelope = {"id": event_id, "type": event, "created_at": created_at.isoformat(), "data": data}
    return json.dumps(envelope, sort_keys=True, separators=(",", ":"), default=str).encode()


def short_error(error: str) -> str:
    return error if len(error) <= ERROR_MAX else error[: ERROR_MAX - 1] + "…"


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


# --- payloads: what each event tells the receiver ----------------------------------------


def erasure_payload(erasure: Any, subject_ref: str) -> dict[str, Any]:
    """An erasure: ids, the subject's ref (an opaque account id), counts and the time. No
    statement, no name, no e-mail, no reason: nothing of what was erased."""
    counted = (
        "memories",
        "ledger_entries",
        "sources",
        "journal_entries",
        "run_notes",
        "recalls",
        "snapshots",
        "conflicts",
    )
    return {
        "erasure": {
            "id": erasure.pk,
            "subject": subject_ref,
            "erased_at": iso(erasure.erased_at),
            "counts": {name: getattr(erasure, name) for name in counted},
        }
    }


def conflict_payload(conflict: Any, memory_ids: Sequence[Any]) -> dict[str, Any]:
    return {
        "conflict": {
            "id": conflict.pk,
            "subject": conflict.subject.ref,
            "key": conflict.key,
            "possible": conflict.possible,
            "memories": [str(pk) for pk in memory_ids],
            "commitment": str(conflict.commitment_id) if conflict.commitment_id else None,
            "opened_at": iso(conflict.opened_at),
        }
    }


def snapshot_payload(snapshot: Any) -> dict[str, Any]:
    """A rejected snapshot: which run and generation, and which checks failed (their codes
    and messages, not the document)."""
    return {
        "snapshot": {
            "id": snapshot.pk,
            "run": snapshot.run.ref,
            "agent": snapshot.agent.name,
            "generation": snapshot.generation,
            "status": snapshot.status,
            "problems": [
                {"check": problem.get("check"), "code": problem.get("code")}
                for problem in snapshot.problems
            ],
            "created_at": iso(snapshot.created_at),
        }
    }


def journal_payload(entry: Any, previous: str) -> dict[str, Any]:
    return {
        "journal_entry": {
            "id": entry.pk,
            "run": entry.run.ref,
            "agent": entry.agent.name,
            "idempotency_key": entry.idempotency_key,
            "action": entry.action,
            "state": entry.state,
            "previous_state": previous,
            "updated_at": iso(entry.updated_at),
        }
    }


def test_payload(endpoint_id: int, actor: str) -> dict[str, Any]:
    return {"test": {"endpoint": endpoint_id, "sent_by": actor}}
