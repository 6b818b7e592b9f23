"""Agents authenticate with ``Authorization: Bearer <key>``. People's sessions are not
accepted here: the API is not a way around the dashboard's permissions. An address that
keeps sending keys that do not work is refused for a while (``throttling.count_failed_key``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.http import Http404
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from ledger import access
from ledger.actions.agents import KeyRefused, use_key
from ledger.api.throttling import count_failed_key, refuse_failing_address
from ledger.keys import key_in_header
from ledger.models import Agent, Policy, Run
from ledger.signin import client_ip

if TYPE_CHECKING:
    # rest_framework.views loads this module through the REST framework's settings, and
    # both of these import it: at runtime the import would be circular.
    from drf_spectacular.openapi import AutoSchema
    from rest_framework.views import APIView


class AgentPrincipal:
    """What ``request.user`` is for an API call: the agent behind the key, and the policy
    in force when the request came in (``policy_of``)."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, agent: Agent, policy: Policy) -> None:
        self.agent = agent
        self.policy = policy

    def __str__(self) -> str:
        return f"agent:{self.agent.name}"


class AgentKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[AgentPrincipal, Agent] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        address = client_address(request)
        refuse_failing_address(address)
        key = key_in_header(header)
        try:
            if key is None:
                raise KeyRefused("Use 'Authorization: Bearer <API key>'.")
            row = use_key(key, now=timezone.now())
        except KeyRefused as refused:
            count_failed_key(address)
            raise exceptions.AuthenticationFailed(str(refused)) from None
        return AgentPrincipal(row.agent, Policy.read_from(row)), row.agent

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def client_address(request: Request) -> str:
    """The caller's address, as the sign-in limits count it: behind a proxy
    (``BEHIND_PROXY``), the one the proxy saw."""
    address = client_ip(request) if settings.BEHIND_PROXY else request.META.get("REMOTE_ADDR")
    return address or "unknown"


class HasAgentScope(permissions.BasePermission):
    """Reads need the ``read`` scope, anything that changes data the ``write`` scope."""

    message = "This API key lacks the scope this request needs."

    def has_permission(self, request: Request, view: APIView) -> bool:
        agent = request.auth
        if not isinstance(agent, Agent):
            return False
        scope = scope_needed(request, view)
        if not agent.has_scope(scope):
            self.message = f"This API key lacks the '{scope}' scope."
            return False
        return True


def scope_needed(request: Request, view: APIView) -> str:
    """The scope a request needs, as ``access.scope_needed`` decides (the permission page
    shows its answer for every API operation)."""
    return access.scope_needed(request.method or "GET", getattr(view, "required_scope", None))


def agent_of(request: Request) -> Agent:
    agent = request.auth
    assert isinstance(agent, Agent)
    return agent


def policy_of(request: Request) -> Policy:
    """The policy in force for this API request, read with its key: no query of its own.

    What ``Policy.current()`` would have said when the request came in; an admin's change
    applies from the next request on, in every process.
    """
    principal = request.user
    assert isinstance(principal, AgentPrincipal)
    return principal.policy


def own_run(request: Request, ref: str) -> Run:
    """The calling agent's run. Another agent's run is as good as missing: 404."""
    run = Run.objects.of_agent(agent_of(request)).filter(ref=ref).first()
    if run is None:
        raise Http404
    return run


# drf-spectacular registers extensions in an unannotated __init_subclass__.
class AgentKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Tells the OpenAPI schema (and so the docs' Authorize button) how agents sign in."""

    target_class = AgentKeyAuthentication
    name = "agentKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent's API key: `Authorization: Bearer ma_…`.",
        }
