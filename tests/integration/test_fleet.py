"""A fleet: three instances of examples/everything behind a real nginx round-robin.

No sticky sessions and no shared store: MRTR rounds complete on whichever instance they
reach because the state travels sealed in the message and every instance holds the same
key ring. nginx adds ``X-Upstream`` so the test can see which instance answered.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import fleet

pytestmark = pytest.mark.integration

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "fleet-test", "version": "1"}}
TOOL = "test_input_required_result_multi_round"
ANSWERS = {"user_name": {"action": "accept", "content": {"name": "Ada"}},
           "favorite_color": {"action": "accept", "content": {"color": "teal"}}}

async def call(client: httpx.AsyncClient, url: str, request_id: int,
               extra: dict[str, Any]) -> tuple[dict[str, Any], str]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": TOOL, "arguments": {}, "_meta": META, **extra}}
    headers = {"Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": TOOL}
    for attempt in range(5):
        response = await client.post(url, json=body, headers=headers)
        if response.status_code in (502, 503, 504) and attempt < 4:
            await asyncio.sleep(0.05)  # the instance died under us: retry like a client
            continue
        assert response.status_code == 200, response.text
        message = response.json()
        assert "result" in message, message
        return message["result"], response.headers.get("x-upstream", "")
    raise AssertionError("unreachable")


async def run_flow(client: httpx.AsyncClient, url: str, flow: int) -> list[str]:
    """Three rounds: name, colour, result. Returns the upstream of each round."""
    upstreams = []
    result, upstream = await call(client, url, flow * 10 + 1, {})
    upstreams.append(upstream)
    assert result["resultType"] == "input_required"
    assert set(result["inputRequests"]) == {"user_name"}
    result, upstream = await call(client, url, flow * 10 + 2, {
        "inputResponses": {"user_name": ANSWERS["user_name"]},
        "requestState": result["requestState"]})
    upstreams.append(upstream)
    assert result["resultType"] == "input_required"
    assert set(result["inputRequests"]) == {"favorite_color"}
    result, upstream = await call(client, url, flow * 10 + 3, {
        "inputResponses": {"favorite_color": ANSWERS["favorite_color"]},
        "requestState": result["requestState"]})
    upstreams.append(upstream)
    assert result["resultType"] == "complete"
    assert result["content"][0]["text"] == "Ada likes teal"
    return upstreams


def test_mrtr_flows_cross_instances_through_nginx(tmp_path: Path) -> None:
    async def scenario(url: str, procs: list[subprocess.Popen[bytes]]) -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            # Phase 1: 100 flows one request at a time, so round-robin sends every round
            # to a different instance than the round before.
            seen: set[str] = set()
            for flow in range(100):
                upstreams = await run_flow(client, url, flow)
                assert all(upstreams), upstreams
                assert upstreams[0] != upstreams[1] != upstreams[2], upstreams
                seen.update(upstreams)
            assert len(seen) == 3, seen
            # Phase 2: 60 concurrent flows while one instance is killed mid-run.
            started = time.monotonic()

            async def killer() -> None:
                await asyncio.sleep(0.05)
                procs[0].kill()

            results = await asyncio.gather(
                killer(), *(run_flow(client, url, 1000 + f) for f in range(60)))
            assert procs[0].wait(timeout=5) != 0
            survivors = {u for r in results[1:] for u in r if r}
            assert len(results) == 61
            assert time.monotonic() - started < 60
            assert survivors

    with fleet(tmp_path) as running:
        asyncio.run(scenario(running.url, running.procs))
