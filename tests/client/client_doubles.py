"""Test doubles for the client tests: fake servers and canned answers.

- ``FakeServer``: a tiny ASGI app answering each JSON-RPC POST through a Python function,
  recording every request (body and headers) it got. For protocol edges the fixture
  server never produces: -32022, odd ``resultType``, HTML error pages, broken streams.
- ``Resolvers``: canned MRTR answers for the fixture server's tools, remembering what
  they were asked.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpcore.asgi_types import Scope
from mcpcore.client import Client

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
