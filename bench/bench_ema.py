"""What an ID-JAG grant costs the MCP authorization server, next to a client-credentials
grant, as ratios measured in one run.

    python bench/bench_ema.py [--n 3000]

1. ``verify_id_jag`` alone, the IdP's key already cached (ES256 and RS256 IdPs): µs/op;
2. ``IdJagValidator.validate``: the same plus ``jti`` single use in a ``MemoryStore``;
3. one grant through ``LocalAuthorizationServer``'s token endpoint, in-process (ASGI, no
   sockets): the JWT-bearer grant with an ID-JAG (client authentication, every check,
   ``jti``, an ES256 access token) against a client-credentials grant of the same client
   on the same server: µs/grant and ``ema/client_credentials``.

Measurements alternate the two grants in rounds and keep the best round of each, so a
busy machine slows both alike. The IdP's keys are fetched once from the local IdP over
loopback HTTP (uvicorn, free port), as in production; every later grant uses the cache.
Each grant presents a fresh ID-JAG (they are single use), minted before timing starts.
Both grants pay the same HTTP handling, client authentication and token signing; the
difference is the ID-JAG's checks: a signature verification and the replay store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_auth import interleaved, serve_in_thread, time_async, time_sync

from mcpcore.auth.config import JwksSettings
from mcpcore.auth.issuer.authorization_server import (
    LocalAuthorizationServer,
    RegisteredClient,
    SigningKey,
)
from mcpcore.auth.issuer.ema import EmaConfig, IdJagGrantType, IdJagValidator
from mcpcore.auth.issuer.idjag import EmaClient, TrustedIdp, verify_id_jag
from mcpcore.auth.issuer.idp import LocalIdentityProvider
from mcpcore.auth.terms import JWT_BEARER_GRANT
from mcpcore.auth.urls import NetworkPolicy
from mcpcore.stores import MemoryStore

AS = "http://127.0.0.1:9000"
RESOURCE = "http://127.0.0.1:8000/mcp"
CLIENT, SECRET = "chat-app", "chat-app-secret"


def config(idp: LocalIdentityProvider) -> EmaConfig:
    return EmaConfig(
        issuer=AS,
        trusted_idps=(TrustedIdp(idp.issuer, jwks_uri=idp.jwks_uri),),
        resources={RESOURCE: frozenset({"files:read", "files:write"})},
        clients=(EmaClient(CLIENT),),
        network=NetworkPolicy(allow_loopback=True),
        jwks=JwksSettings(timeout=2.0),
    )


def grants(idp: LocalIdentityProvider, count: int) -> Iterator[str]:
    claims = {"sub": "U019488227", "aud": AS, "client_id": CLIENT, "resource": RESOURCE,
              "scope": "files:read"}
    return iter([idp.mint_id_jag(**claims) for _ in range(count)])


async def measure_idp(alg: str, n: int, as_key: SigningKey) -> dict[str, float]:
    results: dict[str, float] = {}
    server, thread, idp = serve_in_thread(
        lambda url: LocalIdentityProvider(url, keys=[SigningKey.generate(alg)]))
    validator = IdJagValidator(config(idp), MemoryStore())
    try:
        supply = grants(idp, 4 * n + 1000)
        await validator.validate(next(supply), client_id=CLIENT)  # loads the keys, once
        keys, policy, sample = validator.current_keys(), validator.policy, next(supply)
        results[f"verify_id_jag_{alg}_us"] = time_sync(
            lambda: verify_id_jag(sample, keys, now=time.time(), policy=policy,
                                  client_id=CLIENT), n)
        results[f"validate_{alg}_us"] = await time_async(
            lambda: validator.validate(next(supply), client_id=CLIENT), n)
        if alg != "ES256":
            return results
        server = LocalAuthorizationServer(
            AS, keys=[as_key], resources=[RESOURCE], id_jag=IdJagGrantType(validator),
            clients=[RegisteredClient(CLIENT, secret=SECRET,
                            grant_types=(JWT_BEARER_GRANT, "client_credentials"))])
        transport = httpx.ASGITransport(app=server)
        async with httpx.AsyncClient(transport=transport, base_url=AS,
                                     auth=httpx.BasicAuth(CLIENT, SECRET)) as http:

            async def post(form: dict[str, str]) -> None:
                response = await http.post("/token", data=form)
                if response.status_code != 200:
                    raise AssertionError(response.text)
                server.requests.clear()  # the server records requests for tests

            async def ema_grant() -> None:
                await post({"grant_type": JWT_BEARER_GRANT, "assertion": next(supply),
                            "resource": RESOURCE})

            async def client_credentials_grant() -> None:
                await post({"grant_type": "client_credentials", "resource": RESOURCE,
                            "scope": "files:read"})

            cc_us, ema_us = await interleaved(client_credentials_grant, ema_grant, n)
        results["grant_client_credentials_us"] = cc_us
        results["grant_ema_us"] = ema_us
        results["grant_ema_over_client_credentials"] = ema_us / cc_us
        return results
    finally:
        await validator.aclose()
        server.should_exit = True
        thread.join(5)


async def measure(n: int) -> dict[str, float]:
    as_key = SigningKey.generate("ES256", kid="as-1")
    return {**await measure_idp("RS256", n, as_key), **await measure_idp("ES256", n, as_key)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3000)
    args = parser.parse_args()
    results = asyncio.run(measure(args.n))
    width = max(len(k) for k in results)
    for name, value in results.items():
        unit = "" if name.endswith("client_credentials") else " µs"
        print(f"{name:<{width}}  {value:8.2f}{unit}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
