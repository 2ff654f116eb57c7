"""A 2025-era client of an in-process ASGI app: one session, as a real legacy client.

JSON exchanges go through httpx's ``ASGITransport``; requests whose answer streams (a
tool call that asks the client something, the GET stream) through
``tests.support.asgi.Exchange``, message by message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support.asgi import Exchange
from tests.support.wire import SERVER_INFO, SUBSCRIPTION_ID

LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
BASE_HEADERS = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"}
#: Fields only 2026-07-28 results have.
MODERN_FIELDS = ("resultType", "ttlMs", "cacheScope")


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
        return Exchange(self.app, "POST", headers=self.headers(),
                        body=json.dumps(message).encode())

    def get_stream(self) -> Exchange:
        headers = {"Accept": "text/event-stream", "Mcp-Session-Id": self.session_id or ""}
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        return Exchange(self.app, "GET", headers=headers)


__all__ = ["BASE_HEADERS", "LEGACY_VERSIONS", "MODERN_FIELDS", "SERVER_INFO", "SUBSCRIPTION_ID",
           "LegacyClient", "Reply"]
