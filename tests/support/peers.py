"""Clients of the engine over each transport, for tests written once and run over all.

``Peer`` builds conforming requests (``_meta`` added unless ``raw=True``) and returns a
``Reply``: the notifications the request's stream carried, then its response. Every
message a peer receives is checked against schema.json (``tests.support.schema``), so no
test can forget to.

- ``DirectPeer``: ``Server.handle`` called directly, errors encoded as the transports do;
- ``HttpPeer``: the ASGI app in-process (httpx ``ASGITransport``; listen streams through
  ``tests.support.asgi.Exchange``), with the headers a conforming client sends;
- ``StdioPeer``: a real ``python -m examples.everything --stdio`` subprocess.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpcore import jsonrpc
from mcpcore.errors import McpError
from mcpcore.server import Server
from tests.support.asgi import Exchange
from tests.support.processes import StdioProcess
from tests.support.schema import SchemaChecker, schema_checker
from tests.support.sse import SseParser
from tests.support.wire import SUBSCRIPTION_ID, make_meta, standard_headers


@dataclass
class Reply:
    """What one request produced: notifications on its stream, then the response."""

    messages: list[dict[str, Any]]
    response: dict[str, Any]
    status: int | None = None
    content_type: str | None = None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.messages, self.response))

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.response, f"expected a result, got {self.response}"
        result: dict[str, Any] = self.response["result"]
        return result

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.response, f"expected an error, got {self.response}"
        error: dict[str, Any] = self.response["error"]
        return error

    @property
    def code(self) -> int | None:
        error = self.response.get("error")
        return error["code"] if isinstance(error, dict) else None

    def methods(self) -> list[str]:
        return [m["method"] for m in self.messages]


class Subscription:
    """An open ``subscriptions/listen`` stream, whatever the transport."""

    def __init__(self, listen_id: Any, close: Callable[[], Any]) -> None:
        self.id = listen_id
        self.received: list[dict[str, Any]] = []
        self._close = close
        self._cursor = 0
        #: Pulls what arrived into ``received`` (peers whose messages arrive elsewhere).
        self.refresh: Callable[[], None] = lambda: None
        #: Set whenever a message may have arrived; stdio (a reader thread) polls instead.
        self.arrived = asyncio.Event()
        self.polls = False

    def add(self, message: dict[str, Any]) -> None:
        self.received.append(message)
        self.arrived.set()

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                self.refresh()
                if self._cursor < len(self.received):
                    self._cursor += 1
                    return self.received[self._cursor - 1]
                if self.polls:
                    await asyncio.sleep(0.002)  # a thread feeds this one: poll, bounded
                else:
                    self.arrived.clear()
                    await self.arrived.wait()

    async def close(self) -> None:
        result = self._close()
        if asyncio.iscoroutine(result):
            await result


class Peer(abc.ABC):
    """A client of the engine over one transport.

    ``await peer.request(method, params)`` adds ``_meta`` (``meta=`` overrides it,
    ``raw=True`` sends ``params`` untouched) and returns a ``Reply``.
    """

    name = "peer"
    has_headers = False

    def __init__(self) -> None:
        self.checker = schema_checker()
        self._ids = 0

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def build(self, method: str, params: Mapping[str, Any] | None, *, meta: Any = None,
              raw: bool = False, id: Any = None) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id() if id is None else id,
                                "method": method}
        if raw:
            if params is not None:
                body["params"] = params
        else:
            body["params"] = {**(params or {}), "_meta": make_meta() if meta is None else meta}
        return body

    async def request(self, method: str, params: Mapping[str, Any] | None = None, *,
                      meta: Any = None, headers: Mapping[str, str | None] | None = None,
                      raw: bool = False, id: Any = None) -> Reply:
        body = self.build(method, params, meta=meta, raw=raw, id=id)
        reply = await self.send(body, headers=headers)
        if "id" in reply.response:
            assert reply.response["id"] == body["id"]
            assert type(reply.response["id"]) is type(body["id"])
        return reply

    @abc.abstractmethod
    async def send(self, body: dict[str, Any], *,
                   headers: Mapping[str, str | None] | None = None) -> Reply:
        """Deliver one message over this peer's transport and collect the reply."""

    @abc.abstractmethod
    def listen(self, notifications: Mapping[str, Any], *, id: Any = None,
               meta: Any = None) -> contextlib.AbstractAsyncContextManager[Subscription]:
        """Open a subscriptions/listen stream."""

    def check(self, message: dict[str, Any], method: str | None) -> dict[str, Any]:
        self.checker.check(message, method)
        return message


class DirectPeer(Peer):
    """``Server.handle`` called directly, errors encoded as the transports do."""

    name = "direct"

    def __init__(self, server: Server) -> None:
        super().__init__()
        self.server = server

    async def send(self, body: dict[str, Any], *,
                   headers: Mapping[str, str | None] | None = None) -> Reply:
        messages: list[dict[str, Any]] = []

        async def sink(data: bytes) -> None:
            messages.append(self.check(json.loads(data), None))

        payload = await self._serve(json.dumps(body).encode(), sink)
        response = self.check(json.loads(payload), body.get("method"))
        return Reply(messages, response)

    async def _serve(self, raw: bytes, sink: Callable[[bytes], Any]) -> bytes:
        try:
            message = jsonrpc.decode_message(raw)
        except McpError as exc:
            return jsonrpc.encode_error(jsonrpc.peek_id(raw), exc)
        assert isinstance(message, jsonrpc.Request)
        try:
            result = await self.server.handle(message, sink=sink)
        except McpError as exc:
            return jsonrpc.encode_error(message.id, exc)
        return jsonrpc.encode_result(message.id, result)

    @contextlib.asynccontextmanager
    async def listen(self, notifications: Mapping[str, Any], *, id: Any = None,
                     meta: Any = None) -> AsyncIterator[Subscription]:
        body = self.build("subscriptions/listen", {"notifications": dict(notifications)},
                          meta=meta, id=id)
        sub: Subscription

        async def sink(data: bytes) -> None:
            sub.add(self.check(json.loads(data), None))

        async def run() -> None:
            payload = await self._serve(json.dumps(body).encode(), sink)
            sub.add(self.check(json.loads(payload), "subscriptions/listen"))

        task = asyncio.ensure_future(run())

        async def close() -> None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        sub = Subscription(body["id"], close)
        try:
            yield sub
        finally:
            await close()


class HttpPeer(Peer):
    """POSTs to the ASGI app in-process (httpx ``ASGITransport``) with standard headers."""

    name = "http"
    has_headers = True

    def __init__(self, app: Any, path: str = "/mcp") -> None:
        super().__init__()
        self.app = app
        self.path = path

    def headers_for(self, body: Mapping[str, Any],
                    overrides: Mapping[str, str | None] | None) -> dict[str, str]:
        params = body.get("params")
        headers = standard_headers(str(body.get("method")),
                                   params if isinstance(params, dict) else None)
        lowered = {k.lower(): k for k in headers}
        for key, value in (overrides or {}).items():
            headers.pop(lowered.get(key.lower(), key), None)
            if value is not None:
                headers[key] = value
        return headers

    async def post(self, content: bytes, headers: Mapping[str, str], *,
                   method: str = "POST") -> httpx.Response:
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.request(method, self.path, content=content, headers=dict(headers))

    async def send(self, body: dict[str, Any], *,
                   headers: Mapping[str, str | None] | None = None) -> Reply:
        response = await self.post(json.dumps(body).encode(), self.headers_for(body, headers))
        return parse_http_reply(response, self.checker, body.get("method"))

    @contextlib.asynccontextmanager
    async def listen(self, notifications: Mapping[str, Any], *, id: Any = None,
                     meta: Any = None) -> AsyncIterator[Subscription]:
        body = self.build("subscriptions/listen", {"notifications": dict(notifications)},
                          meta=meta, id=id)
        exchange = Exchange(self.app, "POST", path=self.path,
                            headers=self.headers_for(body, None),
                            body=json.dumps(body).encode(), raise_after_hang_up=True)
        sub = Subscription(body["id"], exchange.disconnect)

        def refresh() -> None:
            while len(sub.received) < len(exchange.events):
                message = json.loads(exchange.events[len(sub.received)])
                method = None if "method" in message else "subscriptions/listen"
                sub.received.append(self.check(message, method))

        async def watch() -> None:  # wake the subscription at every event
            seen = [0]
            while True:
                await exchange.wait_for(lambda: len(exchange.events) > seen[0], 3600)
                seen[0] = len(exchange.events)
                sub.arrived.set()

        sub.refresh = refresh
        watcher = asyncio.ensure_future(watch())
        try:
            yield sub
            assert exchange.status == 200
            assert exchange.header("content-type") == "text/event-stream"
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, AssertionError):
                await watcher
            await exchange.disconnect()


def parse_http_reply(response: httpx.Response, checker: SchemaChecker,
                     method: str | None) -> Reply:
    """Split an HTTP answer into notifications and the final response, all checked."""
    ctype = response.headers.get("content-type", "")
    assert response.status_code != 500, response.text
    if response.status_code == 202:
        assert response.content == b""
        return Reply([], {}, 202, ctype or None)
    if ctype.startswith("text/event-stream"):
        assert response.status_code == 200
        parser = SseParser()
        events = [json.loads(e) for e in parser.feed(response.content)]
        assert not parser.pending, "SSE body ends mid-event"
        assert events, "empty SSE stream"
        *messages, final = events
        for m in messages:
            checker.check(m, None)
            assert "method" in m, f"response before the end of the stream: {m}"
        checker.check(final, method)
        return Reply(messages, final, 200, ctype)
    assert ctype.startswith("application/json"), (response.status_code, ctype, response.text)
    final = response.json()
    checker.check(final, method)
    return Reply([], final, response.status_code, ctype)


def _key(value: Any) -> tuple[str, Any]:
    """Ids compare with their JSON type: ``1`` and ``"1"`` are different ids."""
    return (type(value).__name__, value)


@dataclass
class _Pending:
    method: str
    token: Any
    messages: list[dict[str, Any]] = field(default_factory=list)
    response: dict[str, Any] | None = None


class StdioPeer(Peer):
    """Requests as stdin lines, answers demultiplexed from stdout lines."""

    name = "stdio"

    def __init__(self, process: StdioProcess, timeout: float = 10.0) -> None:
        super().__init__()
        self.process = process
        self.timeout = timeout
        self.pending: dict[tuple[str, Any], _Pending] = {}
        self.subscriptions: dict[tuple[str, Any], Subscription] = {}
        self.stray: list[dict[str, Any]] = []
        self.unmatched_responses: list[dict[str, Any]] = []

    def next_id(self) -> int:
        return self.process.next_id()

    def pump(self) -> None:
        for message in self.process.drain():
            if "method" in message:
                self._route_notification(message)
                continue
            key = _key(message.get("id"))
            pending = self.pending.get(key)
            if pending is None:
                sub = self.subscriptions.get(key)
                if sub is not None:
                    sub.add(self.check(message, "subscriptions/listen"))
                else:
                    if "error" in message:
                        self.check(message, None)
                    self.unmatched_responses.append(message)
                continue
            pending.response = self.check(message, pending.method)

    def _route_notification(self, message: dict[str, Any]) -> None:
        self.check(message, None)
        params = message.get("params") or {}
        meta = params.get("_meta") or {}
        if SUBSCRIPTION_ID in meta:
            sub = self.subscriptions.get(_key(meta[SUBSCRIPTION_ID]))
            if sub is None:
                self.stray.append(message)
            else:
                sub.add(message)
            return
        targets = [p for p in self.pending.values() if p.response is None]
        if message["method"] == "notifications/progress":
            targets = [p for p in targets if p.token == params.get("progressToken")]
        if not targets:
            self.stray.append(message)
        for target in targets:
            target.messages.append(message)

    async def send(self, body: dict[str, Any], *,
                   headers: Mapping[str, str | None] | None = None) -> Reply:
        key = _key(body.get("id"))
        params = body.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        pending = _Pending(str(body.get("method")), token)
        self.pending[key] = pending
        try:
            self.process.send(body)
            await self.wait_for(lambda: pending.response is not None,
                                f"response to {body.get('id')!r}")
        finally:
            del self.pending[key]
        assert pending.response is not None
        return Reply(pending.messages, pending.response)

    async def wait_for(self, condition: Callable[[], bool], what: str,
                       timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            self.pump()
            if condition():
                return
            if self.process.proc.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError(f"no {what}; stderr: "
                                   f"{bytes(self.process.stderr[-2000:]).decode(errors='replace')}")
            await asyncio.sleep(0.002)

    @contextlib.asynccontextmanager
    async def listen(self, notifications: Mapping[str, Any], *, id: Any = None,
                     meta: Any = None) -> AsyncIterator[Subscription]:
        body = self.build("subscriptions/listen", {"notifications": dict(notifications)},
                          meta=meta, id=id)
        key = _key(body["id"])

        def close() -> None:
            stdin = self.process.proc.stdin
            if self.subscriptions.pop(key, None) is not None and stdin and not stdin.closed:
                self.process.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": body["id"],
                                              "reason": "test done"}})

        sub = Subscription(body["id"], close)
        sub.refresh = self.pump
        sub.polls = True
        self.subscriptions[key] = sub
        self.process.send(body)
        try:
            yield sub
        finally:
            close()


__all__ = ["DirectPeer", "HttpPeer", "Peer", "Reply", "StdioPeer", "Subscription",
           "parse_http_reply"]
