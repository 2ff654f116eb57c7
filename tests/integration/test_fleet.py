"""A fleet: three instances of examples/everything behind a real nginx round-robin.

No sticky sessions and no shared store: MRTR rounds complete on whichever instance they
reach because the state travels sealed in the message and every instance holds the same
key ring. nginx adds ``X-Upstream`` so the test can see which instance answered.

nginx runs the block of docs/deploying.md as written ("A fleet": TLS, the forwarded
``Host``), with this run's ports: ``fleet(tls=True)`` makes the certificate with the
page's own ``openssl`` recipe and checks the configuration with its ``nginx -t``. The
client speaks HTTPS to it as ``mcp.example.com`` (SNI, certificate check, ``Host``), and
the instances answer only for that name (``MCPCORE_ALLOWED_HOSTS``), as the page says.
"""

from __future__ import annotations

import asyncio
import ssl
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
#: The public name of docs/deploying.md: sent as SNI and Host, checked in the certificate.
PUBLIC_NAME = "mcp.example.com"
ANSWERS = {"user_name": {"action": "accept", "content": {"name": "Ada"}},
           "favorite_color": {"action": "accept", "content": {"color": "teal"}}}

async def call(client: httpx.AsyncClient, url: str, request_id: int,
               extra: dict[str, Any]) -> tuple[dict[str, Any], str]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": TOOL, "arguments": {}, "_meta": META, **extra}}
    headers = {"Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": TOOL, "Host": PUBLIC_NAME}
    for attempt in range(5):
        response = await client.post(url, json=body, headers=headers,
                                     extensions={"sni_hostname": PUBLIC_NAME})
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
    async def scenario(url: str, procs: list[subprocess.Popen[bytes]],
                       certificate: Path) -> None:
        trust = ssl.create_default_context(cafile=str(certificate))
        async with httpx.AsyncClient(timeout=10, verify=trust) as client:
            # The documented Host check: the instances refuse any other name.
            direct = await client.post(f"http://127.0.0.1:{ports[1]}/mcp", json={})
            assert direct.status_code == 403, direct.text
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

    with fleet(tmp_path, tls=True, env={"MCPCORE_ALLOWED_HOSTS": PUBLIC_NAME}) as running:
        assert running.url.startswith("https://") and running.certificate is not None
        ports = running.ports
        asyncio.run(scenario(running.url, running.procs, running.certificate))
