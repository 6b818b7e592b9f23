"""The refusal every rule raises: a stable code for programs, words for people."""

from __future__ import annotations


class Refusal(Exception):
    """A write the policy refuses. ``code`` is stable for programs, ``detail`` for people."""

    def __init__(self, code: str, detail: str, status: int = 422) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status
