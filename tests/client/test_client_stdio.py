"""Our client driving a real ``python -m examples.everything --stdio`` subprocess."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from client_doubles import Resolvers

from mcpcore import types
from mcpcore.client import Client, RemoteProtocolError, StdioTransport, TransportError
from mcpcore.client.stdio import STDERR_TAIL_CHARS, STDERR_TAIL_LINES, YIELD_EVERY
from tests.support.processes import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "examples.everything", "--stdio"]


def stdio_client(state_keys: str, **options: Any) -> Client:
    env = {**os.environ, "MCPCORE_STATE_KEYS": state_keys}
    return Client.stdio(COMMAND, env=env, cwd=str(ROOT), stderr=subprocess.DEVNULL,
                        timeout=30, **options)


async def test_discover_list_call_and_clean_shutdown(state_keys: str) -> None:
    client = stdio_client(state_keys)
    async with client:
        info = await client.discover()
        names = [tool.name async for tool in client.iter_tools()]
        # No header layer on stdio: calling an unlisted tool needs no tools/list first.
        text = await client.call_tool("test_simple_text")
        custom = await client.call_tool("test_custom_header", {"region": "Zürich"})
    assert info.supported_versions[0] == "2026-07-28"
    assert "test_input_required_result_multi_round" in names
    assert text.content[0].text == "This is a simple text response for testing."  # type: ignore[union-attr]
    assert custom.content[0].text == "region=Zürich query="  # type: ignore[union-attr]
    transport = client.transport
    assert isinstance(transport, StdioTransport)
    assert transport.returncode == 0  # stdin closed, the server ended by itself


async def test_progress_and_concurrent_requests_are_multiplexed(state_keys: str) -> None:
    progress: dict[str, list[Any]] = {"a": [], "b": []}
    async with stdio_client(state_keys) as client:
        calls = [
            client.call_tool("test_tool_with_progress", progress_token="a",
                             on_notification=lambda n: progress["a"].append(n)),
            client.call_tool("test_tool_with_progress", progress_token="b",
                             on_notification=lambda n: progress["b"].append(n)),
            *(client.call_tool("test_simple_text") for _ in range(5)),
        ]
        results = await asyncio.gather(*calls)
    assert len(results) == 7
    for token, notes in progress.items():
        assert [n.params["progressToken"] for n in notes] == [token] * 3
        assert [n.params["progress"] for n in notes] == [0, 50, 100]


async def test_log_messages_reach_the_only_request_in_flight(state_keys: str) -> None:
    seen: list[types.Notification] = []
    async with stdio_client(state_keys) as client:
        await client.call_tool("test_tool_with_logging", log_level="info",
                               on_notification=seen.append)
    assert [n.method for n in seen].count("notifications/message") == 3


async def test_mrtr_end_to_end_over_stdio(state_keys: str, resolvers: Resolvers) -> None:
    async with stdio_client(state_keys, **resolvers.options()) as client:
        many = await client.call_tool("test_input_required_result_multiple_inputs")
        rounds = await client.call_tool("test_input_required_result_multi_round")
        prompt = await client.get_prompt("test_input_required_result_prompt")
    assert many.content[0].text == "name=Ada greeting=Hello! roots=1"  # type: ignore[union-attr]
    assert rounds.content[0].text == "Ada likes teal"  # type: ignore[union-attr]
    assert prompt.messages[0].content.text == "Prompt built with context: tests"  # type: ignore[union-attr]


async def test_errors_over_stdio_have_no_http_status(state_keys: str) -> None:
    async with stdio_client(state_keys) as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.call_tool("no_such_tool")
    assert info.value.code == -32602 and info.value.http_status is None


async def test_listen_over_stdio(state_keys: str) -> None:
    async with stdio_client(state_keys) as client:
        async with client.listen({"toolsListChanged": True}) as sub:
            ack = await asyncio.wait_for(anext(sub), 10)
            await client.call_tool("test_trigger_tool_change")
            changed = await asyncio.wait_for(anext(sub), 10)
        # After the cancel the server keeps serving this process.
        assert (await client.call_tool("test_simple_text")).content
    assert ack.method == "notifications/subscriptions/acknowledged"
    assert changed.method == "notifications/tools/list_changed"
    assert isinstance(changed.params, dict)
    assert changed.params["_meta"]["io.modelcontextprotocol/subscriptionId"] == \
        sub.subscription_id


async def test_server_that_exits_fails_pending_requests() -> None:
    command = [sys.executable, "-c", "import sys; sys.stdin.readline()"]
    async with Client.stdio(command, timeout=10, mode="2026-07-28") as client:
        with pytest.raises(TransportError, match="exited"):
            await client.discover()
    with pytest.raises(TransportError, match="exited"):  # the probe meets it while opening
        async with Client.stdio(command, timeout=10, era_cache=None):
            pass


async def test_missing_executable_is_a_transport_error() -> None:
    with pytest.raises(TransportError):
        async with Client.stdio(["/nonexistent/mcp-server"]):
            pass


# -- a server that is not speaking stdio, or fails, or floods ---------------------------

HOSTILE = [sys.executable, str(ROOT / "tests" / "client" / "servers" / "hostile_stdio.py")]


async def test_a_banner_on_stdout_fails_fast_and_shows_the_line() -> None:
    """A server started for HTTP prints a banner: that used to be a 75 s wait for an
    EraNegotiationError whose message did not say what the server printed."""
    async def open_it() -> None:
        async with Client.stdio([*HOSTILE, "banner"], era_cache=None):
            pass

    with pytest.raises(TransportError) as info:
        await asyncio.wait_for(open_it(), 30)  # generous: it is one round trip now
    message = str(info.value)
    assert "'Serving MCP at http://127.0.0.1:8000/mcp (press Ctrl-C to stop)'" in message
    assert "stdio mode" in message


async def test_our_own_example_started_for_http_fails_fast(state_keys: str) -> None:
    """The real mistake: ``examples.everything`` without ``--stdio`` serves HTTP and
    prints ``mcpcore: serving ... on http://...`` on stdout."""
    command = [sys.executable, "-m", "examples.everything", "--port", str(free_port())]
    env = {**os.environ, "MCPCORE_STATE_KEYS": state_keys}

    async def open_it() -> None:
        async with Client.stdio(command, env=env, cwd=str(ROOT), era_cache=None):
            pass

    with pytest.raises(TransportError, match=r"before any message: 'mcpcore: serving .* on http"):
        await asyncio.wait_for(open_it(), 40)


async def test_the_stderr_of_a_server_that_fails_is_in_the_error() -> None:
    """Without logging configured, the server's own explanation was invisible."""
    with pytest.raises(TransportError) as info:
        async with Client.stdio([*HOSTILE, "crash", "50"], era_cache=None, timeout=30):
            pass
    message = str(info.value)
    assert "exited (status 3)" in message
    assert "MCPCORE_STATE_KEYS is not set; generate a key with `mcpcore new-key`" in message
    assert "step 49" in message and "step 0\n" not in message  # the last lines, bounded
    assert len(message) < STDERR_TAIL_LINES * (STDERR_TAIL_CHARS + 4) + 200


async def test_a_stray_line_after_the_first_message_is_skipped_and_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Client.stdio([*HOSTILE, "junk-later"], era_cache=None, timeout=30) as client:
        result = await client.call_tool("anything")
    assert result.content[0].text == "done"  # type: ignore[union-attr]
    assert "'a stray debug print'" in caplog.text


async def test_a_line_longer_than_the_limit_ends_the_connection() -> None:
    transport = StdioTransport([*HOSTILE, "long-line", str(300_000)], max_line_bytes=100_000)
    with pytest.raises(TransportError, match="longer than 100000 bytes"):
        async with Client(transport, era_cache=None, timeout=30):
            pass
    # one just under it goes through (and is read across several READ_AHEAD_BYTES reads)
    transport = StdioTransport([*HOSTILE, "long-line", str(600_000)], max_line_bytes=700_000)
    async with Client(transport, era_cache=None, timeout=30) as client:
        assert client.server is not None and len(client.server.instructions) == 600_000  # type: ignore[arg-type]


async def test_a_flood_of_notifications_does_not_starve_other_tasks() -> None:
    """100,000 notifications arrive before the answer: the read loop yields every
    YIELD_EVERY messages, so a ticker task keeps running all along."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async with Client.stdio([*HOSTILE, "flood", "100000"], era_cache=None,
                            timeout=60) as client:
        task = asyncio.ensure_future(ticker())
        seen: list[Any] = []
        await client.call_tool("anything", on_notification=seen.append)
        task.cancel()
    assert len(seen) == 100_000
    assert ticks >= 100_000 // YIELD_EVERY  # at least one turn per YIELD_EVERY messages
