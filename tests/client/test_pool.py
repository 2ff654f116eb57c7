"""``mcpcore.client.pool.Pool`` against a raw HTTP/1.1 server on loopback: keep-alive,
stale connections, streamed chunked bodies, early close, limits, errors."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import pytest

from mcpcore.client.pool import Pool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class RawServer:
    port: int = 0
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + (await reader.readexactly(length) if length else b"")


@contextlib.asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[RawServer]:
    state = RawServer()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        state.open_now += 1
        state.most_open = max(state.most_open, state.open_now)
        try:
            await handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            state.open_now -= 1
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    async with server:
        yield state


def ok(body: bytes = b'{"ok": true}') -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        await read_request(reader)
        writer.write(ok())
        await writer.drain()


async def test_connections_are_kept_alive_and_reused() -> None:
    async with raw_server(keep_alive) as server, \
            httpx.AsyncClient(transport=Pool()) as client:
        for _ in range(5):
            response = await client.post(f"http://127.0.0.1:{server.port}/mcp", content=b"{}")
            assert response.json() == {"ok": True}
    assert server.connections == 1


async def test_a_connection_the_server_closed_is_replaced() -> None:
    async def once_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                              ) -> None:
        await read_request(reader)
        writer.write(ok())
        await writer.drain()

    async with raw_server(once_then_close) as server, \
            httpx.AsyncClient(transport=Pool()) as client:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert (await client.post(url, content=b"{}")).status_code == 200
        await asyncio.sleep(0.05)  # the server has closed its end by now
        assert (await client.post(url, content=b"{}")).status_code == 200
    assert server.connections == 2


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
        await read_request(reader)  # the connection is reused for the next request
        writer.write(ok())
        await writer.drain()

    async with raw_server(sse) as server, httpx.AsyncClient(transport=Pool()) as client:
        url = f"http://127.0.0.1:{server.port}/mcp"
        async with client.stream("POST", url, content=b"{}") as response:
            chunks = response.aiter_bytes()
            assert await anext(chunks) == b'data: {"n": 1}\n\n'  # before the second exists
            gate.set()
            assert b"".join([chunk async for chunk in chunks]) == b'data: {"n": 2}\n\n'
        assert (await client.post(url, content=b"{}")).json() == {"ok": True}
    assert server.connections == 1


async def test_a_body_left_unread_closes_its_connection_and_frees_the_slot() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n5\r\n: hi\n\r\n")
        await writer.drain()
        await reader.read()  # until the client goes away

    async with raw_server(endless) as server, \
            httpx.AsyncClient(transport=Pool(max_connections=1)) as client:
        url = f"http://127.0.0.1:{server.port}/mcp"
        for _ in range(3):  # with one slot, a leaked slot would block the second round
            async with asyncio.timeout(5), client.stream("POST", url, content=b"{}") as r:
                await anext(r.aiter_bytes())
    assert server.connections == 3


async def test_max_connections_bounds_what_is_open() -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            await asyncio.sleep(0.05)
            writer.write(ok())
            await writer.drain()

    async with raw_server(slow) as server, \
            httpx.AsyncClient(transport=Pool(max_connections=2)) as client:
        url = f"http://127.0.0.1:{server.port}/mcp"
        responses = await asyncio.gather(*(client.post(url, content=b"{}") for _ in range(6)))
    assert all(r.status_code == 200 for r in responses)
    assert server.most_open <= 2


async def test_refused_and_silent_servers_raise_httpx_errors() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async with httpx.AsyncClient(transport=Pool()) as client:
        with pytest.raises(httpx.ConnectError):
            await client.post("http://127.0.0.1:9/mcp", content=b"{}")
        async with raw_server(silent) as server:
            with pytest.raises(httpx.ReadTimeout):
                await client.post(f"http://127.0.0.1:{server.port}/mcp", content=b"{}",
                                  timeout=httpx.Timeout(0.2))


async def test_garbage_is_a_remote_protocol_error() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"SMTP ready\r\n\r\n")
        await writer.drain()

    async with raw_server(garbage) as server, httpx.AsyncClient(transport=Pool()) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.post(f"http://127.0.0.1:{server.port}/mcp", content=b"{}")


# -- never sending a request twice ---------------------------------------------------------


@dataclass
class Counting:
    """A server that counts the complete requests it received, per connection."""

    requests: int = 0
    per_connection: list[int] = field(default_factory=list)


async def test_a_request_the_server_read_is_never_sent_again() -> None:
    # The second request goes out on the kept-alive connection; the server reads it
    # (it may run the tool) and drops the connection before answering. Sending it again
    # on a fresh connection would run it twice: the caller gets an error instead.
    seen = Counting()

    async def answer_once_then_drop(reader: asyncio.StreamReader,
                                    writer: asyncio.StreamWriter) -> None:
        seen.per_connection.append(0)
        while True:
            await read_request(reader)
            seen.requests += 1
            seen.per_connection[-1] += 1
            if seen.requests == 2:
                return  # read, acted on, and closed without an answer
            writer.write(ok())
            await writer.drain()

    async with raw_server(answer_once_then_drop) as server, \
            httpx.AsyncClient(transport=Pool()) as client:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert (await client.post(url, content=b'{"method": "tools/call"}')).status_code == 200
        with pytest.raises(httpx.ReadError):
            await client.post(url, content=b'{"method": "tools/call"}')
        await asyncio.sleep(0.1)  # a resend, if there were one, would have arrived
    assert seen.requests == 2
    assert seen.per_connection == [2]


async def test_a_kept_alive_connection_closed_before_the_write_is_not_used() -> None:
    # The server closes its end after answering; the client's next request must not go
    # out on that connection at all (checked before the write), so it is sent once, on a
    # new connection, and succeeds.
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

    async with raw_server(answer_then_close) as server, \
            httpx.AsyncClient(transport=Pool()) as client:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert (await client.post(url, content=b"{}")).status_code == 200
        await closed.wait()
        assert (await client.post(url, content=b"{}")).status_code == 200
    assert seen.requests == 2
    assert seen.per_connection == [1, 1]


async def test_a_write_that_fails_on_a_kept_alive_connection_is_sent_once_more() -> None:
    # A write that fails never reached the server: the one case, besides a connection
    # found closed before the write, where a fresh connection gets the request.
    seen = Counting()

    async def keep_alive_counting(reader: asyncio.StreamReader,
                                  writer: asyncio.StreamWriter) -> None:
        seen.per_connection.append(0)
        while True:
            await read_request(reader)
            seen.requests += 1
            seen.per_connection[-1] += 1
            writer.write(ok())
            await writer.drain()

    pool = Pool()
    async with raw_server(keep_alive_counting) as server, \
            httpx.AsyncClient(transport=pool) as client:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert (await client.post(url, content=b"{}")).status_code == 200
        [connection] = [c for idle in pool._idle.values() for c in idle]

        def broken_write(data: bytes) -> None:
            raise ConnectionResetError("reset by peer")

        connection.writer.write = broken_write  # type: ignore[method-assign]
        assert (await client.post(url, content=b"{}")).status_code == 200
    assert seen.requests == 2
    assert seen.per_connection == [1, 1]
