"""JWKS over real loopback HTTP: outages, garbage, size limits, rotation and the
refetch cooldown. Every case asserts the status the client sees and that no handler ran."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest

from mcpcore.asgi_types import Receive, Scope, Send
from mcpcore.auth.config import JwksSettings
from mcpcore.auth.issuer.authorization_server import SigningKey
from mcpcore.auth.server.resource_server import BearerAuthMiddleware
from mcpcore.auth.server.tokens import JwtValidator
from tests.auth.support import RESOURCE, LoopbackServer, Recorder, as_of, make_config
from tests.support.processes import free_port

PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def static(body: bytes, status: int = 200, headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    hits: list[int] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        hits.append(1)
        await send({"type": "http.response.start", "status": status, "headers": headers or []})
        await send({"type": "http.response.body", "body": body})

    app.hits = hits  # type: ignore[attr-defined]
    return app


async def call(middleware: BearerAuthMiddleware, token: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=middleware)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
        return await c.post("/mcp", content=PING, headers={"authorization": f"Bearer {token}"})


def token_for(issuer: str, key: SigningKey, **extra: Any) -> str:
    import time

    now = int(time.time())
    claims = {
        "iss": issuer,
        "sub": "alice",
        "aud": RESOURCE,
        "iat": now,
        "exp": now + 300,
        "scope": "mcp",
        **extra,
    }
    return key.sign(claims)


@pytest.mark.parametrize(
    "app",
    [
        static(b"<html>oops</html>"),
        static(b'{"keys": "nope"}'),
        static(b'{"keys": []}'),
        static(b'{"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "rs256-1"}]}'),
        static(b"[" * 100_000),
        static(b'{"keys": []}' + b" " * 70_000),  # over the 64 KiB limit
        static(b"", status=500),
        static(b"", status=302, headers=[(b"location", b"http://169.254.169.254/")]),
    ],
    ids=[
        "html",
        "keys-not-list",
        "empty",
        "only-hmac",
        "deep-nesting",
        "too-large",
        "500",
        "redirect-to-metadata",
    ],
)
async def test_bad_jwks_fails_closed_with_503(
    app: Any, signing_keys: dict[str, SigningKey]
) -> None:
    issuer = "http://127.0.0.1:1"  # tokens name this issuer; keys come from the bad server
    with LoopbackServer(lambda url: app) as jwks:
        recorder = Recorder()
        config = make_config(issuer, jwks_uri=jwks.url + "/jwks")
        middleware = BearerAuthMiddleware(recorder, config=config)
        response = await call(middleware, token_for(issuer, signing_keys["RS256"]))
        assert response.status_code == 503
        assert response.json()["error"] == "temporarily_unavailable"
        assert "www-authenticate" not in response.headers
        assert response.headers["retry-after"] == "5"
        assert recorder.calls == []
        # A second request within the cooldown does not hit the broken endpoint again.
        await call(middleware, token_for(issuer, signing_keys["RS256"]))
        assert len(app.hits) == 1
        await middleware.aclose()


async def test_jwks_endpoint_down_is_503(signing_keys: dict[str, SigningKey]) -> None:
    issuer = "http://127.0.0.1:1"
    recorder = Recorder()
    config = make_config(issuer, jwks_uri=f"http://127.0.0.1:{free_port()}/jwks")  # nothing listens
    middleware = BearerAuthMiddleware(recorder, config=config)
    response = await call(middleware, token_for(issuer, signing_keys["ES256"]))
    assert response.status_code == 503 and recorder.calls == []
    await middleware.aclose()


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA"])
async def test_each_algorithm_is_accepted_with_keys_fetched_once(
    idp: LoopbackServer, signing_keys: dict[str, SigningKey], alg: str
) -> None:
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=make_config(idp.url))
    validator = middleware.validator
    for _ in range(3):
        response = await call(middleware, token_for(idp.url, signing_keys[alg]))
        assert response.status_code == 200
    assert len(recorder.calls) == 3
    assert recorder.calls[0]["principal"].subject == "alice"
    jwt_validator = validator._jwt  # type: ignore[attr-defined]
    assert jwt_validator.caches[idp.url].fetches == 1
    await middleware.aclose()


async def test_rotation_mid_traffic_refetches_once(fresh_idp: LoopbackServer) -> None:
    server = as_of(fresh_idp)
    clock = Clock()
    config = make_config(fresh_idp.url, jwks=JwksSettings(refetch_cooldown=30.0))
    validator = JwtValidator(config, monotonic=clock)
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=config, validator=validator)
    old = server.keys[0]
    assert (await call(middleware, token_for(fresh_idp.url, old))).status_code == 200
    clock.now += 31  # past the cooldown since the first fetch
    new = server.rotate(SigningKey.generate("ES256", kid="rotated-1"), keep_old=False)
    jwks_hits = lambda: sum(r.path.endswith("/jwks") for r in server.requests)  # noqa: E731
    before = jwks_hits()
    for _ in range(5):  # in-flight traffic with the new key: one refetch serves them all
        assert (await call(middleware, token_for(fresh_idp.url, new))).status_code == 200
    assert jwks_hits() == before + 1
    # The withdrawn key is no longer trusted once the new set has replaced it.
    response = await call(middleware, token_for(fresh_idp.url, old))
    assert response.status_code == 401
    assert len(recorder.calls) == 6
    await middleware.aclose()


async def test_random_kid_flood_refetches_at_most_once_per_cooldown(
    fresh_idp: LoopbackServer, signing_keys: dict[str, SigningKey]
) -> None:
    server = as_of(fresh_idp)
    clock = Clock()
    config = make_config(fresh_idp.url)
    middleware = BearerAuthMiddleware(
        Recorder(), config=config, validator=JwtValidator(config, monotonic=clock)
    )
    assert (
        await call(middleware, token_for(fresh_idp.url, signing_keys["RS256"]))
    ).status_code == 200
    clock.now += 31
    for i in range(50):
        forged = SigningKey.generate("EdDSA", kid=f"random-{i}")
        response = await call(middleware, token_for(fresh_idp.url, forged))
        assert response.status_code == 401
        assert 'error="invalid_token"' in response.headers["www-authenticate"]
    jwks_hits = sum(r.path.endswith("/jwks") for r in server.requests)
    assert jwks_hits == 2  # the first load and one refetch for the whole flood
    await middleware.aclose()


async def test_stale_keys_serve_through_an_outage_within_grace(
    signing_keys: dict[str, SigningKey],
) -> None:
    key = signing_keys["RS256"]
    doc = msgspec.json.encode({"keys": [key.public_jwk()]})
    state = {"up": True}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        status = 200 if state["up"] else 503
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"cache-control", b"max-age=600")],
            }
        )
        await send({"type": "http.response.body", "body": doc if state["up"] else b""})

    issuer = "http://127.0.0.1:1"
    with LoopbackServer(lambda url: app) as jwks:
        clock = Clock()
        config = make_config(
            issuer, jwks_uri=jwks.url + "/jwks", jwks=JwksSettings(stale_grace=100.0)
        )
        middleware = BearerAuthMiddleware(
            Recorder(), config=config, validator=JwtValidator(config, monotonic=clock)
        )
        assert (await call(middleware, token_for(issuer, key))).status_code == 200
        state["up"] = False
        clock.now += 650  # TTL (600 s) over, grace (100 s) not
        assert (await call(middleware, token_for(issuer, key))).status_code == 200
        clock.now += 200  # grace over too: fail closed
        assert (await call(middleware, token_for(issuer, key))).status_code == 503
        await middleware.aclose()


async def test_jwks_url_must_be_https_outside_loopback_development() -> None:
    from mcpcore.auth.errors import ConfigurationError
    from mcpcore.auth.urls import NetworkPolicy

    with pytest.raises(ConfigurationError):
        make_config(
            "https://idp.example",
            jwks_uri="http://idp.example/jwks",
            network=NetworkPolicy(allow_loopback=False),
            resource="https://mcp.example/mcp",
        )
    with pytest.raises(ConfigurationError):
        make_config("http://127.0.0.1:1", network=NetworkPolicy(allow_loopback=False))


async def test_verified_token_memo_rechecks_time_and_dies_with_the_key_set(
    fresh_idp: LoopbackServer,
) -> None:
    import time

    from mcpcore.auth.errors import InvalidToken

    server = as_of(fresh_idp)
    wall, mono = Clock(), Clock()
    wall.now = time.time()
    config = make_config(fresh_idp.url, verified_token_cache_ttl=60.0)
    validator = JwtValidator(config, clock=wall, monotonic=mono)
    token = server.mint(sub="alice", aud=RESOURCE, scope="mcp", ttl=100)
    first = await validator.validate(token)
    assert await validator.validate(token) is first  # memo hit: no second signature check
    wall.now += 200
    with pytest.raises(InvalidToken, match="expired"):
        await validator.validate(token)  # times are checked on every hit
    wall.now -= 200
    token = server.mint(sub="alice", aud=RESOURCE, scope="mcp", ttl=100)
    await validator.validate(token)
    new = server.rotate(SigningKey.generate("EdDSA", kid="rotated-2"), keep_old=False)
    mono.now += 31
    await validator.validate(token_for(fresh_idp.url, new))  # refetch: new key set
    with pytest.raises(InvalidToken):
        await validator.validate(token)  # its key was withdrawn; the memo does not save it
    await validator.aclose()
