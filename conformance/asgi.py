"""An httpx transport that runs an ASGI app in-process and streams its response.

httpx's own ``ASGITransport`` collects the whole response body before returning, so a
``subscriptions/listen`` stream (which never ends by itself) would hang it, and it cannot
tell the app that the client went away. This one hands the body over chunk by chunk as
the app sends it, and closing the response delivers ``http.disconnect`` to the app, as a
real server would (the 2026-07-28 transport treats that as cancellation). Used by the
library API (``run_suite(app=...)``) so a server author can audit an app from pytest
without opening a port.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from mcpcore.asgi_types import ASGIApp, ASGIMessage, Scope

_DONE = object()


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """``httpx.AsyncClient(transport=StreamingASGITransport(app))``; see the module doc."""

    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 40000)) -> None:
        self.app = app
        self.client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        scope: Scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method, "scheme": url.scheme, "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0], "query_string": url.query,
            "root_path": "", "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (url.host, port), "client": self.client,
        }
        queue: asyncio.Queue[Any] = asyncio.Queue()
        disconnected = asyncio.Event()
        delivered = False

        async def receive() -> ASGIMessage:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: ASGIMessage) -> None:
            await queue.put(message)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except Exception as exc:  # reported as a 500, like a server would
                await queue.put(exc)
            finally:
                await queue.put(_DONE)

        task = asyncio.create_task(run())
        first = await queue.get()
        if first is _DONE or isinstance(first, Exception) or first.get(
                "type") != "http.response.start":
            disconnected.set()
            await _finish(task)
            return httpx.Response(500, content=b"ASGI app failed before responding")
        headers = [(bytes(k), bytes(v)) for k, v in first.get("headers", [])]
        return httpx.Response(int(first["status"]), headers=headers,
                              stream=_Body(queue, task, disconnected))


class _Body(httpx.AsyncByteStream):
    def __init__(self, queue: asyncio.Queue[Any], task: asyncio.Task[None],
                 disconnected: asyncio.Event) -> None:
        self._queue, self._task, self._disconnected = queue, task, disconnected
        self._ended = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while not self._ended:
            item = await self._queue.get()
            if item is _DONE or isinstance(item, Exception):
                self._ended = True
                if isinstance(item, Exception):
                    raise httpx.RemoteProtocolError("ASGI app raised mid-response")
                return
            if item.get("type") == "http.response.body":
                chunk = bytes(item.get("body", b""))
                if not item.get("more_body", False):
                    self._ended = True
                if chunk:
                    yield chunk

    async def aclose(self) -> None:
        self._disconnected.set()
        await _finish(self._task)


async def _finish(task: asyncio.Task[None], grace: float = 1.0) -> None:
    """Let the app notice the disconnect; cancel it if it lingers. The caller's own
    cancellation goes through (``asyncio.wait`` neither swallows it nor cancels the app),
    and the app is cancelled with it."""
    try:
        if not task.done():
            await asyncio.wait({task}, timeout=grace)
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
    except BaseException:
        task.cancel()
        raise
    finally:
        if task.done() and not task.cancelled():
            task.exception()  # seen: an app's failure is reported by the caller's checks


@contextlib.asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """Run the app's ASGI lifespan around a block (skipped if the app has none)."""
    events: asyncio.Queue[ASGIMessage] = asyncio.Queue()
    replies: asyncio.Queue[ASGIMessage] = asyncio.Queue()
    await events.put({"type": "lifespan.startup"})

    async def receive() -> ASGIMessage:
        return await events.get()

    async def send(message: ASGIMessage) -> None:
        await replies.put(message)

    async def run() -> None:
        with contextlib.suppress(Exception):
            await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                      receive, send)
        await replies.put({"type": "lifespan.unsupported"})

    task = asyncio.create_task(run())
    first = await replies.get()
    if first["type"] == "lifespan.startup.failed":
        await _finish(task)
        raise RuntimeError(f"the ASGI app failed to start: {first.get('message', '')}")
    try:
        yield
    finally:
        if first["type"] == "lifespan.startup.complete":
            await events.put({"type": "lifespan.shutdown"})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(replies.get(), 5)
        await _finish(task)


__all__ = ["StreamingASGITransport", "lifespan"]
