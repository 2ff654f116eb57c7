"""Legacy stdio through a real subprocess (``python -m examples.everything --stdio``).

``initialize`` switches the process into the legacy era; bridged server
requests go to stdout and the client's JSON-RPC responses come back on stdin.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.legacy.conftest import TEST_STATE_KEYS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
USER = {"username": "ada", "email": "ada@example.com"}


class StdioPeer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.seen: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def read(self, timeout: float = 10.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        assert line.endswith(b"\n"), f"stdout ended: {line!r}"
        message: dict[str, Any] = json.loads(line)  # only MCP messages on stdout
        self.seen.append(message)
        return message

    async def read_until(self, accept: Callable[[dict[str, Any]], bool]
                         ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The first message ``accept`` takes, and the ones read before it."""
        before = []
        while not accept(message := await self.read()):
            before.append(message)
        return message, before

    async def call(self, method: str, params: Any, id: Any) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        reply, _ = await self.read_until(lambda m: m.get("id") == id and "method" not in m)
        return reply


@pytest.fixture
async def peer() -> AsyncIterator[StdioPeer]:
    env = {**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS}
    env.pop("MCPCORE_REDIS_URL", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "examples.everything", "--stdio", cwd=REPO, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    peer = StdioPeer(proc)
    try:
        yield peer
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def initialize(peer: StdioPeer, caps: dict[str, Any]) -> dict[str, Any]:
    reply = await peer.call("initialize", {"protocolVersion": "2025-11-25",
                                           "capabilities": caps,
                                           "clientInfo": {"name": "stdio-legacy",
                                                          "version": "1"}}, 1)
    await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    result: dict[str, Any] = reply["result"]
    return result


async def test_legacy_stdio_session_with_a_bridged_elicitation(peer: StdioPeer) -> None:
    init = await initialize(peer, {"elicitation": {}, "sampling": {}})
    assert init["protocolVersion"] == "2025-11-25"
    assert "extensions" not in init["capabilities"]

    listed = await peer.call("tools/list", {}, 2)
    names = [t["name"] for t in listed["result"]["tools"]]
    assert "test_elicitation" in names
    assert not {"resultType", "ttlMs", "cacheScope"} & set(listed["result"])

    await peer.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "test_elicitation",
                                "arguments": {"message": "Who are you?"}}})
    question = await peer.read()
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "Who are you?"
    assert question["params"]["mode"] == "form"
    await peer.send({"jsonrpc": "2.0", "id": question["id"],
                     "result": {"action": "accept", "content": USER}})
    done = await peer.read()
    assert done == {"jsonrpc": "2.0", "id": 3, "result": {"content": [
        {"type": "text", "text": f"User response: action=accept, content={USER}"}]}}

    # A client error answer fails the call with a clear message.
    await peer.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                     "params": {"name": "test_sampling", "arguments": {"prompt": "p"}}})
    question = await peer.read()
    assert question["method"] == "sampling/createMessage"
    await peer.send({"jsonrpc": "2.0", "id": question["id"],
                     "error": {"code": -1, "message": "no model here"}})
    failed = await peer.read()
    assert failed["id"] == 4
    assert failed["error"]["code"] == -32603
    assert "no model here" in failed["error"]["message"]

    assert peer.proc.stdin is not None
    peer.proc.stdin.close()
    assert await asyncio.wait_for(peer.proc.wait(), 10) == 0


async def test_legacy_stdio_methods_and_notifications(peer: StdioPeer) -> None:
    await initialize(peer, {})
    assert (await peer.call("ping", {}, "p"))["result"] == {}
    assert (await peer.call("logging/setLevel", {"level": "info"}, "l"))["result"] == {}
    missing = await peer.call("resources/read", {"uri": "test://nope"}, "r")
    assert missing["error"]["code"] == -32002
    assert missing["error"]["data"] == {"uri": "test://nope"}
    discover = await peer.call("server/discover", {}, "d")
    assert discover["error"]["code"] == -32601
    again = await peer.call("initialize", {"protocolVersion": "2025-11-25",
                                           "capabilities": {}}, "again")
    assert again["error"]["code"] == -32600

    # Session logs follow logging/setLevel on stdout, untagged.
    await peer.send({"jsonrpc": "2.0", "id": "log2", "method": "tools/call",
                     "params": {"name": "test_logging_tool"}})
    result, logs = await peer.read_until(lambda m: m.get("id") == "log2")
    assert [m["method"] for m in logs] == ["notifications/message"]
    assert "_meta" not in logs[0]["params"]
    assert result["result"]["content"][0]["text"] == "Logging tool completed."

    # Subscribed updates arrive on stdout without a subscriptionId.
    assert (await peer.call("resources/subscribe", {"uri": "test://watched-resource"},
                            "s"))["result"] == {}
    await peer.send({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
                     "params": {"name": "test_trigger_resource_update"}})
    update, _ = await peer.read_until(
        lambda m: m.get("method") == "notifications/resources/updated")
    assert update == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                      "params": {"uri": "test://watched-resource"}}

    # A modern request in the same process is still served as modern.
    modern = await peer.call("tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}, "m")
    assert modern["result"]["resultType"] == "complete"
