"""Test doubles for the legacy shim: an in-process legacy HTTP client over ASGI.

``Exchange`` drives one HTTP exchange with an ASGI app by hand, because httpx's
``ASGITransport`` returns only after the app finished, and a bridged tool call does not
finish until the client answered the question it streams. Messages arrive one at a
time (``next``); the client can hang up (``hang_up``) the way uvicorn reports it: the app
gets ``http.disconnect`` and later sends are dropped (and counted).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
BASE_HEADERS = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"}
#: Fields only 2026-07-28 results have (R12.23).
MODERN_FIELDS = ("resultType", "ttlMs", "cacheScope")
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


class Exchange:
    """One HTTP exchange with an ASGI app, by hand."""

    def __init__(self, app: Any, method: str, headers: Mapping[str, str],
                 body: bytes = b"", path: str = "/mcp") -> None:
        self.app = app
        self.scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": b"", "root_path": "",
            "headers": [(b"host", b"localhost")] + [
                (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            "client": ("127.0.0.1", 50000), "server": ("localhost", 80),
        }
        self.body = body
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.complete = False
        self.sent_after_hang_up = 0
        self.comments = 0  # SSE comment lines (keepalives)
        self._buffer = b""
        self._messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._started = asyncio.Event()
        self._body_sent = False
        self._gone = asyncio.Event()
        self.task = asyncio.ensure_future(self.app(self.scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if self._gone.is_set():
            self.sent_after_hang_up += 1  # uvicorn drops these silently
            return
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                            for k, v in message.get("headers", [])}
            self._started.set()
            return
        self._buffer += message.get("body", b"")
        if not message.get("more_body", False):
            self.complete = True
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            *events, self._buffer = self._buffer.split(b"\n\n")
            for event in events:
                self.comments += sum(1 for line in event.split(b"\n")
                                     if line.startswith(b":"))
                data = [line[5:].strip() for line in event.split(b"\n")
                        if line.startswith(b"data:")]
                if data:
                    self._messages.put_nowait(json.loads(b"\n".join(data)))
        elif self.complete and self._buffer:
            self._messages.put_nowait(json.loads(self._buffer))

    async def started(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(self._started.wait(), timeout)

    @property
    def is_sse(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        return await asyncio.wait_for(self._messages.get(), timeout)

    def pending(self) -> list[dict[str, Any]]:
        """Messages received and not yet taken."""
        out = []
        while not self._messages.empty():
            out.append(self._messages.get_nowait())
        return out

    async def finished(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(asyncio.shield(self.task), timeout)

    async def hang_up(self) -> None:
        self._gone.set()
        await asyncio.sleep(0)


@dataclass
class Reply:
    status: int
    headers: httpx.Headers
    body: Any

    @property
    def result(self) -> Any:
        assert isinstance(self.body, dict) and "result" in self.body, self.body
        return self.body["result"]

    @property
    def error(self) -> dict[str, Any]:
        assert isinstance(self.body, dict) and "error" in self.body, self.body
        error: dict[str, Any] = self.body["error"]
        return error


class LegacyClient:
    """A 2025-era client of an in-process ASGI app: one session, JSON exchanges through
    httpx's ``ASGITransport``, streams through ``Exchange``."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                      base_url="http://localhost")
        self.session_id: str | None = None
        self.version: str | None = None
        self._ids = 0

    async def aclose(self) -> None:
        await self.http.aclose()

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def headers(self, **extra: str) -> dict[str, str]:
        headers = dict(BASE_HEADERS)
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version is not None and self.version != "2025-03-26":
            headers["MCP-Protocol-Version"] = self.version
        headers.update(extra)
        return headers

    async def post(self, message: Any, headers: Mapping[str, str] | None = None) -> Reply:
        response = await self.http.post("/mcp", content=json.dumps(message).encode(),
                                         headers=dict(headers or self.headers()))
        body = response.json() if response.content else None
        return Reply(response.status_code, response.headers, body)

    async def initialize(self, version: str = "2025-11-25",
                         capabilities: dict[str, Any] | None = None, *,
                         initialized: bool = True) -> dict[str, Any]:
        reply = await self.post({
            "jsonrpc": "2.0", "id": self.next_id(), "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": capabilities or {},
                       "clientInfo": {"name": "legacy-tests", "version": "1"}}},
            BASE_HEADERS)
        assert reply.status == 200, reply.body
        self.session_id = reply.headers["mcp-session-id"]
        result: dict[str, Any] = reply.result
        self.version = result["protocolVersion"]
        if initialized:
            done = await self.notify("notifications/initialized")
            assert done.status == 202
        return result

    async def request(self, method: str, params: Any = None, *, id: Any = None) -> Reply:
        message: dict[str, Any] = {"jsonrpc": "2.0",
                                   "id": self.next_id() if id is None else id,
                                   "method": method}
        if params is not None:
            message["params"] = params
        return await self.post(message)

    async def notify(self, method: str, params: Any = None) -> Reply:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return await self.post(message)

    async def answer(self, request_id: Any, result: Any = None,
                     error: dict[str, Any] | None = None) -> Reply:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        return await self.post(message)

    def stream(self, method: str, params: Any = None, *, id: Any = None) -> Exchange:
        """A request whose response is read incrementally (tool calls that ask)."""
        message: dict[str, Any] = {"jsonrpc": "2.0",
                                   "id": self.next_id() if id is None else id,
                                   "method": method}
        if params is not None:
            message["params"] = params
        return Exchange(self.app, "POST", self.headers(), json.dumps(message).encode())

    def get_stream(self) -> Exchange:
        headers = {"Accept": "text/event-stream", "Mcp-Session-Id": self.session_id or ""}
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        return Exchange(self.app, "GET", headers)
