"""stdio: the in-process framer (``StdioSession.feed_line``) and a real subprocess.

The engine behaviour over stdio is covered by tests/test_server.py (the ``stdio`` peer);
here: framing, cancellation, EOF, and what reaches stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

import pytest

import examples.everything as everything
from mcpcore import Limits, Server
from mcpcore.transports.stdio import StdioSession, serve_stdio
from tests.support.peers import StdioPeer
from tests.support.processes import StdioProcess
from tests.support.schema import SchemaChecker, schema_checker
from tests.support.wire import MODERN, make_meta


def request(id: Any, method: str, params: dict[str, Any] | None = None, **meta: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method,
                       "params": {**(params or {}), "_meta": make_meta(**meta)}}).encode()


class Recorder:
    """A ``StdioSession`` writer that keeps every line and checks it."""

    def __init__(self, checker: SchemaChecker, methods: dict[Any, str]) -> None:
        self.lines: list[bytes] = []
        self.checker = checker
        self.methods = methods

    async def __call__(self, data: bytes) -> None:
        assert data.endswith(b"\n") and data.count(b"\n") == 1  # one message, one line
        self.lines.append(data)
        message = json.loads(data)
        self.checker.check(message, None if "method" in message
                           else self.methods.get(message.get("id")))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


@pytest.fixture
def session(checker: SchemaChecker) -> tuple[StdioSession, Recorder]:
    recorder = Recorder(checker, {1: "tools/list", 2: "server/discover", "a": "tools/call",
                                  "b": "tools/call", 5: "tools/list"})
    return StdioSession(everything.server, recorder), recorder


# -- the framer, in-process ----------------------------------------------------------------

@pytest.mark.parametrize("suffix", [b"", b"\n", b"\r\n", b"  \t\r\n", b"\n\n"])
async def test_feed_line_accepts_a_line_with_trailing_whitespace(
        session: tuple[StdioSession, Recorder], suffix: bytes) -> None:
    stdio, out = session
    await stdio.feed_line(request(1, "tools/list") + suffix)
    await stdio.drain()
    [response] = out.messages
    assert response["id"] == 1 and response["result"]["tools"]


async def test_feed_line_ignores_blank_lines(session: tuple[StdioSession, Recorder]) -> None:
    stdio, out = session
    for blank in (b"", b"\n", b"   \r\n", b"\t"):
        await stdio.feed_line(blank)
    await stdio.drain()
    assert out.lines == []


async def test_several_lines_are_answered_by_id(session: tuple[StdioSession, Recorder]) -> None:
    stdio, out = session
    await stdio.feed_line(request(1, "tools/list"))
    await stdio.feed_line(request(2, "server/discover"))
    await stdio.drain()
    assert sorted(m["id"] for m in out.messages) == [1, 2]


@pytest.mark.parametrize(("line", "code", "echo"), [
    (b"{not json", -32700, None),
    (b'{"jsonrpc":"2.0","id":7,"method":"x"', -32700, None),       # truncated
    (b"[1,2]", -32600, None),                                         # batch
    (b'"just a string"', -32600, None),
    (b'{"jsonrpc":"1.0","id":7,"method":"tools/list"}', -32600, 7),
    (b'{"jsonrpc":"2.0","id":7,"method":5}', -32600, 7),
    (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[]}', -32600, 7),
    (b"\xff\xfe\x00", -32700, None),
])
async def test_bad_lines_get_one_error_line(session: tuple[StdioSession, Recorder], line: bytes,
                                            code: int, echo: Any) -> None:
    stdio, out = session
    await stdio.feed_line(line + b"\n")
    await stdio.drain()
    [error] = out.messages
    assert error["error"]["code"] == code
    assert error.get("id") == echo
    if echo is None:
        assert "id" not in error  # never id null


async def test_notifications_and_responses_get_no_answer(
        session: tuple[StdioSession, Recorder]) -> None:
    stdio, out = session
    for line in (b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                 b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}',
                 b'{"jsonrpc":"2.0","method":"notifications/cancelled"}',
                 b'{"jsonrpc":"2.0","method":"no/such","params":{"x":1}}',
                 b'{"jsonrpc":"2.0","id":3,"result":{}}',
                 b'{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}'):
        await stdio.feed_line(line)
    await stdio.drain()
    assert out.lines == []  # never answer a notification


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[]}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}',
    b'{"jsonrpc":"1.0","method":"notifications/initialized"}',
])
async def test_malformed_notification_gets_no_answer(session: tuple[StdioSession, Recorder],
                                                     line: bytes) -> None:
    stdio, out = session
    await stdio.feed_line(line)
    await stdio.drain()
    assert out.lines == []


async def test_cancelled_request_gets_no_response(session: tuple[StdioSession, Recorder]) -> None:
    stdio, out = session
    await stdio.feed_line(request("a", "tools/call", {"name": "test_tool_with_progress"},
                                  progress_token="p"))
    await asyncio.sleep(0)  # let the handler start
    await stdio.feed_line(b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                          b'"params":{"requestId":"a","reason":"user"}}')
    await stdio.feed_line(request("b", "tools/call", {"name": "test_simple_text"}))
    await stdio.drain()
    ids = [m.get("id") for m in out.messages if "id" in m]
    assert ids == ["b"]
    # Whatever progress left before the cancel, nothing follows it for "a".
    assert all(m["method"] == "notifications/progress" for m in out.messages if "method" in m)


async def test_cancelling_by_the_wrong_id_type_cancels_nothing(
        session: tuple[StdioSession, Recorder]) -> None:
    stdio, out = session
    await stdio.feed_line(request(5, "tools/list"))
    await stdio.feed_line(b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                          b'"params":{"requestId":"5"}}')
    await stdio.drain()
    assert [m["id"] for m in out.messages] == [5]


async def test_an_id_in_flight_cannot_be_reused(checker: SchemaChecker) -> None:
    recorder = Recorder(checker, {"a": "tools/call"})
    stdio = StdioSession(everything.server, recorder)
    await stdio.feed_line(request("a", "tools/call", {"name": "test_tool_with_progress"}))
    await stdio.feed_line(request("a", "tools/call", {"name": "test_simple_text"}))
    await stdio.drain()
    errors = [m for m in recorder.messages if "error" in m]
    results = [m for m in recorder.messages if "result" in m]
    assert len(errors) == 1 and errors[0]["id"] == "a"
    assert len(results) == 1 and results[0]["result"]["content"][0]["text"].startswith("Progress")


async def test_oversized_line_is_rejected(checker: SchemaChecker) -> None:
    recorder = Recorder(checker, {})
    stdio = StdioSession(Server("tiny"), recorder, limits=Limits(max_body_bytes=64))
    await stdio.feed_line(request(1, "server/discover"))
    await stdio.drain()
    [error] = recorder.messages
    assert error["error"]["code"] == -32600


async def test_initialize_without_the_legacy_shim_names_what_we_speak(
        checker: SchemaChecker) -> None:
    # A 2025-era client cannot fall forward: the refusal of its initialize is the one
    # thing it can show, so it names our versions and the one it asked for.
    recorder = Recorder(checker, {})
    stdio = StdioSession(Server("modern-only"), recorder)  # legacy=None: no shim
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "old", "version": "1"}}}).encode()
    await stdio.feed_line(line)
    await stdio.drain()
    [answer] = recorder.messages
    error = answer["error"]
    assert error["code"] == -32602
    assert error["data"] == {"supported": [MODERN], "requested": "2025-11-25"}
    assert MODERN in error["message"] and "no initialize handshake" in error["message"]
    assert "send initialize" not in error["message"]


async def test_initialize_with_modern_meta_is_an_unknown_method(checker: SchemaChecker) -> None:
    recorder = Recorder(checker, {})
    stdio = StdioSession(Server("modern-only"), recorder)
    await stdio.feed_line(request(1, "initialize"))
    await stdio.drain()
    [answer] = recorder.messages
    assert answer["error"]["code"] == -32601


# -- a real subprocess -----------------------------------------------------------------------

@pytest.fixture
def stdio_peer(stdio_process: StdioProcess) -> StdioPeer:
    return StdioPeer(stdio_process)


@pytest.mark.integration
async def test_discover_is_answered_as_the_very_first_message(state_keys: str) -> None:
    process = StdioProcess()
    try:
        peer = StdioPeer(process)
        reply = await peer.request("server/discover")
        assert reply.result["supportedVersions"] == [MODERN]
        assert process.lines[0].startswith(b'{"jsonrpc":"2.0","id":')
    finally:
        assert process.close() == 0


@pytest.mark.integration
async def test_cancelled_notification_stops_an_in_flight_request(stdio_peer: StdioPeer) -> None:
    process = stdio_peer.process
    slow = process.next_id()
    process.send({"jsonrpc": "2.0", "id": slow, "method": "tools/call", "params": {
        "name": "test_tool_with_progress", "arguments": {},
        "_meta": make_meta(progress_token=f"slow-{slow}")}})
    process.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": slow, "reason": "test"}})
    # Started later and as slow: had the first not been cancelled, its answer would be first.
    later = await stdio_peer.request("tools/call", {"name": "test_tool_with_progress",
                                                    "arguments": {}})
    assert later.result["content"][0]["text"] == "Progress test completed."
    stdio_peer.pump()
    answered = [m.get("id") for m in stdio_peer.unmatched_responses]
    assert slow not in answered
    assert all(m["params"]["progressToken"] == f"slow-{slow}" for m in stdio_peer.stray)
    progress = [m["params"]["progress"] for m in stdio_peer.stray]
    assert progress == sorted(progress) and len(progress) < 3
    stdio_peer.stray.clear()


@pytest.mark.integration
async def test_concurrent_requests_are_served_concurrently(stdio_peer: StdioPeer) -> None:
    started = time.monotonic()
    replies = await asyncio.gather(*[
        stdio_peer.request("tools/call", {"name": "test_tool_with_progress", "arguments": {}},
                           meta=make_meta(progress_token=f"c{i}")) for i in range(4)])
    assert time.monotonic() - started < 1.0  # 4 x 150 ms one after another would be more
    for i, reply in enumerate(replies):
        assert {m["params"]["progressToken"] for m in reply.messages} == {f"c{i}"}


@pytest.mark.integration
async def test_garbage_lines_get_errors_and_the_server_keeps_serving(
        stdio_peer: StdioPeer) -> None:
    process = stdio_peer.process
    before = len(process.lines)
    for line in (b"{oops\n", b"[]\n", b'{"jsonrpc":"2.0","id":"g1","method":7}\n',
                 b"\xff\xfe\n", b"   \n", b"\n"):
        process.write(line)
    reply = await stdio_peer.request("tools/list")
    assert reply.result["tools"]
    stdio_peer.pump()
    errors = stdio_peer.unmatched_responses
    assert [e["error"]["code"] for e in errors] == [-32700, -32600, -32600, -32700]
    assert [e.get("id") for e in errors] == [None, None, "g1", None]
    assert len(process.lines) - before == 5  # 4 errors + 1 response; blanks are ignored
    stdio_peer.unmatched_responses.clear()


@pytest.mark.integration
async def test_eof_on_stdin_ends_the_process_promptly(state_keys: str) -> None:
    process = StdioProcess()
    peer = StdioPeer(process)
    await peer.request("tools/list")
    started = time.monotonic()
    code = process.close(timeout=5.0)
    assert code == 0
    assert time.monotonic() - started < 5.0
    assert process.garbage == []
    for line in process.lines:
        assert line.endswith(b"\n") and isinstance(json.loads(line), dict)


@pytest.mark.integration
async def test_eof_with_a_request_in_flight_still_answers_it(state_keys: str) -> None:
    process = StdioProcess()
    process.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "test_tool_with_progress", "arguments": {}, "_meta": make_meta()}})
    assert process.close(timeout=5.0) == 0
    [line] = process.lines
    assert json.loads(line)["result"]["content"][0]["text"] == "Progress test completed."


@pytest.mark.integration
async def test_stdout_carries_only_json_lines(stdio_peer: StdioPeer) -> None:
    await stdio_peer.request("tools/call", {"name": "test_tool_with_logging", "arguments": {}},
                             meta=make_meta(log_level="debug", progress_token="x"))
    await stdio_peer.request("tools/call", {"name": "test_error_handling", "arguments": {}})
    await stdio_peer.request("no/such/method")
    for line in stdio_peer.process.lines:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert isinstance(json.loads(line), dict)
    assert stdio_peer.process.garbage == []


@pytest.mark.integration
async def test_eof_ends_the_process_even_with_a_listen_stream_open(state_keys: str) -> None:
    process = StdioProcess()
    try:
        peer = StdioPeer(process)
        async with peer.listen({"toolsListChanged": True}, id="L") as sub:
            assert (await sub.next())["method"] == "notifications/subscriptions/acknowledged"
            assert process.close(timeout=2.0) == 0  # kills it after the bound
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait(5)


# -- serve_stdio over real pipes, in-process --------------------------------------------------

async def serve_over_pipes(data: bytes, *, chunk: int, limits: Limits | None = None
                           ) -> list[dict[str, Any]]:
    """Run ``serve_stdio`` on OS pipes, write ``data`` ``chunk`` bytes at a time, then EOF."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    stdin, stdout = os.fdopen(r_in, "rb", buffering=0), os.fdopen(w_out, "wb")
    task = asyncio.ensure_future(serve_stdio(everything.server, stdin=stdin, stdout=stdout,
                                             **({"limits": limits} if limits else {})))
    try:
        for i in range(0, len(data), chunk):
            os.write(w_in, data[i:i + chunk])
            await asyncio.sleep(0)
        os.close(w_in)
        await asyncio.wait_for(task, 10)
    finally:
        stdout.close()
        stdin.close()
    with os.fdopen(r_out, "rb") as out:
        raw = out.read()
    assert raw.endswith(b"\n") or raw == b""
    checker = schema_checker()
    messages = [json.loads(line) for line in raw.splitlines()]
    for message in messages:
        checker.check(message, "tools/list" if "result" in message else None)
    return messages


TWO_REQUESTS = request(1, "tools/list") + b"\n" + request(2, "tools/list") + b"\r\n"


@pytest.mark.parametrize("chunk", [1, 7, len(TWO_REQUESTS)])
async def test_serve_stdio_frames_lines_fed_in_pieces(chunk: int) -> None:
    messages = await serve_over_pipes(TWO_REQUESTS, chunk=chunk)
    assert sorted(m["id"] for m in messages) == [1, 2]


async def test_serve_stdio_serves_a_last_line_without_newline() -> None:
    messages = await serve_over_pipes(request(1, "tools/list") + b"\n" + request(2, "tools/list"),
                                      chunk=4096)
    assert sorted(m["id"] for m in messages) == [1, 2]


async def test_serve_stdio_drops_an_oversized_line_and_keeps_serving() -> None:
    limits = Limits(max_body_bytes=2048)
    big = b'{"jsonrpc":"2.0","id":9,"method":"x","params":{"pad":"' + b"x" * 8192 + b'"}}\n'
    messages = await serve_over_pipes(big + request(1, "tools/list") + b"\n", chunk=1024,
                                      limits=limits)
    assert messages[0] == {"jsonrpc": "2.0", "error": {
        "code": -32600, "message": "Message exceeds 2048 bytes"}}
    assert messages[1]["id"] == 1 and messages[1]["result"]["tools"]


async def test_reusing_the_id_of_a_request_in_flight_is_the_clients_mistake(
        session: tuple[StdioSession, Recorder]) -> None:
    """A duplicate id is an invalid request (-32600), not an internal error; the first
    request still completes."""
    stdio, out = session
    await stdio.feed_line(request("dup", "tools/call", {"name": "test_tool_with_progress"}))
    await stdio.feed_line(request("dup", "tools/call", {"name": "test_simple_text"}))
    await stdio.drain()
    errors = [m for m in out.messages if "error" in m]
    assert [e["error"]["code"] for e in errors] == [-32600]
    assert "already in use" in errors[0]["error"]["message"]
    results = [m for m in out.messages if "result" in m]
    assert [r["id"] for r in results] == ["dup"]
