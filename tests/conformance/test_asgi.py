"""``mcpcore.conformance.asgi``: the streaming httpx transport in front of an in-process
ASGI app behaves as a client talking to uvicorn would: closing a response hangs up
without eating the caller's cancellation, an app that ends early is a closed connection,
an app's own exception reaches the test (or, served as uvicorn serves it, is a 500 or a
cut), repeated response headers arrive, and the transport holds no finished exchange."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from mcpcore.conformance.asgi import HIGH_WATER, StreamingASGITransport, lifespan

URL = "http://localhost/mcp"


async def start(send: Any, *, more: bool = True, body: bytes = b"") -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    if body or not more:
        await send({"type": "http.response.body", "body": body, "more_body": more})


async def test_closing_a_response_keeps_the_callers_cancellation() -> None:
    """httpx closes a stream read to its end in the reader's own task; the close waits
    for the app. A cancellation arriving then must cancel the reader (a swallowed one
    left a client's reconnect loop running for ever)."""
    release = asyncio.Event()

    async def lingers(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await start(send, more=False, body=b"data: {}\n\n")
        await release.wait()  # still cleaning up after the response

    transport = StreamingASGITransport(lingers, record=True)
    async with httpx.AsyncClient(transport=transport) as http:
        async def read() -> bytes:
            async with http.stream("POST", URL) as response:
                return await response.aread()

        reader = asyncio.ensure_future(read())
        exchange = None
        while exchange is None or not exchange.hung_up:  # the reader is closing
            await asyncio.sleep(0)
            exchange = transport.exchanges[0] if transport.exchanges else None
        for _ in range(3):  # past hang_up's own yield: into the wait for the app
            await asyncio.sleep(0)
        assert not reader.done()
        reader.cancel()
        await asyncio.wait((reader,), timeout=2)
        assert reader.cancelled()
        release.set()


async def test_closing_a_response_hangs_up_and_waits_for_the_app() -> None:
    seen: list[str] = []

    async def listens(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await start(send, body=b"data: {}\n\n")
        seen.append((await receive())["type"])

    transport = StreamingASGITransport(listens, record=True)
    async with httpx.AsyncClient(transport=transport) as http, \
            http.stream("POST", URL) as response:
        async for chunk in response.aiter_raw():
            assert chunk == b"data: {}\n\n"
            break
        await response.aclose()
        assert seen == ["http.disconnect"] and transport.exchanges[0].task.done()


async def test_receive_reports_the_disconnect_once_the_response_is_complete() -> None:
    seen: list[str] = []

    async def done_then_listens(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await start(send, more=False, body=b"data: {}\n\n")
        seen.append((await receive())["type"])  # as uvicorn: nothing more can come

    transport = StreamingASGITransport(done_then_listens, record=True)
    async with httpx.AsyncClient(transport=transport) as http:
        await http.post(URL)  # reads to the end; nobody hangs up
        await asyncio.wait_for(asyncio.shield(transport.exchanges[0].task), 2)
    assert seen == ["http.disconnect"]


async def test_an_app_deaf_to_the_hang_up_is_cancelled() -> None:
    cancelled = asyncio.Event()

    async def deaf(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await start(send)
        try:
            while True:
                await send({"type": "http.response.body", "body": b": keep-alive\n\n",
                            "more_body": True})
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    transport = StreamingASGITransport(deaf, close_grace=0.05, record=True)
    async with httpx.AsyncClient(transport=transport) as http, \
            http.stream("POST", URL) as response:
        async for _ in response.aiter_raw():
            break
        await response.aclose()
        assert cancelled.is_set() and transport.exchanges[0].sent_after_hang_up > 0


async def test_an_app_that_returns_without_a_response_is_a_closed_connection() -> None:
    async def silent(scope: Any, receive: Any, send: Any) -> None:
        await receive()

    async with httpx.AsyncClient(transport=StreamingASGITransport(silent)) as http:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await http.post(URL)


async def test_an_app_that_returns_mid_body_is_a_closed_connection() -> None:
    async def cut(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await start(send, body=b"data: {\"jsonrpc\"")

    async with httpx.AsyncClient(transport=StreamingASGITransport(cut)) as http, \
            http.stream("POST", URL) as response:
        with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
            await response.aread()


@pytest.mark.parametrize("when", ["before the response", "mid-body", "after the body"])
async def test_an_apps_own_exception_reaches_the_test(when: str) -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        if when != "before the response":
            await start(send, more=when == "mid-body", body=b"data: {}\n\n")
        raise LookupError(when)

    async with httpx.AsyncClient(transport=StreamingASGITransport(broken)) as http:
        with pytest.raises(LookupError, match=when):
            await http.post(URL)


@pytest.mark.parametrize("when", ["raises before the response", "returns without one"])
async def test_served_as_uvicorn_an_app_failing_before_its_response_is_a_500(when: str
                                                                            ) -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        if when.startswith("raises"):
            raise LookupError(when)

    transport = StreamingASGITransport(broken, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport) as http:
        response = await http.post(URL)
    assert (response.status_code, response.text) == (500, "Internal Server Error")


async def test_served_as_uvicorn_an_app_failing_mid_body_is_a_cut_connection() -> None:
    async def half(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await start(send, body=b"data: {}\n\n")
        raise LookupError("mid-body")

    transport = StreamingASGITransport(half, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport) as http:
        with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
            await http.post(URL)
    assert transport.held == 0  # closing the client raised nothing either


async def test_repeated_response_headers_all_arrive() -> None:
    """RFC 9110 section 5.3: a field may be sent more than once (two challenges in two
    WWW-Authenticate fields, RFC 9449 section 7.1 beside RFC 6750's Bearer); a mapping
    of the headers kept only the last."""
    async def challenges(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"www-authenticate", b'Bearer resource_metadata="https://rs/prm"'),
            (b"www-authenticate", b'DPoP algs="ES256"')]})
        await send({"type": "http.response.body", "body": b""})

    async with httpx.AsyncClient(transport=StreamingASGITransport(challenges)) as http:
        response = await http.post(URL)
    assert response.headers.get_list("www-authenticate") == [
        'Bearer resource_metadata="https://rs/prm"', 'DPoP algs="ES256"']


async def test_the_scope_is_what_the_request_says() -> None:
    scopes: list[dict[str, Any]] = []

    async def echo(scope: Any, receive: Any, send: Any) -> None:
        scopes.append(scope)
        await receive()
        await start(send, more=False)

    async with httpx.AsyncClient(transport=StreamingASGITransport(echo)) as http:
        await http.post("https://example.test:8443/a%2Fb/mcp?x=1", headers={"X-Y": "z"})
    (scope,) = scopes
    assert (scope["scheme"], scope["server"], scope["path"], scope["raw_path"],
            scope["query_string"]) == ("https", ("example.test", 8443), "/a/b/mcp",
                                       b"/a%2Fb/mcp", b"x=1")
    assert (b"x-y", b"z") in scope["headers"]
    assert (b"host", b"example.test:8443") in scope["headers"]


async def test_the_transport_holds_no_finished_exchange_nor_a_read_chunk() -> None:
    """An audit makes thousands of requests through one transport, and a listen stream
    may run long: neither the exchanges nor the chunks read stay in memory, and an app
    sending faster than the client reads waits at ``HIGH_WATER`` (counted in bytes)."""
    seen: list[Any] = []  # each exchange, as its app sees it (``receive``'s owner)
    unread: list[int] = []

    async def streams(scope: Any, receive: Any, send: Any) -> None:
        exchange = receive.__self__
        seen.append(exchange)
        await receive()
        await start(send)
        for _ in range(200):
            await send({"type": "http.response.body", "body": b"x" * 1024,
                        "more_body": True})
            unread.append(exchange.unread)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    transport = StreamingASGITransport(streams)
    async with httpx.AsyncClient(transport=transport) as http:
        for _ in range(20):
            assert len((await http.post(URL)).content) == 200 * 1024
        assert transport.held == 0 and transport.exchanges == []
    assert len(seen) == 20 and all(e.task.done() and e.chunks == [] for e in seen)
    assert len(unread) == 20 * 200 and max(unread) <= HIGH_WATER


async def test_an_app_waiting_at_the_high_water_mark_is_released_by_a_hang_up() -> None:
    sent: list[int] = []

    async def floods(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await start(send)
        for n in range(1000):
            await send({"type": "http.response.body", "body": b"x" * 1024,
                        "more_body": True})
            sent.append(n)

    transport = StreamingASGITransport(floods, record=True)
    async with httpx.AsyncClient(transport=transport) as http, \
            http.stream("POST", URL) as response:
        await transport.exchanges[0].wait_for(lambda: len(sent) >= 64)
        assert len(sent) <= HIGH_WATER // 1024 + 1  # waiting: nobody reads
        await response.aclose()
        assert transport.exchanges[0].task.done()
    assert len(sent) == 1000 and transport.exchanges[0].sent_after_hang_up > 900


async def test_the_lifespan_runs_around_a_block_and_a_failed_startup_raises() -> None:
    async def no_lifespan(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("no lifespan")

    async with lifespan(no_lifespan):
        pass

    async def failing_startup(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "lifespan.startup.failed", "message": "no db"})

    with pytest.raises(RuntimeError, match="no db"):
        async with lifespan(failing_startup):
            pass
