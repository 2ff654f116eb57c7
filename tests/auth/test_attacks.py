"""The token attack table: each bad request gets its exact status and challenge, and no
handler runs. Keys are served by a real JWKS endpoint over loopback HTTP; tokens are
really signed (RS256, ES256, EdDSA)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from mcpcore.auth.issuer.authorization_server import LocalAuthorizationServer, SigningKey
from mcpcore.auth.server.resource_server import BearerAuthMiddleware
from tests.auth.support import RESOURCE, UPSTREAM, LoopbackServer, Recorder, as_of, make_config

METADATA_URL = "http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp"
PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
ATTACKER = SigningKey.generate("RS256", kid="rs256-1")  # same kid as the real RS256 key


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], claims: dict[str, Any], signature: str = "") -> str:
    return f"{b64(json.dumps(header))}.{b64(json.dumps(claims))}.{signature}"


@dataclass
class Req:
    token: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    query: str = ""
    body: bytes = PING


@dataclass
class Env:
    idp: LocalAuthorizationServer
    keys: dict[str, SigningKey]

    def claims(self, **over: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {
            "iss": self.idp.issuer,
            "sub": "alice",
            "aud": RESOURCE,
            "iat": now,
            "exp": now + 300,
            "scope": "mcp",
        }
        base.update(over)
        return {k: v for k, v in base.items() if v is not DROP}

    def token(self, alg: str = "RS256", headers: dict[str, Any] | None = None, **over: Any) -> str:
        return self.keys[alg].sign(self.claims(**over), headers)


DROP = object()


def hs256_with_public_key(env: Env) -> Req:
    """Key confusion: HMAC keyed with the RSA public key PEM the server might hold."""
    pem = env.keys["RS256"].public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    head = b64(json.dumps({"alg": "HS256", "kid": "rs256-1", "typ": "at+jwt"}))
    body = b64(json.dumps(env.claims()))
    sig = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return Req(f"{head}.{body}.{b64(sig)}")


def hs256_with_modulus(env: Env) -> Req:
    n = env.keys["RS256"].public_jwk()["n"].encode()
    head = b64(json.dumps({"alg": "HS256", "kid": "rs256-1"}))
    body = b64(json.dumps(env.claims()))
    return Req(f"{head}.{body}.{b64(hmac.new(n, f'{head}.{body}'.encode(), 'sha256').digest())}")


def tampered_payload(env: Env) -> Req:
    head, _, sig = env.token().split(".")
    return Req(f"{head}.{b64(json.dumps(env.claims(sub='admin')))}.{sig}")


def oversized(env: Env) -> Req:
    return Req(env.token(padding="x" * 10_000))


@dataclass
class Case:
    id: str
    make: Callable[[Env], Req]
    status: int
    error: str | None
    scope: str = "mcp"


CASES = [
    Case("no-credentials", lambda e: Req(), 401, None),
    Case(
        "alg-none",
        lambda e: Req(unsigned({"alg": "none", "typ": "at+jwt"}, e.claims())),
        401,
        "invalid_token",
    ),
    Case(
        "alg-None-case",
        lambda e: Req(unsigned({"alg": "None"}, e.claims()) + "c2ln"),
        401,
        "invalid_token",
    ),
    Case(
        "alg-none-with-real-kid",
        lambda e: Req(unsigned({"alg": "none", "kid": "rs256-1"}, e.claims())),
        401,
        "invalid_token",
    ),
    Case("hs256-signed-with-public-key-pem", hs256_with_public_key, 401, "invalid_token"),
    Case("hs256-signed-with-jwk-modulus", hs256_with_modulus, 401, "invalid_token"),
    Case(
        "alg-not-allow-listed-RS384",
        lambda e: Req(unsigned({"alg": "RS384", "kid": "rs256-1"}, e.claims(), "AAAA")),
        401,
        "invalid_token",
    ),
    Case(
        "unknown-kid",
        lambda e: Req(SigningKey.generate("ES256", kid="nope").sign(e.claims())),
        401,
        "invalid_token",
    ),
    Case("known-kid-wrong-key", lambda e: Req(ATTACKER.sign(e.claims())), 401, "invalid_token"),
    Case(
        "kid-of-other-alg-key",
        lambda e: Req(e.token("ES256", headers={"kid": "rs256-1"})),
        401,
        "invalid_token",
    ),
    Case("tampered-payload", tampered_payload, 401, "invalid_token"),
    Case(
        "signature-stripped", lambda e: Req(e.token().rsplit(".", 1)[0] + "."), 401, "invalid_token"
    ),
    Case("iss-untrusted", lambda e: Req(e.token(iss="https://evil.example")), 401, "invalid_token"),
    Case(
        "iss-trailing-slash", lambda e: Req(e.token(iss=e.idp.issuer + "/")), 401, "invalid_token"
    ),
    Case(
        "iss-uppercase-scheme-host",
        lambda e: Req(e.token(iss=e.idp.issuer.replace("http://127.0.0.1", "HTTP://127.0.0.1"))),
        401,
        "invalid_token",
    ),
    Case(
        "iss-other-realm-same-key",
        lambda e: Req(e.token(iss=e.idp.issuer + "/realms/other")),
        401,
        "invalid_token",
    ),
    Case("iss-missing", lambda e: Req(e.token(iss=DROP)), 401, "invalid_token"),
    Case(
        "aud-other-resource",
        lambda e: Req(e.token(aud="http://127.0.0.1:9999/mcp")),
        401,
        "invalid_token",
    ),
    Case("aud-upstream-api", lambda e: Req(e.token(aud=UPSTREAM)), 401, "invalid_token"),
    Case(
        "aud-prefix-of-resource",
        lambda e: Req(e.token(aud="http://127.0.0.1:8765/mc")),
        401,
        "invalid_token",
    ),
    Case(
        "aud-resource-as-prefix",
        lambda e: Req(e.token(aud=RESOURCE + "-evil")),
        401,
        "invalid_token",
    ),
    Case("aud-generic-api", lambda e: Req(e.token(aud=["api", "account"])), 401, "invalid_token"),
    Case("aud-missing", lambda e: Req(e.token(aud=DROP)), 401, "invalid_token"),
    # Canonicalising would strip these, so they must never be canonicalised into a match.
    Case("aud-with-userinfo", lambda e: Req(e.token(aud="http://evil@127.0.0.1:8765/mcp")),
         401, "invalid_token"),
    Case("aud-with-password", lambda e: Req(e.token(aud=["http://u:p@127.0.0.1:8765/mcp"])),
         401, "invalid_token"),
    Case("aud-with-fragment", lambda e: Req(e.token(aud="http://127.0.0.1:8765/mcp#x")),
         401, "invalid_token"),
    Case("aud-with-empty-fragment", lambda e: Req(e.token(aud="http://127.0.0.1:8765/mcp#")),
         401, "invalid_token"),
    Case("client-id-not-a-string", lambda e: Req(e.token(client_id=["a", "b"])),
         401, "invalid_token"),
    Case("azp-not-a-string", lambda e: Req(e.token(azp={"client": "x"})), 401, "invalid_token"),
    Case("dpop-bound-token-as-bearer",
         lambda e: Req(e.token(cnf={"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"})),
         401, "invalid_token"),
    Case("expired", lambda e: Req(e.token(exp=int(time.time()) - 120)), 401, "invalid_token"),
    Case(
        "expired-past-leeway",
        lambda e: Req(e.token(exp=int(time.time()) - 31)),
        401,
        "invalid_token",
    ),
    Case("not-yet-valid", lambda e: Req(e.token(nbf=int(time.time()) + 300)), 401, "invalid_token"),
    Case(
        "issued-in-future", lambda e: Req(e.token(iat=int(time.time()) + 300)), 401, "invalid_token"
    ),
    Case("exp-missing", lambda e: Req(e.token(exp=DROP)), 401, "invalid_token"),
    Case("exp-is-string", lambda e: Req(e.token(exp="9999999999")), 401, "invalid_token"),
    Case("sub-missing", lambda e: Req(e.token(sub=DROP)), 401, "invalid_token"),
    Case("sub-empty", lambda e: Req(e.token(sub="")), 401, "invalid_token"),
    Case("act-malformed", lambda e: Req(e.token(act="agent")), 401, "invalid_token"),
    Case(
        "typ-id-jag",
        lambda e: Req(e.token(headers={"typ": "oauth-id-jag+jwt"})),
        401,
        "invalid_token",
    ),
    Case(
        "typ-dpop",
        lambda e: Req(e.token("EdDSA", headers={"typ": "dpop+jwt"})),
        401,
        "invalid_token",
    ),
    Case("crit-header", lambda e: Req(e.token(headers={"crit": ["exp"]})), 401, "invalid_token"),
    Case(
        "jku-to-attacker-keys",
        lambda e: Req(
            SigningKey.generate("RS256", kid="evil").sign(
                e.claims(), {"jku": "http://127.0.0.1:1/jwks"}
            )
        ),
        401,
        "invalid_token",
    ),
    Case(
        "embedded-jwk-header",
        lambda e: Req(ATTACKER.sign(e.claims(), {"jwk": ATTACKER.public_jwk()})),
        401,
        "invalid_token",
    ),
    Case("oversized-token", oversized, 401, "invalid_token"),
    Case(
        "malformed-base64-header",
        lambda e: Req("e@J!." + e.token().split(".", 1)[1]),
        400,
        "invalid_request",
    ),
    Case(
        "header-not-json",
        lambda e: Req(b64("{not json") + "." + e.token().split(".", 1)[1]),
        401,
        "invalid_token",
    ),
    Case(
        "payload-json-array",
        lambda e: Req(unsigned({"alg": "RS256", "kid": "rs256-1"}, [])),  # type: ignore[arg-type]
        401,
        "invalid_token",
    ),
    Case("two-segments", lambda e: Req(".".join(e.token().split(".")[:2])), 401, "invalid_token"),
    Case(
        "jwe-five-segments", lambda e: Req("eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d"), 401, "invalid_token"
    ),
    Case(
        "opaque-garbage-no-introspection",
        lambda e: Req("c29tZS1vcGFxdWUtdG9rZW4"),
        401,
        "invalid_token",
    ),
    Case(
        "token-in-query-string",
        lambda e: Req(None, query=f"access_token={e.token()}"),
        400,
        "invalid_request",
    ),
    Case(
        "token-in-query-and-header",
        lambda e: Req(e.token(), query=f"x=1&access_token={e.token()}"),
        400,
        "invalid_request",
    ),
    Case(
        "two-authorization-headers",
        lambda e: Req(
            None,
            headers=[
                ("authorization", f"Bearer {e.token()}"),
                ("authorization", f"Bearer {e.token('ES256')}"),
            ],
        ),
        400,
        "invalid_request",
    ),
    Case(
        "basic-scheme",
        lambda e: Req(None, headers=[("authorization", "Basic dXNlcjpwYXNz")]),
        400,
        "invalid_request",
    ),
    Case(
        "bearer-empty",
        lambda e: Req(None, headers=[("authorization", "Bearer ")]),
        400,
        "invalid_request",
    ),
    Case(
        "bearer-two-tokens",
        lambda e: Req(None, headers=[("authorization", f"Bearer {e.token()} {e.token()}")]),
        400,
        "invalid_request",
    ),
    Case(
        "insufficient-scope-delete-file",
        lambda e: Req(
            e.token(),
            body=b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
            b'"params":{"name":"delete_file","arguments":{}}}',
        ),
        403,
        "insufficient_scope",
        scope="files:write mcp",
    ),
    Case(
        "insufficient-scope-hidden-in-batch",
        lambda e: Req(
            e.token(),
            body=b'[{"jsonrpc":"2.0","id":1,"method":"ping"},'
            b'{"jsonrpc":"2.0","id":2,"method":"resources/read",'
            b'"params":{"uri":"file:///etc/passwd"}}]',
        ),
        403,
        "insufficient_scope",
        scope="files:read mcp",
    ),
    Case("missing-base-scope", lambda e: Req(e.token(scope="other")), 403, "insufficient_scope"),
    Case(
        "scopes-in-unsigned-scp-ignored",
        lambda e: Req(
            e.token(scope=DROP),
            body=b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"scope":"mcp"}}',
        ),
        403,
        "insufficient_scope",
    ),
]


@pytest.fixture
async def env_app(
    idp: LoopbackServer, signing_keys: dict[str, SigningKey]
) -> AsyncIterator[tuple[Env, BearerAuthMiddleware, Recorder]]:
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=make_config(idp.url))
    yield Env(as_of(idp), signing_keys), middleware, recorder
    await middleware.aclose()


async def send(middleware: BearerAuthMiddleware, req: Req) -> httpx.Response:
    headers = list(req.headers)
    if req.token is not None:
        headers.append(("authorization", f"Bearer {req.token}"))
    headers.append(("content-type", "application/json"))
    transport = httpx.ASGITransport(app=middleware)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
        url = "/mcp" + (f"?{req.query}" if req.query else "")
        return await c.post(url, content=req.body, headers=headers)


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_attack_is_refused_before_any_handler(
    case: Case, env_app: tuple[Env, BearerAuthMiddleware, Recorder]
) -> None:
    env, middleware, recorder = env_app
    response = await send(middleware, case.make(env))
    assert response.status_code == case.status
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{METADATA_URL}"' in challenge
    assert f'scope="{case.scope}"' in challenge
    if case.error is None:
        assert "error=" not in challenge
    else:
        assert f'error="{case.error}"' in challenge
        assert response.json()["error"] == case.error
    assert response.headers["cache-control"] == "no-store"
    assert recorder.calls == []


async def test_control_a_good_token_reaches_the_handler(
    env_app: tuple[Env, BearerAuthMiddleware, Recorder],
) -> None:
    env, middleware, recorder = env_app
    response = await send(middleware, Req(env.token()))
    assert response.status_code == 200
    assert len(recorder.calls) == 1


async def test_body_over_the_limit_is_413_before_reading(
    idp: LoopbackServer, signing_keys: dict[str, SigningKey]
) -> None:
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=make_config(idp.url, max_body_bytes=1024))
    token = Env(as_of(idp), signing_keys).token()
    reads = 0

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"x" * 512, "more_body": True}

    sent: list[dict[str, Any]] = []

    async def capture(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "query_string": b"",
        "headers": [
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-length", b"5000000"),
        ],
    }
    await middleware(scope, receive, capture)
    assert sent[0]["status"] == 413 and reads == 0
    # Without a content-length, reading stops as soon as the limit is passed.
    sent.clear()
    scope["headers"] = scope["headers"][:1]
    await middleware(scope, receive, capture)
    assert sent[0]["status"] == 413 and reads == 3
    assert recorder.calls == []
    await middleware.aclose()
