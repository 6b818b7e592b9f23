"""Agents' API keys: how one is made, split into its lookup prefix, and hashed.

A key looks like ``ma_<prefix>_<secret>``. The prefix finds the agent's row; only a hash
of the whole key is stored, so the key is shown once, when it is made, and never again.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

KEY_PREFIX = "ma"


@dataclass(frozen=True)
class NewKey:
    key: str
    prefix: str
    hash: str


def hash_key(key: str) -> str:
    # Keys are 256 bits of randomness, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(key.encode()).hexdigest()


def split_key(key: str) -> tuple[str, str] | None:
    """The lookup prefix and the secret of a well-formed key, or None."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def key_in_header(header: str) -> str | None:
    """The key an ``Authorization: Bearer <key>`` header sends; None for any other header."""
    scheme, _, key = header.partition(" ")
    return key.strip() if scheme == "Bearer" and key.strip() else None


def new_key() -> NewKey:
    prefix = secrets.token_hex(6)
    key = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    return NewKey(key=key, prefix=prefix, hash=hash_key(key))


def known_key(key: str) -> NewKey:
    """A key chosen in advance (the demo's, so the README's examples work against it)."""
    parts = split_key(key)
    if parts is None:
        raise ValueError(f"not a key of the form {KEY_PREFIX}_<prefix>_<secret>")
    return NewKey(key=key, prefix=parts[0], hash=hash_key(key))
