"""What bearer auth costs per request, as ratios measured in one run.

    python bench/bench_auth.py [--n 5000] [--inner everything|echo]

1. ``verify_jwt`` alone, keys already parsed (RS256, ES256, EdDSA): µs/op;
2. ``JwtValidator.validate`` with cached keys (the middleware's hot path): µs/op;
3. one ``tools/call`` through the inner app in-process, with and without
   ``BearerAuthMiddleware`` in front: µs/op, and the ratio ``with/plain`` (1.10x means
   auth adds a tenth of the plain request's cost);
4. the same with the verified-token cache on, as configured by default
   (``verified_token_cache_ttl=60``) and with the default validator; rows 1-3 turn the
   cache off to price a full check; then the middleware alone, in front of an app that
   does nothing (its own work per request);
5. the same over loopback HTTP through uvicorn, as a client sees it (RS256);
6. DPoP (RFC 9449): making one proof (the client's cost per request), checking one
   (``verify_proof``), and a DPoP-bound request through the middleware against the same
   bearer request (both with the verified-token cache; the DPoP one also checks its
   proof and records its ``jti``): ``dpop/bearer``.

Measurements alternate plain and authenticated runs in rounds and keep the best round of
each, so a busy machine slows both alike; in process they are this process's CPU time.
Each authenticated request carries a new ``Authorization`` value (bytes), as a server
parses one.

Keys are fetched once from a real JWKS endpoint (the local AS under uvicorn on
127.0.0.1, free port); every later request uses the cache, as in production. The inner
app defaults to ``examples.everything`` (a real MCP request through the Streamable HTTP
transport) and falls back to a minimal JSON-RPC echo if that cannot be imported.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import uvicorn

from mcpcore.auth import (
    BearerAuthMiddleware,
    DPoPKey,
    DPoPPolicy,
    DPoPSettings,
    IssuerConfig,
    JwtValidator,
    NetworkPolicy,
    ResourceServerConfig,
    verify_jwt,
)
from mcpcore.auth.dpop import verify_proof
from mcpcore.auth.issuer import LocalAuthorizationServer, SigningKey

RESOURCE = "http://127.0.0.1:8000/mcp"
ALGS = ("RS256", "ES256", "EdDSA")


def serve_in_thread(factory: Callable[[str], Any]) -> tuple[uvicorn.Server, threading.Thread, Any]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = factory(url)
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    return server, thread, app


async def echo_app(scope: Any, receive: Any, send: Any) -> None:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = json.loads(body)
    payload = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def mcp_request() -> tuple[bytes, list[tuple[bytes, bytes]]]:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "test_simple_text",
                "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                },
            },
        }
    ).encode()
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"test_simple_text"),
        (b"content-length", str(len(body)).encode()),
    ]
    return body, headers


async def time_async(fn: Callable[[], Awaitable[Any]], n: int) -> float:
    for _ in range(min(200, n)):  # warm-up
        await fn()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            await fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


async def interleaved(
    plain: Callable[[], Awaitable[Any]],
    with_auth: Callable[[], Awaitable[Any]],
    n: int,
    rounds: int = 10,
    clock: Callable[[], float] = time.process_time,
) -> tuple[float, float]:
    """Alternate the two in rounds and keep each one's best round: on a noisy machine
    both see the same noise, so the ratio stays meaningful. In process, ``clock`` is
    this process's CPU time (what other work on the machine disturbs least)."""
    per_round = max(1, n // rounds)
    for _ in range(min(200, n)):
        await plain()
        await with_auth()
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, fn in enumerate((plain, with_auth)):
            start = clock()
            for _ in range(per_round):
                await fn()
            best[i] = min(best[i], (clock() - start) / per_round)
    return best[0] * 1e6, best[1] * 1e6


async def over_http(
    plain: uvicorn.Server,
    protected: uvicorn.Server,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    tokens: dict[str, str],
    n: int,
) -> dict[str, float]:
    import httpx

    def url(server: uvicorn.Server) -> str:
        port = server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/mcp"

    base = {k.decode(): v.decode() for k, v in headers if k not in (b"host", b"content-length")}
    count = max(50, n // 10)
    async with httpx.AsyncClient() as client:

        async def call_plain() -> None:
            await client.post(url(plain), content=body, headers=base)

        async def call_auth() -> None:
            await client.post(
                url(protected),
                content=body,
                headers={**base, "authorization": f"Bearer {tokens['RS256']}"},
            )

        # Client and servers share this process: wall time, not its CPU time.
        plain_us, auth_us = await interleaved(call_plain, call_auth, count, rounds=5,
                                              clock=time.perf_counter)
    return {
        "http_plain_us": plain_us,
        "http_with_auth_RS256_us": auth_us,
        "http_auth_ratio_RS256": auth_us / plain_us,
    }


def time_sync(fn: Callable[[], Any], n: int) -> float:
    for _ in range(min(200, n)):
        fn()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


async def run(n: int, inner_name: str) -> dict[str, Any]:
    keys = {alg: SigningKey.generate(alg) for alg in ALGS}
    server, thread, authorization_server = serve_in_thread(
        lambda url: LocalAuthorizationServer(url, keys=list(keys.values()), token_ttl=3600)
    )
    try:
        issuer = authorization_server.issuer
        config = ResourceServerConfig(
            resource=RESOURCE,
            authorization_servers=(IssuerConfig(issuer, jwks_uri=issuer + "/jwks"),),
            required_scopes=frozenset({"mcp"}),
            scope_map={"tools/call:delete_file": frozenset({"files:write"})},
            network=NetworkPolicy(allow_loopback=True),
            verified_token_cache_ttl=0,  # price the full signature check per request
        )
        validator = JwtValidator(config)
        tokens = {
            alg: authorization_server.mint(sub="bench", aud=RESOURCE, scope="mcp", key=keys[alg])
            for alg in ALGS
        }
        for token in tokens.values():
            await validator.validate(token)  # the one JWKS fetch
        fetches = sum(c.fetches for c in validator.caches.values())
        cached = validator.current_keys()
        results: dict[str, Any] = {"n": n, "jwks_fetches": fetches}
        now = time.time()
        for alg, token in tokens.items():
            results[f"verify_jwt_{alg}_us"] = time_sync(
                functools.partial(verify_jwt, token, cached, now=now, policy=validator.policy), n
            )
            results[f"validate_{alg}_us"] = await time_async(
                functools.partial(validator.validate, token), n
            )

        inner: Any = echo_app
        if inner_name == "everything":
            try:
                from examples.everything import app as everything_app

                inner = everything_app
            except Exception as exc:  # the example may not be importable in every checkout
                print(f"(examples.everything unavailable: {type(exc).__name__}; using echo)")
                inner_name = "echo"
        results["inner"] = inner_name
        body, headers = mcp_request()
        statuses: list[int] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        def scope(extra: list[tuple[bytes, bytes]]) -> dict[str, Any]:
            return {
                "type": "http",
                "asgi": {"version": "3.0"},
                "http_version": "1.1",
                "method": "POST",
                "scheme": "http",
                "path": "/mcp",
                "raw_path": b"/mcp",
                "query_string": b"",
                "root_path": "",
                "headers": headers + extra,
                "client": ("127.0.0.1", 50000),
                "server": ("127.0.0.1", 8000),
            }

        protected = BearerAuthMiddleware(inner, config=config, validator=validator)

        async def call(app: Any, extra: list[tuple[bytes, bytes]]) -> None:
            await app(scope(extra), receive, send)

        async def call_with(app: Any, token: str) -> None:
            # A new header value per request, as a server parses one (its hash is not
            # cached from the previous request).
            await app(scope([(b"authorization", b"".join((b"Bearer ", token.encode())))]),
                      receive, send)

        for alg in ALGS:
            statuses.clear()
            plain_us, with_us = await interleaved(
                functools.partial(call, inner, []),
                functools.partial(call_with, protected, tokens[alg]), n
            )
            assert set(statuses) == {statuses[0]} and statuses[0] != 401, statuses[:3]
            results[f"request_plain_{alg}_us"] = plain_us
            results[f"request_with_auth_{alg}_us"] = with_us
            results[f"auth_ratio_{alg}"] = with_us / plain_us

        # The verified-token cache (on by default): repeat tokens skip
        # the signature check; times and scopes are still checked per request. The
        # middleware is built as a deployment builds it (its default validator).
        memo_config = dataclasses.replace(config, verified_token_cache_ttl=60)
        memo_validator = JwtValidator(memo_config)
        await memo_validator.validate(tokens["RS256"])
        results["validate_memo_us"] = await time_async(
            functools.partial(memo_validator.validate, tokens["RS256"]), n
        )
        memo_protected = BearerAuthMiddleware(inner, config=memo_config)
        plain_us, with_us = await interleaved(
            functools.partial(call, inner, []),
            functools.partial(call_with, memo_protected, tokens["RS256"]), n
        )
        results["request_plain_memo_us"] = plain_us
        results["request_with_auth_memo_us"] = with_us
        results["auth_ratio_memo"] = with_us / plain_us

        # The middleware's own work: the same, in front of an app that does nothing.
        async def nothing(scope: Any, receive: Any, send: Any) -> None:
            pass

        nothing.checks_call_scopes = True  # type: ignore[attr-defined]
        alone = BearerAuthMiddleware(nothing, config=memo_config)
        plain_us, with_us = await interleaved(
            functools.partial(call, nothing, []),
            functools.partial(call_with, alone, tokens["RS256"]), n
        )
        results["middleware_alone_us"] = with_us - plain_us
        await alone.aclose()

        # DPoP: the client's proof, the server's check, and a bound request vs a bearer one.
        key = DPoPKey.generate("ES256")
        results["dpop_proof_create_us"] = time_sync(
            functools.partial(key.proof, "POST", RESOURCE, access_token=tokens["RS256"]), n)
        sample = key.proof("POST", RESOURCE, access_token=tokens["RS256"])
        results["dpop_verify_proof_us"] = time_sync(functools.partial(
            verify_proof, sample, method="POST", url=RESOURCE, now=time.time(),
            policy=DPoPPolicy(), access_token=tokens["RS256"], expected_jkt=key.thumbprint), n)
        dpop_config = dataclasses.replace(config, dpop=DPoPSettings(), verified_token_cache_ttl=60)
        bound = authorization_server.mint(sub="bench", aud=RESOURCE, scope="mcp",
                                          key=keys["RS256"], cnf={"jkt": key.thumbprint})
        dpop_validator = JwtValidator(dpop_config)
        await dpop_validator.validate(bound)
        dpop_protected = BearerAuthMiddleware(inner, config=dpop_config, validator=dpop_validator)
        proofs = [key.proof("POST", RESOURCE, access_token=bound) for _ in range(n + 250)]

        async def call_dpop() -> None:
            extra = [(b"authorization", f"DPoP {bound}".encode()), (b"dpop", proofs.pop().encode())]
            await dpop_protected(scope(extra), receive, send)

        statuses.clear()
        bearer_us, dpop_us = await interleaved(
            functools.partial(call_with, memo_protected, tokens["RS256"]), call_dpop, n)
        assert set(statuses) == {statuses[0]} and statuses[0] != 401, statuses[:3]
        results["request_bearer_memo_us"] = bearer_us
        results["request_dpop_us"] = dpop_us
        results["dpop_over_bearer"] = dpop_us / bearer_us
        await dpop_validator.aclose()
        await memo_validator.aclose()
        await memo_protected.aclose()

        # The same request as a client sees it: over loopback HTTP through uvicorn.
        http_plain, t1, _ = serve_in_thread(lambda url: inner)
        http_auth, t2, _ = serve_in_thread(lambda url: protected)
        try:
            results.update(await over_http(http_plain, http_auth, body, headers, tokens, n))
        finally:
            for srv, th in ((http_plain, t1), (http_auth, t2)):
                srv.should_exit = True
                th.join(10)
        results["inner_status"] = statuses[0]
        await validator.aclose()
        return results
    finally:
        server.should_exit = True
        thread.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--inner", choices=["everything", "echo"], default="everything")
    parser.add_argument("--json", action="store_true", help="print raw JSON only")
    args = parser.parse_args()
    results = asyncio.run(run(args.n, args.inner))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"inner app: {results['inner']} (status {results['inner_status']}), n={args.n}, "
        f"JWKS fetches: {results['jwks_fetches']}"
    )
    print(
        f"{'alg':6} {'verify_jwt':>11} {'validate':>10} {'plain req':>10} "
        f"{'with auth':>10} {'with/plain':>11}"
    )
    for alg in ALGS:
        print(
            f"{alg:6} {results[f'verify_jwt_{alg}_us']:>9.1f}µs "
            f"{results[f'validate_{alg}_us']:>8.1f}µs "
            f"{results[f'request_plain_{alg}_us']:>8.1f}µs "
            f"{results[f'request_with_auth_{alg}_us']:>8.1f}µs "
            f"{results[f'auth_ratio_{alg}']:>10.2f}x"
        )
    print(
        f"memo   {'':>11} {results['validate_memo_us']:>8.1f}µs "
        f"{results['request_plain_memo_us']:>8.1f}µs "
        f"{results['request_with_auth_memo_us']:>8.1f}µs "
        f"{results['auth_ratio_memo']:>10.2f}x   (RS256, verified-token cache on: the default)"
    )
    print(
        f"the middleware alone (in front of an app that does nothing): "
        f"{results['middleware_alone_us']:.1f}µs"
    )
    print(
        f"DPoP (ES256 proof): make {results['dpop_proof_create_us']:.1f}µs, check "
        f"{results['dpop_verify_proof_us']:.1f}µs; request bearer "
        f"{results['request_bearer_memo_us']:.1f}µs vs DPoP {results['request_dpop_us']:.1f}µs "
        f"= {results['dpop_over_bearer']:.2f}x"
    )
    print(
        f"over loopback HTTP (uvicorn, RS256): plain {results['http_plain_us']:.0f}µs, "
        f"with auth {results['http_with_auth_RS256_us']:.0f}µs, "
        f"= {results['http_auth_ratio_RS256']:.2f}x the plain request"
    )


if __name__ == "__main__":
    main()
