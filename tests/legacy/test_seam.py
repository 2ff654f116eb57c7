"""The 2025 era behind one seam (mcpcore/legacy/): the engine serves a session request
through ``Server.dispatch`` with the session's meta and a ``Bridge``, and shapes
nothing; change events render as the era's notifications.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from mcpcore import ANONYMOUS, Context, Server
from mcpcore.errors import MethodNotFound
from mcpcore.jsonrpc import Request, Response
from mcpcore.legacy.bridge import Bridge, NoBridge
from mcpcore.legacy.dispatch import RESOURCE_NOT_FOUND, SessionDispatcher
from mcpcore.legacy.notifications import render
from mcpcore.legacy.sessions import SessionManager
from mcpcore.stores import MemoryStore
from mcpcore.subscriptions import Event

NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


def server() -> Server:
    s = Server("seam")

    @s.tool()
    async def greet(ctx: Context) -> str:
        """Asks a name."""
        answer = await ctx.elicit("Name?", NAME)
        return f"Hello {answer.content['name']}"

    @s.resource("test://r")
    def r() -> str:
        return "r"

    return s


def request(method: str, params: Any = None, id: Any = 1) -> Request:
    raw = msgspec.Raw(json.dumps(params).encode()) if params is not None else None
    return Request(id, method, raw)


async def session(dispatcher: SessionDispatcher, version: str = "2025-11-25") -> Any:
    record, payload = await dispatcher.initialize(request("initialize", {
        "protocolVersion": version, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"}}), principal=ANONYMOUS)
    assert json.loads(payload)["result"]["protocolVersion"] == version
    return record


async def test_a_session_request_is_served_by_the_engine_unshaped() -> None:
    s = server()
    dispatcher = SessionDispatcher(s, SessionManager(MemoryStore()))
    record = await session(dispatcher)
    asked: list[dict[str, Any]] = []

    async def exchange(request_id: str, payload: bytes) -> Response:
        question = json.loads(payload)
        asked.append(question)
        return Response(request_id, msgspec.Raw(b'{"action":"accept","content":{"name":"Ada"}}'))

    bridge = Bridge(record.version, exchange, timeout=30)

    async def sink(message: bytes) -> None:
        return None

    payload = await dispatcher.request(record, request("tools/call", {"name": "greet"}),
                                       sink=sink, inputs=bridge, principal=ANONYMOUS)
    result = json.loads(payload)["result"]
    assert result == {"content": [{"type": "text", "text": "Hello Ada"}]}  # no stamps
    assert [q["method"] for q in asked] == ["elicitation/create"]
    assert bridge.outstanding == set()


async def test_modern_only_methods_do_not_exist_in_the_era() -> None:
    s = server()
    meta = (await session(SessionDispatcher(s, SessionManager(MemoryStore())))).meta()
    for method in ("server/discover", "subscriptions/listen"):
        with pytest.raises(MethodNotFound):
            await s.dispatch(request(method, {}), meta=meta, inputs=NoBridge())


async def test_a_missing_resource_is_the_eras_code() -> None:
    s = server()
    dispatcher = SessionDispatcher(s, SessionManager(MemoryStore()))
    record = await session(dispatcher)

    async def sink(message: bytes) -> None:
        return None

    payload = await dispatcher.request(record, request("resources/read", {"uri": "test://x"}),
                                       sink=sink, inputs=NoBridge(), principal=ANONYMOUS)
    error = json.loads(payload)["error"]
    assert error["code"] == RESOURCE_NOT_FOUND and error["data"] == {"uri": "test://x"}


async def test_a_batched_request_cannot_ask() -> None:
    s = server()
    dispatcher = SessionDispatcher(s, SessionManager(MemoryStore()))
    record = await session(dispatcher, "2025-03-26")

    async def sink(message: bytes) -> None:
        return None

    payload = await dispatcher.request(record, request("tools/call", {"name": "greet"}),
                                       sink=sink, inputs=NoBridge(), principal=ANONYMOUS)
    assert "inside a JSON-RPC batch" in json.loads(payload)["error"]["message"]


@pytest.mark.parametrize(("event", "subscriptions", "expected"), [
    (Event(kind="tools"), [], {"method": "notifications/tools/list_changed"}),
    (Event(kind="updated", uri="file:///d/a.txt"), ["file:///d"],
     {"method": "notifications/resources/updated", "uri": "file:///d/a.txt"}),
    (Event(kind="updated", uri="file:///d/a.txt"), ["file:///d/a.txt"],
     {"method": "notifications/resources/updated", "uri": "file:///d/a.txt"}),
    (Event(kind="updated", uri="file:///other"), ["file:///d"], None),
    (Event(kind="updated", uri="file:///dd"), ["file:///d"], None),
])
def test_events_render_as_the_eras_notifications(event: Event, subscriptions: list[str],
                                                 expected: dict[str, str] | None) -> None:
    rendered = render(event, subscriptions)
    if expected is None:
        assert rendered is None
        return
    assert rendered is not None
    message = json.loads(rendered)
    assert message["method"] == expected["method"]
    assert "id" not in message and "subscriptionId" not in json.dumps(message)
    if "uri" in expected:
        assert message["params"] == {"uri": expected["uri"]}
