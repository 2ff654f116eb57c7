"""The ID-JAG attack table: each bad grant gets its exact status and OAuth error, and
nothing is issued. Everything runs on loopback for real: the enterprise IdP serves its
keys over HTTP, the MCP authorization server fetches them (SSRF-guarded), grants are
really signed, and the replay check goes through a real Redis shared by two instances."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from mcpcore.auth.issuer.authorization_server import SigningKey
from mcpcore.auth.issuer.idp import LocalIdentityProvider
from mcpcore.auth.terms import ID_JAG_TYP
from mcpcore.auth.urls import NetworkPolicy, safe_async_client
from mcpcore.stores import RedisStore
from tests.auth.ema_support import (
    CLIENT_ID,
    CLIENT_SECRET,
    OTHER_RESOURCE,
    RESOURCE,
    USER,
    EmaSetup,
    ema_setup,
    get_id_jag,
    redeem,
)
from tests.auth.support import LoopbackServer, Recording
from tests.integration.conftest import RedisServer, redis_server  # noqa: F401 (fixture)

ATTACKER = SigningKey.generate("ES256")


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class Env:
    setup: EmaSetup
    rogue: LocalIdentityProvider
    attacker_jwks: Recording
    attacker_url: str

    def claims(self, **over: Any) -> dict[str, Any]:
        base: dict[str, Any] = {"sub": USER, "aud": self.setup.issuer, "client_id": CLIENT_ID,
                                "resource": RESOURCE, "scope": "files:read"}
        base.update(over)
        return base

    def jag(self, *, key: SigningKey | None = None, headers: dict[str, Any] | None = None,
            **over: Any) -> str:
        """A grant signed by the trusted IdP (or ``key``), with these claims changed."""
        idp = self.setup.idp
        return idp.mint_id_jag(key=key, headers=headers, **self.claims(**over))

    def kid(self) -> str:
        return self.setup.idp.keys[0].kid

    def unsigned(self, header: dict[str, Any], signature: str = "", **over: Any) -> str:
        now = int(time.time())
        claims = {"iss": self.setup.idp.issuer, "iat": now, "exp": now + 300, "jti": "j-1",
                  **self.claims(**over)}
        return f"{b64(json.dumps(header))}.{b64(json.dumps(claims))}.{signature}"


@dataclass
class Req:
    assertion: str | None
    client: tuple[str, str] | None = (CLIENT_ID, CLIENT_SECRET)
    params: dict[str, Any] = field(default_factory=dict)


def hs256_with_public_key(env: Env) -> Req:
    """Key confusion: HMAC keyed with the IdP's public key, as a naive verifier might."""
    pem = env.setup.idp.keys[0].public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    token = env.unsigned({"alg": "HS256", "typ": ID_JAG_TYP, "kid": env.kid()})
    head, body, _ = token.split(".")
    sig = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return Req(f"{head}.{body}.{b64(sig)}")


def tampered(env: Env) -> Req:
    """A real grant whose payload was changed after signing (more scope)."""
    head, _, sig = env.jag().split(".")
    now = int(time.time())
    body = b64(json.dumps({"iss": env.setup.idp.issuer, "iat": now, "exp": now + 300,
                           "jti": "t-1", **env.claims(scope="files:read files:write")}))
    return Req(f"{head}.{body}.{sig}")


def jku_to_attacker(env: Env) -> Req:
    """Signed by the attacker, pointing ``jku`` at the attacker's key set."""
    return Req(env.jag(key=ATTACKER, headers={
        "kid": ATTACKER.kid, "jku": env.attacker_url + "/jwks",
        "x5u": env.attacker_url + "/cert"}))


def embedded_jwk(env: Env) -> Req:
    """Signed by the attacker, carrying the attacker's public key in the header."""
    return Req(env.jag(key=ATTACKER, headers={"jwk": ATTACKER.public_jwk()}))


OTHER_AS = "http://127.0.0.1:1/as"
Build = Callable[[Env], Req]
ATTACKS: list[tuple[str, Build, int, str, str | None]] = [
    # audience: this authorization server's issuer, exactly
    ("wrong aud", lambda e: Req(e.jag(aud=OTHER_AS)), 400, "invalid_grant", "audience is not this"),
    ("aud with a trailing slash", lambda e: Req(e.jag(aud=e.setup.issuer + "/")), 400,
     "invalid_grant", "audience is not this"),
    ("aud array of two", lambda e: Req(e.jag(aud=[e.setup.issuer, OTHER_AS])), 400,
     "invalid_grant", "audience is not this"),
    # issuer and signature
    ("untrusted issuer", lambda e: Req(e.rogue.mint_id_jag(**e.claims())),
     400, "invalid_grant", "not a trusted IdP"),
    ("bad signature (attacker key, IdP's kid)",
     lambda e: Req(e.jag(key=ATTACKER, headers={"kid": e.kid()})),
     400, "invalid_grant", "signature check failed"),
    ("payload changed after signing", tampered, 400, "invalid_grant", "signature check failed"),
    ("alg none", lambda e: Req(e.unsigned({"alg": "none", "typ": ID_JAG_TYP})), 400,
     "invalid_grant", "algorithm not allowed"),
    ("HS256 keyed with the IdP's public key", hs256_with_public_key,
     400, "invalid_grant", "algorithm not allowed"),
    ("jku/x5u pointing at the attacker", jku_to_attacker,
     400, "invalid_grant", "unknown signing key"),
    ("attacker key embedded as jwk", embedded_jwk, 400, "invalid_grant", "unknown signing key"),
    ("unknown critical header",
     lambda e: Req(e.jag(headers={"crit": ["exp"], "exp": 1})),
     400, "invalid_grant", "critical header"),
    ("JWE-shaped assertion", lambda e: Req("eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d"), 400,
     "invalid_grant", "not a JWS"),
    # type: only an ID-JAG is a grant
    ("an ID token instead of an ID-JAG",
     lambda e: Req(e.setup.idp.id_token(USER, client_id=CLIENT_ID)),
     400, "invalid_grant", "typ is not"),
    ("typ at+jwt", lambda e: Req(e.jag(headers={"typ": "at+jwt"})),
     400, "invalid_grant", "typ is not"),
    ("typ missing", lambda e: Req(e.jag(headers={"typ": None})),
     400, "invalid_grant", "typ is not"),
    # lifetime
    ("expired", lambda e: Req(e.jag(iat=int(time.time()) - 900,
                                    exp=int(time.time()) - 600)), 400, "invalid_grant", "expired"),
    ("not yet valid (nbf)", lambda e: Req(e.jag(nbf=int(time.time()) + 600)), 400,
     "invalid_grant", "not yet valid"),
    ("issued in the future", lambda e: Req(e.jag(iat=int(time.time()) + 600,
                                                 exp=int(time.time()) + 900)), 400,
     "invalid_grant", "in the future"),
    ("lives a day", lambda e: Req(e.jag(exp=int(time.time()) + 86_400)),
     400, "invalid_grant", "lives longer"),
    # required claims
    ("missing sub", lambda e: Req(e.jag(sub=None)), 400, "invalid_grant", "claim sub"),
    ("empty sub", lambda e: Req(e.jag(sub="")), 400, "invalid_grant", "claim sub"),
    ("missing jti", lambda e: Req(e.jag(jti=None)), 400, "invalid_grant", "claim jti"),
    ("missing resource", lambda e: Req(e.jag(resource=None)),
     400, "invalid_grant", "names no resource"),
    # the client
    ("client_id of another client", lambda e: Req(e.jag(client_id="other-app")), 400,
     "invalid_grant", "issued to another client"),
    ("presented by another registered client",
     lambda e: Req(e.jag(), client=("other-app", "other-secret")),
     400, "invalid_grant", "issued to another client"),
    ("wrong client secret", lambda e: Req(e.jag(), client=(CLIENT_ID, "guess")), 401,
     "invalid_client", None),
    ("no client authentication", lambda e: Req(e.jag(), client=None), 401, "invalid_client", None),
    ("client not registered for ID-JAG grants",
     lambda e: Req(e.jag(client_id="no-ema-app"), client=("no-ema-app", "no-ema-secret")),
     400, "unauthorized_client", "not registered for ID-JAG"),
    ("client not allowed the JWT-bearer grant",
     lambda e: Req(e.jag(client_id="no-grant-app"), client=("no-grant-app", "no-grant-secret")),
     400, "unauthorized_client", None),
    # resource and scope
    ("resource this server does not serve",
     lambda e: Req(e.jag(resource="https://mcp.elsewhere.example/mcp")),
     400, "invalid_grant", "does not serve"),
    ("resource not open to this client", lambda e: Req(e.jag(resource=OTHER_RESOURCE,
                                                             scope="other:read")), 400,
     "invalid_target", "this client may not"),
    ("requested resource not in the grant",
     lambda e: Req(e.jag(), params={"resource": OTHER_RESOURCE}),
     400, "invalid_target", "not one the grant names"),
    ("scope escalation", lambda e: Req(e.jag(), params={"scope": "files:read files:write"}),
     400, "invalid_scope", "scopes the grant does not carry"),
    ("grant carries a scope the resource does not define", lambda e: Req(e.jag(scope="admin")),
     400, "invalid_grant", "resource does not define"),
    # the request itself
    ("no assertion", lambda e: Req(None), 400, "invalid_request", None),
    ("assertion twice", lambda e: Req(None, params={"assertion": [e.jag(), e.jag()]}), 400,
     "invalid_request", None),
]


async def test_an_assertion_in_the_url_is_refused(env: Env, http: httpx.AsyncClient) -> None:
    """EMA §7.3: an ID-JAG never travels in a URL (logs, referrers, history keep URLs)."""
    issued = len(env.setup.endpoints[0].issued)
    response = await http.post(env.setup.token_url, params={"assertion": env.jag()},
                               data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer"},
                               auth=httpx.BasicAuth(CLIENT_ID, CLIENT_SECRET))
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
    assert len(env.setup.endpoints[0].issued) == issued


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    attacker = Recording()
    with (
        ema_setup() as setup,
        LoopbackServer(lambda url: LocalIdentityProvider(url)) as rogue,
        LoopbackServer(lambda url: attacker) as attacker_server,
    ):
        assert isinstance(rogue.app, LocalIdentityProvider)
        yield Env(setup, rogue.app, attacker, attacker_server.url)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with safe_async_client(NetworkPolicy(allow_loopback=True), timeout=5.0) as client:
        yield client


@pytest.mark.parametrize(("name", "build", "status", "error", "reason"), ATTACKS,
                         ids=[a[0] for a in ATTACKS])
async def test_attack_is_refused_and_nothing_is_issued(
    env: Env, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture,
    name: str, build: Build, status: int, error: str, reason: str | None,
) -> None:
    caplog.set_level(logging.INFO, logger="mcpcore.auth.issuer.ema")
    request = build(env)
    issued = len(env.setup.endpoints[0].issued)
    response = await redeem(http, env.setup.token_url, request.assertion,
                            client=request.client, **request.params)
    assert (response.status_code, response.json()["error"]) == (status, error), response.text
    assert "access_token" not in response.json()
    assert len(env.setup.endpoints[0].issued) == issued
    # Keys come from configuration only: nothing ever asks the attacker or the rogue IdP.
    assert env.attacker_jwks.requests == []
    # Refused for the reason the row names (the log says why; the client is not told),
    # and the log never holds the assertion itself.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    if reason is not None:
        assert f"refused: {error} (" in logged and reason in logged, logged
    if request.assertion:
        assert request.assertion not in logged


def test_the_table_has_the_rows_the_issue_asks_for() -> None:
    assert len(ATTACKS) >= 15


async def test_the_same_grant_twice_on_one_instance(env: Env, http: httpx.AsyncClient) -> None:
    id_jag = await get_id_jag(env.setup, http)
    first = await redeem(http, env.setup.token_url, id_jag.assertion)
    assert first.status_code == 200, first.text
    issued = len(env.setup.endpoints[0].issued)
    again = await redeem(http, env.setup.token_url, id_jag.assertion)
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert len(env.setup.endpoints[0].issued) == issued


async def test_a_refused_grant_is_not_burnt(env: Env, http: httpx.AsyncClient) -> None:
    """A thief presenting the grant first (without the client's secret) must not make
    the real client's request fail: only a grant that passed every check is recorded."""
    id_jag = await get_id_jag(env.setup, http)
    stolen = await redeem(http, env.setup.token_url, id_jag.assertion,
                          client=("other-app", "other-secret"))
    assert stolen.status_code == 400
    assert (await redeem(http, env.setup.token_url, id_jag.assertion)).status_code == 200


@pytest.mark.integration
async def test_a_replay_on_another_instance_sharing_redis_is_refused(
    redis_server: RedisServer, http: httpx.AsyncClient  # noqa: F811
) -> None:
    with ema_setup(instances=2, store_factory=lambda: RedisStore.from_url(
            redis_server.url, prefix="ema-test:")) as fleet:
        first_url, second_url = (s.url + "/token" for s in fleet.servers)
        id_jag = await get_id_jag(fleet, http)
        first = await redeem(http, first_url, id_jag.assertion)
        assert first.status_code == 200, first.text
        replay = await redeem(http, second_url, id_jag.assertion)
        assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
        assert fleet.endpoints[1].issued == []
        # ... while a fresh grant works on the second instance: it is the replay, not it.
        fresh = await get_id_jag(fleet, http)
        assert (await redeem(http, second_url, fresh.assertion)).status_code == 200


async def test_unknown_kids_refetch_at_most_once_per_cooldown(
    env: Env, http: httpx.AsyncClient
) -> None:
    cache = env.setup.endpoints[0].id_jag.validator.caches[env.setup.idp.issuer]
    await get_id_jag(env.setup, http)  # keys are loaded by now (any earlier test did too)
    assert (await redeem(http, env.setup.token_url, env.jag())).status_code == 200
    before = cache.fetches
    for n in range(20):
        forged = env.jag(key=ATTACKER, headers={"kid": f"random-{n}"})
        response = await redeem(http, env.setup.token_url, forged)
        assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    assert cache.fetches - before <= 1


def redirecting_jwks(target: str) -> Callable[[str], Any]:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 302,
                    "headers": [(b"location", target.encode())]})
        await send({"type": "http.response.body", "body": b""})
    return lambda url: app


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/jwks", "local"])
async def test_a_jwks_url_that_redirects_is_not_followed(
    env: Env, http: httpx.AsyncClient, target: str
) -> None:
    """The IdP's key set URL answers with a redirect to a private address (cloud metadata)
    or to another local server: the fetch stops there, nothing is issued, and the grant
    is refused as temporarily uncheckable (503), not accepted."""
    sink = Recording()
    with LoopbackServer(lambda url: sink) as sink_server:
        location = sink_server.url + "/jwks" if target == "local" else target
        with (
            LoopbackServer(redirecting_jwks(location)) as redirector,
            ema_setup(idp_jwks_uri=redirector.url + "/jwks") as setup,
        ):
            forged = setup.idp.mint_id_jag(sub=USER, aud=setup.issuer,
                                           client_id=CLIENT_ID, resource=RESOURCE)
            response = await redeem(http, setup.token_url, forged)
            assert (response.status_code, response.json()["error"]) == (
                503, "temporarily_unavailable")
            assert setup.endpoints[0].issued == []
        assert sink.requests == []


async def test_a_tenant_the_idp_entry_does_not_allow_is_refused(
    http: httpx.AsyncClient,
) -> None:
    with ema_setup(tenant="acme", idp_options={"tenants": ("acme",)}) as setup:
        good = await get_id_jag(setup, http)
        assert (await redeem(http, setup.token_url, good.assertion)).status_code == 200
        assert setup.endpoints[0].issued[-1]["tid"] == "acme"
        for tenant in ("contoso", None):
            forged = setup.idp.mint_id_jag(sub=USER, aud=setup.issuer, client_id=CLIENT_ID,
                                           resource=RESOURCE, tenant=tenant)
            response = await redeem(http, setup.token_url, forged)
            assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
        assert len(setup.endpoints[0].issued) == 1
