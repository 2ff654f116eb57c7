"""How client messages travel: Streamable HTTP (httpx) or stdio (a subprocess).

A transport moves one JSON-RPC request out and its answer back; it knows nothing of MCP
methods, ``_meta`` or MRTR (``session.py`` does). Two operations:

- ``request(message, headers=..., on_message=..., timeout=...)`` sends a request and
  returns its ``Reply`` (the response object and, over HTTP, the status). Notifications
  that arrive first (progress, log) are passed to ``on_message`` in order, before the
  reply returns.
- ``stream(message, headers=...)`` sends a long-lived request (``subscriptions/listen``)
  and yields every message for it, ending with its response if the server sends one.
  Leaving the iteration cancels it: HTTP closes the response stream (R5.25), stdio sends
  ``notifications/cancelled`` (R9.8).

HTTP answers either ``application/json`` or ``text/event-stream`` (R5.9); both are
handled, the latter through the sans-I/O ``SseDecoder``. A 4xx with a JSON-RPC error
body is a ``Reply`` like any other (the session turns it into ``RemoteProtocolError``
with the status); anything that is not JSON-RPC is a ``RemoteProtocolError`` here.

stdio multiplexes concurrent requests by id over one newline-delimited pipe (R6.1):
one reader task routes each response to its request's inbox, a progress notification to
the request whose ``progressToken`` it names, and a listen notification to the stream its
``subscriptionId`` names. Other notifications go to the only request in flight, if there
is exactly one, else to the client-wide ``on_stray`` handler: stdio has no other way to
tie a log message to a request. Shutdown closes stdin, waits, then terminates (R6.5).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Final, Protocol

import httpx
import msgspec

from mcpcore.client.errors import (
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    TransportError,
)
from mcpcore.client.sse import SseDecoder, SseError
from mcpcore.meta import PROGRESS_TOKEN, SUBSCRIPTION_ID

log = logging.getLogger("mcpcore.client")

MessageHandler = Callable[[dict[str, Any]], Awaitable[None]]

_decoder: Final = msgspec.json.Decoder()
_encoder: Final = msgspec.json.Encoder()
#: Longest stdio line we accept from a server (one JSON-RPC message).
MAX_LINE_BYTES: Final = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Reply:
    """One message from the server; ``http_status`` is ``None`` over stdio."""

    message: dict[str, Any]
    http_status: int | None = None


class Transport(Protocol):
    """What ``Client`` needs from a transport."""

    #: True if the transport sends HTTP headers (and so needs tool definitions for
    #: ``Mcp-Param-*``); stdio has no header layer (R6.2).
    uses_headers: bool

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def request(
        self,
        message: dict[str, Any],
        *,
        headers: Mapping[str, str],
        on_message: MessageHandler | None,
        timeout: float | None,
    ) -> Reply: ...

    def stream(
        self, message: dict[str, Any], *, headers: Mapping[str, str]
    ) -> AsyncGenerator[Reply, None]: ...


def encode_message(message: dict[str, Any]) -> bytes:
    """JSON bytes of an outgoing message; ``LocalProtocolError`` if not serialisable."""
    try:
        return _encoder.encode(message)
    except (TypeError, ValueError, OverflowError) as exc:  # msgspec.EncodeError is ValueError
        raise LocalProtocolError(f"cannot encode the request as JSON: {exc}") from None


def decode_message(data: bytes | str, *, http_status: int | None = None) -> dict[str, Any]:
    """A JSON object from the peer, else ``RemoteProtocolError``."""
    try:
        value = _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise RemoteProtocolError(f"server sent invalid JSON: {exc}",
                                  http_status=http_status) from None
    if not isinstance(value, dict):
        raise RemoteProtocolError("server sent a JSON value that is not a JSON-RPC message",
                                  http_status=http_status)
    return value


def is_response(message: Mapping[str, Any]) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


def _is_notification(message: Mapping[str, Any]) -> bool:
    return isinstance(message.get("method"), str) and "id" not in message


def _answers(message: Mapping[str, Any], request_id: object) -> bool:
    """Is this response for ``request_id``? An error without id (the server could not
    read ours) counts as ours; ``1`` and ``"1"`` stay distinct."""
    if "id" not in message or message["id"] is None:
        return "error" in message
    other = message["id"]
    return type(other) is type(request_id) and other == request_id


# -- HTTP -------------------------------------------------------------------------------


class HttpTransport:
    """Streamable HTTP (2026-07-28): one POST per request, JSON or SSE back.

    ``http_client`` lets you bring your own ``httpx.AsyncClient`` (proxies, auth, an
    in-process ``ASGITransport``); the transport then leaves closing it to you.
    """

    uses_headers = True

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        connect_timeout: float | None = 10.0,
        auth: httpx.Auth | None = None,
    ) -> None:
        self.url = url
        #: Runs on every POST (``mcpcore.auth.OAuth``, or any ``httpx.Auth``).
        self._auth: Any = (
            auth if auth is not None else httpx.USE_CLIENT_DEFAULT)
        self._headers = dict(headers or {})
        self._client = http_client
        self._owns_client = http_client is None
        self._connect_timeout = connect_timeout

    async def open(self) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False)
            self._owns_client = True

    async def close(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            raise LocalProtocolError("the client is not open: use `async with Client...`")
        return self._client

    def _timeout(self, timeout: float | None) -> httpx.Timeout:
        return httpx.Timeout(timeout, connect=self._connect_timeout)

    async def request(
        self,
        message: dict[str, Any],
        *,
        headers: Mapping[str, str],
        on_message: MessageHandler | None,
        timeout: float | None,
    ) -> Reply:
        body = encode_message(message)
        try:
            async with asyncio.timeout(timeout):
                async with self._http().stream(
                    "POST", self.url, content=body, headers={**self._headers, **headers},
                    timeout=self._timeout(timeout), auth=self._auth,
                ) as response:
                    async for reply in self._replies(response, message["id"]):
                        if is_response(reply.message):
                            return reply
                        if on_message is not None:
                            await on_message(reply.message)
                    raise RemoteProtocolError(
                        f"{message['method']}: the event stream ended before the response",
                        http_status=response.status_code)
        except (TimeoutError, httpx.TimeoutException):
            raise RequestTimeout(
                f"{message['method']}: no response within {timeout} s") from None
        except httpx.TransportError as exc:
            raise TransportError(f"{message['method']}: HTTP transport failed: {exc!r}") from exc

    async def stream(
        self, message: dict[str, Any], *, headers: Mapping[str, str]
    ) -> AsyncGenerator[Reply, None]:
        body = encode_message(message)
        try:
            async with self._http().stream(
                "POST", self.url, content=body, headers={**self._headers, **headers},
                timeout=httpx.Timeout(None, connect=self._connect_timeout), auth=self._auth,
            ) as response:
                async for reply in self._replies(response, message["id"]):
                    yield reply
                    if is_response(reply.message):
                        return
        except httpx.TransportError as exc:
            raise TransportError(f"{message['method']}: HTTP transport failed: {exc!r}") from exc

    async def _replies(self, response: httpx.Response, request_id: object
                       ) -> AsyncIterator[Reply]:
        """Every message of one HTTP response: SSE events, or the one JSON body."""
        status = response.status_code
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media == "text/event-stream" and 200 <= status < 300:
            decoder = SseDecoder()
            try:
                async for chunk in response.aiter_bytes():
                    for event in decoder.feed(chunk):
                        reply = self._event_reply(event.event, event.data, request_id, status)
                        if reply is not None:
                            yield reply
                for event in decoder.close():
                    reply = self._event_reply(event.event, event.data, request_id, status)
                    if reply is not None:
                        yield reply
            except SseError as exc:
                raise RemoteProtocolError(f"bad event stream: {exc}", http_status=status) from None
            return
        raw = await response.aread()
        if media in ("application/json", "") or raw.lstrip()[:1] == b"{":
            try:
                message = decode_message(raw, http_status=status)
            except RemoteProtocolError:
                message = {}
            if is_response(message):
                if not _answers(message, request_id):
                    raise RemoteProtocolError(
                        f"response id {message.get('id')!r} does not match request id "
                        f"{request_id!r}", http_status=status)
                yield Reply(message, status)
                return
        if status in (202, 204):
            raise RemoteProtocolError(
                f"server answered the request with HTTP {status} and no response",
                http_status=status)
        snippet = raw[:200].decode("utf-8", "replace").strip()
        raise RemoteProtocolError(
            f"HTTP {status} without a JSON-RPC response"
            + (f": {snippet}" if snippet else ""), http_status=status)

    @staticmethod
    def _event_reply(kind: str, data: str, request_id: object, status: int) -> Reply | None:
        if kind != "message" or not data.strip():
            return None  # other event types and empty events (keep-alives) carry no message
        message = decode_message(data, http_status=status)
        if is_response(message):
            if not _answers(message, request_id):
                raise RemoteProtocolError(
                    f"response id {message.get('id')!r} on the stream of request "
                    f"{request_id!r}", http_status=status)
            return Reply(message, status)
        if _is_notification(message):
            return Reply(message, status)
        # A server request on a response stream is forbidden in 2026-07-28 (R5.20).
        log.warning("ignoring a non-notification message on a response stream: %.200r",
                    message)
        return None


# -- stdio ------------------------------------------------------------------------------


_EOF: Final = object()


@dataclass(eq=False)
class _Inbox:
    """Where the reader puts messages for one request (or listen stream)."""

    progress_token: object = None
    #: A listen stream: gets only notifications tagged with its subscriptionId.
    stream: bool = False
    queue: asyncio.Queue[object] = field(default_factory=asyncio.Queue)


class StdioTransport:
    """A server subprocess speaking newline-delimited JSON-RPC on stdin/stdout.

    ``stderr`` is passed to the subprocess as is (``None``: inherit ours, so server logs
    show; ``subprocess.DEVNULL`` to hide them). ``on_stray`` receives notifications that
    no single request can claim (see the module docstring).
    """

    uses_headers = False

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: int | IO[Any] | None = None,
        shutdown_timeout: float = 5.0,
        on_stray: MessageHandler | None = None,
    ) -> None:
        if isinstance(command, str) or not command:
            raise LocalProtocolError("stdio command must be a non-empty list of arguments")
        self.command = list(command)
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._stderr = stderr
        self._shutdown_timeout = shutdown_timeout
        self.on_stray = on_stray
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._inboxes: dict[object, _Inbox] = {}
        self._write_lock = asyncio.Lock()
        self._closed_reason: str | None = None
        self._stray_tasks: set[asyncio.Task[None]] = set()

    @property
    def returncode(self) -> int | None:
        """The server's exit status once it has exited."""
        return None if self._process is None else self._process.returncode

    async def open(self) -> None:
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=self._stderr, env=self._env, cwd=self._cwd, limit=MAX_LINE_BYTES,
            )
        except OSError as exc:
            raise TransportError(f"cannot start {self.command[0]!r}: {exc}") from exc
        self._reader = asyncio.ensure_future(self._read_loop())

    async def close(self) -> None:
        process = self._process
        if process is None:
            return
        self._closed_reason = self._closed_reason or "the client is closed"
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()  # EOF: a stdio server ends once in-flight work is done
        try:
            await asyncio.wait_for(process.wait(), self._shutdown_timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), self._shutdown_timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        for task in list(self._stray_tasks):
            task.cancel()
        self._fail_all()

    async def _write(self, message: dict[str, Any]) -> None:
        line = encode_message(message) + b"\n"  # msgspec never emits raw newlines
        if self._closed_reason is not None:
            raise TransportError(f"stdio server unavailable: {self._closed_reason}")
        process = self._process
        if process is None or process.stdin is None:
            raise LocalProtocolError("the client is not open: use `async with Client...`")
        async with self._write_lock:
            try:
                process.stdin.write(line)
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise TransportError(f"stdio server closed its stdin: {exc}") from exc

    def _cancel_notice(self, request_id: object, reason: str) -> None:
        """Best effort ``notifications/cancelled`` (sync: safe while being cancelled)."""
        process = self._process
        if process is None or process.stdin is None or process.stdin.is_closing():
            return
        with contextlib.suppress(Exception):
            process.stdin.write(encode_message({
                "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": reason},
            }) + b"\n")

    def _register(self, message: dict[str, Any], *, stream: bool = False) -> _Inbox:
        request_id = message["id"]
        if request_id in self._inboxes:
            raise LocalProtocolError(f"request id {request_id!r} is already in flight")
        meta = (message.get("params") or {}).get("_meta") or {}
        inbox = _Inbox(progress_token=meta.get(PROGRESS_TOKEN), stream=stream)
        self._inboxes[request_id] = inbox
        return inbox

    async def request(
        self,
        message: dict[str, Any],
        *,
        headers: Mapping[str, str],
        on_message: MessageHandler | None,
        timeout: float | None,
    ) -> Reply:
        request_id = message["id"]
        inbox = self._register(message)
        answered = False
        try:
            async with asyncio.timeout(timeout):
                await self._write(message)
                while True:
                    item = await inbox.queue.get()
                    if item is _EOF:
                        raise TransportError(f"stdio server unavailable: {self._closed_reason}")
                    assert isinstance(item, dict)
                    if is_response(item):
                        answered = True
                        return Reply(item)
                    if on_message is not None:
                        await on_message(item)
        except TimeoutError:
            raise RequestTimeout(
                f"{message['method']}: no response within {timeout} s") from None
        finally:
            del self._inboxes[request_id]
            if not answered:
                self._cancel_notice(request_id, "the client stopped waiting")

    async def stream(
        self, message: dict[str, Any], *, headers: Mapping[str, str]
    ) -> AsyncGenerator[Reply, None]:
        request_id = message["id"]
        inbox = self._register(message, stream=True)
        finished = False
        try:
            await self._write(message)
            while True:
                item = await inbox.queue.get()
                if item is _EOF:
                    raise TransportError(f"stdio server unavailable: {self._closed_reason}")
                assert isinstance(item, dict)
                finished = is_response(item)
                yield Reply(item)
                if finished:
                    return
        finally:
            del self._inboxes[request_id]
            if not finished:
                self._cancel_notice(request_id, "the client stopped listening")

    async def _read_loop(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        try:
            while True:
                try:
                    line = await process.stdout.readline()
                except ValueError:  # a line beyond the limit: the stream is unusable
                    self._closed_reason = "the server sent a line beyond the size limit"
                    break
                if not line:
                    break
                if line.strip():
                    self._route(line)
        finally:
            if self._closed_reason is None:
                try:
                    code = await asyncio.wait_for(process.wait(), 1.0)
                    self._closed_reason = f"the server process exited (status {code})"
                except TimeoutError:
                    self._closed_reason = "the server closed its stdout"
            self._fail_all()

    def _fail_all(self) -> None:
        for inbox in self._inboxes.values():
            inbox.queue.put_nowait(_EOF)

    def _route(self, line: bytes) -> None:
        try:
            message = decode_message(line)
        except RemoteProtocolError as exc:
            log.warning("stdio server wrote a line that is not a JSON-RPC message: %s", exc)
            return
        if is_response(message):
            inbox = self._inboxes.get(message.get("id"))
            if inbox is None:
                log.warning("response for unknown request id %.80r", message.get("id"))
            else:
                inbox.queue.put_nowait(message)
            return
        if not _is_notification(message):
            # 2026-07-28 servers send no requests (R6.3); nothing to answer.
            log.warning("ignoring a server request on stdio: %.200r", message)
            return
        inbox = self._claim(message)
        if inbox is not None:
            inbox.queue.put_nowait(message)
        elif self.on_stray is not None:
            task = asyncio.ensure_future(self.on_stray(message))
            self._stray_tasks.add(task)
            task.add_done_callback(self._stray_tasks.discard)
        else:
            log.debug("notification for no request: %.200r", message)

    def _claim(self, message: dict[str, Any]) -> _Inbox | None:
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_ID in meta:
            return self._inbox_for(meta[SUBSCRIPTION_ID])
        if message["method"] == "notifications/progress" and PROGRESS_TOKEN in params:
            token = params[PROGRESS_TOKEN]
            for inbox in self._inboxes.values():
                if inbox.progress_token is not None and _same(inbox.progress_token, token):
                    return inbox
            return None
        requests = [inbox for inbox in self._inboxes.values() if not inbox.stream]
        return requests[0] if len(requests) == 1 else None

    def _inbox_for(self, request_id: object) -> _Inbox | None:
        for key, inbox in self._inboxes.items():
            if _same(key, request_id):
                return inbox
        return None


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


__all__ = [
    "HttpTransport",
    "MessageHandler",
    "Reply",
    "StdioTransport",
    "Transport",
    "decode_message",
    "encode_message",
    "is_response",
]
