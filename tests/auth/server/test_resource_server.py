"""The middleware with good tokens: PRM, the Principal, per-request validation, scopes,
body replay, and what it does with non-HTTP scopes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from mcpcore.auth.config import IssuerConfig, ResourceServerConfig
from mcpcore.auth.issuer.authorization_server import SigningKey
from mcpcore.auth.server.resource_server import BearerAuthMiddleware, calls_in
from mcpcore.auth.server.tokens import JwtValidator
from mcpcore.auth.urls import NetworkPolicy
from tests.auth.support import RESOURCE, LoopbackServer, Recorder, as_of, make_config

CALL_DELETE = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    b'"params":{"name":"delete_file","arguments":{"path":"/tmp/x"}}}'
)


@pytest.fixture
async def app(idp: LoopbackServer) -> AsyncIterator[tuple[BearerAuthMiddleware, Recorder]]:
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=make_config(idp.url))
    yield middleware, recorder
    await middleware.aclose()


def client(middleware: BearerAuthMiddleware) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=middleware), base_url="http://127.0.0.1:8765"
    )


def mint(idp: LoopbackServer, **claims: Any) -> str:
    claims.setdefault("aud", RESOURCE)
    claims.setdefault("scope", "mcp")
    return as_of(idp).mint(sub=claims.pop("sub", "alice"), **claims)


async def test_prm_is_served_without_auth_at_both_well_known_urls(
    app: tuple[BearerAuthMiddleware, Recorder], idp: LoopbackServer
) -> None:
    middleware, recorder = app
    async with client(middleware) as c:
        suffixed = await c.get("/.well-known/oauth-protected-resource/mcp")
        root = await c.get("/.well-known/oauth-protected-resource")
        preflight = await c.options("/.well-known/oauth-protected-resource/mcp")
    assert suffixed.status_code == 200
    assert suffixed.headers["content-type"] == "application/json"
    assert suffixed.headers["access-control-allow-origin"] == "*"
    assert suffixed.json() == {
        "resource": RESOURCE,
        "authorization_servers": [idp.url],
        "scopes_supported": ["files:read", "files:write", "mcp"],
        "bearer_methods_supported": ["header"],
        "resource_signing_alg_values_supported": ["RS256", "PS256", "ES256", "EdDSA"],
    }
    assert root.json()["resource"] == "http://127.0.0.1:8765"
    assert preflight.status_code == 204
    assert recorder.calls == []


async def test_principal_reaches_the_app_with_the_body_replayed(
    app: tuple[BearerAuthMiddleware, Recorder], idp: LoopbackServer
) -> None:
    middleware, recorder = app
    token = mint(idp, scope="mcp files:write", client_id="cli", tid="acme", act={"sub": "agent-7"})
    async with client(middleware) as c:
        response = await c.post(
            "/mcp", content=CALL_DELETE, headers={"authorization": f"Bearer {token}"}
        )
    assert response.status_code == 200
    [call] = recorder.calls
    assert call["body"] == CALL_DELETE
    principal = call["principal"]
    assert (principal.subject, principal.issuer, principal.tenant, principal.client_id) == (
        "alice",
        idp.url,
        "acme",
        "cli",
    )
    assert principal.actors == ("agent-7",) and principal.auth_method == "jwt"
    assert principal.token_id and principal.scopes == {"mcp", "files:write"}


async def test_scope_hierarchy_broader_scope_implies_narrower(
    app: tuple[BearerAuthMiddleware, Recorder], idp: LoopbackServer
) -> None:
    middleware, recorder = app
    token = mint(idp, scope="mcp files:write")
    body = b'{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}'
    async with client(middleware) as c:
        response = await c.post("/mcp", content=body, headers={"authorization": f"Bearer {token}"})
    assert response.status_code == 200 and len(recorder.calls) == 1


async def test_every_request_is_validated_on_one_connection(
    app: tuple[BearerAuthMiddleware, Recorder], idp: LoopbackServer
) -> None:
    middleware, recorder = app
    good, expired = mint(idp), mint(idp, ttl=-120)
    async with client(middleware) as c:
        statuses = [
            (
                await c.post("/mcp", content=b"{}", headers={"authorization": f"Bearer {t}"})
            ).status_code
            for t in (good, expired, good)
        ]
        missing = await c.post("/mcp", content=b"{}")
    assert statuses == [200, 401, 200] and missing.status_code == 401
    assert len(recorder.calls) == 2


async def test_get_and_delete_need_the_base_scopes_only(
    app: tuple[BearerAuthMiddleware, Recorder], idp: LoopbackServer
) -> None:
    middleware, recorder = app
    async with client(middleware) as c:
        ok = await c.get("/mcp", headers={"authorization": f"Bearer {mint(idp)}"})
        low = await c.delete("/mcp", headers={"authorization": f"Bearer {mint(idp, scope='x')}"})
    assert ok.status_code == 200 and low.status_code == 403
    assert len(recorder.calls) == 1


async def test_undecodable_body_passes_to_the_transport(
    app: tuple[BearerAuthMiddleware, Recorder], idp: LoopbackServer
) -> None:
    middleware, recorder = app
    async with client(middleware) as c:
        response = await c.post(
            "/mcp", content=b"{not json", headers={"authorization": f"Bearer {mint(idp)}"}
        )
    assert response.status_code == 200 and recorder.calls[0]["body"] == b"{not json"


@pytest.mark.parametrize(
    "body, calls",
    [
        (CALL_DELETE, [("tools/call", "delete_file")]),
        (b'{"method":"prompts/get","params":{"name":"p"}}', [("prompts/get", "p")]),
        (b'{"method":"resources/read","params":{"name":"ignored"}}', [("resources/read", None)]),
        (b'{"method":"tools/call","params":["delete_file"]}', [("tools/call", None)]),
        (b'{"method":"tools/call","params":{"name":7}}', [("tools/call", None)]),
        (
            b'[{"method":"ping"},{"method":"tools/call","params":{"name":"a"}}]',
            [("ping", None), ("tools/call", "a")],
        ),
        (b'{"method":5}', []),
        (b'"just a string"', []),
        (b"[" * 5000, []),
        (b"", []),
    ],
)
def test_calls_in_decodes_only_method_and_name(body: bytes, calls: list[Any]) -> None:
    assert calls_in(body) == calls


async def test_websocket_is_refused_and_lifespan_passes_through(
    app: tuple[BearerAuthMiddleware, Recorder],
) -> None:
    middleware, _ = app
    sent: list[dict[str, Any]] = []

    async def capture(message: Any) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    await middleware({"type": "websocket", "path": "/mcp", "headers": []}, receive, capture)
    assert sent == [{"type": "websocket.close", "code": 1008}]
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    await BearerAuthMiddleware(inner, config=middleware.config)(
        {"type": "lifespan"}, receive, capture
    )
    assert seen == ["lifespan"]


async def test_a_crashing_validator_fails_closed(idp: LoopbackServer) -> None:
    class Broken:
        async def validate(self, token: str) -> Any:
            raise RuntimeError(f"boom {token}")

    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=make_config(idp.url), validator=Broken())
    async with client(middleware) as c:
        response = await c.post("/mcp", content=b"{}", headers={"authorization": "Bearer abc"})
    assert response.status_code == 503 and recorder.calls == []


async def test_over_real_http_with_uvicorn(
    idp: LoopbackServer, signing_keys: dict[str, SigningKey]
) -> None:
    recorder = Recorder()
    with LoopbackServer(
        lambda url: BearerAuthMiddleware(recorder, config=make_config(idp.url)), lifespan="on"
    ) as server:
        async with httpx.AsyncClient(base_url=server.url) as c:
            denied = await c.post("/mcp", content=b"{}")
            token = signing_keys["EdDSA"].sign(
                {
                    "iss": idp.url,
                    "sub": "bob",
                    "aud": RESOURCE,
                    "scope": "mcp",
                    "iat": int(time.time()),
                    "exp": int(time.time()) + 60,
                }
            )
            ok = await c.post("/mcp", content=b"{}", headers={"authorization": f"Bearer {token}"})
            prm = await c.get("/.well-known/oauth-protected-resource/mcp")
    assert denied.status_code == 401
    assert denied.headers["www-authenticate"] == (
        'Bearer resource_metadata="http://127.0.0.1:8765/.well-known/oauth-protected-resource'
        '/mcp", scope="mcp"'
    )
    assert ok.status_code == 200 and prm.status_code == 200
    assert [c["principal"].subject for c in recorder.calls] == ["bob"]


def test_config_refuses_unsafe_settings() -> None:
    from mcpcore.auth.errors import ConfigurationError

    issuer = (IssuerConfig("https://idp.example", jwks_uri="https://idp.example/jwks"),)
    good = {"resource": "https://mcp.example/mcp", "authorization_servers": issuer}
    for bad in (
        {"algorithms": ("HS256",)},
        {"algorithms": ("none",)},
        {"algorithms": ()},
        {"leeway": 600},
        {"resource": "https://MCP.example/mcp/"},
        {"resource": "https://mcp.example/mcp#frag"},
        {"resource": "http://mcp.example/mcp"},
        {"authorization_servers": ()},
        {"scopes_supported": ("offline_access",)},
        {"authorization_servers": (IssuerConfig("https://idp.example"),)},
        {
            "authorization_servers": (
                IssuerConfig("https://i", jwks_uri="https://169.254.169.254/k"),
            )
        },
        {"authorization_servers": (IssuerConfig("https://i", jwks_uri="https://u:p@i/k"),)},
        {"authorization_servers": (IssuerConfig("https://i", jwks_uri="file:///etc/passwd"),)},
    ):
        with pytest.raises(ConfigurationError):
            ResourceServerConfig(**{**good, **bad})  # type: ignore[arg-type]


def test_config_loads_from_toml_and_env(tmp_path: Any) -> None:
    from mcpcore.auth.errors import ConfigurationError

    path = tmp_path / "auth.toml"
    path.write_text(
        'resource = "https://mcp.example.com/mcp"\n'
        'required_scopes = ["mcp"]\n'
        'algorithms = ["ES256"]\n'
        "[[authorization_servers]]\n"
        'issuer = "https://idp.example.com/tenant1"\n'
        'jwks_uri = "https://idp.example.com/tenant1/jwks"\n'
        "[scope_map]\n"
        '"tools/call:delete_file" = ["files:write"]\n'
        "[jwks]\nrefetch_cooldown = 45\n"
    )
    config = ResourceServerConfig.from_toml(path)
    assert config.issuers == ("https://idp.example.com/tenant1",)
    assert config.scope_map["tools/call:delete_file"] == {"files:write"}
    assert config.jwks.refetch_cooldown == 45 and config.algorithms == ("ES256",)
    env = {
        "MCPCORE_AUTH_CONFIG": str(path),
        "MCPCORE_AUTH_RESOURCE": "http://127.0.0.1:9000/mcp",
        "MCPCORE_AUTH_ALLOW_LOOPBACK": "1",
        "MCPCORE_AUTH_ISSUER": "http://127.0.0.1:9001",
        "MCPCORE_AUTH_JWKS_URI": "http://127.0.0.1:9001/jwks",
    }
    from_env = ResourceServerConfig.from_env(env)
    assert from_env.resource == "http://127.0.0.1:9000/mcp"
    assert from_env.issuers == ("http://127.0.0.1:9001",) and from_env.network.allow_loopback
    assert from_env.required_scopes == {"mcp"}
    path.write_text(path.read_text() + "[jwks.extra]\n")
    with pytest.raises(ConfigurationError, match="unknown setting"):
        ResourceServerConfig.from_toml(path)
    with pytest.raises(ConfigurationError, match="unknown setting"):
        ResourceServerConfig.from_mapping({**{"resource": "https://a/b"}, "isuers": []})
    assert NetworkPolicy() == NetworkPolicy(allow_loopback=False)


async def test_an_authorization_value_seen_before_is_still_validated_every_time(
    idp: LoopbackServer,
) -> None:
    """The middleware remembers what a value that passed parses to, never that it is
    valid: the validator runs on every request, so the token dies at its ``exp``."""
    wall = [time.time()]
    config = make_config(idp.url)
    validator = JwtValidator(config, clock=lambda: wall[0])
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=config, validator=validator)
    token = mint(idp, ttl=100)
    headers = {"authorization": f"Bearer {token}"}
    async with client(middleware) as c:
        first = await c.post("/mcp", content=b"{}", headers=headers)
        assert validator.cached(token) is recorder.calls[0]["principal"]
        wall[0] += 200  # past exp and the leeway
        assert validator.cached(token) is None
        late = await c.post("/mcp", content=b"{}", headers=headers)
    assert first.status_code == 200 and late.status_code == 401
    assert 'error="invalid_token"' in late.headers["www-authenticate"]
    assert len(recorder.calls) == 1
    await middleware.aclose()


async def test_a_value_ending_like_an_admitted_one_is_parsed_afresh(
    app: tuple[BearerAuthMiddleware, Recorder], idp: LoopbackServer
) -> None:
    middleware, recorder = app
    token = mint(idp)
    async with client(middleware) as c:
        ok = await c.post("/mcp", content=b"{}", headers={"authorization": f"Bearer {token}"})
        statuses = [
            (await c.post("/mcp", content=b"{}", headers={"authorization": value})).status_code
            for value in (f"Basic {token}", f"DPoP {token}", f"Bearer !{token}", token)
        ]
    assert ok.status_code == 200 and statuses == [400, 400, 400, 400]
    assert len(recorder.calls) == 1


async def test_what_the_middleware_remembers_is_bounded_and_off_with_the_cache(
    idp: LoopbackServer,
) -> None:
    for ttl, size, kept in ((60.0, 2, 2), (0.0, 2, 0)):
        middleware = BearerAuthMiddleware(Recorder(), config=make_config(
            idp.url, verified_token_cache_ttl=ttl, verified_token_cache_size=size))
        async with client(middleware) as c:
            for subject in ("a", "b", "c"):
                token = mint(idp, sub=subject)
                response = await c.post("/mcp", content=b"{}",
                                        headers={"authorization": f"Bearer {token}"})
                assert response.status_code == 200
        assert len(middleware._admitted) == kept
        await middleware.aclose()
