"""DPoP across a fleet: two resource-server instances share one Redis for the proof
``jti`` replay cache and one nonce secret, so a proof accepted by one instance is
refused by the other, and a nonce issued by one is accepted by the other."""

from __future__ import annotations

import httpx
import pytest

from mcpcore.auth import (
    BearerAuthMiddleware,
    DPoPKey,
    DPoPSettings,
    IssuerConfig,
    NetworkPolicy,
    ResourceServerConfig,
    build_validator,
)
from mcpcore.stores import RedisStore
from tests.auth import as_doubles as asd
from tests.auth.support import Recorder
from tests.integration.conftest import RedisServer

pytestmark = pytest.mark.integration
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def instance(server: asd.AS, store: RedisStore, *, nonces: bool) -> BearerAuthMiddleware:
    config = ResourceServerConfig(
        resource=asd.RESOURCE,
        authorization_servers=(IssuerConfig(asd.ISSUER, jwks_uri=asd.ISSUER + "/jwks"),),
        network=NetworkPolicy(allow_loopback=True),
        dpop=DPoPSettings(nonce_secret="ab" * 16 if nonces else None),
    )
    return BearerAuthMiddleware(Recorder(), config=config, replay_store=store,
                                validator=build_validator(config, client=server.http))


async def post(app: BearerAuthMiddleware, token: str, proof: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app),
                                 base_url="http://127.0.0.1:8000") as client:
        return await client.post("/mcp", content=PING, headers={
            "authorization": f"DPoP {token}", "dpop": proof,
            "content-type": "application/json"})


async def test_a_proof_replayed_to_another_instance_is_refused(redis_server: RedisServer) -> None:
    server, key = asd.AS(), DPoPKey.generate()
    token = server.server.mint(sub="alice", aud=asd.RESOURCE, cnf={"jkt": key.thumbprint})
    stores = [RedisStore.from_url(redis_server.url, prefix="dpop-test:") for _ in range(2)]
    try:
        a, b = (instance(server, store, nonces=False) for store in stores)
        proof = key.proof("POST", asd.RESOURCE, access_token=token)
        assert (await post(a, token, proof)).status_code == 200
        replay = await post(b, token, proof)
        assert replay.status_code == 401 and replay.json()["error"] == "invalid_dpop_proof"
        fresh = key.proof("POST", asd.RESOURCE, access_token=token)
        assert (await post(b, token, fresh)).status_code == 200
    finally:
        for store in stores:
            await store.close()


async def test_a_nonce_from_one_instance_works_at_another(redis_server: RedisServer) -> None:
    server, key = asd.AS(), DPoPKey.generate()
    token = server.server.mint(sub="alice", aud=asd.RESOURCE, cnf={"jkt": key.thumbprint})
    stores = [RedisStore.from_url(redis_server.url, prefix="dpop-nonce:") for _ in range(2)]
    try:
        a, b = (instance(server, store, nonces=True) for store in stores)
        challenge = await post(a, token, key.proof("POST", asd.RESOURCE, access_token=token))
        assert challenge.status_code == 401 and challenge.json()["error"] == "use_dpop_nonce"
        nonce = challenge.headers["dpop-nonce"]
        retry = key.proof("POST", asd.RESOURCE, access_token=token, nonce=nonce)
        assert (await post(b, token, retry)).status_code == 200
    finally:
        for store in stores:
            await store.close()
