"""A fleet-wide rate limit: three instances of examples/operated behind a real nginx,
sharing one real Redis. ``lookup`` allows 20 calls a minute per caller (the rule file);
however the calls are spread, the fleet admits exactly 20, and every call past the limit
gets the JSON-RPC error with HTTP 429, ``Retry-After`` and the same hint in ``data``.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import pytest
import redis

from tests.integration.conftest import Fleet, RedisServer, fleet

pytestmark = pytest.mark.integration

LIMIT = 20
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fleet-limit-test", "version": "1"}}
HEADERS = {"Accept": "application/json", "MCP-Protocol-Version": "2026-07-28",
           "Mcp-Method": "tools/call", "Mcp-Name": "lookup"}


async def lookup(client: httpx.AsyncClient, url: str, n: int) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "lookup", "arguments": {"key": "alpha"}, "_meta": META}}
    return await client.post(url, json=body, headers=HEADERS)


def check_refusal(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["code"] == -32600
    assert error["data"]["reason"] == "rate_limited"
    wait = error["data"]["retryAfterSeconds"]
    assert isinstance(wait, int) and 1 <= wait <= 60
    assert response.headers["retry-after"] == str(wait)


def check_success(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["content"][0]["text"] == "1" and not result.get("isError")


def rate_limited_total(client: httpx.Client, running: Fleet) -> float:
    total = 0.0
    for i in range(len(running.ports)):
        text = client.get(running.instance_url(i).replace("/mcp", "/metrics")).text
        match = re.search(r'^mcpcore_rate_limited_total\{tool="lookup"\} (\S+)$', text, re.M)
        total += float(match.group(1)) if match else 0.0
    return total


def test_the_rate_limit_holds_across_the_fleet(tmp_path: Path,
                                               redis_server: RedisServer) -> None:
    async def one_by_one(url: str) -> list[tuple[httpx.Response, str]]:
        async with httpx.AsyncClient(timeout=10) as client:
            out = []
            for n in range(LIMIT + 10):
                response = await lookup(client, url, n)
                out.append((response, response.headers.get("x-upstream", "")))
            return out

    async def all_at_once(url: str) -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=50)
        async with httpx.AsyncClient(timeout=20, limits=limits) as client:
            return list(await asyncio.gather(*(lookup(client, url, 100 + n)
                                               for n in range(45))))

    with fleet(tmp_path, env={"MCPCORE_REDIS_URL": redis_server.url},
               module="operated") as running:
        # Round-robin, one call at a time: the 21st call is the first refused, whichever
        # instance it lands on, and every instance served some of the twenty.
        sequential = asyncio.run(one_by_one(running.url))
        for response, _ in sequential[:LIMIT]:
            check_success(response)
        for response, _ in sequential[LIMIT:]:
            check_refusal(response)
        admitted_by = {upstream for _, upstream in sequential[:LIMIT]}
        refused_by = {upstream for _, upstream in sequential[LIMIT:]}
        assert len(admitted_by) == 3 and len(refused_by) == 3, (admitted_by, refused_by)

        # A fresh window, 45 calls racing through nginx: exactly 20 get through.
        redis.Redis.from_url(redis_server.url).flushdb()
        racing = asyncio.run(all_at_once(running.url))
        ok = [r for r in racing if r.status_code == 200]
        refused = [r for r in racing if r.status_code != 200]
        assert len(ok) == LIMIT and len(refused) == 45 - LIMIT
        for response in ok:
            check_success(response)
        for response in refused:
            check_refusal(response)

        # Each instance counted its own refusals; together, every one of them.
        with httpx.Client(timeout=10) as client:
            assert rate_limited_total(client, running) == 10 + 45 - LIMIT
            for i in range(3):
                base = running.instance_url(i).replace("/mcp", "")
                assert client.get(base + "/readyz").text == "ready\n"
