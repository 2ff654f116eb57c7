"""Opaque tokens checked by RFC 7662 introspection at a real loopback AS."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from mcpcore.asgi_types import Receive, Scope, Send
from mcpcore.auth.client_auth import ClientSecretBasic
from mcpcore.auth.config import IntrospectionSettings, IssuerConfig
from mcpcore.auth.errors import InvalidToken
from mcpcore.auth.server.introspection import IntrospectionValidator
from mcpcore.auth.server.resource_server import BearerAuthMiddleware, build_validator
from tests.auth.support import (
    MCP_CLIENT_ID,
    MCP_CLIENT_SECRET,
    RESOURCE,
    UPSTREAM,
    LoopbackServer,
    Recorder,
    as_of,
    make_config,
)
from tests.support.processes import free_port


class Clock:
    def __init__(self) -> None:
        self.now = 2_000_000_000.0

    def __call__(self) -> float:
        return self.now


def config_for(url: str, endpoint: str | None = None, secret: str = MCP_CLIENT_SECRET) -> Any:
    server = IssuerConfig(
        url,
        jwks_uri=url + "/jwks",
        introspection_endpoint=endpoint or url + "/introspect",
        introspection_client_id=MCP_CLIENT_ID,
        introspection_client_secret=secret,
    )
    return make_config(
        url, authorization_servers=(server,), introspection=IntrospectionSettings(cache_ttl=60)
    )


async def call(middleware: BearerAuthMiddleware, token: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=middleware)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
        return await c.post("/mcp", content=b"{}", headers={"authorization": f"Bearer {token}"})


def introspections(server: LoopbackServer) -> int:
    return sum(r.path.endswith("/introspect") for r in as_of(server).requests)


async def test_active_opaque_token_is_accepted_and_cached_within_its_lifetime(
    fresh_idp: LoopbackServer,
) -> None:
    idp = as_of(fresh_idp)
    clock = Clock()
    idp.clock = clock
    config = config_for(fresh_idp.url)
    recorder = Recorder()
    middleware = BearerAuthMiddleware(
        recorder, config=config, validator=build_validator(config, clock=clock)
    )
    token = idp.mint_opaque(sub="alice", aud=RESOURCE, scope="mcp", ttl=100)
    assert (await call(middleware, token)).status_code == 200
    assert (await call(middleware, token)).status_code == 200
    assert introspections(fresh_idp) == 1
    principal = recorder.calls[0]["principal"]
    assert principal.auth_method == "introspection" and principal.subject == "alice"
    assert principal.issuer == fresh_idp.url and principal.scopes == {"mcp"}
    clock.now += 61  # past the cache TTL: ask again
    assert (await call(middleware, token)).status_code == 200
    assert introspections(fresh_idp) == 2
    idp.revoke(token)
    clock.now += 61
    assert (await call(middleware, token)).status_code == 401
    # A JWT still goes to local validation, not introspection.
    jwt_token = idp.mint(sub="bob", aud=RESOURCE, scope="mcp", ttl=10_000)
    assert (await call(middleware, jwt_token)).status_code == 200
    assert introspections(fresh_idp) == 3
    await middleware.aclose()


async def test_cache_never_outlives_the_token(fresh_idp: LoopbackServer) -> None:
    idp = as_of(fresh_idp)
    clock = Clock()
    idp.clock = clock
    validator = IntrospectionValidator(config_for(fresh_idp.url), clock=clock)
    token = idp.mint_opaque(sub="alice", aud=RESOURCE, scope="mcp", ttl=10)
    await validator.validate(token)
    clock.now += 11  # cache TTL is 60 s but the token expired after 10 s
    with pytest.raises(Exception, match="not active"):
        await validator.validate(token)
    assert validator.calls == 2
    await validator.aclose()


@pytest.mark.parametrize(
    "mint",
    [
        lambda idp: idp.mint_opaque(sub="alice", aud=UPSTREAM, scope="mcp"),
        lambda idp: idp.mint_opaque(sub="alice", aud=RESOURCE, scope="mcp", ttl=-5),
        lambda idp: "never-issued-token",
    ],
    ids=["wrong-audience", "expired", "unknown"],
)
async def test_inactive_or_foreign_tokens_are_401(fresh_idp: LoopbackServer, mint: Any) -> None:
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=config_for(fresh_idp.url))
    response = await call(middleware, mint(as_of(fresh_idp)))
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert recorder.calls == []
    await middleware.aclose()


async def test_wrong_client_secret_fails_closed(fresh_idp: LoopbackServer) -> None:
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=config_for(fresh_idp.url, secret="bad"))
    token = as_of(fresh_idp).mint_opaque(sub="alice", aud=RESOURCE, scope="mcp")
    assert (await call(middleware, token)).status_code == 401 and recorder.calls == []
    await middleware.aclose()


def _static(body: bytes, status: int) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    return app


@pytest.mark.parametrize(
    "body, status, expected",
    [
        (
            b'{"active": true, "sub": "a", "aud": "' + RESOURCE.encode() + b'", "exp": 9e9}',
            500,
            401,
        ),
        (b"<html>", 200, 401),
        (b'{"active": "true", "sub": "a"}', 200, 401),
        (b'{"active": true, "sub": "a", "exp": 9999999999}', 200, 401),  # no aud
        (
            b'{"active": true, "sub": "a", "aud": "'
            + RESOURCE.encode()
            + b'", "exp": 9999999999, "iss": "https://other"}',
            200,
            401,
        ),
        (b"x" * 70_000, 200, 401),
        (  # was a bare OverflowError, a 500
            b'{"active": true, "sub": "a", "aud": "' + RESOURCE.encode()
            + b'", "exp": 1' + b"0" * 400 + b"}",
            200,
            401,
        ),
    ],
    ids=["500", "html", "active-string", "no-aud", "other-iss", "too-large", "huge-exp"],
)
async def test_bad_introspection_answers_fail_closed(
    body: bytes, status: int, expected: int
) -> None:
    with LoopbackServer(lambda url: _static(body, status)) as server:
        recorder = Recorder()
        middleware = BearerAuthMiddleware(
            recorder, config=config_for(server.url, server.url + "/introspect")
        )
        response = await call(middleware, "opaque-token-value")
        assert response.status_code == expected and recorder.calls == []
        await middleware.aclose()


async def test_introspection_endpoint_down_is_503() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=config_for(url))
    response = await call(middleware, "opaque-token-value")
    assert response.status_code == 503 and recorder.calls == []
    await middleware.aclose()


async def test_introspection_authenticates_as_a_token_request_does() -> None:
    # RFC 6749 §2.3.1: id and secret are form-encoded before base64 (a space is "+"),
    # the same header ClientSecretBasic sends to a token endpoint.
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["authorization"])
        return httpx.Response(200, json={"active": False})

    url = "https://as.example"
    config = config_for(url, secret="pass word/:")
    validator = IntrospectionValidator(
        config, client=httpx.AsyncClient(transport=httpx.MockTransport(answer)))
    with pytest.raises(InvalidToken):  # inactive: what was sent is what counts here
        await validator.validate("opaque-token")
    headers: dict[str, str] = {}
    ClientSecretBasic(MCP_CLIENT_ID, "pass word/:").apply({}, headers, audience=url)
    assert seen == [headers["authorization"]]
    assert base64.b64decode(seen[0].split()[1]).decode().startswith(f"{MCP_CLIENT_ID}:pass+word")
