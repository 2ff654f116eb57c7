"""The 2025 session wire against our own dual-era server, and the supervision edges:
session expiry, heartbeats, server requests without a capability, stdio reaping."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from client_doubles import Resolvers

from mcpcore import Context, Server, StreamableHTTP, types
from mcpcore.client import (
    Client,
    EraCache,
    EraNegotiationError,
    HttpError,
    RemoteProtocolError,
    RequestTimeout,
    SessionExpired,
    TransportError,
)
from mcpcore.client.legacy import Backoff
from mcpcore.conformance.asgi import StreamingASGITransport
from mcpcore.timing import Sleep
from tests.support.clock import ManualClock, until

URL = "http://localhost/mcp"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def http(everything: Any, state_keys: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=StreamingASGITransport(everything.app)) as client:
        yield client


async def test_legacy_session_speaks_the_same_api(http: httpx.AsyncClient) -> None:
    resolvers = Resolvers()
    async with Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                           **resolvers.options()) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        assert client.session_id
        info = await client.discover()  # built from the InitializeResult
        assert info.supported_versions == ["2025-11-25"]
        assert info.meta and info.meta["io.modelcontextprotocol/serverInfo"]["name"]
        result = await client.call_tool("test_input_required_result_multi_round")
        assert isinstance(result, types.CallToolResult)
        assert result.content[0].text == "Ada likes teal"  # type: ignore[union-attr]
        assert [kind for kind, _ in resolvers.asked] == ["elicitation/create"] * 2
        await client.ping()


async def test_auto_finds_the_modern_era_and_caches_it(http: httpx.AsyncClient) -> None:
    cache = EraCache()
    async with Client.http(URL, http_client=http, era_cache=cache) as client:
        assert client.era == "modern" and client.server is not None
    assert cache.get(URL) == "modern"


async def test_an_expired_session_is_initialized_again_once(http: httpx.AsyncClient) -> None:
    async with Client.http(URL, http_client=http, mode="legacy", heartbeat=None) as client:
        first = client.session_id
        assert first is not None
        gone = await http.delete(URL, headers={"Mcp-Session-Id": first,
                                               "MCP-Protocol-Version": "2025-11-25"})
        assert gone.status_code in (200, 204)
        result = await client.call_tool("test_simple_text")
        assert result.content
        assert client.session_id not in (None, first)


async def test_list_changed_invalidates_the_cached_list(http: httpx.AsyncClient) -> None:
    async with Client.http(URL, http_client=http, mode="legacy", heartbeat=None) as client:
        before = await client.tools()
        assert await client.tools() == before and "tools/list" in client._lists
        client._unclaimed({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        assert "tools/list" not in client._lists


def test_backoff_honours_retry_then_grows_with_jitter() -> None:
    backoff = Backoff(base=0.5, cap=4.0)
    assert backoff.delay(0, retry_ms=250) == 0.25
    delays = [backoff.delay(n) for n in range(1, 8)]
    assert all(0.5 <= d <= 4.0 for d in delays) and max(delays) > 1.0


async def test_401_is_an_http_error_with_the_challenge() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"www-authenticate", b'Bearer resource_metadata="https://x/.well-known/p"'),
            (b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"error": "unauthorized"}'})

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        with pytest.raises(HttpError) as info:
            async with Client.http(URL, http_client=http, era_cache=None):
                pass
    assert info.value.status == 401
    assert HttpError("x", status=500).challenges == []
    challenge = info.value.challenge("Bearer")
    assert challenge is not None and challenge.params["resource_metadata"].endswith("/p")


class CountingAuth(httpx.Auth):
    """A custom ``httpx.Auth``: the OAuth client plugs in the same way."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def async_auth_flow(self, request: httpx.Request) -> Any:
        self.methods.append(request.method)
        request.headers["Authorization"] = "Bearer test-token"
        yield request


async def test_auth_goes_on_every_request_post_get_and_delete(everything: Any,
                                                              state_keys: str) -> None:
    auth = CountingAuth()
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        seen.append(f"{scope['method']} {headers.get(b'authorization', b'').decode()}")
        await everything.app(scope, receive, send)

    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, auth=auth, mode="legacy",
                        heartbeat=None) as client:
        await client.call_tool("test_simple_text")
    assert {"POST", "GET", "DELETE"} <= set(auth.methods)
    assert seen and all(line.endswith("Bearer test-token") for line in seen)


async def test_no_era_works_is_a_dedicated_error() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"Bad Request: go away"})

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        with pytest.raises(EraNegotiationError) as info:
            async with Client.http(URL, http_client=http, era_cache=None):
                pass
    tried = [what for what, _ in info.value.attempts]
    assert tried == ["server/discover at 2026-07-28", "initialize at 2025-11-25"]
    assert "go away" in str(info.value)


SILENT_AFTER_INIT = textwrap.dedent('''
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "serverInfo": {"name": "mute", "version": "1"}}}), flush=True)
        elif msg.get("method") == "server/discover":
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                              "error": {"code": -32601, "message": "nope"}}), flush=True)
        elif msg.get("id") is not None and msg.get("method") == "tools/list":
            print(json.dumps({"jsonrpc": "2.0", "id": 999, "method": "sampling/createMessage",
                              "params": {"messages": [], "maxTokens": 1}}), flush=True)
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}),
                  flush=True)
        elif msg.get("id") == 999:
            print(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                              "params": {"level": "info", "data": msg}}), flush=True)
        # pings and everything else: no answer
''')


@pytest.mark.integration
async def test_a_request_for_an_undeclared_capability_gets_an_error_back() -> None:
    command = [sys.executable, "-c", SILENT_AFTER_INIT]
    notes: list[types.Notification] = []
    async with Client.stdio(command, heartbeat=None, era_cache=None,
                            on_notification=notes.append) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-06-18")
        # The server asks for sampling, which we did not declare: it gets an error back,
        # which the test server echoes as a log notification.
        await client.list_tools()
        for _ in range(250):
            if notes:
                break
            await asyncio.sleep(0.02)
        answer = notes[0].params["data"]  # type: ignore[index]
        assert answer["error"]["code"] == -32601 and "sampling" in answer["error"]["message"]


@pytest.mark.integration
async def test_a_server_that_misses_two_heartbeats_is_reaped() -> None:
    command = [sys.executable, "-c", SILENT_AFTER_INIT]
    async with Client.stdio(command, heartbeat=0.2, era_cache=None) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-06-18")
        for _ in range(200):
            if client.transport.returncode is not None:
                break
            await asyncio.sleep(0.05)
        assert client.transport.returncode is not None  # reaped after two missed pings
        with pytest.raises(TransportError, match=r"reaped|heartbeat|unavailable"):
            await client.list_tools()


@pytest.mark.integration
async def test_cancelling_the_caller_mid_call_leaves_no_process(state_keys: str) -> None:
    env = {**os.environ, "MCPCORE_STATE_KEYS": state_keys}
    started = asyncio.Event()
    pids: list[int] = []

    async def caller() -> None:
        async with Client.stdio([sys.executable, "-m", "examples.everything", "--stdio"],
                                env=env, cwd=str(ROOT), mode="legacy", heartbeat=None,
                                on_elicit=lambda params: asyncio.sleep(3600)) as client:
            assert client.transport.pid is not None
            pids.append(client.transport.pid)
            started.set()
            await client.call_tool("test_elicitation", {"message": "wait forever"})

    task = asyncio.ensure_future(caller())
    await asyncio.wait_for(started.wait(), 20)
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.killpg(pids[0], 0)  # neither the server nor anything in its group is left
    assert not Path(f"/proc/{pids[0]}").exists()  # and it was reaped: no zombie


# -- a 2025-era server misbehaving -----------------------------------------------------------


def legacy_app(on_call: Any, on_get: Any = None, seen: list[str] | None = None) -> Any:
    """A minimal 2025-era server: initialize mints a session, notifications get 202, GET
    405 (or ``on_get(headers, send)``), DELETE 200; ``on_call(body, send)`` answers every
    other request, and is cancelled when the client hangs up (as a real server's handler
    is). ``seen`` records "METHOD jsonrpc-method" per request."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if seen is not None:
            method = json.loads(body).get("method", "response") if body else ""
            seen.append(f"{scope['method']} {method}".strip())
        if scope["method"] == "GET" and on_get is not None:
            await on_get(dict(scope["headers"]), send)
            return
        if scope["method"] != "POST":
            status = 405 if scope["method"] == "GET" else 200
            await send({"type": "http.response.start", "status": status, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        request = json.loads(body)
        if request.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "bad", "version": "1"}}
            payload = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"), (b"mcp-session-id", b"s-1")]})
            await send({"type": "http.response.body", "body": payload.encode()})
        elif "id" not in request:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
        else:
            call = asyncio.ensure_future(on_call(request, send))
            gone = asyncio.ensure_future(receive())  # only http.disconnect comes now
            await asyncio.wait((call, gone), return_when=asyncio.FIRST_COMPLETED)
            gone.cancel()
            if not call.done():
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await call
                return
            call.result()  # a double's bug fails the test

    return app


async def sse_start(send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})


async def endless(request: dict[str, Any], send: Any, sleep: Sleep = asyncio.sleep) -> None:
    await sse_start(send)
    while True:
        await send({"type": "http.response.body", "body": b": keep-alive\n\n",
                    "more_body": True})
        await sleep(0.01)


async def wrong_id(request: dict[str, Any], send: Any) -> None:
    await sse_start(send)
    reply = {"jsonrpc": "2.0", "id": 424242, "result": {"tools": []}}
    await send({"type": "http.response.body",
                "body": f"data: {json.dumps(reply)}\n\n".encode()})


async def garbage(request: dict[str, Any], send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{not json"})


async def cut_short(request: dict[str, Any], send: Any) -> None:
    await sse_start(send)
    await send({"type": "http.response.body", "body": b'data: {"jsonrpc": "2.0", "meth'})


async def unknown_session(request: dict[str, Any], send: Any) -> None:
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b"Session not found"})


@pytest.mark.parametrize("on_call, error, match", [
    (endless, RequestTimeout, "no response within"),
    (wrong_id, RemoteProtocolError, "ended before the response"),
    (garbage, RemoteProtocolError, "invalid JSON"),
    (cut_short, RemoteProtocolError, "invalid JSON|ended before"),
    (unknown_session, SessionExpired, "ended the session"),
])
async def test_a_misbehaving_server_gets_a_typed_error_in_time(
        on_call: Any, error: type[Exception], match: str) -> None:
    clock = ManualClock()
    if on_call is endless:  # keep-alives every 0.01 s of the test's clock
        on_call = functools.partial(endless, sleep=clock.sleep)
    app = legacy_app(on_call)
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                        timeout=1.0, clock=clock) as client:
        assert client.session_id == "s-1"
        listing = asyncio.ensure_future(client.list_tools())
        for _ in range(200):
            if listing.done():
                break
            await clock.advance(0.01)
        with pytest.raises(error, match=match):
            await listing
        assert clock.now < 1.1  # keep-alives are no answer: the timeout holds


async def test_a_broken_post_stream_is_resumed_with_last_event_id() -> None:
    gets: list[dict[bytes, bytes]] = []

    async def primed_then_closed(request: dict[str, Any], send: Any) -> None:
        await sse_start(send)
        await send({"type": "http.response.body", "body": b"id: e-7\nretry: 50\ndata: \n\n",
                    "more_body": True})
        await send({"type": "http.response.body", "body": b""})  # closed, no response
        replies.append(request["id"])

    async def replay(headers: dict[bytes, bytes], send: Any) -> None:
        gets.append(headers)
        await sse_start(send)
        if b"last-event-id" in headers and replies:
            reply = {"jsonrpc": "2.0", "id": replies[0], "result": {"tools": []}}
            await send({"type": "http.response.body", "more_body": True,
                        "body": f"id: e-8\ndata: {json.dumps(reply)}\n\n".encode()})
        await asyncio.sleep(0.05)
        await send({"type": "http.response.body", "body": b""})

    replies: list[int] = []
    app = legacy_app(primed_then_closed, replay)
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                        timeout=5, backoff=Backoff(base=0.02, cap=0.1)) as client:
        page = await client.list_tools()
    assert page.tools == []
    resumed = [h for h in gets if h.get(b"last-event-id") == b"e-7"]
    assert resumed and resumed[0][b"mcp-session-id"] == b"s-1"


async def test_the_get_stream_reconnects_with_the_last_event_id() -> None:
    gets: list[dict[bytes, bytes]] = []
    notes: list[types.Notification] = []

    async def stream(headers: dict[bytes, bytes], send: Any) -> None:
        gets.append(headers)
        await sse_start(send)
        note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        await send({"type": "http.response.body", "more_body": True,
                    "body": f"id: g-{len(gets)}\ndata: {json.dumps(note)}\n\n".encode()})
        await send({"type": "http.response.body", "body": b""})  # ends: reconnect

    async def nothing(request: dict[str, Any], send: Any) -> None:
        raise AssertionError("no requests expected")

    clock = ManualClock()
    app = legacy_app(nothing, stream)
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                        on_notification=notes.append, clock=clock) as client:
        for _ in range(10):  # the default backoff: 0.5 s, then up to 1 s
            if len(gets) >= 3:
                break
            await clock.advance(1)
        assert client.era == "legacy"
    assert len(gets) >= 3 and gets[1].get(b"last-event-id") == b"g-1"
    assert [n.method for n in notes][:2] == ["notifications/tools/list_changed"] * 2


async def test_an_http_session_that_misses_heartbeats_is_replaced() -> None:
    seen: list[str] = []
    pings_answered = True

    async def on_call(request: dict[str, Any], send: Any) -> None:
        if request["method"] == "ping" and not pings_answered:
            await endless(request, send)
            return
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}}
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(reply).encode()})

    clock = ManualClock()
    app = legacy_app(on_call, seen=seen)
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=15,
                        clock=clock) as client:
        await clock.advance(14.9)
        assert "POST ping" not in seen  # the first ping waits the whole interval
        await clock.advance(0.1)
        await until(lambda: "POST ping" in seen)
        await clock.advance(15)  # answered heartbeats keep the session
        await until(lambda: seen.count("POST ping") == 2)
        pings_answered = False
        wire = client._wire
        # t=30: a ping, unanswered; t=45: missed (its timeout is the interval);
        # t=60: another; t=75: missed again, and the session is reaped.
        for _ in range(3):
            await clock.advance(15)
            assert not getattr(wire, "dead", None)  # one missed ping is not enough
        await clock.advance(15)
        await until(lambda: bool(getattr(wire, "dead", None)))
        assert wire is not None and "heartbeat" in (getattr(wire, "dead", "") or "")
        pings_answered = True
        assert (await client.list_tools()).tools == []  # a new session first
        before = seen.count("POST ping")
        await clock.advance(15)
        await until(lambda: seen.count("POST ping") > before)  # the new session's heartbeat
    assert seen.count("POST initialize") == 2
    assert "DELETE" in seen


BATCHING_2025_03_26 = textwrap.dedent('''
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
                "serverInfo": {"name": "batcher", "version": "1"}}}), flush=True)
        elif msg.get("method") == "tools/list":
            print(json.dumps([
                {"jsonrpc": "2.0", "method": "notifications/message",
                 "params": {"level": "info", "data": "batched"}},
                {"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}]), flush=True)
            sys.stderr.write("served a batch\\n")
            sys.stderr.flush()
''')


@pytest.mark.integration
async def test_2025_03_26_batches_are_routed_and_stderr_is_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mcpcore.client.stderr"):
        async with Client.stdio([sys.executable, "-c", BATCHING_2025_03_26],
                                mode="2025-03-26", heartbeat=None) as client:
            assert client.protocol_version == "2025-03-26"
            page = await client.list_tools()
            assert page.tools == []
            await asyncio.sleep(0.2)  # the stderr line travels on its own pipe
    assert "served a batch" in caplog.text


async def test_a_per_call_log_level_works_on_a_2025_session() -> None:
    """A 2025 session has one log level: a call's ``log_level`` lowers it when it is
    less verbose (once), never raises it, and the call sees only its own level's
    messages; a new session starts without one."""
    server = Server("talker")

    @server.tool()
    async def talk(ctx: Context) -> str:
        for level in ("debug", "info", "warning"):
            await ctx.log(level, level)
        return "talked"

    async with httpx.AsyncClient(transport=StreamingASGITransport(StreamableHTTP(server))
                                 ) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None) as client:
        sent: list[str] = []
        original = client.request

        async def request(method: str, params: Any = None, **kw: Any) -> Any:
            if method == "logging/setLevel":
                sent.append(params["level"])
            return await original(method, params, **kw)

        client.request = request  # type: ignore[method-assign]

        async def said(level: str | None) -> list[str]:
            seen: list[Any] = []
            await client.call_tool("talk", on_notification=seen.append, log_level=level)
            return [n.params["data"] for n in seen if n.method == "notifications/message"]

        assert await said("warning") == ["warning"]
        assert await said("info") == ["info", "warning"]
        assert await said("warning") == ["warning"]  # filtered here, the session stays
        assert sent == ["warning", "info"]
        first = client.session_id
        assert first is not None
        await http.delete(URL, headers={"Mcp-Session-Id": first,
                                        "MCP-Protocol-Version": "2025-11-25"})
        # A new session: the wire sets the old one's level on it as it initializes.
        assert await said("info") == ["info", "warning"]
        assert client.session_id != first
