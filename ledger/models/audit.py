"""The seals of the tamper-evident audit chain, and the MACs that vouch for each row.

A seal (``AuditSeal``) proves that a row has not changed since it was sealed; a MAC proves
that the application wrote the row at all. The MAC is an HMAC-SHA256 over the row's
content under a key only the application's environment holds
(``MEMORYADMIN_AUDIT_KEY``), made in Python before the row is inserted: the database role
can add rows to a history table, but not rows the verifier accepts.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache, lru_cache
from pathlib import Path
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import models

# The column every history table carries it in.
MAC_FIELD = "history_mac"
# What the MAC of a row says: which key made it, a nonce, and the HMAC.
MAC_LENGTH = 8 + 1 + 24 + 1 + 64


class AuditSeal(models.Model):
    """The hash chain over the audit: one seal per history row, in a chain per table.

    Append-only. A seal holds a digest of the row's content and a hash over the previous
    seal's hash, the row's skeleton (ids, actor, time, kind of change) and that digest;
    ``ledger.reads.audit_chain`` makes and checks them. Erasure blanks content but never a seal.
    """

    table = models.CharField(max_length=100)
    row_id = models.BigIntegerField()
    seq = models.BigIntegerField()
    digest = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    sealed_at = models.DateTimeField()

    class Meta:
        ordering = ["table", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["table", "seq"], name="audit_seal_seq_once"),
            models.UniqueConstraint(fields=["table", "row_id"], name="audit_seal_row_once"),
        ]

    def __str__(self) -> str:
        return f"{self.table}#{self.row_id} (seal {self.seq})"


# --- the keys ----------------------------------------------------------------------------


class AuditKeys:
    """The audit's keys: the one that signs now, and every one that still verifies, by id.

    Each key is used through sub-keys, one per purpose, so that a row's MAC can never pass
    for a checkpoint's signature or the other way round."""

    def __init__(self, current: str, old: tuple[str, ...]) -> None:
        self.current = key_id(current)
        self._secrets = {key_id(secret): secret.encode() for secret in (*old, current)}

    def holds(self, kid: str) -> bool:
        return kid in self._secrets

    def sub_key(self, kid: str, purpose: str) -> bytes:
        return hmac.new(self._secrets[kid], purpose.encode(), hashlib.sha256).digest()


def key_id(secret: str) -> str:
    """Eight hex digits that name a key without giving it away: written beside each MAC
    and checkpoint, so that rows made before a rotation are checked with the old key."""
    return hmac.new(secret.encode(), b"memoryadmin audit key id", hashlib.sha256).hexdigest()[:8]


# The SECRET_KEY ``memoryadmin.settings`` falls back to with DEBUG=1 (``make run``'s).
DEVELOPMENT_SECRET_KEY = "insecure-development-key-do-not-use-in-production"


def audit_keys() -> AuditKeys:
    """The keys as the settings have them now (a test may change them). Unset, the key is
    derived from SECRET_KEY: enough for DEBUG and ``make run``; a deployment sets its own
    (``ledger.checks``), and then only it and MEMORYADMIN_AUDIT_OLD_KEYS verify.

    Unset, a local try's two keys both verify: ``make run`` writes with DEBUG=1 and the
    development SECRET_KEY, while the commands run beside it without DEBUG
    (``verify_audit``, the API calls of the docs) write with the install's own
    ``.secret_key``; each process must accept the other's rows. The development key is
    public, so only a local try may rely on an unset key."""
    old = tuple(settings.MEMORYADMIN_AUDIT_OLD_KEYS)
    if not settings.MEMORYADMIN_AUDIT_KEY:
        old += tuple(derived_key(secret) for secret in _local_secret_keys())
    current = settings.MEMORYADMIN_AUDIT_KEY or derived_key(settings.SECRET_KEY)
    return _keys(current, old)


def _local_secret_keys() -> tuple[str, ...]:
    """The development SECRET_KEY, and the local install's ``.secret_key`` if it has one
    (where ``memoryadmin.settings`` reads it without DEBUG)."""
    # Every row's MAC asks: joined as text, since a Path costs more than the MAC itself.
    path = os.environ.get("SECRET_KEY_FILE", os.path.join(settings.BASE_DIR, ".secret_key"))
    if path not in _read:
        try:
            _read[path] = Path(path).read_text().strip()
        except OSError:
            return (DEVELOPMENT_SECRET_KEY,)  # not made yet: looked for again next time
    return (DEVELOPMENT_SECRET_KEY, _read[path])


# Each install's key as read once (every row's MAC asks): it never changes once made.
_read: dict[str, str] = {}


@lru_cache(maxsize=8)
def derived_key(secret_key: str) -> str:
    return hmac.new(secret_key.encode(), b"memoryadmin audit key", hashlib.sha256).hexdigest()


@lru_cache(maxsize=8)
def _keys(current: str, old: tuple[str, ...]) -> AuditKeys:
    return AuditKeys(current, old)


def sign(purpose: str, message: bytes) -> str:
    """``message`` signed with the current key for ``purpose``: the key's id, a colon, and
    the HMAC-SHA256 in hex."""
    keys = audit_keys()
    mac = hmac.new(keys.sub_key(keys.current, purpose), message, hashlib.sha256).hexdigest()
    return f"{keys.current}:{mac}"


def signature_problem(purpose: str, message: bytes, signature: str) -> str | None:
    """What is wrong with ``signature`` of ``message``, in words; None when it holds."""
    kid, _, mac = signature.partition(":")
    keys = audit_keys()
    if not keys.holds(kid):
        return (
            f"it is signed with key {kid or '(none)'}, which is neither MEMORYADMIN_AUDIT_KEY "
            "nor one of MEMORYADMIN_AUDIT_OLD_KEYS"
        )
    expected = hmac.new(keys.sub_key(kid, purpose), message, hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(expected, mac) else "its signature does not match"


# --- a row's MAC -------------------------------------------------------------------------

_ROWS = "history rows"


@cache
def mac_fields(model: type[models.Model]) -> tuple[str, ...]:
    """The columns a history row's MAC covers: all of them but its id (the database gives
    it after the MAC is made; a copy under another id is found by its repeated nonce), the
    MAC itself and the links Django clears when the row they point at is deleted."""
    return tuple(
        field.attname
        for field in model._meta.concrete_fields
        if not field.primary_key
        and field.attname != MAC_FIELD
        and not (field.remote_field is not None and field.remote_field.on_delete is models.SET_NULL)
    )


def make_mac(model: type[models.Model], row: Mapping[str, Any]) -> str:
    """The MAC of a history row of ``model`` whose columns hold ``row`` (by attname), made
    with the current key and a fresh nonce: ``<key id>:<nonce>:<hmac>``."""
    nonce = secrets.token_hex(12)
    keys = audit_keys()
    message = _message(model, nonce, row)
    mac = hmac.new(keys.sub_key(keys.current, _ROWS), message, hashlib.sha256).hexdigest()
    return f"{keys.current}:{nonce}:{mac}"


def mac_problem(model: type[models.Model], row: Mapping[str, Any]) -> str | None:
    """Why the MAC ``row`` carries does not vouch for it, in words; None when it does."""
    mac = row.get(MAC_FIELD) or ""
    if not mac:
        return "it has no MAC: the application did not write it"
    kid, nonce, digest = (mac.split(":") + ["", ""])[:3]
    keys = audit_keys()
    if not keys.holds(kid):
        return (
            f"its MAC was made with key {kid}, which is neither MEMORYADMIN_AUDIT_KEY nor one "
            "of MEMORYADMIN_AUDIT_OLD_KEYS"
        )
    message = _message(model, nonce, row)
    expected = hmac.new(keys.sub_key(kid, _ROWS), message, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, digest):
        return (
            "its MAC does not match its content: the application did not write it as it "
            "stands (it was inserted or changed behind the application's back)"
        )
    return None


def _message(model: type[models.Model], nonce: str, row: Mapping[str, Any]) -> bytes:
    values = {name: row[name] for name in mac_fields(model)}
    return f"{model._meta.db_table}\n{nonce}\n".encode() + canonical(values)


def canonical(data: Mapping[str, Any]) -> bytes:
    """``data`` as the same bytes whether its values were read back from the database or
    are about to be written, for a row's MAC and for the chain's digests alike: nulls left
    out (a nullable column added later changes no older row's MAC or hash), times in UTC."""
    present = {name: value for name, value in data.items() if value is not None}
    text = json.dumps(
        present, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
    )
    return text.encode()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, UUID | Decimal):
        return str(value)
    raise TypeError(f"The audit cannot encode a {type(value).__name__}.")
