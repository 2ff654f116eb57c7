"""EMA end to end on loopback: ID token → IdP token exchange → ID-JAG → JWT-bearer grant
at the MCP authorization server → an access token our resource server accepts, whose
principal the policy layer sees as ``ema``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from mcpcore.auth.config import IssuerConfig, ResourceServerConfig
from mcpcore.auth.issuer.ema import EMA_AUTH_KIND
from mcpcore.auth.server.tokens import JwtValidator
from mcpcore.auth.urls import NetworkPolicy, safe_async_client
from mcpcore.policy import auth_kind
from tests.auth.ema_support import (
    CLIENT_ID,
    RESOURCE,
    USER,
    EmaSetup,
    ema_setup,
    get_id_jag,
    redeem,
)


@pytest.fixture(scope="module")
def setup() -> Iterator[EmaSetup]:
    with ema_setup() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with safe_async_client(NetworkPolicy(allow_loopback=True), timeout=5.0) as client:
        yield client


async def test_id_token_to_access_token_the_resource_server_accepts(
    setup: EmaSetup, http: httpx.AsyncClient
) -> None:
    id_jag = await get_id_jag(setup, http, scopes=frozenset({"files:read"}))
    assert id_jag.scopes == {"files:read"} and id_jag.audience == setup.issuer
    assert id_jag.assertion not in repr(id_jag)

    response = await redeem(http, setup.token_url, id_jag.assertion, resource=RESOURCE)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["token_type"] == "Bearer" and body["scope"] == "files:read"
    assert "refresh_token" not in body

    validator = JwtValidator(ResourceServerConfig(
        resource=RESOURCE,
        authorization_servers=(IssuerConfig(setup.issuer, jwks_uri=setup.issuer + "/jwks"),),
        network=NetworkPolicy(allow_loopback=True)))
    try:
        principal = await validator.validate(body["access_token"])
    finally:
        await validator.aclose()
    assert principal.subject == USER and principal.client_id == CLIENT_ID
    assert principal.issuer == setup.issuer and principal.scopes == {"files:read"}
    assert auth_kind(principal) == EMA_AUTH_KIND


async def test_without_a_scope_the_token_carries_what_the_id_jag_grants(
    setup: EmaSetup, http: httpx.AsyncClient
) -> None:
    id_jag = await get_id_jag(setup, http, scopes=frozenset({"files:read", "files:write"}))
    response = await redeem(http, setup.token_url, id_jag.assertion)
    assert response.status_code == 200, response.text
    assert set(response.json()["scope"].split()) == {"files:read", "files:write"}
    assert setup.endpoints[0].issued[-1]["aud"] == RESOURCE


async def test_a_narrower_scope_request_is_honoured(
    setup: EmaSetup, http: httpx.AsyncClient
) -> None:
    id_jag = await get_id_jag(setup, http, scopes=frozenset({"files:read", "files:write"}))
    response = await redeem(http, setup.token_url, id_jag.assertion, scope="files:write")
    assert response.status_code == 200 and response.json()["scope"] == "files:write"
