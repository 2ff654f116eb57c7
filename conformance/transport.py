"""How the suite reaches a server: raw HTTP (httpx), an in-process ASGI app, or stdio.

An audit tool must control exactly what goes on the wire, so nothing here "helps": no
retries, no header fix-ups, no version negotiation. ``send`` writes the given bytes with
the given headers and returns an ``RecordedExchange``: everything that came back (status,
headers, raw body, every JSON-RPC message of a JSON or SSE body, the final response) plus
what went wrong on the transport (timeout, dropped connection, process exit). Checks read
exchanges; reports show them as evidence.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import os
import shlex
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpcore.client import SseDecoder

OnMessage = Callable[[dict[str, Any]], Awaitable[None]]
#: Bytes of a response body kept for evidence and parsing.
MAX_BODY = 2 * 1024 * 1024


@dataclass
class RecordedExchange:
    """One request and what came back; see the module docstring."""

    label: str
    transport: str                          #: "http" or "stdio"
    request_body: bytes
    http_method: str = "POST"
    url: str = ""
    request_headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    messages: list[dict[str, Any]] = field(default_factory=list)
    response: dict[str, Any] | None = None
    failure: str | None = None              #: timeout, dropped connection, process exit
    elapsed: float = 0.0
    method: str | None = None               #: the JSON-RPC method sent, when known
    problems: list[str] = field(default_factory=list)  #: schema problems of messages
    #: The era whose rules judge this exchange when it is not the session's (a probe that
    #: deliberately speaks, or may be answered in, another revision); ``None``: the session's.
    era: str | None = None

    # -- reading ---------------------------------------------------------------------
    @property
    def result(self) -> dict[str, Any] | None:
        value = (self.response or {}).get("result")
        return value if isinstance(value, dict) else None

    @property
    def error(self) -> dict[str, Any] | None:
        value = (self.response or {}).get("error")
        return value if isinstance(value, dict) else None

    @property
    def code(self) -> int | None:
        code = (self.error or {}).get("code")
        return code if isinstance(code, int) else None

    @property
    def notifications(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if "method" in m and "id" not in m]

    @property
    def content_type(self) -> str:
        return self.response_headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def describe(self) -> str:
        """A one-line summary for failure messages."""
        if self.failure:
            return f"{self.failure}"
        parts = [f"HTTP {self.status}"] if self.status is not None else []
        if self.error is not None:
            parts.append(f"error {self.code} {str(self.error.get('message', ''))[:120]!r}")
        elif self.result is not None:
            parts.append("result " + json.dumps(self.result)[:160])
        elif self.body:
            parts.append("body " + self.text[:160])
        else:
            parts.append("empty body")
        return ", ".join(parts)


def parse_body(content_type: str, body: bytes) -> list[dict[str, Any]]:
    """Every JSON-RPC message of a response body (one JSON value, or SSE events)."""
    if not body:
        return []
    if "text/event-stream" in content_type:
        decoder = SseDecoder()
        events = decoder.feed(body) + decoder.close()
        out = []
        for event in events:
            with contextlib.suppress(ValueError):
                value = json.loads(event.data)
                out.extend(_messages(value))
        return out
    try:
        value = json.loads(body)
    except ValueError:
        return []
    return _messages(value)


def _messages(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def _final(messages: list[dict[str, Any]], request_id: Any) -> dict[str, Any] | None:
    for message in messages:
        if "method" not in message and ("result" in message or "error" in message) and (
            request_id is None or message.get("id") == request_id
            or (message.get("id") is None and "error" in message)  # id missing, or null
        ):
            return message
    return None


class Stream(abc.ABC):
    """A long-lived response (``subscriptions/listen``): messages as they arrive."""

    exchange: RecordedExchange

    @abc.abstractmethod
    async def next(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or ``None`` when none came within ``timeout`` or it ended."""


class Transport(abc.ABC):
    """One way of talking to the server under test."""

    kind: str

    @abc.abstractmethod
    async def send(self, body: bytes, *, headers: Mapping[str, str] | None = None,
                   http_method: str = "POST", request_id: Any = None,
                   timeout: float = 10.0, label: str = "", url: str | None = None,
                   on_message: OnMessage | None = None, verbatim: bool = False,
                   ) -> RecordedExchange:
        """Send one message (or raw bytes) and collect the answer; ``on_message`` sees
        each message as it arrives (a legacy session answers server requests there).
        ``verbatim`` writes header values byte for byte, even ones an HTTP library would
        refuse (leading whitespace), over a plain socket."""

    @abc.abstractmethod
    def stream(self, body: bytes, *, headers: Mapping[str, str] | None = None,
               request_id: Any = None, label: str = "", http_method: str = "POST",
               ) -> contextlib.AbstractAsyncContextManager[Stream]:
        """Open a long-lived request; leaving the block closes it (cancels on HTTP)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections or the process."""


# -- HTTP ------------------------------------------------------------------------------
class HttpProbe(Transport):
    """Raw HTTP through an ``httpx.AsyncClient`` (network, or in-process ASGI)."""

    kind = "http"

    def __init__(self, url: str, *, client: httpx.AsyncClient | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.extra = dict(headers or {})
        #: A network client (not an in-process app): ``verbatim`` sends use a raw socket.
        self.raw_capable = client is None
        if client is None:
            from mcpcore.auth.urls import verifying_context

            client = httpx.AsyncClient(verify=verifying_context(trust_env=True),
                                       timeout=httpx.Timeout(15.0),
                                       limits=httpx.Limits(max_connections=32))
        self.client = client

    def _headers(self, headers: Mapping[str, str] | None) -> dict[str, str]:
        merged = dict(self.extra)
        for key, value in (headers or {}).items():
            for existing in [k for k in merged if k.lower() == key.lower()]:
                del merged[existing]
            merged[key] = value
        return {k: v for k, v in merged.items() if v is not None}

    def _build(self, http_method: str, url: str, headers: dict[str, str],
               body: bytes) -> httpx.Request:
        request = self.client.build_request(http_method, url, content=body or None,
                                            headers=headers)
        # httpx adds defaults (accept, user-agent...): keep only what was asked for,
        # plus the framing headers HTTP itself needs.
        asked = {k.lower() for k in headers}
        for name in list(request.headers.keys()):
            if name.lower() not in asked and name.lower() not in (
                    "host", "content-length", "transfer-encoding"):
                del request.headers[name]
        return request

    async def send(self, body: bytes, *, headers: Mapping[str, str] | None = None,
                   http_method: str = "POST", request_id: Any = None,
                   timeout: float = 10.0, label: str = "", url: str | None = None,
                   on_message: OnMessage | None = None, verbatim: bool = False,
                   ) -> RecordedExchange:
        target = url or self.url
        sent = self._headers(headers)
        exchange = RecordedExchange(label, "http", body, http_method, target, sent)
        start = time.monotonic()
        if verbatim and self.raw_capable and target.startswith("http://"):
            await self._send_verbatim(exchange, target, sent, body, request_id, timeout)
            exchange.elapsed = time.monotonic() - start
            return exchange
        try:
            async with asyncio.timeout(timeout):
                request = self._build(http_method, target, sent, body)
                response = await self.client.send(request, stream=True)
                try:
                    exchange.status = response.status_code
                    exchange.response_headers = {k.lower(): v for k, v in
                                                 response.headers.items()}
                    await self._read(response, exchange, request_id, on_message)
                finally:
                    await response.aclose()
        except TimeoutError:
            exchange.failure = f"no complete answer within {timeout:g} s (hang)"
        except httpx.TimeoutException:
            exchange.failure = f"no complete answer within {timeout:g} s (hang)"
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            exchange.failure = f"connection dropped: {type(exc).__name__}: {exc}"[:300]
        except httpx.ConnectError as exc:
            exchange.failure = f"cannot connect: {exc}"[:300]
        except httpx.HTTPError as exc:
            exchange.failure = f"HTTP failure: {type(exc).__name__}: {exc}"[:300]
        exchange.elapsed = time.monotonic() - start
        return exchange

    async def _read(self, response: httpx.Response, exchange: RecordedExchange,
                    request_id: Any, on_message: OnMessage | None) -> None:
        ctype = response.headers.get("content-type", "")
        chunks = bytearray()
        if "text/event-stream" in ctype:
            decoder = SseDecoder()
            async for chunk in response.aiter_bytes():
                if len(chunks) < MAX_BODY:
                    chunks += chunk[: MAX_BODY - len(chunks)]
                for event in decoder.feed(chunk):
                    with contextlib.suppress(ValueError):
                        for message in _messages(json.loads(event.data)):
                            exchange.messages.append(message)
                            if on_message is not None:
                                await on_message(message)
                final = _final(exchange.messages, request_id)
                if final is not None:
                    exchange.response = final
                    break
            else:
                for event in decoder.close():
                    with contextlib.suppress(ValueError):
                        exchange.messages.extend(_messages(json.loads(event.data)))
        else:
            async for chunk in response.aiter_bytes():
                if len(chunks) < MAX_BODY:
                    chunks += chunk[: MAX_BODY - len(chunks)]
            exchange.messages = parse_body(ctype, bytes(chunks))
        exchange.body = bytes(chunks)
        if exchange.response is None:
            exchange.response = _final(exchange.messages, request_id)

    async def _send_verbatim(self, exchange: RecordedExchange, url: str, headers: Mapping[str, str],
                             body: bytes, request_id: Any, timeout: float) -> None:
        """HTTP/1.1 over a plain socket, ``Connection: close``, headers as given."""
        parts = httpx.URL(url)
        port = parts.port or 80
        path = parts.raw_path.decode() or "/"
        lines = [f"{exchange.http_method} {path} HTTP/1.1", f"Host: {parts.netloc.decode()}"]
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "host"]
        lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(parts.host, port)
                try:
                    writer.write("\r\n".join(lines).encode("latin-1") + body)
                    await writer.drain()
                    raw = await reader.read(MAX_BODY)
                    while chunk := await reader.read(65536):
                        if len(raw) < MAX_BODY:
                            raw += chunk
                finally:
                    writer.close()
        except TimeoutError:
            exchange.failure = f"no complete answer within {timeout:g} s (hang)"
            return
        except OSError as exc:
            exchange.failure = f"connection dropped: {exc}"
            return
        head, _, payload = raw.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        try:
            exchange.status = int(status_line.split()[1])
        except (IndexError, ValueError):
            exchange.failure = f"not an HTTP response: {status_line[:80]!r}"
            return
        for header in header_lines:
            name, _, value = header.partition(":")
            exchange.response_headers[name.strip().lower()] = value.strip()
        if exchange.response_headers.get("transfer-encoding", "").lower() == "chunked":
            payload = _dechunk(payload)
        exchange.body = payload
        exchange.messages = parse_body(exchange.content_type, payload)
        exchange.response = _final(exchange.messages, request_id)

    @contextlib.asynccontextmanager
    async def stream(self, body: bytes, *, headers: Mapping[str, str] | None = None,
                     request_id: Any = None, label: str = "", http_method: str = "POST",
                     ) -> AsyncIterator[Stream]:
        sent = self._headers(headers)
        exchange = RecordedExchange(label, "http", body, http_method, self.url, sent)
        request = self._build(http_method, self.url, sent, body)
        start = time.monotonic()
        try:
            response = await asyncio.wait_for(self.client.send(request, stream=True), 10)
        except (TimeoutError, httpx.HTTPError) as exc:
            exchange.failure = f"could not open the stream: {type(exc).__name__} {exc}"[:300]
            yield _DeadStream(exchange)
            return
        exchange.status = response.status_code
        exchange.response_headers = {k.lower(): v for k, v in response.headers.items()}
        stream = _HttpStream(exchange, response, request_id)
        try:
            yield stream
        finally:
            exchange.elapsed = time.monotonic() - start
            await stream.close()

    async def aclose(self) -> None:
        await self.client.aclose()


class _DeadStream(Stream):
    def __init__(self, exchange: RecordedExchange) -> None:
        self.exchange = exchange

    async def next(self, timeout: float) -> dict[str, Any] | None:
        return None


class _HttpStream(Stream):
    def __init__(self, exchange: RecordedExchange, response: httpx.Response,
                 request_id: Any) -> None:
        self.exchange = exchange
        self._response = response
        self._id = request_id
        self._pending: deque[dict[str, Any]] = deque()
        self._decoder = SseDecoder()
        self._chunks = response.aiter_bytes()
        self._ended = False
        self._sse = "text/event-stream" in response.headers.get("content-type", "")
        self._raw = bytearray()

    async def next(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while not self._pending and not self._ended:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                chunk = await asyncio.wait_for(self._chunks.__anext__(), left)
            except TimeoutError:
                return None
            except (StopAsyncIteration, httpx.HTTPError):
                self._ended = True
                self._flush(self._decoder.close() if self._sse else [])
                if not self._sse:
                    for m in parse_body("application/json", bytes(self._raw)):
                        self._add(m)
                break
            if len(self._raw) < MAX_BODY:
                self._raw += chunk
            if self._sse:
                self._flush(self._decoder.feed(chunk))
            elif self._raw.strip().endswith(b"}"):
                # A JSON body (or NDJSON lines): parse what is complete so far.
                lines = bytes(self._raw).splitlines()
                for line in lines:
                    with contextlib.suppress(ValueError):
                        for m in _messages(json.loads(line)):
                            self._add(m)
                self._raw.clear()
        if self._pending:
            return self._pending.popleft()
        return None

    def _flush(self, events: list[Any]) -> None:
        for event in events:
            with contextlib.suppress(ValueError):
                for m in _messages(json.loads(event.data)):
                    self._add(m)

    def _add(self, message: dict[str, Any]) -> None:
        self.exchange.messages.append(message)
        if self.exchange.response is None and _final([message], self._id):
            self.exchange.response = message
        self._pending.append(message)

    async def close(self) -> None:
        self.exchange.body = bytes(self._raw)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._response.aclose(), 5)


# -- stdio -----------------------------------------------------------------------------
class StdioProbe(Transport):
    """A supervised subprocess speaking newline-delimited JSON-RPC on stdin/stdout.

    Started lazily and restarted if it exits (the exit is reported on the exchange that
    saw it). Responses are matched by id; notifications go to the requests they name
    (``progressToken``, ``subscriptionId``), or to the only request in flight.
    """

    kind = "stdio"

    def __init__(self, command: str, *, env: Mapping[str, str] | None = None) -> None:
        self.command = command
        self.argv = shlex.split(command)
        self.env = {**os.environ, **(env or {})}
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stderr: asyncio.Task[None] | None = None
        self._waiters: dict[Any, _Waiter] = {}
        self._anonymous: deque[_Waiter] = deque()
        self._lock = asyncio.Lock()
        self.exits: list[str] = []
        self.stderr_tail = b""

    async def _ensure(self) -> asyncio.subprocess.Process:
        async with self._lock:
            if self._proc is None or self._proc.returncode is not None:
                self._proc = await asyncio.create_subprocess_exec(
                    *self.argv, stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                    env=self.env, limit=MAX_BODY * 4)
                self._reader = asyncio.create_task(self._read(self._proc))
                self._stderr = asyncio.create_task(self._drain_stderr(self._proc))
            return self._proc

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(65536):
            self.stderr_tail = (self.stderr_tail + chunk)[-8192:]

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while True:
            try:
                line = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not line:
                break
            self._dispatch(line)
        code = await proc.wait()
        note = f"process exited with code {code}"
        self.exits.append(note)
        for waiter in [*self._waiters.values(), *self._anonymous]:
            waiter.fail(note)
        self._waiters.clear()
        self._anonymous.clear()

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            for first in list(self._waiters.values())[:1] or list(self._anonymous)[:1]:
                first.exchange.problems.append(
                    f"stdout carried a line that is not JSON: {line[:200]!r}")
            return
        if not isinstance(message, dict):
            return
        if "method" not in message and ("result" in message or "error" in message):
            waiter: _Waiter | None = (self._waiters.pop(message.get("id"), None)
                                      if "id" in message else None)
            if waiter is None and "id" not in message and self._anonymous:
                waiter = self._anonymous.popleft()
            if waiter is not None:
                waiter.answer(message)
            return
        params: dict[str, Any] = message["params"] if isinstance(message.get("params"),
                                                                  dict) else {}
        meta: dict[str, Any] = params["_meta"] if isinstance(params.get("_meta"), dict) else {}
        keys = [meta.get("io.modelcontextprotocol/subscriptionId")]
        keys += [w.key for w in self._waiters.values()
                 if w.progress is not None and params.get("progressToken") == w.progress]
        for key in keys:
            if key is not None and key in self._waiters:
                self._waiters[key].note(message)
                return
        if len(self._waiters) == 1:
            next(iter(self._waiters.values())).note(message)
        elif message.get("method") == "notifications/message":
            for waiter in self._waiters.values():
                if waiter.logs:
                    waiter.note(message)

    async def _write(self, body: bytes) -> None:
        proc = await self._ensure()
        assert proc.stdin is not None
        proc.stdin.write(body.replace(b"\n", b" ").replace(b"\r", b" ") + b"\n")
        await proc.stdin.drain()

    async def send(self, body: bytes, *, headers: Mapping[str, str] | None = None,
                   http_method: str = "POST", request_id: Any = None,
                   timeout: float = 10.0, label: str = "", url: str | None = None,
                   on_message: OnMessage | None = None, verbatim: bool = False,
                   ) -> RecordedExchange:
        exchange = RecordedExchange(label, "stdio", body, "", "", {})
        waiter = _Waiter(exchange, request_id, _progress_token(body), on_message=on_message)
        waiter.logs = _wants_logs(body)
        expects = request_id is not None
        if expects:
            self._waiters[request_id] = waiter
        else:
            self._anonymous.append(waiter)
        start = time.monotonic()
        try:
            await self._write(body)
            # A notification or garbage without id may get no answer at all: wait less.
            await asyncio.wait_for(waiter.done.wait(), timeout if expects else min(timeout, 1))
        except TimeoutError:
            if expects:
                exchange.failure = f"no answer within {timeout:g} s (hang)"
        except (BrokenPipeError, ConnectionResetError) as exc:
            exchange.failure = f"process closed its input: {exc}"
        finally:
            self._waiters.pop(request_id, None) if expects else None
            with contextlib.suppress(ValueError):
                self._anonymous.remove(waiter)
        exchange.elapsed = time.monotonic() - start
        exchange.body = b"\n".join(json.dumps(m).encode() for m in exchange.messages)
        return exchange

    @contextlib.asynccontextmanager
    async def stream(self, body: bytes, *, headers: Mapping[str, str] | None = None,
                     request_id: Any = None, label: str = "", http_method: str = "POST",
                     ) -> AsyncIterator[Stream]:
        exchange = RecordedExchange(label, "stdio", body, "", "", {})
        waiter = _Waiter(exchange, request_id, None)
        self._waiters[request_id] = waiter
        try:
            await self._write(body)
            yield _StdioStream(exchange, waiter)
        finally:
            self._waiters.pop(request_id, None)
            with contextlib.suppress(Exception):
                await self._write(json.dumps({
                    "jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": request_id, "reason": "conformance check done"},
                }).encode())

    async def aclose(self) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 3)
        except TimeoutError:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 3)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self._reader is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._reader, 2)


class _Waiter:
    def __init__(self, exchange: RecordedExchange, key: Any, progress: Any,
                 on_message: OnMessage | None = None) -> None:
        self.exchange, self.key, self.progress = exchange, key, progress
        self.on_message = on_message
        self.logs = False
        self.tasks: set[asyncio.Task[None]] = set()
        self.done = asyncio.Event()
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def note(self, message: dict[str, Any]) -> None:
        self.exchange.messages.append(message)
        self.queue.put_nowait(message)
        if self.on_message is not None:
            task = asyncio.ensure_future(self.on_message(message))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def answer(self, message: dict[str, Any]) -> None:
        self.exchange.messages.append(message)
        self.exchange.response = message
        self.queue.put_nowait(message)
        self.done.set()

    def fail(self, note: str) -> None:
        self.exchange.failure = note
        self.queue.put_nowait(None)
        self.done.set()


class _StdioStream(Stream):
    def __init__(self, exchange: RecordedExchange, waiter: _Waiter) -> None:
        self.exchange = exchange
        self._waiter = waiter

    async def next(self, timeout: float) -> dict[str, Any] | None:
        try:
            return await asyncio.wait_for(self._waiter.queue.get(), timeout)
        except TimeoutError:
            return None


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2:]
    return bytes(out)


def _progress_token(body: bytes) -> Any:
    with contextlib.suppress(ValueError, AttributeError, TypeError, KeyError, RecursionError):
        return json.loads(body)["params"]["_meta"].get("progressToken")
    return None


def _wants_logs(body: bytes) -> bool:
    """Whether a request may receive uncorrelated log notifications on stdio: a modern one
    only if it set a log level, a 2025-era one always (the level is per session)."""
    with contextlib.suppress(ValueError, AttributeError, TypeError, KeyError, RecursionError):
        meta = json.loads(body)["params"].get("_meta") or {}
        if "io.modelcontextprotocol/protocolVersion" in meta:
            return "io.modelcontextprotocol/logLevel" in meta
        return True
    return False


__all__ = ["HttpProbe", "RecordedExchange", "StdioProbe", "Stream", "Transport", "parse_body"]
