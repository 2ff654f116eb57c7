"""stdio: newline-delimited JSON-RPC over stdin/stdout, the same engine as HTTP.

Reads stdin continuously and serves requests concurrently (cancellation and listen
streams need that); every message we write is one compact line, written whole and
flushed. Nothing but MCP messages ever reaches stdout: logs go to stderr.
``notifications/cancelled {requestId}`` cancels that request's task, after which nothing
more is sent for it. EOF on stdin ends the loop once in-flight work is done or
cancelled (stdio.mdx: "Cancellation", "Shutdown").

There is no header layer: everything the request needs is in ``_meta`` (stdio.mdx,
"Request Metadata").
``Server.handle`` is called with ``headers=None``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

from mcpcore import jsonrpc
from mcpcore.errors import InvalidParams, InvalidRequest, McpError, PayloadTooLarge, as_mcp_error
from mcpcore.jsonrpc import Limits, Notification, Request, Response
from mcpcore.meta import PROTOCOL_VERSION
from mcpcore.principal import ANONYMOUS, Principal
from mcpcore.server import Server

if TYPE_CHECKING:
    from mcpcore.transports.legacy_stdio import StdioLegacy

log = logging.getLogger("mcpcore.stdio")

LineWriter = Callable[[bytes], Awaitable[None]]


class StdioSession:
    """Serve one byte stream pair. Sans-I/O at heart: feed lines, get written lines.

    ``feed_line`` may be driven by any reader; ``run`` wires it to real stdin/stdout.
    """

    def __init__(self, server: Server, write: LineWriter, *,
                 limits: Limits = jsonrpc.DEFAULT_LIMITS,
                 principal: Principal = ANONYMOUS, legacy: StdioLegacy | None = None) -> None:
        self.server = server
        self._write_raw = write
        self.limits = limits
        self.principal = principal
        self.legacy = legacy
        self._lock = asyncio.Lock()
        self._inflight: dict[jsonrpc.RequestId, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def write(self, message: bytes) -> None:
        # One message, one atomic line, however many requests write at once.
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
                # Never answer a notification, even a malformed one (JSON-RPC 2.0 §4.1).
                log.warning("dropped a malformed notification: %s", exc.message)
                return
            await self.write(error_line(exc, jsonrpc.peek_id(line)))
            return
        if self.legacy is not None and self.legacy.claims(message):
            await self.legacy.feed(self, message)
            return
        if (self.legacy is None and isinstance(message, Request)
                and message.method == "initialize"):
            refusal = _modern_only(self.server, message)
            if refusal is not None:
                await self.write(error_line(refusal, message.id))
                return
        if isinstance(message, Notification):
            self._on_notification(message)
            return
        if isinstance(message, Response):
            return  # we send no requests, so no response can be ours: ignore it
        if message.id in self._inflight:
            # The client reused the id of a request still in flight: its mistake.
            await self.write(error_line(InvalidRequest(
                "Request id is already in use by an unfinished request"), message.id))
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
            return  # an invalid cancellation is ignored (cancellation.mdx)
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, (int, str)):
            self.cancel(request_id)

    def cancel(self, request_id: jsonrpc.RequestId) -> None:
        """Cancel an in-flight request: nothing more is written for it."""
        task = self._inflight.get(request_id)
        if task is not None:
            task.cancel()

    async def _serve(self, request: Request) -> None:
        async def sink(message: bytes) -> None:
            await self.write(message)

        try:
            result = await self.server.handle(request, principal=self.principal, sink=sink)
        except asyncio.CancelledError:
            return  # cancelled: no response (stdio.mdx, "Cancellation")
        except Exception as exc:
            payload = error_line(exc, request.id, request.method)
        else:
            payload = jsonrpc.encode_result(request.id, result)
        await self.write(payload)

    async def drain(self) -> None:
        """Wait for every in-flight request to finish."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        if self.legacy is not None:
            await self.legacy.aclose()



def error_line(exc: BaseException, request_id: jsonrpc.RequestId | None,
               where: str = "stdio message") -> bytes:
    """The one mapping of an exception to stdio: a JSON-RPC error response (one line;
    ``write`` adds the newline). Anything but an ``McpError`` is logged, sent as -32603."""
    return jsonrpc.encode_error(request_id, as_mcp_error(exc, where))


def _looks_like_notification(line: bytes) -> bool:
    try:
        value = jsonrpc.decode_any(line)
    except Exception:
        return False
    return isinstance(value, dict) and isinstance(value.get("method"), str) and (
        "id" not in value)


def _modern_only(server: Server, request: Request) -> InvalidParams | None:
    """The answer to a 2025-era ``initialize`` when the legacy shim is off: it names the
    versions we speak, the only diagnostic such a client can show (versioning.mdx,
    "Backward Compatibility with Initialization-Based Versions"). ``None`` for an
    ``initialize`` sent with modern ``_meta``: that one is an unknown method (-32601)."""
    try:
        params = msgspec.json.decode(request.params) if request.params is not None else {}
    except msgspec.DecodeError:
        params = {}
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    if isinstance(meta, dict) and PROTOCOL_VERSION in meta:
        return None
    requested = params.get("protocolVersion")
    supported = list(server.supported_versions)
    return InvalidParams(
        f"This server speaks MCP {', '.join(supported)} only, which has no initialize "
        f"handshake (this client asked for {requested!r}): every request carries its "
        f"protocol version in params._meta[{PROTOCOL_VERSION!r}]",
        data={"supported": supported, "requested": requested})


async def serve_stdio(server: Server, *, stdin: BinaryIO | None = None,
                      stdout: BinaryIO | None = None,
                      limits: Limits = jsonrpc.DEFAULT_LIMITS,
                      principal: Principal = ANONYMOUS, legacy: Any = True) -> None:
    """Serve ``server`` over this process's stdin/stdout until stdin closes.

    ``legacy=True`` (the default) lets an ``initialize`` switch the process into the
    legacy era (2025-11-25 and older clients); ``False`` serves modern requests only.
    """
    if legacy is True:
        from mcpcore.transports.legacy_stdio import StdioLegacy

        legacy = StdioLegacy(server)
    loop = asyncio.get_running_loop()
    in_stream = stdin or sys.stdin.buffer
    out_stream = stdout or sys.stdout.buffer

    async def write(data: bytes) -> None:
        # Blocking writes of one line are short; run them off the loop to stay responsive.
        await loop.run_in_executor(None, _write_flush, out_stream, data)

    session = StdioSession(server, write, limits=limits, principal=principal,
                           legacy=legacy or None)
    async for line in _lines(in_stream, limits.max_body_bytes):
        if line is None:
            # An oversized line, dropped whole: answer once, id unknown.
            await session.write(error_line(PayloadTooLarge(
                f"Message exceeds {limits.max_body_bytes} bytes"), None))
            continue
        await session.feed_line(line)
    # stdin closed: the client is gone (stdio.mdx, "Shutdown"). Listen streams would
    # never end on their own, so close them gracefully; then let in-flight requests finish.
    await server.subscriptions.close()
    await session.drain()
    await session.aclose()


def _pollable(stream: BinaryIO) -> bool:
    """Whether the event loop can watch ``stream``: a pipe, a socket or a terminal.

    A regular file (``< requests.jsonl``) and ``/dev/null`` cannot be polled (asyncio's
    pipe transport refuses the first and epoll the second), so those are read by a thread.
    """
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def _lines(stream: BinaryIO, limit: int) -> AsyncIterator[bytes | None]:
    """Each newline-terminated line of ``stream`` until EOF (a last line without its
    newline included); ``None`` for a line longer than ``limit``, which is skipped whole.
    One line at most is held in memory whatever the source."""
    loop = asyncio.get_running_loop()
    if not _pollable(stream):
        while True:
            line = await loop.run_in_executor(None, stream.readline, limit + 1)
            if not line:
                return
            if len(line) > limit and not line.endswith(b"\n"):
                while (rest := await loop.run_in_executor(None, stream.readline, 65536)) and (
                        not rest.endswith(b"\n")):
                    pass
                yield None
                continue
            yield line
    reader = asyncio.StreamReader(limit=limit + 1)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
    while True:
        try:
            yield await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if exc.partial.strip():
                yield exc.partial
            return
        except asyncio.LimitOverrunError:
            with contextlib.suppress(Exception):
                await _skip_line(reader)
            yield None


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
