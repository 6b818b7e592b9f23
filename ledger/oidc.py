"""Staff sign-in through the company's identity provider (OpenID Connect), with
mozilla-django-oidc: the authorization code flow with PKCE, the ID token's RS256 signature
checked against the provider's published keys, and its audience, issuer and expiry too.

Off unless configured (``MEMORYADMIN_OIDC``): its pages are then a 404 and the sign-in page
shows no button. Who the person is, and what role the provider's groups give them, is
``ledger.actions.staff_sign_in``'s to decide; this only checks what the provider said.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponseBase
from django.shortcuts import redirect
from django.urls import path
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView
from requests import RequestException

from ledger import access
from ledger.actions.staff_sign_in import ProviderPerson, staff_signed_in
from ledger.rules.refusals import Refusal

logger = logging.getLogger(__name__)
# Clock differences between this server and the provider that an ID token's times allow.
LEEWAY_SECONDS = 60
PROVIDER_FAILED = (
    "The sign-in at the company's identity provider could not be completed. Try again; if it "
    "keeps failing, sign in with your password or ask an admin."
)


# What each endpoint setting is called in the provider's discovery document (OpenID
# Connect Discovery 1.0, section 3): a setting left empty is read from there.
_DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_discovery: dict[str, dict[str, Any]] = {}


def endpoint(name: str) -> str:
    """The provider's endpoint ``name`` (an ``OIDC_OP_*`` setting): as configured, else
    from the issuer's discovery document, fetched when first needed and kept for the
    process's life (a failed fetch is not kept: the next sign-in asks again)."""
    configured: str = getattr(settings, name, "")
    if configured:
        return configured
    issuer = settings.MEMORYADMIN_OIDC_ISSUER
    document = _discovery.get(issuer)
    if document is None:
        answer = requests.get(
            f"{issuer.rstrip('/')}/.well-known/openid-configuration",
            timeout=settings.OIDC_TIMEOUT,
        )
        answer.raise_for_status()
        document = answer.json()
        # Discovery 4.3: a document naming another issuer is not this provider's.
        if not isinstance(document, dict) or document.get("issuer") != issuer:
            raise SuspiciousOperation("The discovery document names another issuer.")
        _discovery[issuer] = document
    value = document.get(_DISCOVERED[name])
    if not isinstance(value, str) or not value:
        raise SuspiciousOperation(f"The discovery document has no {_DISCOVERED[name]}.")
    return value


CANCELLED = "The sign-in at the company's identity provider was cancelled or refused there."


def role_from_claims(claims: dict[str, Any]) -> access.Role | None:
    """Admin if any of the person's groups (``MEMORYADMIN_OIDC_ROLES_CLAIM``) is an admin
    group, else support if one is a support group, else None: no staff access."""
    value = claims.get(settings.MEMORYADMIN_OIDC_ROLES_CLAIM)
    groups: Iterable[object] = [value] if isinstance(value, str) else value or []
    names = {group for group in groups if isinstance(group, str)}
    if names & set(settings.MEMORYADMIN_OIDC_ADMIN_GROUPS):
        return access.Role.ADMIN
    if names & set(settings.MEMORYADMIN_OIDC_SUPPORT_GROUPS):
        return access.Role.SUPPORT
    return None


# mozilla-django-oidc ships no type information.
class CompanySignIn(OIDCAuthenticationBackend):  # type: ignore[misc]
    """The authentication backend for the provider's callback (``AUTHENTICATION_BACKENDS``
    when configured). A password sign-in never reaches it: it answers only a callback."""

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        if request is None or "code" not in request.GET:
            # Not the provider's callback (a password sign-in asks every backend): nothing
            # for this one, and no reason to ask the provider anything.
            return None
        try:
            self.OIDC_OP_TOKEN_ENDPOINT = endpoint("OIDC_OP_TOKEN_ENDPOINT")
            self.OIDC_OP_USER_ENDPOINT = endpoint("OIDC_OP_USER_ENDPOINT")
            user: User | None = super().authenticate(request, **kwargs)
        except (SuspiciousOperation, RequestException) as error:
            # A token that fails its checks, or a provider that cannot be reached: the
            # person reads that it failed; the log says which check (never a token).
            logger.warning("A sign-in through the identity provider failed: %s", _why(error))
            if request is not None:
                messages.error(request, PROVIDER_FAILED)
            return None
        return user

    def retrieve_matching_jwk(self, token: bytes) -> Any:
        self.OIDC_OP_JWKS_ENDPOINT = endpoint("OIDC_OP_JWKS_ENDPOINT")
        return super().retrieve_matching_jwk(token)

    def _verify_jws(self, payload: str, key: Any) -> dict[str, Any]:
        """The signature, the expiry, and what the library leaves unchecked: that the ID
        token is for this client (its audience) and from this provider (its issuer)."""
        algorithm = settings.OIDC_RP_SIGN_ALGO
        try:
            if jwt.get_unverified_header(payload).get("alg") != algorithm:
                raise SuspiciousOperation(f"The ID token is not signed with {algorithm}.")
            claims: dict[str, Any] = jwt.decode(
                payload,
                key,
                algorithms=[algorithm],
                audience=settings.OIDC_RP_CLIENT_ID,
                issuer=settings.MEMORYADMIN_OIDC_ISSUER,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as error:
            raise SuspiciousOperation(f"The ID token was refused: {error}") from None
        return claims

    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> User | None:
        userinfo: dict[str, Any] = self.get_userinfo(access_token, id_token, payload)
        # OpenID Connect Core 5.3.2: user info about someone else must not be used.
        if userinfo.get("sub") != payload["sub"]:
            raise SuspiciousOperation("The user info is about another person than the ID token.")
        # Some providers put the groups in the ID token only (Entra ID), others in the
        # user info only: the signed token's say first, the user info's over it.
        claims = payload | userinfo
        who = ProviderPerson(
            issuer=settings.MEMORYADMIN_OIDC_ISSUER,
            subject=str(payload["sub"]),
            role=role_from_claims(claims),
            username=_text(claims.get("preferred_username")),
            email=_text(claims.get("email")),
            first_name=_text(claims.get("given_name"))[:150],
            last_name=_text(claims.get("family_name"))[:150],
        )
        try:
            return staff_signed_in(who)
        except Refusal as refusal:
            messages.error(self.request, refusal.detail)
            return None


def _why(error: Exception) -> str:
    # A provider's error answer may quote what it was sent: only our own words are logged.
    return str(error) if isinstance(error, SuspiciousOperation) else type(error).__name__


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class _WhenConfigured:
    """A page of this sign-in that is a 404 while it is not configured."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not settings.MEMORYADMIN_OIDC:
            raise Http404("Sign-in through an identity provider is not configured.")
        response: HttpResponseBase = super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
        return response


class StartSignIn(_WhenConfigured, OIDCAuthenticationRequestView):  # type: ignore[misc]
    """Sends the browser to the provider's sign-in page."""

    def __init__(self, **kwargs: Any) -> None:
        # The library reads its settings here, before ``dispatch`` could answer 404.
        if settings.MEMORYADMIN_OIDC:
            super().__init__(**kwargs)

    def get(self, request: HttpRequest) -> HttpResponseBase:
        try:
            self.OIDC_OP_AUTH_ENDPOINT = endpoint("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except (SuspiciousOperation, RequestException) as error:
            logger.warning("The identity provider's sign-in page is unknown: %s", _why(error))
            messages.error(request, PROVIDER_FAILED)
            return redirect("login")
        response: HttpResponseBase = super().get(request)
        return response


class SignInCallback(_WhenConfigured, OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """Where the provider sends the browser back with a code for the tokens."""

    def get(self, request: HttpRequest) -> HttpResponseBase:
        if request.GET.get("error"):
            # The person cancelled at the provider, or it refused: the sign-in page says so.
            messages.info(request, CANCELLED)
        response: HttpResponseBase = super().get(request)
        return response


urlpatterns = [
    path("authenticate/", StartSignIn.as_view(), name="oidc_authentication_init"),
    path("callback/", SignInCallback.as_view(), name="oidc_authentication_callback"),
]
