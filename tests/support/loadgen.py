"""A bounded load for the fault tests, and the record of every request in it.

The client side is lean on purpose (raw HTTP/1.1 keep-alive over asyncio streams, no
httpx): two cores run the fleet, nginx, Redis and this load at once, and the load must
not be what saturates them. Each worker paces itself, stops at a count or a deadline,
and records per request: its kind, start and end (monotonic seconds), HTTP status, and
its outcome (``ok``, or why not: the JSON-RPC error's ``data.reason`` such as
``store_unavailable``, ``http503``, ``connection``, ``hung``...).

Kinds: ``stateless`` (a plain tool call, and MRTR flows of three rounds, each round on
whichever instance nginx picks: no Store involved), ``publish`` (a tool that announces
a resource update through the Store), ``session`` (a 2025-11-25 session: initialize,
initialized, tools/list, DELETE; every step reads or writes its record in the Store),
``listen`` (opening a ``subscriptions/listen`` stream). Listen streams also record how
each one ended (``StreamEnd``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tests.support.sse import SseParser

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
WATCHED = "test://watched-resource"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "fault-load", "version": "1"}}
ANSWERS = {"user_name": {"action": "accept", "content": {"name": "Ada"}},
           "favorite_color": {"action": "accept", "content": {"color": "teal"}}}
#: No single request may take longer than this: past it, it counts as hung.
HUNG = 10.0
#: Failures a client may retry: the request did not happen, or may be made again.
RETRYABLE = frozenset({"store_unavailable", "overloaded", "shutting_down", "connection",
                       "http502", "http503", "http504", "hung"})


@dataclass(frozen=True)
class Outcome:
    kind: str
    start: float
    end: float
    status: int
    result: str  # "ok" or the reason it failed
    upstream: str = ""

    @property
    def ok(self) -> bool:
        return self.result == "ok"

    @property
    def latency(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class StreamEnd:
    """How one listen stream ended: ``result`` (graceful, ``retry`` hint or not),
    ``error:<reason>``, or ``eof`` (cut without a final message)."""

    at: float
    how: str
    retry_hint: bool
    events: int


class Http1:
    """One keep-alive HTTP/1.1 connection; reconnects after a failure."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.path = parts.path or "/"
        self.authority = parts.netloc
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, headers: dict[str, str], body: bytes = b""
                      ) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = [f"{method} {self.path} HTTP/1.1", f"Host: {self.authority}",
                f"Content-Length: {len(body)}",
                *(f"{k}: {v}" for k, v in headers.items())]
        try:
            self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            status, response_headers = await read_head(self.reader)
            data = await read_body(self.reader, response_headers)
        except BaseException:
            await self.close()
            raise
        if response_headers.get("connection", "").lower() == "close":
            await self.close()
        return status, response_headers, data

    async def close(self) -> None:
        writer, self.writer, self.reader = self.writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    status_line, *lines = raw.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return int(status_line.split(" ", 2)[1]), headers


async def read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        out = bytearray()  # not bytes +=: a long event stream would be quadratic
        async for chunk in chunks(reader):
            out += chunk
        return bytes(out)
    return await reader.readexactly(int(headers.get("content-length", "0")))


async def chunks(reader: asyncio.StreamReader) -> Any:
    """The chunks of a chunked body, as they arrive."""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return
        yield await reader.readexactly(size)
        await reader.readexactly(2)


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def judge(status: int, data: bytes) -> tuple[str, Any]:
    """``("ok", message)`` or ``(reason, message)`` for one JSON response."""
    try:
        message = json.loads(data) if data else None
    except ValueError:
        return f"http{status}", None
    if isinstance(message, dict) and isinstance(message.get("error"), dict):
        error = message["error"]
        reason = (error.get("data") or {}).get("reason") if isinstance(
            error.get("data"), dict) else None
        return str(reason or f"jsonrpc{error.get('code')}"), message
    if status >= 400:
        return f"http{status}", message
    if isinstance(message, dict) and isinstance(message.get("result"), dict) and (
            message["result"].get("isError")):
        return "tool_error", message
    return "ok", message


@dataclass
class Load:
    """Workers against ``url`` until ``stop()``; every request lands in ``outcomes``."""

    url: str
    stateless: int = 5
    publishers: int = 2
    sessions: int = 3
    listeners: int = 3
    pace: float = 0.02
    max_per_worker: int = 20_000
    outcomes: list[Outcome] = field(default_factory=list)
    stream_ends: list[StreamEnd] = field(default_factory=list)
    #: Session ids created and not deleted yet (a worker retries until it deletes).
    open_sessions: set[str] = field(default_factory=set)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _ids: int = 0

    def start(self) -> None:
        self._stopping.clear()
        jobs: list[Callable[[], Awaitable[None]]] = (
            [self._stateless] * self.stateless + [self._publisher] * self.publishers
            + [self._session] * self.sessions + [self._listener] * self.listeners)
        self._tasks = [asyncio.create_task(job()) for job in jobs]

    async def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        done, pending = await asyncio.wait(self._tasks, timeout=timeout)
        assert not pending, f"{len(pending)} load workers did not stop"
        for task in done:
            task.result()  # a worker's own bug fails the test

    @property
    def running(self) -> bool:
        return not self._stopping.is_set()

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def call(self, conn: Http1, kind: str, method: str, headers: dict[str, str],
                   body: bytes = b"", gone_is_done: bool = False
                   ) -> tuple[str, Any, dict[str, str]]:
        """One request, recorded. ``gone_is_done``: a DELETE retried after a failure
        that answers 404 finds its session gone, so the earlier try did delete it (a
        write may be applied even when the Store reports it unacknowledged)."""
        start = time.monotonic()
        status, response_headers, result, message = 0, {}, "connection", None
        try:
            async with asyncio.timeout(HUNG):
                status, response_headers, data = await conn.request(method, headers, body)
            result, message = judge(status, data)
            if gone_is_done and method == "DELETE" and status == 404:
                result = "ok"
        except TimeoutError:
            result = "hung"
        except (OSError, asyncio.IncompleteReadError, ValueError):
            result = "connection"
        self.outcomes.append(Outcome(kind, start, time.monotonic(), status, result,
                                     response_headers.get("x-upstream", "")))
        return result, message, response_headers

    # -- the workers ----------------------------------------------------------------------
    async def _stateless(self) -> None:
        conn = Http1(self.url)
        try:
            for n in range(self.max_per_worker):
                if not self.running:
                    return
                if n % 4 == 3:
                    await self._mrtr_flow(conn)
                else:
                    body = {"jsonrpc": "2.0", "id": self.next_id(), "method": "tools/call",
                            "params": {"name": "test_simple_text", "arguments": {},
                                       "_meta": META}}
                    await self.call(conn, "stateless", "POST",
                                    modern_headers("tools/call", "test_simple_text"),
                                    json.dumps(body).encode())
                await self._pause(self.pace)
        finally:
            await conn.close()

    async def _mrtr_flow(self, conn: Http1) -> None:
        tool = "test_input_required_result_multi_round"
        extra: dict[str, Any] = {}
        for answer in ("user_name", "favorite_color", None):
            body = {"jsonrpc": "2.0", "id": self.next_id(), "method": "tools/call",
                    "params": {"name": tool, "arguments": {}, "_meta": META, **extra}}
            result, message, _ = await self.call(conn, "stateless", "POST",
                                                 modern_headers("tools/call", tool),
                                                 json.dumps(body).encode())
            if result != "ok":
                return
            if answer is None:
                return
            state = message["result"]
            extra = {"inputResponses": {answer: ANSWERS[answer]},
                     "requestState": state["requestState"]}

    async def _publisher(self) -> None:
        conn = Http1(self.url)
        tool = "test_trigger_resource_update"
        try:
            for _ in range(self.max_per_worker):
                if not self.running:
                    return
                body = {"jsonrpc": "2.0", "id": self.next_id(), "method": "tools/call",
                        "params": {"name": tool, "arguments": {"uri": WATCHED},
                                   "_meta": META}}
                await self.call(conn, "publish", "POST", modern_headers("tools/call", tool),
                                json.dumps(body).encode())
                await self._pause(self.pace * 3)
        finally:
            await conn.close()

    async def _session(self) -> None:
        """Legacy sessions, each step retried (as a client honouring Retry-After does)
        until it succeeds: every session opened is deleted in the end."""
        conn = Http1(self.url)
        base = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"}
        try:
            for _ in range(self.max_per_worker):
                if not self.running:
                    return
                init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"protocolVersion": LEGACY, "capabilities": {},
                                              "clientInfo": {"name": "fault", "version": "1"}}
                                   }).encode()
                _, _, headers = await self._until_ok(conn, "POST", base, init)
                sid = headers.get("mcp-session-id")
                if sid is None:
                    continue  # stopped while retrying
                self.open_sessions.add(sid)
                session = {**base, "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
                steps = [("POST", json.dumps({"jsonrpc": "2.0",
                                              "method": "notifications/initialized"})),
                         ("POST", json.dumps({"jsonrpc": "2.0", "id": 2,
                                              "method": "tools/list"})),
                         ("DELETE", "")]
                for method, body in steps:
                    await self._until_ok(conn, method, session, body.encode(), must=True)
                self.open_sessions.discard(sid)
                await self._pause(self.pace)
        finally:
            await conn.close()

    async def _until_ok(self, conn: Http1, method: str, headers: dict[str, str],
                        body: bytes, must: bool = False) -> tuple[str, Any, dict[str, str]]:
        deadline = time.monotonic() + 60.0
        retried = False
        while True:
            result, message, response_headers = await self.call(
                conn, "session", method, headers, body, gone_is_done=retried)
            if result == "ok" or (not must and not self.running):
                return result, message, response_headers
            if result not in RETRYABLE or time.monotonic() > deadline:
                return result, message, response_headers
            retried = True
            await asyncio.sleep(min(1.0, float(response_headers.get("retry-after", "0.2"))))

    async def _listener(self) -> None:
        for _ in range(self.max_per_worker):
            if not self.running:
                return
            await self._listen_once()

    async def _listen_once(self) -> None:
        conn = Http1(self.url)
        assert conn.writer is None
        body = json.dumps({"jsonrpc": "2.0", "id": f"listen-{self.next_id()}",
                           "method": "subscriptions/listen",
                           "params": {"_meta": META, "notifications": {
                               "resourceSubscriptions": [WATCHED]}}}).encode()
        start = time.monotonic()
        try:
            reader, writer = await asyncio.open_connection(conn.host, conn.port)
        except OSError:
            self.outcomes.append(Outcome("listen", start, time.monotonic(), 0, "connection"))
            await self._pause(0.2)
            return
        try:
            head = [f"POST {conn.path} HTTP/1.1", f"Host: {conn.authority}",
                    f"Content-Length: {len(body)}",
                    *(f"{k}: {v}" for k, v in modern_headers("subscriptions/listen").items())]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            try:
                async with asyncio.timeout(HUNG):
                    status, headers = await read_head(reader)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                result = "hung" if isinstance(exc, TimeoutError) else "connection"
                self.outcomes.append(Outcome("listen", start, time.monotonic(), 0, result))
                await self._pause(0.2)
                return
            if not headers.get("content-type", "").startswith("text/event-stream"):
                data = await read_body(reader, headers)
                result, _ = judge(status, data)
                self.outcomes.append(Outcome("listen", start, time.monotonic(), status,
                                             result, headers.get("x-upstream", "")))
                await self._pause(min(1.0, float(headers.get("retry-after", "0.2"))))
                return
            self.outcomes.append(Outcome("listen", start, time.monotonic(), status, "ok",
                                         headers.get("x-upstream", "")))
            await self._read_stream(reader)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _read_stream(self, reader: asyncio.StreamReader) -> None:
        events, parser = 0, SseParser()
        stop = asyncio.ensure_future(self._stopping.wait())
        stream = chunks(reader)
        try:
            while True:
                piece = asyncio.ensure_future(anext(stream))
                done, _ = await asyncio.wait({piece, stop}, return_when=asyncio.FIRST_COMPLETED)
                if piece not in done:
                    piece.cancel()
                    with contextlib.suppress(BaseException):
                        await piece
                    return  # the load stops: the client hangs up
                try:
                    chunk = piece.result()
                except (StopAsyncIteration, OSError, asyncio.IncompleteReadError,
                        ValueError):
                    self.stream_ends.append(StreamEnd(time.monotonic(), "eof",
                                                      parser.retry is not None, events))
                    return
                for data in parser.feed(chunk):
                    message = json.loads(data)
                    if "method" in message:
                        events += 1
                        continue
                    if "result" in message:
                        how = "result"
                    else:
                        how = "error:" + str(((message.get("error") or {}).get("data")
                                              or {}).get("reason"))
                    self.stream_ends.append(StreamEnd(time.monotonic(), how,
                                                      parser.retry is not None, events))
                    await self._pause(0.05)
                    return
        finally:
            stop.cancel()

    # -- reading the record -----------------------------------------------------------------
    def of(self, *kinds: str, since: float = 0.0, until: float = float("inf")
           ) -> list[Outcome]:
        return [o for o in self.outcomes
                if (not kinds or o.kind in kinds) and since <= o.start <= until]

    def failures(self, *kinds: str, since: float = 0.0, until: float = float("inf")
                 ) -> list[Outcome]:
        return [o for o in self.of(*kinds, since=since, until=until) if not o.ok]

    def first_success_after(self, kind: str, moment: float) -> float | None:
        starts = [o.start for o in self.outcomes if o.kind == kind and o.ok
                  and o.start >= moment]
        return min(starts) if starts else None
