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


class Interest:
    """A ``ResourceInterest`` that counts the listeners of each URI."""

    def __init__(self) -> None:
        self.listeners: dict[str, int] = {}

    async def acquire(self, uri: str, principal: Any) -> None:
        self.listeners[uri] = self.listeners.get(uri, 0) + 1

    def release(self, uri: str, principal: Any) -> None:
        self.listeners[uri] -= 1
        if not self.listeners[uri]:
            del self.listeners[uri]


async def _ask(dispatcher: SessionDispatcher, record: Any, method: str, uri: str) -> Any:
    async def sink(message: bytes) -> None:
        return None

    payload = await dispatcher.request(record, request(method, {"uri": uri}), sink=sink,
                                       inputs=NoBridge(), principal=ANONYMOUS)
    return json.loads(payload)


async def test_an_instance_releases_only_what_it_holds_and_sweeps_ended_sessions() -> None:
    """Two instances (two dispatchers on one Store): each holds what it subscribed for a
    session; an unsubscribe or an end through the other releases nothing here; the
    sweep finds the session's record (gone, or without the URI) and releases; the
    stdio shim's end releases everything (``release_all``)."""
    now = [0.0]
    store = MemoryStore(clock=lambda: now[0])
    sessions = SessionManager(store, idle_ttl=600)
    here, there = server(), server()
    held_here, held_there = Interest(), Interest()
    here.subscriptions.interest, there.subscriptions.interest = held_here, held_there
    mine, theirs = SessionDispatcher(here, sessions), SessionDispatcher(there, sessions)
    first, second = await session(mine), await session(mine)
    for record in (first, second):
        assert (await _ask(mine, record, "resources/subscribe", "test://r"))["result"] == {}
    assert held_here.listeners == {"test://r": 2}
    # Unsubscribed through the other instance: nothing released there, nor here yet.
    record = await sessions.load(first.id)
    await _ask(theirs, record, "resources/unsubscribe", "test://r")
    assert held_there.listeners == {}
    assert await mine.sweep() == 1
    assert held_here.listeners == {"test://r": 1}
    # The other session expires without a DELETE: the next sweep finds it gone.
    assert await mine.sweep() == 0
    now[0] += 601
    assert await mine.sweep() == 1
    assert mine.held == {} and held_here.listeners == {}
    # The stdio era's one session ends with the process: everything held goes.
    third = await session(mine)
    await _ask(mine, third, "resources/subscribe", "test://r")
    mine.release_all()
    assert mine.held == {} and held_here.listeners == {}
