"""The pool's lean lane (``Pool.send_lean``, httptools) against a raw HTTP/1.1 server on
loopback: what ``test_pool.py`` holds for the h11 lane holds here (keep-alive, stale
connections, streamed bodies, early close, never sending twice), plus the framings
and hostile heads the lane parses itself; and ``HttpTransport`` takes the lane without
building an httpx request per call."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from mcpcore.client.errors import HttpError, TransportError
from mcpcore.client.http import HeaderAuth, HttpTransport
from mcpcore.client.pool import MAX_HEAD_BYTES, Pool
from tests.client.test_pool import Counting, keep_alive, ok, raw_server, read_request

pytest.importorskip("httptools")


async def send(pool: Pool, port: int, body: bytes = b"{}", **headers: str
               ) -> tuple[int, dict[str, str], bytes]:
    response = await pool.send_lean("POST", httpx.URL(f"http://127.0.0.1:{port}/mcp"),
                                    headers, body, connect_timeout=5, read_timeout=5)
    try:
        data = b"".join([chunk async for chunk in response.aiter_bytes()])
    finally:
        await response.aclose()
    return response.status_code, dict(response.headers), data


async def test_connections_are_kept_alive_and_reused() -> None:
    pool = Pool()
    async with raw_server(keep_alive) as server:
        for _ in range(5):
            status, headers, body = await send(pool, server.port)
            assert (status, body) == (200, b'{"ok": true}')
            assert headers["content-type"] == "application/json"
    await pool.aclose()
    assert server.connections == 1


async def test_the_request_is_written_as_given_with_host_and_length() -> None:
    seen: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(ok())
        await writer.drain()

    pool = Pool()
    async with raw_server(record) as server:
        await send(pool, server.port, b'{"a":1}', **{"Mcp-Method": "tools/call"})
    await pool.aclose()
    head, _, body = seen[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /mcp HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}".encode() in lines
    assert b"Mcp-Method: tools/call" in lines
    assert b"Content-Length: 7" in lines
    assert body == b'{"a":1}'


@pytest.mark.parametrize("name, value", [("X-Bad", "a\r\nInjected: yes"), ("X-Bad", "a\nb"),
                                         ("X-Bad", "a\x00b"), ("Bad Name", "v"),
                                         ("Host", "elsewhere.example")])
async def test_a_header_that_could_split_the_request_is_refused_before_sending(
        name: str, value: str) -> None:
    async with raw_server(keep_alive) as server:
        pool = Pool()
        with pytest.raises(httpx.LocalProtocolError):
            await send(pool, server.port, **{name: value})
        await pool.aclose()
    assert server.connections == 0


async def test_informational_responses_are_skipped() -> None:
    async def continues(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
                     + ok())
        await writer.drain()
        await read_request(reader)
        writer.write(ok(b"[]"))
        await writer.drain()

    pool = Pool()
    async with raw_server(continues) as server:
        status, headers, body = await send(pool, server.port)
        assert (status, body) == (200, b'{"ok": true}')
        assert "link" not in headers
        assert (await send(pool, server.port))[2] == b"[]"  # and the connection reused
    await pool.aclose()
    assert server.connections == 1


async def test_chunked_event_streams_arrive_as_sent() -> None:
    gate = asyncio.Event()

    async def sse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        first = b'data: {"n": 1}\n\n'
        writer.write(b"%x\r\n%s\r\n" % (len(first), first))
        await writer.drain()
        await gate.wait()
        second = b'data: {"n": 2}\n\n'
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(second), second))
        await writer.drain()
        await read_request(reader)
        writer.write(ok())
        await writer.drain()

    pool = Pool()
    async with raw_server(sse) as server:
        response = await pool.send_lean("POST", httpx.URL(f"http://127.0.0.1:{server.port}/"),
                                        {}, b"{}", connect_timeout=5, read_timeout=5)
        chunks = response.aiter_bytes()
        assert await anext(chunks) == b'data: {"n": 1}\n\n'  # before the second exists
        gate.set()
        assert b"".join([chunk async for chunk in chunks]) == b'data: {"n": 2}\n\n'
        assert (await send(pool, server.port))[0] == 200
    await pool.aclose()
    assert server.connections == 1


async def test_a_body_delimited_by_the_close_is_read_and_the_connection_not_kept() -> None:
    async def close_delimited(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                              ) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"x\": 1}")
        await writer.drain()
        writer.close()

    pool = Pool()
    async with raw_server(close_delimited) as server:
        assert (await send(pool, server.port))[2] == b'{"x": 1}'
        assert (await send(pool, server.port))[2] == b'{"x": 1}'
    await pool.aclose()
    assert server.connections == 2


async def test_a_framed_body_cut_short_is_an_error() -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"x\"")
        await writer.drain()
        writer.close()

    pool = Pool()
    async with raw_server(cut) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            await send(pool, server.port)
    await pool.aclose()


@pytest.mark.parametrize("reply", [
    b"SMTP ready\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nX: " + b"a" * (MAX_HEAD_BYTES + 10),  # a head that never ends
])
async def test_garbage_and_oversized_heads_are_remote_protocol_errors(reply: bytes) -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(reply)
        await writer.drain()
        await asyncio.sleep(1)

    pool = Pool()
    async with raw_server(garbage) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            await send(pool, server.port)
    await pool.aclose()


async def test_a_content_coding_it_did_not_ask_for_is_refused() -> None:
    async def gzipped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        assert b"accept-encoding" not in request.lower()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n"
                     b"\r\n{}")
        await writer.drain()

    pool = Pool()
    async with raw_server(gzipped) as server:
        with pytest.raises(httpx.DecodingError):
            await send(pool, server.port)
    await pool.aclose()


async def test_bytes_after_the_response_leave_its_connection_unused() -> None:
    async def trailing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(ok() + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await read_request(reader)
        writer.write(ok())
        await writer.drain()

    pool = Pool()
    async with raw_server(trailing) as server:
        assert (await send(pool, server.port))[2] == b'{"ok": true}'
        assert (await send(pool, server.port))[2] == b'{"ok": true}'
    await pool.aclose()
    assert server.connections == 2


async def test_a_body_left_unread_closes_its_connection_and_frees_the_slot() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n5\r\n: hi\n\r\n")
        await writer.drain()
        await reader.read()

    pool = Pool(max_connections=1)
    async with raw_server(endless) as server:
        for _ in range(3):  # with one slot, a leaked slot would block the second round
            async with asyncio.timeout(5):
                response = await pool.send_lean(
                    "POST", httpx.URL(f"http://127.0.0.1:{server.port}/"), {}, b"{}",
                    connect_timeout=5, read_timeout=5)
                await anext(response.aiter_bytes())
                await response.aclose()
    await pool.aclose()
    assert server.connections == 3


async def test_a_request_the_server_read_is_never_sent_again() -> None:
    seen = Counting()

    async def answer_once_then_drop(reader: asyncio.StreamReader,
                                    writer: asyncio.StreamWriter) -> None:
        seen.per_connection.append(0)
        while True:
            await read_request(reader)
            seen.requests += 1
            seen.per_connection[-1] += 1
            if seen.requests == 2:
                return
            writer.write(ok())
            await writer.drain()

    pool = Pool()
    async with raw_server(answer_once_then_drop) as server:
        assert (await send(pool, server.port))[0] == 200
        with pytest.raises(httpx.ReadError):
            await send(pool, server.port)
        await asyncio.sleep(0.1)
    await pool.aclose()
    assert seen.requests == 2
    assert seen.per_connection == [2]


async def test_a_kept_alive_connection_the_server_closed_is_replaced_before_the_write(
        ) -> None:
    seen = Counting()
    closed = asyncio.Event()

    async def answer_then_close(reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        seen.per_connection.append(0)
        await read_request(reader)
        seen.requests += 1
        seen.per_connection[-1] += 1
        writer.write(ok())
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        closed.set()

    pool = Pool()
    async with raw_server(answer_then_close) as server:
        assert (await send(pool, server.port))[0] == 200
        await closed.wait()
        assert (await send(pool, server.port))[0] == 200
    await pool.aclose()
    assert seen.per_connection == [1, 1]


async def test_a_silent_server_is_a_read_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    pool = Pool()
    async with raw_server(silent) as server:
        with pytest.raises(httpx.ReadTimeout):
            await pool.send_lean("POST", httpx.URL(f"http://127.0.0.1:{server.port}/"), {},
                                 b"{}", connect_timeout=5, read_timeout=0.2)
    await pool.aclose()


# -- HttpTransport on the lane ----------------------------------------------------------


class Bearer(HeaderAuth):
    def __init__(self, token: str) -> None:
        self.token = token
        self.applied = 0

    async def apply(self, headers: dict[str, str]) -> None:
        self.applied += 1
        for name in [n for n in headers if n.lower() == "authorization"]:
            del headers[name]
        headers["Authorization"] = f"Bearer {self.token}"


class Flow(httpx.Auth):
    """A general httpx flow: only httpx's own path can run it."""

    async def async_auth_flow(self, request: httpx.Request) -> Any:
        request.headers["Authorization"] = "Bearer from-flow"
        yield request


def no_httpx_requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []
    original = httpx.AsyncClient.build_request

    def build_request(self: httpx.AsyncClient, method: str, url: Any, **kw: Any
                      ) -> httpx.Request:
        built.append(method)
        return original(self, method, url, **kw)

    monkeypatch.setattr(httpx.AsyncClient, "build_request", build_request)
    return built


@pytest.mark.parametrize("auth", [None, "header"])
async def test_the_transport_takes_the_lane_with_no_httpx_request_per_call(
        monkeypatch: pytest.MonkeyPatch, auth: str | None) -> None:
    seen: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            seen.append(await read_request(reader))
            writer.write(ok())
            await writer.drain()

    built = no_httpx_requests(monkeypatch)
    bearer = Bearer("upstream-token") if auth else None
    async with raw_server(record) as server:
        transport = HttpTransport(f"http://127.0.0.1:{server.port}/mcp", auth=bearer,
                                  headers={"Authorization": "Bearer never-sent"})
        await transport.open()
        try:
            for _ in range(3):
                async with transport.exchange("POST", body=b"{}", headers={"X-A": "1"},
                                              timeout=5, what="test") as exchange:
                    assert [m async for m in exchange.messages()] == [{"ok": True}]
                    assert exchange.headers.get("Content-Type") == "application/json"
        finally:
            await transport.close()
    assert built == []  # no httpx request model per call
    assert server.connections == 1
    if bearer is not None:
        assert bearer.applied == 3
        assert all(b"Authorization: Bearer upstream-token" in r for r in seen)
        assert not any(b"never-sent" in r for r in seen)


async def test_a_general_auth_flow_keeps_httpx_s_path(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    seen: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            seen.append(await read_request(reader))
            writer.write(ok())
            await writer.drain()

    built = no_httpx_requests(monkeypatch)
    async with raw_server(record) as server:
        transport = HttpTransport(f"http://127.0.0.1:{server.port}/mcp", auth=Flow())
        await transport.open()
        try:
            async with transport.exchange("POST", body=b"{}", headers={}, timeout=5,
                                          what="test") as exchange:
                assert [m async for m in exchange.messages()] == [{"ok": True}]
        finally:
            await transport.close()
    assert built == ["POST"]
    assert b"Bearer from-flow" in seen[0].replace(b"authorization", b"Authorization")


async def test_lane_failures_map_to_the_client_errors() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 500 Oops\r\nContent-Length: 5\r\n\r\nnope!")
        await writer.drain()

    async with raw_server(garbage) as server:
        transport = HttpTransport(f"http://127.0.0.1:{server.port}/mcp")
        await transport.open()
        try:
            with pytest.raises(HttpError) as caught:
                async with transport.exchange("POST", body=b"{}", headers={}, timeout=5,
                                              what="tools/call"):
                    pass
            assert caught.value.status == 500
            assert "Oops" in str(caught.value) and "nope!" in str(caught.value)
        finally:
            await transport.close()
        transport = HttpTransport("http://127.0.0.1:9/mcp")
        await transport.open()
        try:
            with pytest.raises(TransportError):
                async with transport.exchange("POST", body=b"{}", headers={}, timeout=5,
                                              what="tools/call"):
                    pass
        finally:
            await transport.close()


async def test_an_idle_connection_is_not_reused_as_the_server_s_idle_timeout_nears(
        ) -> None:
    # uvicorn (and Node) close a connection idle for 5 s; one reused at 4.9 s races the
    # server's close, and the request fails (it is never sent twice). The pool retires
    # idle connections before that.
    from tests.support.clock import ManualClock

    clock = ManualClock()
    pool = Pool(clock=clock)
    async with raw_server(keep_alive) as server:
        await send(pool, server.port)
        clock.now += 4.5
        await send(pool, server.port)
        await send(pool, server.port)  # right after: reused
    await pool.aclose()
    assert server.connections == 2
