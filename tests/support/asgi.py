"""The tests' ASGI exchange driver: ``mcpcore.conformance.asgi.AppExchange`` (one HTTP
exchange with an in-process app, the client able to hang up) that also reads what
arrives as the 2026-07-28 wire: SSE events, decoded JSON-RPC messages, each checked
against the schema. An httpx client talks to an in-process app through the product's
``StreamingASGITransport`` (same module), which streams and hangs up the same way.

    exchange = Exchange(app, "POST", headers=headers, body=body)
    first = await exchange.next()           # the first JSON-RPC message
    await exchange.hang_up()

Waiting is event-driven: every send wakes ``wait_for``; nothing polls with sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import Any

from mcpcore.asgi_types import ASGIApp
from mcpcore.conformance.asgi import AppExchange, http_scope
from tests.support.schema import schema_checker
from tests.support.sse import SseParser


class Exchange(AppExchange):
    """One HTTP exchange with an ASGI app, started at once, read as MCP messages."""

    def __init__(self, app: ASGIApp, method: str = "POST", *, path: str = "/mcp",
                 headers: Mapping[str, str] | list[tuple[str, str]] | None = None,
                 body: bytes = b"", query: bytes = b"", root_path: str = "",
                 raise_after_hang_up: bool = False) -> None:
        self.events: list[str] = []
        self._parser = SseParser()
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        try:
            parsed = json.loads(body) if body else None
        except (ValueError, RecursionError):
            parsed = None
        #: The request's JSON-RPC method, to schema-check its response.
        self.method = parsed.get("method") if isinstance(parsed, dict) else None
        super().__init__(app, http_scope(method, path, headers or {}, query=query,
                                         root_path=root_path),
                         body, raise_after_hang_up=raise_after_hang_up)

    def chunk_arrived(self, chunk: bytes) -> None:
        # Apps under test may send what is not JSON (the client's tests use broken
        # servers on purpose): such messages stay in ``events``/``body`` only.
        if self.is_sse:
            for data in self._parser.feed(chunk):
                self.events.append(data)
                self._queue_json(data)
        elif self.complete and self.body and (
                self.header("content-type") or "").startswith("application/json"):
            self._queue_json(self.body)

    def _queue_json(self, data: str | bytes) -> None:
        with contextlib.suppress(ValueError, RecursionError):
            self._queue.put_nowait(json.loads(data))

    # -- what arrived -----------------------------------------------------------------
    @property
    def is_sse(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    @property
    def comments(self) -> int:
        """SSE comment lines (keep-alives) so far."""
        return self._parser.comments

    def json(self) -> Any:
        return json.loads(self.body)

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next JSON-RPC message (an SSE event, or the JSON body)."""
        return await asyncio.wait_for(self._queue.get(), timeout)

    def pending(self) -> list[dict[str, Any]]:
        """Messages received and not taken yet."""
        out = []
        while not self._queue.empty():
            out.append(self._queue.get_nowait())
        return out

    async def wait_events(self, n: int, timeout: float = 5.0) -> list[str]:
        await self.wait_for(lambda: len(self.events) >= n, timeout)
        return self.events

    def messages(self) -> list[dict[str, Any]]:
        """Every message received so far, each checked against the 2026-07-28 schema."""
        if self.is_sse:
            out = [json.loads(e) for e in self.events]
        elif self.complete and (self.header("content-type") or "").startswith(
                "application/json"):
            out = [self.json()]
        else:
            return []
        checker = schema_checker()
        for message in out:
            checker.check(message, None if "method" in message else self.method)
        return out

    async def run(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Wait for the app to finish; the schema-checked messages."""
        await self.finished(timeout)
        return self.messages()


__all__ = ["Exchange"]
