"""The one ASGI response module (mcpcore/transports/asgi.py) and the injectable clock
(mcpcore/timing.py): whole responses, the event stream's rules, the disconnect watch.

Time passes only through ``ManualClock``: no test here sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpcore.errors import PayloadTooLarge
from mcpcore.timing import wait_with_timeout
from mcpcore.transports import asgi
from mcpcore.transports.asgi import (
    DisconnectWatch,
    EventStream,
    read_body,
    respond,
    send_empty,
    send_json,
    send_plain,
    sse_event,
)
from tests.support.clock import ManualClock, settle
from tests.support.sse import SseParser


class Sent:
    """An ASGI ``send`` that records messages."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def start(self) -> dict[str, Any]:
        return self.messages[0]

    def headers(self) -> dict[bytes, bytes]:
        return dict(self.start["headers"])

    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages[1:])


@pytest.mark.parametrize(("call", "status", "ctype", "body"), [
    (lambda s: send_json(s, 200, b'{"a":1}'), 200, b"application/json", b'{"a":1}'),
    (lambda s: send_empty(s, 202), 202, None, b""),
    (lambda s: send_plain(s, 404, b"Not Found"), 404, b"text/plain", b"Not Found"),
])
async def test_whole_responses_carry_their_length(call: Any, status: int, ctype: bytes | None,
                                                  body: bytes) -> None:
    sent = Sent()
    await call(sent)
    assert sent.start["status"] == status
    assert sent.headers().get(b"content-type") == ctype
    assert sent.headers()[b"content-length"] == str(len(body)).encode()
    assert sent.body() == body


async def test_a_head_response_has_the_length_but_no_body() -> None:
    sent = Sent()
    await respond(sent, 200, b"12345", content_type=b"application/json", head=True)
    assert sent.headers()[b"content-length"] == b"5" and sent.body() == b""


async def test_the_stream_starts_with_its_first_event_and_ends_with_the_final() -> None:
    sent = Sent()
    stream = EventStream(sent, headers=[(b"mcp-session-id", b"s")])
    assert not stream.started and sent.messages == []
    await stream.send(b'{"n":1}')
    await stream.close(b'{"n":2}')
    assert sent.start["status"] == 200
    headers = sent.headers()
    assert headers[b"content-type"] == b"text/event-stream"
    assert headers[b"x-accel-buffering"] == b"no" and headers[b"mcp-session-id"] == b"s"
    assert b"content-length" not in headers
    parser = SseParser()
    assert parser.feed(sent.body()) == ['{"n":1}', '{"n":2}'] and not parser.pending
    assert sent.messages[-1]["more_body"] is False


async def test_writes_after_close_or_abandon_are_dropped() -> None:
    sent = Sent()
    stream = EventStream(sent)
    await stream.send(b"1")
    await stream.close()
    count = len(sent.messages)
    await stream.send(b"2")
    await stream.close(b"3")
    assert len(sent.messages) == count
    other = Sent()
    gone = EventStream(other)
    gone.abandon()
    await gone.send(b"x")
    assert other.messages == []


async def test_keepalives_come_only_after_each_silent_period() -> None:
    clock = ManualClock()
    sent = Sent()
    stream = EventStream(sent, keepalive=15, sleep=clock.sleep)
    await stream.send(b"{}")
    await clock.until_sleeping()
    await clock.advance(14)
    parser = SseParser()
    parser.feed(sent.body())
    assert parser.comments == 0
    await clock.advance(1)
    await clock.advance(15)
    parser.feed(sent.body()[len(sse_event(b"{}")):])
    assert parser.comments == 2
    await stream.close()
    await clock.advance(60)
    assert clock.sleeping == 0  # the ticker stopped with the stream


async def test_a_keepalive_never_splits_an_event() -> None:
    clock = ManualClock()
    release = asyncio.Event()
    chunks: list[bytes] = []

    async def slow_send(message: dict[str, Any]) -> None:
        if message.get("body") == sse_event(b"big"):
            await release.wait()  # the event is being written...
        chunks.append(message.get("body", b""))

    stream = EventStream(slow_send, keepalive=1, sleep=clock.sleep)
    await stream.open()
    writer = asyncio.ensure_future(stream.send(b"big"))
    await settle()
    await clock.advance(1)  # ...when the keepalive is due: it waits for the lock
    release.set()
    await writer
    await settle()
    assert chunks[1:] == [sse_event(b"big"), b": keepalive\n\n"]
    await stream.close()


async def test_the_watch_reports_a_disconnect_once_and_makes_no_task_for_quick_work() -> None:
    gone: list[bool] = []
    hang_up = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await hang_up.wait()
        return {"type": "http.disconnect"}

    quick = DisconnectWatch(receive, lambda: gone.append(True))
    quick.stop()  # work that never waited: no task was ever made
    assert quick._task is None
    watch = DisconnectWatch(receive, lambda: gone.append(True))
    await settle()
    hang_up.set()
    await settle()
    assert watch.gone and gone == [True]
    watch.stop()


async def test_the_watches_of_one_pass_start_together_and_a_stopped_one_never_starts(
) -> None:
    hang_up = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await hang_up.wait()
        return {"type": "http.disconnect"}

    loop = asyncio.get_running_loop()
    watches = [DisconnectWatch(receive, lambda: None) for _ in range(3)]
    assert asgi._UNSTARTED[loop] == set(watches)  # one set, one callback, for the pass
    watches[1].stop()
    await settle()
    assert loop not in asgi._UNSTARTED
    assert watches[1]._task is None and watches[1]._batch is None
    assert all(w._task is not None and w._batch is None for w in (watches[0], watches[2]))
    later = DisconnectWatch(receive, lambda: None)  # a new pass: a new set
    assert asgi._UNSTARTED[loop] == {later}
    hang_up.set()
    await settle()
    assert watches[0].gone and watches[2].gone and later.gone and not watches[1].gone
    for watch in (*watches, later):
        watch.stop()


async def test_a_timeout_on_the_injected_clock() -> None:
    clock = ManualClock()
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(wait_with_timeout(answer, 30, clock.sleep))
    await clock.until_sleeping()
    await clock.advance(29)
    assert not waiting.done()
    await clock.advance(1)
    with pytest.raises(TimeoutError):
        await waiting
    assert answer.cancelled()
    quick: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    quick.set_result("yes")
    assert await wait_with_timeout(quick, 30, clock.sleep) == "yes"


# -- the one body reader -----------------------------------------------------------------
def pieces(*messages: dict[str, Any]) -> tuple[Any, list[int]]:
    """A ``receive`` that hands out ``messages`` in order, and how many it handed out."""
    taken = [0]

    async def receive() -> dict[str, Any]:
        taken[0] += 1
        return messages[taken[0] - 1]

    return receive, taken


def part(body: bytes, more: bool = True) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


async def test_read_body_joins_the_pieces_up_to_the_limit() -> None:
    receive, taken = pieces(part(b"ab"), part(b""), part(b"cd", more=False))
    assert await read_body(receive, 4) == b"abcd"  # exactly the limit is fine
    assert taken == [3]
    receive, taken = pieces(part(b"cd", more=False))
    assert await read_body(receive, 4, part(b"ab")) == b"abcd"  # the first one given
    assert taken == [1]
    receive, _ = pieces({"type": "http.request"})
    assert await read_body(receive, 4) == b""


async def test_read_body_stops_at_the_limit_and_says_when_the_client_left() -> None:
    receive, taken = pieces(part(b"abc"), part(b"de"), part(b"never read", more=False))
    with pytest.raises(PayloadTooLarge) as raised:
        await read_body(receive, 4)
    assert raised.value.http_status == 413 and taken == [2]  # nothing read past it
    receive, taken = pieces(part(b"ab"), {"type": "http.disconnect"})
    assert await read_body(receive, 4) is None and taken == [2]
    receive, _ = pieces()
    assert await read_body(receive, 4, {"type": "http.disconnect"}) is None


def test_streamable_http_and_the_auth_middleware_share_the_body_reader() -> None:
    """One copy of body buffering (issue 25): the endpoint and the bearer middleware
    both read a body in pieces through ``read_body``."""
    import inspect

    from mcpcore.auth.server import resource_server
    from mcpcore.transports import http

    for module in (http, resource_server):
        source = inspect.getsource(module)
        assert "read_body(receive" in source
        assert source.count("more_body") <= 1, module.__name__  # no loop of its own
