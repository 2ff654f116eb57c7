"""Test doubles for the client tests: fake servers and an ASGI transport that streams.

- ``FakeServer``: a tiny ASGI app answering each JSON-RPC POST through a Python function,
  recording every request (body and headers) it got. For protocol edges the fixture
  server never produces: -32022, odd ``resultType``, HTML error pages, broken streams.
- ``StreamingASGITransport``: like ``httpx.ASGITransport`` but hands the response body
  over chunk by chunk as the app sends it, and tells the app ``http.disconnect`` when the
  client closes the response. ``httpx.ASGITransport`` buffers the whole body, so a
  ``subscriptions/listen`` stream would never arrive.
- ``Resolvers``: canned MRTR answers for the fixture server's tools, remembering what
  they were asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpcore.client import Client

Scope = dict[str, Any]
#: ``async with connect(**options) as client`` (the fixture in conftest.py).
Connect = Callable[..., contextlib.AbstractAsyncContextManager[Client]]


@dataclass
class Answer:
    """What a ``FakeServer`` handler returns: a status and a JSON body, or raw bytes."""

    body: Any
    status: int = 200
    content_type: str = "application/json"


Handler = Callable[[dict[str, Any], dict[str, str]], Awaitable[Answer] | Answer]


@dataclass
class Seen:
    body: dict[str, Any]
    headers: dict[str, str]


def result(request: dict[str, Any], value: dict[str, Any]) -> Answer:
    return Answer({"jsonrpc": "2.0", "id": request["id"], "result": value})


def error(request: dict[str, Any], code: int, message: str, data: Any = None,
          status: int = 200) -> Answer:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return Answer({"jsonrpc": "2.0", "id": request["id"], "error": err}, status=status)


def sse(*messages: dict[str, Any]) -> Answer:
    text = "".join(f"data: {json.dumps(m)}\n\n" for m in messages)
    return Answer(text.encode(), content_type="text/event-stream")


@dataclass
class FakeServer:
    """An ASGI app; ``handler(body, headers)`` answers each POST."""

    handler: Handler
    seen: list[Seen] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        body = json.loads(b"".join(chunks))
        self.seen.append(Seen(body, headers))
        answer = self.handler(body, headers)
        if not isinstance(answer, Answer):
            answer = await answer
        payload = (answer.body if isinstance(answer.body, bytes)
                   else json.dumps(answer.body).encode())
        await send({"type": "http.response.start", "status": answer.status,
                    "headers": [(b"content-type", answer.content_type.encode())]})
        await send({"type": "http.response.body", "body": payload})

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self),
                                 base_url="http://localhost")


class _Body(httpx.AsyncByteStream):
    def __init__(self, queue: asyncio.Queue[bytes | None], task: asyncio.Task[None],
                 gone: asyncio.Event) -> None:
        self._queue, self._task, self._gone = queue, task, gone

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self._queue.get()
            if chunk is None:
                return
            yield chunk

    async def aclose(self) -> None:
        self._gone.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), 5)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """An httpx transport calling an ASGI app in-process, body streamed as sent."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        scope: Scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method, "scheme": request.url.scheme,
            "path": request.url.path, "raw_path": request.url.raw_path,
            "query_string": request.url.query, "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (request.url.host, request.url.port or 80),
            "client": ("127.0.0.1", 50000),
        }
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        started = asyncio.Event()
        gone = asyncio.Event()
        start: dict[str, Any] = {}
        sent_request = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_request
            if not sent_request:
                sent_request = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                started.set()
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    queue.put_nowait(message["body"])
                if not message.get("more_body", False):
                    queue.put_nowait(None)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            finally:
                queue.put_nowait(None)
                started.set()

        task = asyncio.ensure_future(run())
        await started.wait()
        if not start:
            await task  # the app failed before answering: raise its error
            raise RuntimeError("ASGI app ended without a response")
        headers = [(k, v) for k, v in start.get("headers", [])]
        return httpx.Response(start["status"], headers=headers,
                              stream=_Body(queue, task, gone), request=request)


ANSWERS = {"name": "Ada", "color": "teal", "context": "tests", "ok": True,
           "username": "ada", "email": "ada@example.com"}


@dataclass
class Resolvers:
    """Canned MRTR answers that remember every request they were given."""

    asked: list[tuple[str, Any]] = field(default_factory=list)

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("elicitation/create", params))
        props = params.get("requestedSchema", {}).get("properties", {})
        return {"action": "accept", "content": {k: ANSWERS.get(k, "x") for k in props}}

    async def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("sampling/createMessage", params))
        return {"role": "assistant", "content": {"type": "text", "text": "Hello!"},
                "model": "test-model"}

    def roots(self) -> dict[str, Any]:
        self.asked.append(("roots/list", None))
        return {"roots": [{"uri": "file:///work", "name": "work"}]}

    def options(self) -> dict[str, Any]:
        return {"on_elicit": self.elicit, "on_sample": self.sample, "on_roots": self.roots}
