"""The client against hostile servers: endless lists, oversized events, shared listings.

Every test here bounds what a server can make the client do by counting (requests the
server saw, bytes accepted), not by timing; a global ``asyncio.timeout`` turns the old
endless behaviour into a failure instead of a hang.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from typing import Any

import httpx
import pytest
from client_doubles import Answer, FakeServer, error, result
from test_client_legacy import legacy_app, sse_start

from mcpcore.client import (
    Client,
    ListingIncomplete,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    ResponseTooLarge,
    wire,
)
from mcpcore.client.http import Exchange, HeldBytes
from mcpcore.client.legacy import MAX_ANSWERING, Backoff, LegacyWire
from mcpcore.client.modern import MAX_REFUSALS, ModernWire
from mcpcore.client.stdio import StdioTransport
from mcpcore.client.wire import Pending, Reply
from mcpcore.conformance.asgi import StreamingASGITransport
from mcpcore.timing import Sleep
from tests.support.clock import ManualClock

URL = "http://localhost/mcp"
PAGE = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
COMPLETE = {"resultType": "complete", "content": []}
#: A guard so that the old, unbounded code fails instead of hanging the suite.
GUARD = 60.0


def client_for(server: FakeServer, **options: Any) -> Client:
    options.setdefault("mode", "2026-07-28")
    return Client.http(URL, http_client=server.client(), **options)


def methods(server: FakeServer) -> list[str]:
    return [seen.body["method"] for seen in server.seen]


LIST_KEYS = {"tools/list": "tools", "resources/list": "resources",
             "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}


def endless(*, delay: float = 0.0, per_page: int = 1, sleep: Sleep = asyncio.sleep
            ) -> FakeServer:
    """``tools/list`` (and every list) answered with a new cursor forever, each page
    after ``delay`` seconds of ``sleep``; calls answered."""

    async def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        method = request["method"]
        if method.endswith("/list"):
            if delay:
                await sleep(delay)
            n = int(request["params"].get("cursor") or 0)
            key = LIST_KEYS[method]
            entries = [{"name": f"t{n}-{i}", "uri": f"test://{n}/{i}",
                        "uriTemplate": f"test://{n}/{i}/{{x}}", "inputSchema": {}}
                       for i in range(per_page)]
            return result(request, {**PAGE, key: entries, "nextCursor": str(n + 1)})
        return result(request, COMPLETE)

    return FakeServer(handler)


# -- item: endless pagination -----------------------------------------------------------


@pytest.mark.parametrize("walk", ["tools", "resources", "resource_templates", "prompts"])
async def test_a_list_that_never_ends_stops_at_max_pages(walk: str) -> None:
    server = endless()
    async with asyncio.timeout(GUARD), client_for(server, max_pages=20) as client:
        with pytest.raises(ListingIncomplete, match="more than 20 pages"):
            await getattr(client, walk)()
    assert len(server.seen) == 20


async def test_iterating_a_list_that_never_ends_stops_at_max_pages() -> None:
    server = endless()
    got: list[str] = []
    async with asyncio.timeout(GUARD), client_for(server, max_pages=7) as client:
        with pytest.raises(ListingIncomplete):
            async for tool in client.iter_tools():
                got.append(tool.name)
    assert len(got) == 7 and len(server.seen) == 7


async def test_a_list_with_too_many_items_stops_at_max_items() -> None:
    server = endless(per_page=10)
    async with asyncio.timeout(GUARD), client_for(server, max_items=25) as client:
        with pytest.raises(ListingIncomplete, match="more than 25 items"):
            await client.tools()
    assert len(server.seen) == 3


async def test_one_deadline_covers_the_whole_walk() -> None:
    # Each page takes 1 s (well within the per-request timeout), but the list never
    # ends: list_timeout ends the walk, however many pages it would take.
    clock = ManualClock()
    server = endless(delay=1.0, sleep=clock.sleep)
    async with asyncio.timeout(GUARD), client_for(server, max_pages=10**9, list_timeout=10,
                                                  clock=clock) as client:
        walk = asyncio.ensure_future(client.tools())
        for _ in range(50):
            if walk.done():
                break
            await clock.until_sleeping(3)  # the walk's deadline, the request's, the page
            await clock.advance(1)
        with pytest.raises(ListingIncomplete, match="list_timeout"):
            await walk
    # Pages 1-9 came at t=1..9; the 10th, asked at t=9, meets the deadline at t=10.
    assert len(server.seen) == 10 and clock.now == 10


async def test_a_repeated_cursor_ends_the_walk() -> None:
    cursors = ["a", "b", "a"]

    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        return result(request, {**PAGE, "prompts": [], "nextCursor": cursors.pop(0)})

    server = FakeServer(handler)
    async with asyncio.timeout(GUARD), client_for(server) as client:
        with pytest.raises(ListingIncomplete, match="cursor 'a' repeats"):
            await client.prompts()
    assert len(server.seen) == 3


async def test_a_call_is_sent_although_the_tool_list_never_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    server = endless()
    with caplog.at_level(logging.WARNING, logger="mcpcore.client"):
        async with asyncio.timeout(GUARD), client_for(server, max_pages=5) as client:
            called = await client.call_tool("unseen", {"a": 1})
    assert called.content == []
    assert methods(server) == ["tools/list"] * 5 + ["tools/call"]
    assert "tools/list before tools/call unseen failed" in caplog.text


async def test_the_call_timeout_bounds_the_listing_before_it() -> None:
    # No page or walk limit here: the call's own timeout ends the wait for the list,
    # and the call goes out anyway (the walk is left to finish or be cancelled at close).
    server = endless(delay=0.05)
    async with asyncio.timeout(GUARD), client_for(server, max_pages=10**9,
                                                  list_timeout=None) as client:
        called = await client.call_tool("unseen", timeout=1.0)
        assert called.content == []
        assert "tools/call" in methods(server)


async def test_close_ends_a_walk_nobody_waits_for() -> None:
    clock = ManualClock()
    server = endless(delay=1, sleep=clock.sleep)
    async with asyncio.timeout(GUARD):
        client = client_for(server, max_pages=10**9, list_timeout=None, clock=clock)
        async with client:
            # The call gives up on the endless listing after its timeout, which goes on.
            call = asyncio.ensure_future(client.call_tool("unseen", timeout=30))
            for _ in range(100):
                if call.done():
                    break
                await clock.advance(1)
            await call
        seen = len(server.seen)
        assert seen > 30  # the walk was still going when the client closed
        for _ in range(10):
            await clock.advance(1)
        assert len(server.seen) == seen  # the walk stopped with the client


# -- item: one listing for concurrent first calls (single-flight) -------------------------


def annotated_tools(gate: asyncio.Event | None = None, *, fail_first: bool = False
                    ) -> FakeServer:
    """One tool per name ``t0``..``t31``, each with an ``x-mcp-header`` argument."""
    listings = 0

    async def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        nonlocal listings
        if request["method"] == "tools/list":
            listings += 1
            if gate is not None:
                await gate.wait()
            else:
                await asyncio.sleep(0.05)  # long enough for every caller to arrive
            if fail_first and listings == 1:
                return error(request, -32603, "listing broke")
            tools = [{"name": f"t{i}", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}}} for i in range(32)]
            return result(request, {**PAGE, "tools": tools})
        return result(request, COMPLETE)

    return FakeServer(handler)


def call_headers(server: FakeServer) -> dict[str, str | None]:
    return {seen.body["params"]["name"]: seen.headers.get("mcp-param-region")
            for seen in server.seen if seen.body["method"] == "tools/call"}


async def test_concurrent_first_calls_share_one_listing() -> None:
    server = annotated_tools()
    async with asyncio.timeout(GUARD), client_for(server) as client:
        await asyncio.gather(*(client.call_tool(f"t{i}", {"region": "eu"})
                               for i in range(16)))
    assert methods(server).count("tools/list") == 1
    assert call_headers(server) == {f"t{i}": "eu" for i in range(16)}


async def test_concurrent_walks_share_one_listing() -> None:
    server = annotated_tools()
    async with asyncio.timeout(GUARD), client_for(server) as client:
        lists = await asyncio.gather(*(client.tools() for _ in range(8)))
    assert methods(server) == ["tools/list"]
    assert all(len(tools) == 32 for tools in lists)
    assert lists[0] is not lists[1]  # each caller gets its own list to keep


async def test_a_cancelled_caller_does_not_cancel_the_shared_listing() -> None:
    gate = asyncio.Event()
    server = annotated_tools(gate)
    async with asyncio.timeout(GUARD), client_for(server) as client:
        first = asyncio.ensure_future(client.call_tool("t1", {"region": "eu"}))
        second = asyncio.ensure_future(client.call_tool("t2", {"region": "us"}))
        while methods(server).count("tools/list") < 1:
            await asyncio.sleep(0.01)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        gate.set()
        await second
    assert methods(server) == ["tools/list", "tools/call"]
    assert call_headers(server) == {"t2": "us"}  # the walk finished for the other caller


async def test_a_failed_shared_listing_fails_only_its_own_callers() -> None:
    server = annotated_tools(fail_first=True)
    async with asyncio.timeout(GUARD), client_for(server) as client:
        # Both calls are sent, without the headers the failed listing would have taught.
        await asyncio.gather(client.call_tool("t1", {"region": "eu"}),
                             client.call_tool("t2", {"region": "eu"}))
        assert methods(server).count("tools/list") == 1
        assert call_headers(server) == {"t1": None, "t2": None}
        # The failure is not remembered: the next walk asks again, and succeeds.
        assert len(await client.tools()) == 32
        await client.call_tool("t3", {"region": "eu"})
    assert methods(server).count("tools/list") == 2
    assert call_headers(server)["t3"] == "eu"


# -- item: the size of one event-stream event ----------------------------------------------


def sse_body(data_lines: int, line: bytes = b"x" * 1000) -> bytes:
    message = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": "x"}}).encode()
    # One event: a JSON value split over many data lines would be invalid JSON, but the
    # client refuses the event before it ever joins the lines.
    return b"data: " + message + b"\n" + b"".join(b"data: " + line + b"\n"
                                                  for _ in range(data_lines)) + b"\n"


async def test_an_event_past_max_event_bytes_is_refused() -> None:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        return Answer(sse_body(200), content_type="text/event-stream")  # ~200 KB

    server = FakeServer(handler)
    async with asyncio.timeout(GUARD), client_for(server, max_event_bytes=64 * 1024) as client:
        with pytest.raises(ResponseTooLarge, match="event larger than 65536 bytes") as caught:
            await client.request("x/big", {})
    assert caught.value.limit == 64 * 1024
    assert isinstance(caught.value, RemoteProtocolError)


async def test_a_json_body_past_max_body_bytes_is_refused() -> None:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        return result(request, {"resultType": "complete", "blob": "x" * 100_000})

    server = FakeServer(handler)
    async with asyncio.timeout(GUARD), client_for(server, max_body_bytes=10_000) as client:
        with pytest.raises(ResponseTooLarge) as caught:
            await client.request("x/big", {})
    assert caught.value.limit == 10_000


@pytest.mark.parametrize("media", ["application/json", "text/event-stream"])
async def test_a_message_of_too_many_values_is_refused_before_it_is_decoded(
        media: str) -> None:
    # 600,000 tiny objects: 4.8 MB on the wire, ~120 MB of dicts once decoded (a 16 MiB
    # body of them was ~400 MiB). Refused by count, within every byte limit.
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        head = json.dumps({"jsonrpc": "2.0", "id": request["id"]}).encode()[:-1]
        body = (head + b', "result": {"resultType": "complete", "items": ['
                + b'{"a":1},' * 600_000 + b'{"a":1}]}}')
        if media == "text/event-stream":
            body = b"data: " + body + b"\n\n"
        return Answer(body, content_type=media)

    server = FakeServer(handler)
    async with asyncio.timeout(GUARD), client_for(server) as client:
        with pytest.raises(ResponseTooLarge, match="more than 500000 JSON values") as caught:
            await client.request("x/big", {})
    assert caught.value.limit == wire.MAX_JSON_VALUES


def test_values_are_counted_outside_strings_only() -> None:
    # A long text full of commas and colons is one value: decoded, not refused.
    text = "a, b: c, " * 200_000
    message = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": text}})
    assert wire.json_values(message) == 8  # two {, four :, two , (outside the text)
    assert wire.json_values(message.encode()) == 8
    decoded = wire.decode_json(message.encode())
    assert isinstance(decoded, dict) and decoded["result"]["text"] == text
    escaped = json.dumps({"t": 'say "a,b" \\, [x]'}).encode()
    assert wire.json_values(escaped) == 2
    strings = b"[" + b'"a",' * 100 + b'"a"]'
    assert wire.json_values(strings) == 101
    assert wire.json_values(strings, stop=3) == 4  # it stops as soon as it passes 3


# -- item: a 2025 server flooding the session's GET stream ---------------------------------


def sse_chunk(messages: list[dict[str, Any]]) -> bytes:
    return "".join(f"data: {json.dumps(m)}\n\n" for m in messages).encode()


def flooding_server(messages: list[dict[str, Any]], gate: asyncio.Event | None = None,
                    answers: list[dict[str, Any]] | None = None,
                    answering: list[int] | None = None) -> Any:
    """A 2025 server whose GET stream sends ``messages`` (500 to a chunk), then stays
    open until ``app.stop`` is set; it answers the client's requests at once, and
    records (and holds for a moment) the answers the client sends back, counting how
    many are in flight at a time."""
    in_flight = 0
    stop = asyncio.Event()

    async def on_get(headers: dict[bytes, bytes], send: Any) -> None:
        await sse_start(send)
        if gate is not None:
            await gate.wait()
        for i in range(0, len(messages), 500):
            await send({"type": "http.response.body", "more_body": True,
                        "body": sse_chunk(messages[i : i + 500])})
        await stop.wait()

    async def on_call(request: dict[str, Any], send: Any) -> None:
        nonlocal in_flight
        if "method" not in request:  # an answer to one of our pings
            in_flight += 1
            if answering is not None:
                answering.append(in_flight)
            await asyncio.sleep(0.002)
            if answers is not None:
                answers.append(request)
            in_flight -= 1
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}}
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(reply).encode()})

    app = legacy_app(on_call, on_get)
    app.stop = stop
    return app


async def test_a_flood_of_server_requests_is_bounded_and_close_stays_prompt(
        caplog: pytest.LogCaptureFixture) -> None:
    total = 5000
    pings = [{"jsonrpc": "2.0", "id": f"p{i}", "method": "ping"} for i in range(total)]
    gate = asyncio.Event()
    answers: list[dict[str, Any]] = []
    answering: list[int] = []
    app = flooding_server(pings, gate, answers, answering)
    peaks: list[int] = []
    loop = asyncio.get_running_loop()
    with caplog.at_level(logging.WARNING, logger="mcpcore.client"):
        async with asyncio.timeout(GUARD), \
                httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
            client = Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                                 timeout=10)
            await client.open()
            wire = client._wire
            assert isinstance(wire, LegacyWire)
            spawn = wire._spawn

            def counting_spawn(coro: Any) -> asyncio.Task[Any]:
                task = spawn(coro)
                peaks.append(len(wire._tasks))
                return task

            wire._spawn = counting_spawn  # type: ignore[method-assign]
            gate.set()
            while len(answers) < 20:
                await asyncio.sleep(0.01)
            # In the middle of the flood, the client's own requests still get through.
            assert (await client.list_tools()).tools == []
            app.stop.set()  # the double cannot hear a hang-up: end its stream ourselves
            started = loop.time()
            await client.aclose()
            closing = loop.time() - started
    # Tasks answering the server: never more than the limit (plus our own request's
    # reader), where the old client spawned one per ping (thousands at once).
    assert max(peaks) <= MAX_ANSWERING + 2
    assert max(answering) == 1  # the answers travel one at a time, on their own channel
    assert wire.dropped_requests > 0 and len(answers) + wire.dropped_requests <= total
    assert all(answer.get("result") == {} for answer in answers)
    assert "requests open; dropping ping unanswered" in caplog.text
    assert closing < 10  # generous: a loaded machine, and a DELETE on the way out


async def test_a_flood_of_notifications_does_not_spawn_a_task_each() -> None:
    total = 20_000
    notes = [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
              "params": {"uri": f"test://{i}"}} for i in range(total)]
    app = flooding_server(notes)
    heard: list[str] = []
    tasks_seen: list[int] = []
    client: Client | None = None

    async def slow_handler(note: Any) -> None:
        assert client is not None
        tasks_seen.append(len(client._tasks))
        heard.append(note.params["uri"])
        await asyncio.sleep(0)

    async with asyncio.timeout(GUARD), \
            httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        client = Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                             timeout=10, on_notification=slow_handler)
        async with client:
            while len(heard) + client.dropped_notifications < total:
                assert (await client.list_tools()).tools == []  # still served meanwhile
                await asyncio.sleep(0.01)
            dropped = client.dropped_notifications
            app.stop.set()
    assert max(tasks_seen) <= 3  # one delivery worker, not a task per notification
    assert len(heard) + dropped == total
    assert heard == sorted(heard, key=lambda uri: int(uri.rsplit("/", 1)[1]))  # in order


async def test_a_subscription_nobody_reads_keeps_a_bounded_backlog() -> None:
    total = 5000
    notes = [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}] * total
    gate = asyncio.Event()
    app = flooding_server(notes, gate)
    async with asyncio.timeout(GUARD), \
            httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None) as client, \
            client.listen({"toolsListChanged": True}) as sub:
        await anext(sub)  # the acknowledgement: the subscription is listening
        [queue] = client.listeners
        gate.set()
        while queue.qsize() + client.dropped_notifications < total:
            await asyncio.sleep(0.01)
        assert queue.qsize() <= 1024
        app.stop.set()


async def test_requests_answered_on_the_get_stream_do_not_hold_their_post_streams() -> None:
    # A 2025 server answers each request on the session's GET stream and keeps the
    # request's own POST event stream open and silent. The client must hang up on that
    # stream once the request is answered; the old one left its reader waiting there
    # forever, a task and (over a real pool) a connection per answered request, until
    # every later request timed out waiting for a connection.
    answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    open_posts = 0
    stop = asyncio.Event()

    async def on_get(headers: dict[bytes, bytes], send: Any) -> None:
        await sse_start(send)
        while True:
            waiting = asyncio.ensure_future(answers.get())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait((waiting, stopped), return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                waiting.cancel()
                return
            stopped.cancel()
            await send({"type": "http.response.body", "more_body": True,
                        "body": sse_chunk([waiting.result()])})

    async def on_call(request: dict[str, Any], send: Any) -> None:
        nonlocal open_posts
        await sse_start(send)
        open_posts += 1
        try:
            await send({"type": "http.response.body", "more_body": True, "body": b": open\n\n"})
            await answers.put({"jsonrpc": "2.0", "id": request["id"], "result": {}})
            await asyncio.Event().wait()  # silent until the client hangs up
        finally:
            open_posts -= 1

    app = legacy_app(on_call, on_get)
    tasks_seen: list[int] = []
    async with asyncio.timeout(GUARD), \
            httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        client = Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                             timeout=10, max_concurrency=2)
        async with client:
            wire = client._wire
            assert isinstance(wire, LegacyWire)
            for _ in range(20):
                await client.ping()
                await asyncio.sleep(0)
                tasks_seen.append(len(wire._tasks))
            # The GET listener plus at most the reader of the request just answered,
            # being stopped; the old client kept one more reader per answered request.
            assert max(tasks_seen) <= 2
            async with asyncio.timeout(10):  # generous: the hang-ups reach the server
                while open_posts:
                    await asyncio.sleep(0.01)
            stop.set()


def test_a_request_inbox_keeps_a_bounded_backlog_but_never_drops_the_response() -> None:
    pending = Pending()
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "t", "_meta": {"progressToken": "tok"}}}
    inbox = pending.open(request)
    for n in range(5000):
        assert pending.notification({"jsonrpc": "2.0", "method": "notifications/progress",
                                     "params": {"progressToken": "tok", "progress": n}})
    assert pending.response({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert inbox.queue.qsize() <= 1024 + 1
    items = [inbox.queue.get_nowait() for _ in range(inbox.queue.qsize())]
    assert isinstance(items[-1], Reply)


# -- the same class elsewhere: rounds, tasks, caches, reconnections --------------------------


def asking(n: int) -> dict[str, Any]:
    return {"resultType": "input_required", "inputRequests": {
        f"q{i}": {"method": "elicitation/create", "params": {
            "message": "?", "requestedSchema": {"type": "object", "properties": {}}}}
        for i in range(n)}}


async def test_a_round_with_too_many_questions_is_refused_before_any_resolver() -> None:
    asked: list[dict[str, Any]] = []

    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        if request["method"] == "tools/list":
            return result(request, {**PAGE, "tools": []})
        return result(request, asking(1000))

    server = FakeServer(handler)

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "decline"}

    async with asyncio.timeout(GUARD), client_for(server, on_elicit=on_elicit) as client:
        with pytest.raises(RemoteProtocolError, match="1000 questions at once"):
            await client.call_tool("t")
    assert asked == []  # no resolver (and no paid sampling call) ran


TASK = {"taskId": "task-1", "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": None, "pollIntervalMs": 1}
TASKS_CAPS = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}


def task_server(status: Any) -> FakeServer:
    """``tools/call`` makes a task; ``tasks/get`` answers ``status(n)`` for the n-th poll."""
    polls = 0

    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        nonlocal polls
        method = request["method"]
        if method == "tools/list":
            return result(request, {**PAGE, "tools": []})
        if method == "tools/call":
            return result(request, {**TASK, "resultType": "task", "status": "working"})
        if method == "tasks/get":
            polls += 1
            return result(request, {**TASK, "resultType": "complete", **status(polls)})
        return result(request, {"resultType": "complete"})  # tasks/update, tasks/cancel

    return FakeServer(handler)


async def test_a_task_that_keeps_asking_stops_after_max_rounds() -> None:
    server = task_server(lambda n: {"status": "input_required", "inputRequests": {
        f"q{n}": {"method": "elicitation/create", "params": {
            "message": "?", "requestedSchema": {"type": "object", "properties": {}}}}}})
    async with asyncio.timeout(GUARD), client_for(
            server, capabilities=TASKS_CAPS, max_rounds=3,
            on_elicit=lambda params: {"action": "decline"}) as client:
        with pytest.raises(LocalProtocolError, match="after 3 rounds"):
            await client.call_tool("t")
    assert methods(server).count("tasks/update") == 3


async def test_a_task_that_never_ends_is_given_up_after_task_timeout() -> None:
    clock = ManualClock()
    server = task_server(lambda n: {"status": "working", "pollIntervalMs": 1000})
    async with asyncio.timeout(GUARD), client_for(server, capabilities=TASKS_CAPS,
                                                  task_timeout=30, clock=clock) as client:
        call = asyncio.ensure_future(client.call_tool("t"))
        for _ in range(100):
            if call.done():
                break
            await clock.advance(1)
        with pytest.raises(RequestTimeout, match="task_timeout"):
            await call
    # Polled once a second (the server's pollIntervalMs) from t=0 until the deadline.
    assert methods(server).count("tasks/get") == 30
    assert methods(server)[-1] == "tasks/cancel"


async def test_the_tool_cache_stays_within_max_items() -> None:
    server = endless(per_page=10)
    async with asyncio.timeout(GUARD), client_for(server, max_items=25) as client:
        cursor = None
        for _ in range(10):  # page by page, as a caller may: 100 distinct tools
            page = await client.list_tools(cursor)
            cursor = page.next_cursor
        assert len(client._tools) == 25
        assert "t9-9" in client._tools and "t0-0" not in client._tools  # the newest kept


async def test_empty_get_streams_with_retry_zero_do_not_reconnect_in_a_loop() -> None:
    gets = 0

    async def on_get(headers: dict[bytes, bytes], send: Any) -> None:
        nonlocal gets
        gets += 1
        await sse_start(send)
        await send({"type": "http.response.body", "body": b"retry: 0\n\n"})  # and ends

    async def nothing(request: dict[str, Any], send: Any) -> None:
        raise AssertionError("no requests expected")

    clock = ManualClock()
    app = legacy_app(nothing, on_get)
    async with asyncio.timeout(GUARD), \
            httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                        backoff=Backoff(base=0.1, cap=1.0), clock=clock):
        for _ in range(100):  # a second
            await clock.advance(0.01)
    # 0 s, then ~0.1-0.2, 0.2-0.4, 0.4-0.8 s...: a handful, where the old client
    # reconnected at once every time (thousands in a second).
    assert 1 <= gets <= 10


def test_requests_from_a_modern_stdio_server_are_refused_a_bounded_number_of_times() -> None:
    transport = StdioTransport(["unused"])
    written: list[object] = []
    transport.write_nowait = written.append  # type: ignore[method-assign]
    wire = ModernWire(transport, ids=itertools.count(1), capabilities={}, client_info={},
                      on_unclaimed=lambda message: None)
    for i in range(5000):
        wire._route({"jsonrpc": "2.0", "id": i, "method": "sampling/createMessage"})
    assert len(written) == MAX_REFUSALS
    assert written[0] == {"jsonrpc": "2.0", "id": 0, "error": {
        "code": -32601, "message": "sampling/createMessage is not a client method in "
                                   "protocol version 2026-07-28"}}


# -- numbers a server sends: clamped before arithmetic ---------------------------------


async def test_a_list_ttl_of_any_size_is_a_bounded_cache_not_an_overflow() -> None:
    """``ttlMs`` is a JSON integer of any size; ``ttl_ms / 1000`` of a 400-digit one raised
    OverflowError out of ``tools()``. It is clamped to a day before the division."""

    async def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        if request["method"] == "tools/list":
            return result(request, {**PAGE, "ttlMs": 10**400,
                                    "tools": [{"name": "t", "inputSchema": {}}]})
        return result(request, COMPLETE)

    server = FakeServer(handler)
    async with asyncio.timeout(GUARD), client_for(server) as client:
        assert [t.name for t in await client.tools()] == ["t"]
        assert [t.name for t in await client.tools()] == ["t"]  # served from the cache
    assert methods(server).count("tools/list") == 1


async def test_responses_in_flight_hold_at_most_held_bytes_together() -> None:
    # One response within max_body_bytes is fine; many at once are bounded together.
    held = HeldBytes(1000)
    gate = asyncio.Event()

    async def slow_json() -> Any:
        yield b'{"jsonrpc": "2.0", "id": 1, "result": {"x": "' + b"x" * 550
        await gate.wait()
        yield b'"}}'

    async def slow_events() -> Any:
        yield b'data: "' + b"y" * 590 + b'"\n'  # an event not finished yet
        await gate.wait()
        yield b"\n"

    def exchange(body: Any, media: str) -> Exchange:
        response = httpx.Response(200, headers={"content-type": media}, content=body())
        return Exchange(response, held=held)

    async def first_message(exchange: Exchange) -> object:
        async for message in exchange.messages():
            return message
        return None

    async with asyncio.timeout(GUARD):
        for media, body in [("application/json", slow_json),
                            ("text/event-stream", slow_events)]:
            first = asyncio.ensure_future(first_message(exchange(body, media)))
            while held.held == 0:
                await asyncio.sleep(0)
            assert held.held > 500
            with pytest.raises(ResponseTooLarge, match="more than 1000 bytes together"):
                await first_message(exchange(body, media))  # would go over: refused
            gate.set()
            assert await first is not None  # the first one finishes
            assert held.held == 0  # and gives back what it held
            gate.clear()
