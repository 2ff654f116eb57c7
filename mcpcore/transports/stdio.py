"""stdio: newline-delimited JSON-RPC over stdin/stdout, the same engine as HTTP.

Reads stdin continuously and serves requests concurrently (cancellation and listen
streams need that); every message we write is one compact line, written whole and
flushed. Nothing but MCP messages ever reaches stdout: logs go to stderr (R6.1).
``notifications/cancelled {requestId}`` cancels that request's task, after which nothing
more is sent for it (R6.4). EOF on stdin ends the loop once in-flight work is done or
cancelled (R6.5).

There is no header layer: everything the request needs is in ``_meta`` (R6.2).
``Server.handle`` is called with ``headers=None``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from mcpcore import jsonrpc
from mcpcore.errors import InternalError, McpError, PayloadTooLarge
from mcpcore.jsonrpc import Limits, Notification, Request, Response
from mcpcore.principal import ANONYMOUS, Principal
from mcpcore.server import Server

log = logging.getLogger("mcpcore.stdio")

LineWriter = Callable[[bytes], Awaitable[None]]


class StdioSession:
    """Serve one byte stream pair. Sans-I/O at heart: feed lines, get written lines.

    ``feed_line`` may be driven by any reader; ``run`` wires it to real stdin/stdout.
    """

    def __init__(self, server: Server, write: LineWriter, *,
                 limits: Limits = jsonrpc.DEFAULT_LIMITS,
                 principal: Principal = ANONYMOUS, legacy: Any = None) -> None:
        self.server = server
        self._write_raw = write
        self.limits = limits
        self.principal = principal
        self.legacy = legacy
        self._lock = asyncio.Lock()
        self._inflight: dict[jsonrpc.RequestId, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def write(self, message: bytes) -> None:
        # One message, one atomic line (R6.8).
        async with self._lock:
            await self._write_raw(message + b"\n")

    async def feed_line(self, line: bytes) -> None:
        line = line.strip(b" \t\r\n")
        if not line:
            return
        try:
            message = jsonrpc.decode_message(line, self.limits)
        except McpError as exc:
            if _looks_like_notification(line):
                # Never answer a notification, even a malformed one (T35).
                log.warning("dropped a malformed notification: %s", exc.message)
                return
            await self.write(jsonrpc.encode_error(jsonrpc.peek_id(line), exc))
            return
        if self.legacy is not None and self.legacy.claims(message, None):
            await self.legacy.feed(self, message)
            return
        if isinstance(message, Notification):
            self._on_notification(message)
            return
        if isinstance(message, Response):
            return  # we send no requests in the modern era; ignore (R1.8)
        if message.id in self._inflight:
            await self.write(jsonrpc.encode_error(
                message.id, McpError("Request id is already in use by an unfinished request")))
            return
        self._track(message.id, asyncio.ensure_future(self._serve(message)))

    def _track(self, request_id: jsonrpc.RequestId, task: asyncio.Task[None]) -> None:
        self._inflight[request_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._forget(request_id))

    def spawn(self, request_id: jsonrpc.RequestId, work: Awaitable[bytes]) -> None:
        """Run ``work`` concurrently and write the response it returns (legacy shim)."""
        async def run() -> None:
            try:
                payload = await work
            except asyncio.CancelledError:
                return
            await self.write(payload)

        self._track(request_id, asyncio.ensure_future(run()))

    def _forget(self, request_id: jsonrpc.RequestId) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            self._tasks.discard(task)
            if self._inflight.get(request_id) is task:
                del self._inflight[request_id]

        return done

    def _on_notification(self, message: Notification) -> None:
        if message.method != "notifications/cancelled" or message.params is None:
            return
        try:
            params = jsonrpc.decode_any(message.params)
        except Exception:
            return  # invalid cancellation notifications are ignored (R10.23)
        request_id = params.get("requestId") if isinstance(params, dict) else None
        task = self._inflight.get(request_id) if isinstance(request_id, (int, str)) else None
        if task is not None:
            task.cancel()

    async def _serve(self, request: Request) -> None:
        async def sink(message: bytes) -> None:
            await self.write(message)

        try:
            result = await self.server.handle(request, principal=self.principal, sink=sink)
            payload = jsonrpc.encode_result(request.id, result)
        except McpError as exc:
            payload = jsonrpc.encode_error(request.id, exc)
        except asyncio.CancelledError:
            return  # cancelled: no response (R6.4)
        except Exception:
            log.exception("internal error in %s", request.method)
            payload = jsonrpc.encode_error(request.id, InternalError())
        await self.write(payload)

    async def drain(self) -> None:
        """Wait for every in-flight request to finish."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        if self.legacy is not None:
            await self.legacy.aclose()

    async def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await self.drain()


def _looks_like_notification(line: bytes) -> bool:
    try:
        value = jsonrpc.decode_any(line)
    except Exception:
        return False
    return isinstance(value, dict) and isinstance(value.get("method"), str) and (
        "id" not in value)


async def serve_stdio(server: Server, *, stdin: BinaryIO | None = None,
                      stdout: BinaryIO | None = None,
                      limits: Limits = jsonrpc.DEFAULT_LIMITS,
                      principal: Principal = ANONYMOUS, legacy: Any = True) -> None:
    """Serve ``server`` over this process's stdin/stdout until stdin closes.

    ``legacy=True`` (the default) lets an ``initialize`` switch the process into the
    legacy era (2025-11-25 and older clients); ``False`` serves modern requests only.
    """
    if legacy is True:
        from mcpcore.transports.legacy import StdioLegacy

        legacy = StdioLegacy(server)
    loop = asyncio.get_running_loop()
    in_stream = stdin or sys.stdin.buffer
    out_stream = stdout or sys.stdout.buffer
    reader = asyncio.StreamReader(limit=limits.max_body_bytes + 1)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), in_stream)

    async def write(data: bytes) -> None:
        # Blocking writes of one line are short; run them off the loop to stay responsive.
        await loop.run_in_executor(None, _write_flush, out_stream, data)

    session = StdioSession(server, write, limits=limits, principal=principal,
                           legacy=legacy or None)
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if exc.partial.strip():
                await session.feed_line(exc.partial)
            break
        except asyncio.LimitOverrunError:
            # An oversized line: drop it whole and answer once, id unknown.
            with contextlib.suppress(Exception):
                await _skip_line(reader)
            await session.write(jsonrpc.encode_error(None, PayloadTooLarge(
                f"Message exceeds {limits.max_body_bytes} bytes")))
            continue
        await session.feed_line(line)
    # stdin closed: the client is gone (R6.5). Listen streams would never end on their
    # own, so close them gracefully; then let in-flight requests finish.
    await server.subscriptions.close()
    await session.drain()
    await session.aclose()


async def _skip_line(reader: asyncio.StreamReader) -> None:
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)


def _write_flush(stream: BinaryIO, data: bytes) -> None:
    stream.write(data)
    stream.flush()


def run_stdio(server: Server, **kwargs: Any) -> None:
    """Blocking entry point: ``python -m examples.NAME --stdio``."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_stdio(server, **kwargs))


__all__ = ["StdioSession", "run_stdio", "serve_stdio"]
