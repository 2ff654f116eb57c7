"""What an instance does when things go wrong, in process: overload (503 + Retry-After),
slow bodies (408), clients that stop reading (dropped), a Store that goes away (typed
503, listen streams end with an error), and draining for a shutdown (listen and legacy
GET streams end with an SSE ``retry`` hint; no new streams).

The same faults against real processes: tests/integration/test_faults.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

import pytest

from mcpcore import AdmissionLimits, Server, StreamableHTTP
from mcpcore.conformance.asgi import http_scope
from mcpcore.errors import Overloaded, ServiceUnavailable, ShuttingDown
from mcpcore.stores import MemoryStore, StoreUnavailable
from mcpcore.transports.admission import Admission
from mcpcore.transports.asgi import EventStream, StreamStalled
from tests.support.asgi import Exchange
from tests.support.clock import ManualClock
from tests.support.wire import make_meta, standard_headers


def request(method: str, params: dict[str, Any] | None = None, *, id: Any = 1
            ) -> tuple[bytes, dict[str, str]]:
    full = {**(params or {}), "_meta": make_meta()}
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": full})
    return body.encode(), standard_headers(method, full)


def listen_request(id: Any = 7) -> tuple[bytes, dict[str, str]]:
    return request("subscriptions/listen", {"notifications": {"toolsListChanged": True}},
                   id=id)


def small_server(store: Any = None) -> Server:
    server = Server("faults", store=store)

    @server.tool()
    async def wait(seconds: float) -> str:
        """Sleeps."""
        await asyncio.sleep(seconds)
        return "done"

    @server.tool()
    async def announce() -> str:
        """Publishes a change."""
        await server.notify_list_changed("tools")
        return "announced"

    return server


# -- admission: overload ---------------------------------------------------------------------
async def test_requests_above_the_limit_get_503_with_retry_after_and_nothing_runs() -> None:
    app = StreamableHTTP(small_server(), admission=AdmissionLimits(max_requests=2,
                                                                   retry_after=3))
    body, headers = request("tools/call", {"name": "wait", "arguments": {"seconds": 0.3}})
    busy = [Exchange(app, headers=headers, body=body) for _ in range(2)]
    await asyncio.sleep(0.05)
    assert app.admission is not None and app.admission.requests == 2
    refused = Exchange(app, headers=headers, body=body)
    await refused.run()
    assert refused.status == 503
    assert refused.header("retry-after") == "3"
    error = refused.json()["error"]
    assert "id" not in refused.json()  # nothing was read: an id-less JSON-RPC error
    assert error["code"] == -32603
    assert error["data"] == {"reason": "overloaded", "retryAfter": 3}
    for exchange in busy:
        await exchange.run()
        assert exchange.status == 200
    assert app.admission.requests == 0
    again = Exchange(app, headers=headers, body=body)  # capacity is back
    await again.run()
    assert again.status == 200


async def test_streams_have_their_own_limit_and_do_not_use_request_slots() -> None:
    app = StreamableHTTP(small_server(), admission=AdmissionLimits(max_requests=1,
                                                                   max_streams=1))
    body, headers = listen_request()
    first = Exchange(app, headers=headers, body=body)
    assert (await first.next())["method"] == "notifications/subscriptions/acknowledged"
    second = Exchange(app, headers=headers, body=body)
    await second.run()
    assert second.status == 503
    assert second.json()["error"]["data"]["reason"] == "overloaded"
    assert "streams" in second.json()["error"]["message"]
    # An ordinary request still has its slot while the stream is open.
    call, call_headers = request("tools/call", {"name": "announce", "arguments": {}})
    answered = Exchange(app, headers=call_headers, body=call)
    await answered.run()
    assert answered.status == 200
    await first.disconnect()
    assert app.admission is not None and app.admission.streams == 0


async def test_a_legacy_get_stream_counts_as_a_stream() -> None:
    admission = Admission(lambda *a: asyncio.sleep(0), AdmissionLimits(max_streams=1))
    admission.streams = 1  # one already open
    exchange = Exchange(admission, "GET", headers={"Accept": "text/event-stream"})
    await exchange.run()
    assert exchange.status == 503


def test_limits_from_env_and_their_checks() -> None:
    limits = AdmissionLimits.from_env({"MCPCORE_MAX_REQUESTS": "10",
                                       "MCPCORE_MAX_STREAMS": "none",
                                       "MCPCORE_BODY_TIMEOUT": "2.5",
                                       "MCPCORE_RETRY_AFTER": "4"})
    assert limits == AdmissionLimits(max_requests=10, max_streams=None, body_timeout=2.5,
                                     retry_after=4)
    assert AdmissionLimits.from_env({}) == AdmissionLimits()
    with pytest.raises(ValueError, match="MCPCORE_MAX_REQUESTS"):
        AdmissionLimits.from_env({"MCPCORE_MAX_REQUESTS": "lots"})
    with pytest.raises(ValueError, match="max_streams"):
        AdmissionLimits(max_streams=0)
    with pytest.raises(ValueError, match="body_timeout"):
        AdmissionLimits(body_timeout=0)


# -- admission: slow bodies ------------------------------------------------------------------
async def test_a_body_that_does_not_arrive_in_time_gets_408_and_a_closed_connection() -> None:
    clock = ManualClock()
    app = StreamableHTTP(small_server(), admission=AdmissionLimits(body_timeout=30),
                         clock=clock)
    assert app.admission is not None and app.admission.clock is clock
    body, headers = request("tools/call", {"name": "announce", "arguments": {}})
    sent: list[dict[str, Any]] = []

    async def dribble() -> dict[str, Any]:  # one byte, then nothing more, ever
        if not sent:
            sent.append({})
            return {"type": "http.request", "body": body[:1], "more_body": True}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    replies: list[dict[str, Any]] = []

    async def collect(message: dict[str, Any]) -> None:
        replies.append(message)

    scope = http_scope("POST", "/mcp", headers)
    served = asyncio.ensure_future(app(scope, dribble, collect))
    await clock.until_sleeping(1)  # the watchdog, looking once a second
    await clock.advance(29.5)
    assert not replies and not served.done()  # the body still has time
    await clock.advance(1)
    await asyncio.wait_for(served, 5)
    start, end = replies
    assert start["status"] == 408
    assert (b"connection", b"close") in start["headers"]
    assert json.loads(end["body"])["error"]["code"] == -32600
    assert app.admission is not None and app.admission.requests == 0


async def test_a_quick_body_arms_no_timer_and_is_served() -> None:
    app = StreamableHTTP(small_server(), admission=AdmissionLimits(body_timeout=0.2))
    body, headers = request("tools/call", {"name": "wait", "arguments": {"seconds": 0.5}})
    exchange = Exchange(app, headers=headers, body=body)
    await exchange.run()  # the handler outlives the body timeout: only the body counts
    assert exchange.status == 200
    assert app.admission is not None and not app.admission._reading


# -- clients that stop reading ---------------------------------------------------------------
async def test_an_event_stream_whose_client_stops_reading_is_abandoned() -> None:
    blocked = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            blocked.set()
            await asyncio.sleep(60)  # the socket buffer is full: the write waits

    stream = EventStream(send, send_timeout=0.1)
    with pytest.raises(StreamStalled):
        await stream.send(b"{}")
    assert stream.stalled and stream.closed
    with pytest.raises(StreamStalled):  # every later write says so too
        await stream.send(b"{}")
    await stream.close(b"{}")  # and closing does not wait on the client again


async def test_a_quiet_stalled_stream_is_noticed_by_its_keepalive() -> None:
    stalls: list[bool] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body") != b": open\n\n":
            await asyncio.sleep(60)

    stream = EventStream(send, keepalive=0.05, send_timeout=0.1,
                         on_stall=lambda: stalls.append(True))
    await stream.open(b": open\n\n")
    await asyncio.sleep(0.5)
    assert stalls == [True]
    stream.stop()


async def test_a_listen_stream_whose_client_stops_reading_is_dropped() -> None:
    server = small_server(MemoryStore(max_queue=100_000))
    app = StreamableHTTP(server, send_timeout=0.2)
    body, headers = listen_request()
    reading = True

    class Stuck(Exchange):
        async def _send(self, message: dict[str, Any]) -> None:
            while not reading and message.get("body"):
                await asyncio.sleep(60)
            await super()._send(message)

    exchange = Stuck(app, headers=headers, body=body)
    await exchange.next()  # the acknowledgement
    reading = False
    await server.notify_list_changed("tools")
    await exchange.finished(timeout=3)
    assert not exchange.complete  # the response was never ended: the server drops it
    assert server.subscriptions.active == 0


async def test_a_listen_stream_is_dropped_after_send_timeout_on_the_app_s_clock() -> None:
    """``StreamableHTTP(clock=)`` bounds an event stream's writes too: a client that stops
    reading is dropped once the clock passes ``send_timeout``, and not before."""
    clock = ManualClock()
    server = small_server(MemoryStore(max_queue=100_000))
    app = StreamableHTTP(server, send_timeout=30, keepalive_seconds=3600, clock=clock)
    assert app.sleep == clock.sleep  # the clock's, unless a sleep is given
    body, headers = listen_request()
    reading = True
    stuck = asyncio.Event()

    class Stuck(Exchange):
        async def _send(self, message: dict[str, Any]) -> None:
            if not reading and message.get("body"):
                stuck.set()
                await asyncio.Event().wait()  # the socket buffer is full, for good
            await super()._send(message)

    exchange = Stuck(app, headers=headers, body=body)
    await exchange.next()  # the acknowledgement
    reading = False
    await server.notify_list_changed("tools")
    await asyncio.wait_for(stuck.wait(), 5)
    await clock.advance(29)
    assert not exchange.task.done()  # the write still has time
    await clock.advance(1)
    await exchange.finished(timeout=5)
    assert not exchange.complete  # the response was never ended: the server drops it
    assert server.subscriptions.active == 0


# -- a Store that is gone --------------------------------------------------------------------
class BrokenSubscription:
    """Subscribes, then fails on its first read (after ``healthy`` messages)."""

    channel = "events"

    def __init__(self, fail_on_enter: bool) -> None:
        self.fail_on_enter = fail_on_enter

    async def __aenter__(self) -> Self:
        if self.fail_on_enter:
            raise StoreUnavailable("Redis at 10.1.2.3:6379 is unavailable: refused")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        return None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        await asyncio.sleep(0.05)
        raise StoreUnavailable("Redis at 10.1.2.3:6379 is unavailable: connection lost")

    async def aclose(self) -> None:
        return None


class BrokenStore(MemoryStore):
    def __init__(self, fail_on_enter: bool) -> None:
        super().__init__()
        self.fail_on_enter = fail_on_enter

    def subscribe(self, channel: str) -> Any:
        return BrokenSubscription(self.fail_on_enter)

    async def publish(self, channel: str, message: bytes) -> None:
        raise StoreUnavailable("Redis at 10.1.2.3:6379 is unavailable: refused")


async def test_listen_without_a_store_gets_a_typed_503() -> None:
    app = StreamableHTTP(small_server(BrokenStore(fail_on_enter=True)))
    body, headers = listen_request()
    exchange = Exchange(app, headers=headers, body=body)
    (reply,) = await exchange.run()
    assert exchange.status == 503
    assert exchange.header("retry-after") == "1"
    assert reply["id"] == 7
    assert reply["error"]["data"] == {"reason": "store_unavailable", "retryAfter": 1}
    assert "10.1.2.3" not in exchange.body.decode()  # the backend's address stays inside


async def test_a_listen_stream_that_loses_its_store_ends_with_an_error_not_a_result(
        caplog: pytest.LogCaptureFixture) -> None:
    app = StreamableHTTP(small_server(BrokenStore(fail_on_enter=False)))
    body, headers = listen_request(id="L")
    exchange = Exchange(app, headers=headers, body=body)
    ack, end = await exchange.run()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert "result" not in end
    assert end["id"] == "L"
    assert end["error"]["code"] == -32603
    assert end["error"]["data"]["reason"] == "store_unavailable"
    assert exchange.complete
    # No traceback per stream: the store logs its outage, the transport nothing. (The
    # tools registered inside this test's loop announced themselves: those may fail.)
    assert not [r for r in caplog.records if r.levelname == "ERROR"
                and "announcing" not in r.getMessage()]


async def test_a_tool_whose_store_is_gone_gets_the_typed_error_not_a_tool_error() -> None:
    app = StreamableHTTP(small_server(BrokenStore(fail_on_enter=False)))
    body, headers = request("tools/call", {"name": "announce", "arguments": {}})
    exchange = Exchange(app, headers=headers, body=body)
    (reply,) = await exchange.run()
    assert exchange.status == 503
    assert reply["error"]["data"]["reason"] == "store_unavailable"


def test_the_unavailable_family() -> None:
    assert issubclass(StoreUnavailable, ServiceUnavailable)
    error = StoreUnavailable("Redis at h:1 is unavailable: x", retry_after=5)
    assert str(error) == "Redis at h:1 is unavailable: x"  # the detail, for logs
    assert error.http_status == 503 and error.http_headers == (("Retry-After", "5"),)
    assert ShuttingDown().to_error()["data"]["reason"] == "shutting_down"
    assert Overloaded("streams").to_error()["data"]["reason"] == "overloaded"


# -- draining ----------------------------------------------------------------------------------
async def test_drain_ends_listen_streams_with_a_retry_hint_and_refuses_new_ones() -> None:
    app = StreamableHTTP(small_server(), reconnect_ms=2500)
    body, headers = listen_request(id=3)
    exchange = Exchange(app, headers=headers, body=body)
    await exchange.next()
    await app.drain()
    await exchange.finished()
    assert b"retry: 2500\n\n" in exchange.body
    final = exchange.messages()[-1]
    assert final["id"] == 3 and final["result"]["resultType"] == "complete"
    refused = Exchange(app, headers=headers, body=body)
    await refused.run()
    assert refused.status == 503
    assert refused.json()["error"]["data"]["reason"] == "shutting_down"
    # Requests are still served while draining, each closing its connection.
    call, call_headers = request("tools/list")
    served = Exchange(app, headers=call_headers, body=call)
    await served.run()
    assert served.status == 200 and served.header("connection") == "close"


async def test_drain_hands_legacy_get_streams_back() -> None:
    server = small_server()
    app = StreamableHTTP(server)
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}}).encode()
    opened = Exchange(app, headers={"Content-Type": "application/json",
                                    "Accept": "application/json, text/event-stream"},
                      body=init)
    await opened.finished()  # (a 2025-era answer: not checked against 2026-07-28)
    session = opened.header("mcp-session-id")
    assert session
    get = Exchange(app, "GET", headers={"Accept": "text/event-stream",
                                        "Mcp-Session-Id": session,
                                        "MCP-Protocol-Version": "2025-11-25"})
    await get.wait_for(lambda: b": open" in get.body)
    await app.drain()
    await get.finished()
    assert get.complete
    assert get.body.endswith(b"retry: 1000\n\n")
    # The stream's fleet-wide claim is released, so the client may reconnect anywhere.
    assert await server.subscriptions.store.get(f"session:{session}:get") is None
