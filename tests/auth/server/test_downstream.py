"""No token passthrough (the spec's "Token Handling"), shown seven ways — a canary token,
the upstream audience, another realm, the STS request, STS failure, the per-principal
cache, the logs — with real loopback servers: the
authorization server doubles as the STS and records every request; the upstream API
records every header, query and body it receives."""

from __future__ import annotations

import base64
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import httpx
import jwt
import msgspec
import pytest

from mcpcore.asgi_types import Receive, Scope, Send
from mcpcore.auth.errors import DownstreamError, PassthroughBlocked
from mcpcore.auth.issuer.authorization_server import LocalAuthorizationServer, SigningKey
from mcpcore.auth.redaction import RedactingFilter, redact
from mcpcore.auth.server.downstream import (
    ClientCredentials,
    ClientSecretBasic,
    ClientSecretPost,
    DownstreamCredentials,
    GuardedTransport,
    OutboundClient,
    PassthroughGuard,
    PrivateKeyJwt,
    TokenExchange,
)
from mcpcore.auth.server.inbound import InboundToken
from mcpcore.auth.server.resource_server import BearerAuthMiddleware
from mcpcore.auth.times import MAX_TOKEN_LIFETIME
from mcpcore.auth.urls import NetworkPolicy
from mcpcore.principal import PRINCIPAL_SCOPE_KEY, Principal
from tests.auth.support import (
    MCP_CLIENT_ID,
    MCP_CLIENT_SECRET,
    RESOURCE,
    UPSTREAM,
    LoopbackServer,
    Recording,
    as_of,
    make_config,
)

LOOPBACK = NetworkPolicy(allow_loopback=True)


class ToolApp:
    """A stand-in MCP endpoint whose one tool calls the upstream API via OutboundClient."""

    def __init__(self, outbound: OutboundClient, upstream_url: str) -> None:
        self.outbound = outbound
        self.upstream_url = upstream_url
        self.errors: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        request = json.loads(message["body"])
        principal: Principal = scope[PRINCIPAL_SCOPE_KEY]
        try:
            response = await self.outbound.request(
                "POST",
                self.upstream_url + "/data?q=1",
                principal=principal,
                audience=UPSTREAM,
                scopes={"api:read"},
                json={"who": principal.subject},
            )
            result: dict[str, Any] = {"content": [{"type": "text", "text": response.text}]}
        except (DownstreamError, PassthroughBlocked) as exc:
            self.errors.append(str(exc))
            result = {
                "content": [{"type": "text", "text": "upstream unavailable"}],
                "isError": True,
            }
        body = msgspec.json.encode({"jsonrpc": "2.0", "id": request["id"], "result": result})
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


@dataclass
class World:
    idp: LocalAuthorizationServer
    upstream: Recording
    tool: ToolApp
    middleware: BearerAuthMiddleware
    credentials: DownstreamCredentials

    def token(self, sub: str = "alice", **extra: Any) -> str:
        extra.setdefault("aud", RESOURCE)
        extra.setdefault("scope", "mcp")
        return self.idp.mint(sub=sub, **extra)

    async def call_tool(self, token: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=self.middleware)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
            return await c.post(
                "/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "tools/call",
                    "params": {"name": "fetch_upstream", "arguments": {}},
                },
                headers={"authorization": f"Bearer {token}"},
            )

    def sts_requests(self) -> list[dict[str, str]]:
        return [
            dict(parse_qsl(r.body.decode())) | {"_auth": r.headers.get("authorization", "")}
            for r in self.idp.requests
            if r.path.endswith("/token")
        ]


async def build_world(
    idp_server: LoopbackServer, upstream: LoopbackServer, client_auth: Any = None
) -> World:
    idp = as_of(idp_server)
    exchange = TokenExchange(
        idp.token_endpoint,
        issuer=idp.issuer,
        client_auth=client_auth or ClientSecretBasic(MCP_CLIENT_ID, MCP_CLIENT_SECRET),
        network=LOOPBACK,
    )
    credentials = DownstreamCredentials(exchange=exchange)
    outbound = OutboundClient(PassthroughGuard(RESOURCE), credentials)
    tool = ToolApp(outbound, upstream.url)
    middleware = BearerAuthMiddleware(tool, config=make_config(idp_server.url))
    recording = upstream.app
    assert isinstance(recording, Recording)
    return World(idp, recording, tool, middleware, credentials)


@pytest.fixture
async def world(fresh_idp: LoopbackServer, upstream: LoopbackServer) -> AsyncIterator[World]:
    w = await build_world(fresh_idp, upstream)
    yield w
    await w.tool.outbound.aclose()
    await w.middleware.aclose()


async def test_t1_canary_never_reaches_upstream(world: World) -> None:
    canary = secrets.token_urlsafe(48)
    jti = secrets.token_urlsafe(64)
    inbound = world.token(jti=jti, canary=canary)
    response = await world.call_tool(inbound)
    assert response.status_code == 200
    assert "isError" not in response.json()["result"]
    seen = world.upstream.everything()
    assert len(world.upstream.requests) == 1
    for secret in (inbound, jti, canary, inbound.split(".")[2]):
        assert secret.encode() not in seen
    sent = dict(world.upstream.requests[0]["headers"])[b"authorization"].decode()
    downstream = sent.removeprefix("Bearer ")
    assert downstream != inbound
    claims = jwt.decode(downstream, options={"verify_signature": False})
    assert claims["aud"] == UPSTREAM and claims["iss"] == world.idp.issuer
    assert claims["sub"] == "alice" and claims["act"] == {"sub": MCP_CLIENT_ID}
    assert "canary" not in claims and claims["jti"] != jti


async def test_t2_token_for_the_upstream_is_refused_with_no_calls(world: World) -> None:
    response = await world.call_tool(world.token(aud=UPSTREAM))
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert world.upstream.requests == [] and world.sts_requests() == []


async def test_t3_other_realm_issuer_is_refused_with_no_calls(world: World) -> None:
    response = await world.call_tool(world.token(iss=world.idp.issuer + "/realms/other"))
    assert response.status_code == 401
    assert world.upstream.requests == [] and world.sts_requests() == []


async def test_t4_sts_request_shape(world: World) -> None:
    inbound = world.token()
    assert (await world.call_tool(inbound)).status_code == 200
    [form] = world.sts_requests()
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange"
    assert form["subject_token"] == inbound
    assert form["subject_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
    assert form["requested_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
    assert form["resource"] == UPSTREAM and form["audience"] == UPSTREAM
    assert form["scope"] == "api:read"
    basic = base64.b64decode(form["_auth"].removeprefix("Basic ")).decode()
    assert basic == f"{MCP_CLIENT_ID}:{MCP_CLIENT_SECRET}"
    assert "client_secret" not in form  # one client authentication method, not two


async def test_t4_private_key_jwt_client_authentication(
    fresh_idp: LoopbackServer, upstream: LoopbackServer, client_key: SigningKey
) -> None:
    auth = PrivateKeyJwt(
        "mcp-server-pkjwt", client_key.private_key, alg="ES256", kid=client_key.kid
    )
    w = await build_world(fresh_idp, upstream, auth)
    assert (await w.call_tool(w.token())).status_code == 200
    [form] = w.sts_requests()
    assertion = jwt.decode(form["client_assertion"], options={"verify_signature": False})
    assert assertion["iss"] == assertion["sub"] == "mcp-server-pkjwt"
    assert assertion["aud"] == w.idp.issuer
    assert form["_auth"] == "" and "client_secret" not in form
    assert len(w.upstream.requests) == 1
    await w.tool.outbound.aclose()
    await w.middleware.aclose()


@pytest.mark.parametrize("status", [500, 400])
async def test_t5_sts_failure_fails_closed(world: World, status: int) -> None:
    world.idp.fail_token_endpoint = status
    inbound = world.token()
    response = await world.call_tool(inbound)
    assert response.status_code == 200
    assert response.json()["result"]["isError"] is True
    assert world.upstream.requests == []  # no fallback to the inbound token
    assert len(world.sts_requests()) == 1
    assert all(inbound not in e for e in world.tool.errors)
    assert inbound.encode() not in response.content


async def test_t5_sts_that_echoes_the_subject_token_is_refused(upstream: LoopbackServer) -> None:
    async def echo_sts(scope: Scope, receive: Receive, send: Send) -> None:
        form = dict(parse_qsl((await receive())["body"].decode()))
        body = msgspec.json.encode(
            {
                "access_token": form["subject_token"],
                "token_type": "Bearer",
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            }
        )
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    with LoopbackServer(lambda url: echo_sts) as sts:
        exchange = TokenExchange(
            sts.url + "/token",
            issuer=sts.url,
            client_auth=ClientSecretBasic("x", "y"),
            network=LOOPBACK,
        )
        creds = DownstreamCredentials(exchange=exchange)
        outbound = OutboundClient(PassthroughGuard(RESOURCE), creds)
        inbound = InboundToken("opaque-inbound-token-value")
        principal = Principal(subject="alice", issuer="i")
        with pytest.raises(DownstreamError, match="returned the inbound token"):
            await creds.for_principal(principal, audience=UPSTREAM, inbound=inbound)
        await outbound.aclose()
    assert upstream.app.requests == []  # type: ignore[attr-defined]


async def test_t6_cache_is_per_principal(world: World) -> None:
    alice, bob = world.token("alice"), world.token("bob")
    for token in (alice, bob, alice, bob):
        assert (await world.call_tool(token)).status_code == 200
    assert len(world.sts_requests()) == 2  # one exchange per principal, then cached
    sent = [dict(r["headers"])[b"authorization"] for r in world.upstream.requests]
    assert sent[0] == sent[2] and sent[1] == sent[3] and sent[0] != sent[1]
    subjects = [
        jwt.decode(s.decode()[7:], options={"verify_signature": False})["sub"] for s in sent
    ]
    assert subjects == ["alice", "bob", "alice", "bob"]


def test_t6_cache_key_separates_tenant_client_and_actors() -> None:
    base = Principal(subject="alice", issuer="https://idp", tenant="a", client_id="c")
    variants = [
        base,
        Principal(subject="alice", issuer="https://idp", tenant="b", client_id="c"),
        Principal(subject="alice", issuer="https://other", tenant="a", client_id="c"),
        Principal(subject="alice", issuer="https://idp", tenant="a", client_id="d"),
        Principal(
            subject="alice", issuer="https://idp", tenant="a", client_id="c", actors=("agent",)
        ),
    ]
    keys = {DownstreamCredentials.cache_key(p, UPSTREAM, {"r"}) for p in variants}
    assert len(keys) == len(variants)
    assert DownstreamCredentials.cache_key(
        base, UPSTREAM, {"a", "b"}
    ) == DownstreamCredentials.cache_key(base, UPSTREAM, ["b", "a"])


async def test_t7_logs_never_hold_tokens_or_secrets(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    inbound = world.token()
    await world.call_tool(inbound)
    world.idp.fail_token_endpoint = 500
    other = world.token("carol")
    await world.call_tool(other)
    await world.call_tool("garbage." + inbound.split(".", 1)[1])
    await world.call_tool(world.token(aud=UPSTREAM))
    downstream = dict(world.upstream.requests[0]["headers"])[b"authorization"].decode()[7:]
    text = caplog.text + "".join(repr(r.args) for r in caplog.records)
    assert caplog.records  # something was logged, so the check means something
    for secret in (inbound, other, downstream, MCP_CLIENT_SECRET, inbound.split(".")[2]):
        assert secret not in text
    assert "sha256:" in text  # tokens are referred to by fingerprint only


def test_redacting_filter_scrubs_library_logs(caplog: pytest.LogCaptureFixture) -> None:
    token = LocalAuthorizationServer("https://idp").mint(sub="a", aud=RESOURCE)
    logger = logging.getLogger("tests.auth.noisy")
    logger.addFilter(RedactingFilter())
    with caplog.at_level(logging.DEBUG, logger="tests.auth.noisy"):
        logger.debug("headers: %s", {"Authorization": f"Bearer {token}"})
        logger.debug("POST /token body=grant_type=x&subject_token=%s&client_secret=s3cr3t", token)
        try:
            raise ValueError(f"bad token {token}")
        except ValueError:
            logger.exception("failed")
    assert token not in caplog.text and "s3cr3t" not in caplog.text
    assert token.split(".")[1] not in caplog.text
    assert redact("code=abc&state=xyz") == "code=[redacted]&state=xyz"


# -- the guard on its own --------------------------------------------------------------


@pytest.fixture
def guard_world(upstream: LoopbackServer) -> Iterator[tuple[Recording, str]]:
    recording = upstream.app
    assert isinstance(recording, Recording)
    yield recording, upstream.url


def _mint(aud: str | list[str]) -> str:
    now = int(time.time())
    return SigningKey.generate("EdDSA").sign(
        {"iss": "https://idp", "sub": "x", "aud": aud, "exp": now + 60}
    )


@pytest.mark.parametrize(
    "where",
    ["authorization", "custom-header", "query", "query-encoded", "json-body", "form-body"],
)
async def test_guard_blocks_the_inbound_token_anywhere(
    guard_world: tuple[Recording, str], where: str
) -> None:
    recording, url = guard_world
    inbound = InboundToken("op+aque/inbound=token")  # needs percent-encoding in URLs
    guard = PassthroughGuard(RESOURCE, forbidden=[inbound])
    client = httpx.AsyncClient(transport=GuardedTransport(guard))
    raw = inbound.reveal()
    kwargs: dict[str, Any] = {
        "authorization": {"headers": {"authorization": f"Bearer {raw}"}},
        "custom-header": {"headers": {"x-forwarded-token": raw}},
        "query": {"params": {"t": raw}},
        "query-encoded": {"url": f"{url}/x?t={httpx.QueryParams({'a': raw})}"},
        "json-body": {"json": {"token": raw}},
        "form-body": {"data": {"token": raw}},
    }[where]
    target = kwargs.pop("url", url + "/x")
    with pytest.raises(PassthroughBlocked):
        await client.post(target, **kwargs)
    await client.aclose()
    assert recording.requests == []


@pytest.mark.parametrize("aud", [RESOURCE, [UPSTREAM, RESOURCE], RESOURCE + "/"])
async def test_guard_blocks_any_token_issued_for_this_server(
    guard_world: tuple[Recording, str], aud: str | list[str]
) -> None:
    recording, url = guard_world
    client = httpx.AsyncClient(transport=GuardedTransport(PassthroughGuard(RESOURCE)))
    with pytest.raises(PassthroughBlocked):
        await client.get(url + "/x", headers={"authorization": f"Bearer {_mint(aud)}"})
    await client.aclose()
    assert recording.requests == []


async def test_guard_lets_a_proper_downstream_token_through(
    guard_world: tuple[Recording, str],
) -> None:
    recording, url = guard_world
    client = httpx.AsyncClient(transport=GuardedTransport(PassthroughGuard(RESOURCE)))
    response = await client.get(url + "/x", headers={"authorization": f"Bearer {_mint(UPSTREAM)}"})
    await client.aclose()
    assert response.status_code == 200 and len(recording.requests) == 1


async def test_guard_uses_the_current_request_token_automatically(world: World) -> None:
    """A tool that tries to forward its own inbound token is stopped by the guard."""
    outbound = world.tool.outbound

    class Forwarder:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await receive()
            headers = dict((k.decode(), v.decode()) for k, v in scope["headers"])
            try:
                await outbound.http.get(
                    world.tool.upstream_url + "/legacy",
                    headers={"authorization": headers["authorization"]},
                )
                status = 200
            except PassthroughBlocked:
                status = 502
            await send({"type": "http.response.start", "status": status, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    world.middleware.app = Forwarder()
    response = await world.call_tool(world.token())
    assert response.status_code == 502
    assert world.upstream.requests == []


async def test_client_credentials_for_the_server_itself(
    fresh_idp: LoopbackServer, upstream: LoopbackServer
) -> None:

    idp = as_of(fresh_idp)
    grant = ClientCredentials(
        idp.token_endpoint,
        issuer=idp.issuer,
        client_auth=ClientSecretPost(MCP_CLIENT_ID, MCP_CLIENT_SECRET),
        network=LOOPBACK,
    )
    outbound = OutboundClient(
        PassthroughGuard(RESOURCE), DownstreamCredentials(client_credentials=grant)
    )
    nobody = Principal(subject="ignored")
    for _ in range(2):
        response = await outbound.request(
            "GET",
            upstream.url + "/jobs",
            principal=nobody,
            audience=UPSTREAM,
            scopes={"jobs:run"},
            as_service=True,
        )
        assert response.status_code == 200
    [form] = [dict(parse_qsl(r.body.decode())) for r in idp.requests if r.path.endswith("/token")]
    assert form["grant_type"] == "client_credentials" and form["resource"] == UPSTREAM
    assert form["client_id"] == MCP_CLIENT_ID and form["scope"] == "jobs:run"
    recording = upstream.app
    assert isinstance(recording, Recording)
    sent = dict(recording.requests[0]["headers"])[b"authorization"].decode()[7:]
    claims = jwt.decode(sent, options={"verify_signature": False})
    assert claims["sub"] == MCP_CLIENT_ID and claims["aud"] == UPSTREAM
    await outbound.aclose()


def test_credentials_do_not_show_in_reprs() -> None:
    import pickle

    from mcpcore.auth.server.downstream import ClientSecretBasic, DownstreamToken

    inbound = InboundToken("inbound-secret-value")
    token = DownstreamToken("downstream-secret-value", UPSTREAM, frozenset({"r"}), 0.0)
    auth = ClientSecretBasic("id", "client-secret-value")
    key = SigningKey.generate("EdDSA")
    pk = PrivateKeyJwt("id", key.private_key)
    text = " ".join(repr(x) for x in (inbound, token, auth, pk)) + str(inbound)
    for secret in ("inbound-secret-value", "downstream-secret-value", "client-secret-value"):
        assert secret not in text
    with pytest.raises(TypeError):
        pickle.dumps(inbound)


@pytest.mark.parametrize(("raw", "expires_at"), [
    (b"1" + b"0" * 400, 1000.0 + MAX_TOKEN_LIFETIME),  # was a bare OverflowError
    (b"-5", None),  # was a token already expired when it arrived
    (b'"soon"', None),
])
async def test_a_downstream_token_lifetime_is_clamped_or_refused(
    raw: bytes, expires_at: float | None
) -> None:
    body = b'{"access_token": "t", "token_type": "Bearer", "expires_in": ' + raw + b"}"
    http = httpx.AsyncClient(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, content=body)))
    endpoint = ClientCredentials("https://sts.example.com/token", issuer="https://sts.example.com",
                                 client_auth=ClientSecretPost("me", "s"), client=http,
                                 clock=lambda: 1000.0)
    if expires_at is None:
        with pytest.raises(DownstreamError, match="expires_in"):
            await endpoint.fetch(audience="https://api.example.com")
    else:
        token = await endpoint.fetch(audience="https://api.example.com")
        assert token.expires_at == expires_at
    await http.aclose()
