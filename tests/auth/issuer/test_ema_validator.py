"""``IdJagValidator`` and ``IdJagGrantType``: the IdP's keys over loopback HTTP (rotation,
outage), single use through the ``Store`` (TTL, outage), the token-endpoint form."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from mcpcore.auth.config import JwksSettings
from mcpcore.auth.errors import GrantUnavailable, InvalidGrant, InvalidTokenRequest
from mcpcore.auth.issuer.authorization_server import SigningKey
from mcpcore.auth.issuer.ema import EmaConfig, IdJagGrantType, IdJagValidator, access_token_claims
from mcpcore.auth.issuer.idjag import EmaClient, TrustedIdp
from mcpcore.auth.issuer.idp import LocalIdentityProvider
from mcpcore.auth.urls import NetworkPolicy
from mcpcore.stores import MemoryStore, RedisStore
from tests.auth.support import LoopbackServer

AS = "https://auth.example.com"
MCP = "https://mcp.example.com/mcp"


class RecordingStore(MemoryStore):
    """A real MemoryStore that also remembers the TTLs it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.ttls: list[float | None] = []

    async def set_if_absent(self, key: str, value: bytes, *, ttl: float | None) -> bool:
        self.ttls.append(ttl)
        return await super().set_if_absent(key, value, ttl=ttl)


@pytest.fixture(scope="module")
def idp_server() -> Iterator[LoopbackServer]:
    with LoopbackServer(lambda url: LocalIdentityProvider(url)) as server:
        yield server


@pytest.fixture
def idp(idp_server: LoopbackServer) -> LocalIdentityProvider:
    app = idp_server.app
    assert isinstance(app, LocalIdentityProvider)
    app.keys = [SigningKey.generate("ES256", kid="k1")]
    return app


def config(idp: LocalIdentityProvider, **over: Any) -> EmaConfig:
    settings: dict[str, Any] = {
        "issuer": AS,
        "trusted_idps": (TrustedIdp(idp.issuer, jwks_uri=idp.jwks_uri),),
        "resources": {MCP: frozenset({"files:read"})},
        "clients": (EmaClient("app"),),
        "network": NetworkPolicy(allow_loopback=True),
        "jwks": JwksSettings(timeout=2.0, refetch_cooldown=30.0),
    }
    settings.update(over)
    return EmaConfig(**settings)


def grant(idp: LocalIdentityProvider, **over: Any) -> str:
    claims = {"sub": "u1", "aud": AS, "client_id": "app", "resource": MCP,
              "scope": "files:read", **over}
    return idp.mint_id_jag(**claims)


@pytest.fixture
def monotonic() -> list[float]:
    """The validator's monotonic clock (JWKS TTLs and cooldowns): move it by hand."""
    return [1000.0]


@pytest.fixture
async def validator(
    idp: LocalIdentityProvider, monotonic: list[float]
) -> AsyncIterator[IdJagValidator]:
    v = IdJagValidator(config(idp), RecordingStore(), monotonic=lambda: monotonic[0])
    yield v
    await v.aclose()


async def test_single_use_with_a_ttl_until_exp_plus_leeway(
    idp: LocalIdentityProvider, validator: IdJagValidator
) -> None:
    token = grant(idp)
    accepted = await validator.validate(token, client_id="app")
    assert accepted.subject == "u1"
    store = validator.store
    assert isinstance(store, RecordingStore)
    (ttl,) = store.ttls
    assert ttl is not None and 300 + 30 - 5 <= ttl <= 300 + 30
    with pytest.raises(InvalidGrant, match="already used"):
        await validator.validate(token, client_id="app")


async def test_rotation_is_picked_up_and_withdrawn_keys_stop_working(
    idp: LocalIdentityProvider, validator: IdJagValidator, monotonic: list[float]
) -> None:
    old = grant(idp)
    await validator.validate(grant(idp), client_id="app")
    cache = validator.caches[idp.issuer]
    assert cache.fetches == 1
    idp.rotate(SigningKey.generate("ES256", kid="k2"), keep_old=False)
    rotated = grant(idp)
    with pytest.raises(InvalidGrant, match="unknown signing key"):  # within the cooldown
        await validator.validate(rotated, client_id="app")
    assert cache.fetches == 1
    monotonic[0] += 31
    assert (await validator.validate(rotated, client_id="app")).subject == "u1"
    assert cache.fetches == 2
    with pytest.raises(InvalidGrant):  # the IdP withdrew k1: no rollback to it
        await validator.validate(old, client_id="app")


async def test_idp_keys_unreachable_is_temporary_and_fails_closed(
    idp: LocalIdentityProvider,
) -> None:
    dead = config(idp, trusted_idps=(TrustedIdp(idp.issuer, jwks_uri="http://127.0.0.1:9/jwks"),))
    v = IdJagValidator(dead, MemoryStore())
    try:
        with pytest.raises(GrantUnavailable) as info:
            await v.validate(grant(idp), client_id="app")
    finally:
        await v.aclose()
    assert (info.value.status, info.value.error) == (503, "temporarily_unavailable")


async def test_replay_store_unreachable_fails_closed(idp: LocalIdentityProvider) -> None:
    store = RedisStore.from_url("redis://127.0.0.1:9/0", connect_timeout=0.5)
    v = IdJagValidator(config(idp), store)
    try:
        with pytest.raises(GrantUnavailable, match="replay store"):
            await v.validate(grant(idp), client_id="app")
    finally:
        await v.aclose()
        await store.close()


async def test_refusals_are_logged_by_fingerprint_only(
    idp: LocalIdentityProvider, validator: IdJagValidator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpcore.auth.issuer.ema")
    good, bad = grant(idp), grant(idp, aud="https://other.example")
    await validator.validate(good, client_id="app")
    with pytest.raises(InvalidGrant):
        await validator.validate(bad, client_id="app")
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "accepted" in text and "refused: invalid_grant" in text
    assert good not in text and bad not in text and "sha256:" in text


@pytest.mark.parametrize("form, message", [
    ({}, "assertion is missing"),
    ({"assertion": [""]}, "assertion is missing"),
    ({"assertion": ["a", "b"]}, "assertion is repeated"),
    ({"assertion": ["a"], "resource": [MCP, MCP]}, "resource is repeated"),
    ({"assertion": ["a"], "scope": ["x", "y"]}, "scope is repeated"),
])
async def test_the_form_must_be_unambiguous(
    validator: IdJagValidator, form: dict[str, list[str]], message: str
) -> None:
    with pytest.raises(InvalidTokenRequest, match=message):
        await IdJagGrantType(validator).accept(form, client_id="app")


async def test_accept_and_the_access_token_claims(
    idp: LocalIdentityProvider, validator: IdJagValidator
) -> None:
    token = grant(idp, tenant="acme")
    accepted = await IdJagGrantType(validator).accept(
        {"assertion": [token], "resource": [MCP], "scope": ["files:read"]}, client_id="app")
    assert access_token_claims(accepted) == {
        "sub": "u1", "aud": MCP, "client_id": "app", "auth_kind": "ema",
        "scope": "files:read", "tid": "acme"}
    plain = await IdJagGrantType(validator).accept(
        {"assertion": [grant(idp, scope=None)]}, client_id="app")
    assert "scope" not in access_token_claims(plain)
    assert "tid" not in access_token_claims(plain)


async def test_without_a_cooldown_a_grant_still_costs_at_most_two_fetches(
    idp: LocalIdentityProvider,
) -> None:
    v = IdJagValidator(config(idp, jwks=JwksSettings(timeout=2.0, refetch_cooldown=0.0)),
                       MemoryStore())
    try:
        await v.validate(grant(idp), client_id="app")
        before = v.caches[idp.issuer].fetches
        forged = idp.mint_id_jag(key=SigningKey.generate("ES256", kid="nobody"), sub="u1",
                                 aud=AS, client_id="app", resource=MCP)
        with pytest.raises(InvalidGrant, match="unknown signing key"):
            await v.validate(forged, client_id="app")
        assert v.caches[idp.issuer].fetches - before == 2
    finally:
        await v.aclose()
