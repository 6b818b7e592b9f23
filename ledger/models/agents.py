"""Agents (the programs that write and read memory) and their keys."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models import Q

from ledger import choices
from ledger.models.history import tracked


class AgentKeyQuerySet(models.QuerySet["AgentKey"]):
    def working_at(self, now: datetime) -> AgentKeyQuerySet:
        """Keys that authenticate at ``now``: their agent not revoked, their grace not over."""
        return self.filter(agent__is_active=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class Agent(models.Model):
    """A program holding API keys (``AgentKey``). Revoked, every key it has stops at once.

    An admin may restrict what its writes do, each with a reason (empty: not restricted):
    pause them (refused), quarantine it (everything lands pending until a person
    confirms), or distrust its stated memories (what it says a person said lands pending).
    """

    Scope = choices.Scope

    name = models.CharField(max_length=100, unique=True)
    scopes = models.JSONField(default=list)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    writes_paused_because = models.TextField(blank=True, default="")
    quarantined_because = models.TextField(blank=True, default="")
    stated_untrusted_because = models.TextField(blank=True, default="")

    history = tracked()

    def __str__(self) -> str:
        return self.name

    def has_scope(self, scope: str) -> bool:
        return self.is_active and scope in self.scopes

    @property
    def writes_paused(self) -> bool:
        return bool(self.writes_paused_because)

    @property
    def quarantined(self) -> bool:
        return bool(self.quarantined_because)

    @property
    def stated_untrusted(self) -> bool:
        return bool(self.stated_untrusted_because)


class AgentKey(models.Model):
    """One API key of an agent. Only its hash is stored; the prefix finds the row.

    A rotation gives the agent a new key and an end (``expires_at``) to the old one, so the
    agent can switch over during the grace period; revoking the agent ends all of them.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="keys")
    prefix = models.CharField(max_length=16, unique=True)
    hash = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    # Usage, not a change: updated in place at most once a minute, and not in the history.
    last_used_at = models.DateTimeField(null=True, blank=True)

    history = tracked(untracked=("last_used_at",))
    objects = AgentKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.agent.name} ({self.prefix})"

    def works_at(self, now: datetime) -> bool:
        return self.agent.is_active and (self.expires_at is None or now < self.expires_at)
