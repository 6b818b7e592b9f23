"""Staff sign-in through the company's identity provider: a real OpenID Connect provider
(node's oidc-provider, tests/oidc_provider/server.js) on this machine, a real browser
through its sign-in pages, and ID tokens this test signs with the provider's own key."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.models import User
from django.core.exceptions import SuspiciousOperation
from django.test import Client
from playwright.sync_api import expect

from ledger import access
from ledger.actions.staff_sign_in import NO_STAFF_ROLE, ProviderPerson, staff_signed_in
from ledger.choices import PersonField
from ledger.models import PersonChange, SignInIdentity
from ledger.oidc import CompanySignIn, endpoint, role_from_claims
from ledger.rules.refusals import Refusal
from tests.conftest import PASSWORD

PROVIDER = Path(__file__).resolve().parent / "oidc_provider"
SECRET = "test-client-secret"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _jwk(key: rsa.RSAPrivateKey) -> dict[str, str]:
    jwk: dict[str, str] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    return jwk | {"kid": "company-key", "use": "sig", "alg": "RS256"}


@contextmanager
def _provider(redirect_uri: str) -> Iterator[dict[str, Any]]:
    """The provider on a free port, for a client whose callback is ``redirect_uri``; its
    discovery document. Stopped on leaving."""
    env = os.environ | {
        "OIDC_TEST_REDIRECT_URI": redirect_uri,
        "OIDC_TEST_CLIENT_SECRET": SECRET,
        "OIDC_TEST_SIGNING_KEY": json.dumps(_jwk(KEY)),
    }
    process = subprocess.Popen(
        ["node", str(PROVIDER / "server.js")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        issuer = json.loads(process.stdout.readline())["issuer"]
        yield httpx.get(f"{issuer}/.well-known/openid-configuration").json()
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def provider() -> Iterator[dict[str, Any]]:
    """For what needs no browser (and so no live server, whose tests empty the database)."""
    with _provider("http://localhost/accounts/oidc/callback/") as discovery:
        yield discovery


@pytest.fixture(scope="module")
def browsers_provider(live_server: Any) -> Iterator[dict[str, Any]]:
    with _provider(f"{live_server.url}/accounts/oidc/callback/") as discovery:
        yield discovery


def _configure(settings: Any, provider: dict[str, Any]) -> None:
    """memoryadmin configured for the provider as an operator would: its issuer and the
    client, every endpoint read from the provider's discovery document."""
    settings.MEMORYADMIN_OIDC = True
    settings.MEMORYADMIN_OIDC_ISSUER = provider["issuer"]
    settings.OIDC_RP_CLIENT_ID = "memoryadmin"
    settings.OIDC_RP_CLIENT_SECRET = SECRET
    for name in ENDPOINTS:
        setattr(settings, name, "")
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "ledger.oidc.CompanySignIn",
    ]


@pytest.fixture
def company_sign_in(settings: Any, provider: dict[str, Any]) -> None:
    _configure(settings, provider)


@pytest.fixture
def company_sign_in_live(settings: Any, browsers_provider: dict[str, Any]) -> None:
    _configure(settings, browsers_provider)


def _sign_in_at_provider(page: Any, login: str, site: str) -> None:
    # The provider's development pages import a web font: nothing may leave this machine.
    page.context.route(
        lambda url: urlsplit(url).hostname not in {"127.0.0.1", "localhost"},
        lambda route: route.abort(),
    )
    page.goto("/accounts/login/")
    page.get_by_role("link", name="Sign in with the company account").click()
    page.get_by_placeholder("Enter any login").fill(login)
    page.get_by_placeholder("and password").fill("anything")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()
    # Back from the provider's pages, through the callback, on memoryadmin's.
    page.wait_for_url(lambda url: url.startswith(site) and "/accounts/oidc/" not in url)


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_an_admin_signs_in_at_the_provider_gets_the_admin_role_and_signs_out(
    browser_page: Any, live_server: Any, company_sign_in_live: None
) -> None:
    page = browser_page
    _sign_in_at_provider(page, "ann-admin", live_server.url)

    expect(page.get_by_role("button", name="Sign out ann-admin")).to_be_visible()
    assert page.goto("/people/").status == 200
    ann = User.objects.get(username="ann-admin")
    assert access.role_of(ann) == access.Role.ADMIN
    assert ann.email == "ann-admin@example.com"
    assert not ann.has_usable_password()
    assert SignInIdentity.objects.get(person=ann).subject == "ann-admin"
    assert PersonChange.objects.filter(
        person=ann, field=PersonField.IDENTITY, actor="system:identity-provider"
    ).exists()

    page.get_by_role("button", name="Sign out ann-admin").click()
    page.wait_for_url("**/accounts/login/")
    page.goto("/people/")
    assert "/accounts/login/" in page.url


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_support_signs_in_as_support_and_sees_support_pages_not_the_admins(
    browser_page: Any, live_server: Any, company_sign_in_live: None
) -> None:
    page = browser_page
    _sign_in_at_provider(page, "sam-support", live_server.url)

    expect(page.get_by_role("button", name="Sign out sam-support")).to_be_visible()
    assert page.goto("/queues/").status == 200
    assert page.goto("/people/").status == 404
    assert access.role_of(User.objects.get(username="sam-support")) == access.Role.SUPPORT


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_someone_in_no_staff_group_is_told_so_and_gets_no_account(
    browser_page: Any, live_server: Any, company_sign_in_live: None
) -> None:
    page = browser_page
    _sign_in_at_provider(page, "olga-outsider", live_server.url)

    expect(page.get_by_role("status")).to_contain_text(NO_STAFF_ROLE)
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
    assert not User.objects.filter(username__startswith="olga").exists()
    assert page.goto("/queues/").url.endswith("/accounts/login/?next=/queues/")


def _id_token(key: rsa.RSAPrivateKey = KEY, **changes: Any) -> str:
    """An ID token as the provider signs one for memoryadmin, but for ``changes``."""
    from django.conf import settings

    now = int(time.time())
    claims = {
        "iss": settings.MEMORYADMIN_OIDC_ISSUER,
        "aud": "memoryadmin",
        "sub": "ann-admin",
        "iat": now,
        "exp": now + 300,
        "nonce": "the-nonce",
    }
    return jwt.encode(claims | changes, key, algorithm="RS256", headers={"kid": "company-key"})


@pytest.mark.django_db
def test_an_id_token_signed_by_the_provider_for_memoryadmin_is_accepted(
    company_sign_in: None,
) -> None:
    claims = CompanySignIn().verify_token(_id_token(), nonce="the-nonce")
    assert claims["sub"] == "ann-admin"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "changes",
    [
        {"aud": "another-application"},
        {"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200},
        {"iss": "https://impostor.example.com"},
        {"key": rsa.generate_private_key(public_exponent=65537, key_size=2048)},
    ],
    ids=["another-audience", "expired", "another-issuer", "not-the-providers-key"],
)
def test_an_id_token_for_another_audience_expired_or_not_the_providers_is_refused(
    company_sign_in: None, changes: dict[str, Any]
) -> None:
    with pytest.raises(SuspiciousOperation):
        CompanySignIn().verify_token(_id_token(**changes), nonce="the-nonce")


SAM = ProviderPerson(
    issuer="https://id.example.com", subject="sub-sam", role=access.Role.SUPPORT, username="sam"
)


@pytest.mark.django_db
def test_a_role_changed_at_the_provider_changes_here_at_the_next_sign_in() -> None:
    sam = staff_signed_in(SAM)
    assert access.role_of(sam) == access.Role.SUPPORT

    promoted = staff_signed_in(ProviderPerson(**{**SAM.__dict__, "role": access.Role.ADMIN}))
    assert promoted.pk == sam.pk
    assert access.role_of(promoted) == access.Role.ADMIN

    with pytest.raises(Refusal) as refused:
        staff_signed_in(ProviderPerson(**{**SAM.__dict__, "role": None}))
    assert refused.value.detail == NO_STAFF_ROLE
    # Kept although the sign-in was refused: an old session of Sam's is no longer staff's.
    assert access.role_of(User.objects.get(pk=sam.pk)) == access.Role.END_USER
    roles = PersonChange.objects.filter(person=sam, field=PersonField.ROLE).order_by("id")
    assert [(c.before, c.after, c.actor) for c in roles][1:] == [
        ("support", "admin", "system:identity-provider"),
        ("admin", "user", "system:identity-provider"),
    ]


@pytest.mark.django_db
def test_a_provider_account_named_like_a_local_admin_never_becomes_that_admin(
    make_person: Any,
) -> None:
    """Matched by the provider's id, never by a username or e-mail address it asserts."""
    local = make_person("root-admin", role="admin")
    local.email = "root@example.com"
    local.save()

    impostor = staff_signed_in(
        ProviderPerson(
            issuer="https://id.example.com",
            subject="sub-mallory",
            role=access.Role.SUPPORT,
            username="root-admin",
            email="root@example.com",
        )
    )
    assert impostor.pk != local.pk
    assert impostor.username.startswith("root-admin-")
    assert access.role_of(impostor) == access.Role.SUPPORT
    assert not SignInIdentity.objects.filter(person=local).exists()


@pytest.mark.django_db
def test_the_break_glass_admin_still_signs_in_with_a_password(
    company_sign_in: None, make_person: Any
) -> None:
    make_person("break-glass", role="admin")
    client = Client()
    page = client.get("/accounts/login/")
    assert b"Sign in with the company account" in page.content
    response = client.post(
        "/accounts/login/",
        {"username": "break-glass", "password": PASSWORD},
        REMOTE_ADDR="10.0.0.9",
    )
    assert response.status_code == 302
    assert client.get("/people/").status_code == 200


ENDPOINTS = (
    "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "OIDC_OP_TOKEN_ENDPOINT",
    "OIDC_OP_USER_ENDPOINT",
    "OIDC_OP_JWKS_ENDPOINT",
)


def test_the_endpoints_come_from_the_issuer_s_discovery_unless_set(
    company_sign_in: None, settings: Any, provider: dict[str, Any]
) -> None:
    assert endpoint("OIDC_OP_TOKEN_ENDPOINT") == provider["token_endpoint"]
    assert endpoint("OIDC_OP_JWKS_ENDPOINT") == provider["jwks_uri"]
    settings.OIDC_OP_TOKEN_ENDPOINT = "https://id.example.com/token"
    assert endpoint("OIDC_OP_TOKEN_ENDPOINT") == "https://id.example.com/token"


@pytest.mark.django_db
def test_a_discovery_document_naming_another_issuer_is_not_followed(
    company_sign_in: None, settings: Any
) -> None:
    # The same provider, named with a trailing slash its document does not use.
    settings.MEMORYADMIN_OIDC_ISSUER += "/"
    client = Client()
    response = client.get("/accounts/oidc/authenticate/", follow=True)
    assert response.redirect_chain[-1][0] == "/accounts/login/"
    assert "could not be completed" in response.content.decode()


@pytest.mark.django_db
def test_a_sign_in_cancelled_at_the_provider_says_so(company_sign_in: None) -> None:
    response = Client().get(
        "/accounts/oidc/callback/?error=access_denied&state=whatever", follow=True
    )
    assert response.redirect_chain[-1][0] == "/accounts/login/"
    assert "cancelled or refused there" in response.content.decode()
    assert not response.wsgi_request.user.is_authenticated


@pytest.mark.django_db
def test_without_configuration_there_is_no_button_and_no_provider_pages(client: Client) -> None:
    assert b"company account" not in client.get("/accounts/login/").content
    assert client.get("/accounts/oidc/authenticate/").status_code == 404
    assert client.get("/accounts/oidc/callback/?code=x&state=y").status_code == 404


@pytest.mark.parametrize(
    ("claims", "role"),
    [
        ({"groups": ["everyone", "memoryadmin-support", "memoryadmin-admin"]}, access.Role.ADMIN),
        ({"groups": ["memoryadmin-support"]}, access.Role.SUPPORT),
        ({"groups": "memoryadmin-admin"}, access.Role.ADMIN),
        ({"groups": ["Memoryadmin-Admin", "sales"]}, None),
        ({"roles": ["memoryadmin-admin"]}, None),
        ({}, None),
    ],
)
def test_the_groups_claim_gives_admin_before_support_and_nothing_else(
    claims: dict[str, Any], role: access.Role | None
) -> None:
    assert role_from_claims(claims) == role


def test_the_claim_and_the_groups_are_configurable(settings: Any) -> None:
    """Entra ID's app roles: the ``roles`` claim."""
    settings.MEMORYADMIN_OIDC_ROLES_CLAIM = "roles"
    settings.MEMORYADMIN_OIDC_SUPPORT_GROUPS = ["Support.Read", "helpdesk"]
    assert role_from_claims({"roles": ["helpdesk"], "groups": ["memoryadmin-admin"]}) == (
        access.Role.SUPPORT
    )
