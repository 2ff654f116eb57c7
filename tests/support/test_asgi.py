"""The exchange driver's httpx transport behaves as a client talking to uvicorn would:
closing a response hangs up without eating the caller's cancellation, an app that ends
early is a closed connection, an app's own exception reaches the test."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.support import asgi
from tests.support.asgi import ExchangeTransport

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

    transport = ExchangeTransport(lingers)
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

    transport = ExchangeTransport(listens)
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

    transport = ExchangeTransport(done_then_listens)
    async with httpx.AsyncClient(transport=transport) as http:
        await http.post(URL)  # reads to the end; nobody hangs up
        await asyncio.wait_for(asyncio.shield(transport.exchanges[0].task), 2)
    assert seen == ["http.disconnect"]


async def test_an_app_deaf_to_the_hang_up_is_cancelled(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setattr(asgi, "CLOSE_GRACE", 0.05)
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

    transport = ExchangeTransport(deaf)
    async with httpx.AsyncClient(transport=transport) as http, \
            http.stream("POST", URL) as response:
        async for _ in response.aiter_raw():
            break
        await response.aclose()
        assert cancelled.is_set() and transport.exchanges[0].sent_after_hang_up > 0


async def test_an_app_that_returns_without_a_response_is_a_closed_connection() -> None:
    async def silent(scope: Any, receive: Any, send: Any) -> None:
        await receive()

    async with httpx.AsyncClient(transport=ExchangeTransport(silent)) as http:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await http.post(URL)


async def test_an_app_that_returns_mid_body_is_a_closed_connection() -> None:
    async def cut(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await start(send, body=b"data: {\"jsonrpc\"")

    async with httpx.AsyncClient(transport=ExchangeTransport(cut)) as http, \
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

    async with httpx.AsyncClient(transport=ExchangeTransport(broken)) as http:
        with pytest.raises(LookupError, match=when):
            await http.post(URL)
