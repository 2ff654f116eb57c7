"""subscriptions/listen on dedicated servers: acknowledgement, filters, fan-out, teardown.

The fixture server's listen streams over every transport are in test_server.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from typing import Any

import pytest

from mcpcore import Server
from mcpcore.jsonrpc import decode_message
from mcpcore.subscriptions import Event
from tests.support.clock import until
from tests.support.peers import DirectPeer
from tests.support.schema import schema_checker
from tests.support.wire import SERVER_INFO, SUBSCRIPTION_ID, make_meta


def full_server(**kwargs: Any) -> Server:
    server = Server("subs", "1.0.0", **kwargs)
    server.tool("t")(lambda: "x")
    server.prompt("p")(lambda: "x")
    server.resource("test://r")(lambda: "x")
    return server


async def test_ack_then_tagged_notifications_of_every_kind() -> None:
    server = full_server()
    peer = DirectPeer(server)
    wanted = {"toolsListChanged": True, "promptsListChanged": True,
              "resourcesListChanged": True, "resourceSubscriptions": ["test://dir"]}
    async with peer.listen(wanted, id=0) as sub:
        ack = await sub.next()
        assert ack["params"] == {"_meta": {SUBSCRIPTION_ID: 0}, "notifications": wanted}
        for kind in ("tools", "prompts", "resources"):
            await server.notify_list_changed(kind)  # type: ignore[arg-type]
        for uri in ("test://dirx", "test://dir", "test://dir/sub/file"):
            await server.notify_resource_updated(uri)
        got = [await sub.next() for _ in range(5)]
        assert [m["method"] for m in got] == [
            "notifications/tools/list_changed", "notifications/prompts/list_changed",
            "notifications/resources/list_changed", "notifications/resources/updated",
            "notifications/resources/updated"]
        # A sub-resource of a subscribed URI is delivered; a sibling prefix is not.
        assert [m["params"]["uri"] for m in got[3:]] == ["test://dir", "test://dir/sub/file"]
        assert all(m["params"]["_meta"] == {SUBSCRIPTION_ID: 0} for m in got)


@pytest.mark.parametrize(("setup", "wanted", "honoured"), [
    ("tools only", {"toolsListChanged": True, "promptsListChanged": True,
                    "resourceSubscriptions": ["test://r"]}, {"toolsListChanged": True}),
    ("no listChanged", {"toolsListChanged": True}, {}),
    ("no subscribe", {"resourceSubscriptions": ["test://r"], "resourcesListChanged": True},
     {"resourcesListChanged": True}),
    ("full", {"toolsListChanged": False}, {}),
    ("full", {}, {}),
    ("full", {"resourceSubscriptions": []}, {}),
    ("full", {"unknownKind": True}, {}),
])
async def test_ack_lists_only_what_is_honoured(setup: str, wanted: dict[str, Any],
                                               honoured: dict[str, Any]) -> None:
    if setup == "tools only":
        server = Server("tools-only")
        server.tool("t")(lambda: "x")
    else:
        server = full_server()
        server.list_changed = setup != "no listChanged"
        server.resource_subscribe = setup != "no subscribe"
    peer = DirectPeer(server)
    async with peer.listen(wanted) as sub:
        ack = await sub.next()
        assert ack["params"]["notifications"] == honoured


async def test_unhonoured_kinds_are_not_delivered() -> None:
    server = full_server()
    async with DirectPeer(server).listen({"promptsListChanged": True}, id="p") as sub:
        await sub.next()
        await server.notify_list_changed("tools")
        await server.notify_resource_updated("test://r")
        await server.notify_list_changed("prompts")
        assert (await sub.next())["method"] == "notifications/prompts/list_changed"


async def test_every_listener_gets_its_own_tag() -> None:
    server = full_server()
    peer = DirectPeer(server)
    async with peer.listen({"toolsListChanged": True}, id=1) as one, \
            peer.listen({"toolsListChanged": True}, id="1") as two:
        await one.next()
        await two.next()
        assert server.subscriptions.active == 2
        await server.notify_list_changed("tools")
        tag_one = (await one.next())["params"]["_meta"][SUBSCRIPTION_ID]
        tag_two = (await two.next())["params"]["_meta"][SUBSCRIPTION_ID]
        assert (tag_one, type(tag_one)) == (1, int)
        assert (tag_two, type(tag_two)) == ("1", str)
    await asyncio.sleep(0)
    assert server.subscriptions.active == 0


async def test_graceful_close_sends_the_listen_result() -> None:
    server = full_server()
    async with DirectPeer(server).listen({"toolsListChanged": True}, id="L1") as sub:
        await sub.next()
        await server.aclose()
        result = await sub.next()
    assert result["id"] == "L1"
    assert result["result"]["resultType"] == "complete"
    assert result["result"]["_meta"][SUBSCRIPTION_ID] == "L1"
    assert result["result"]["_meta"][SERVER_INFO]["name"] == "subs"


async def test_listen_never_carries_request_scoped_notifications() -> None:
    server = full_server()
    meta = make_meta(log_level="debug", progress_token="p")
    async with DirectPeer(server).listen({"toolsListChanged": True}, meta=meta) as sub:
        assert (await sub.next())["method"] == "notifications/subscriptions/acknowledged"
        await server.notify_list_changed("tools")
        assert (await sub.next())["method"] == "notifications/tools/list_changed"


async def test_a_slow_listener_is_dropped_not_buffered() -> None:
    from mcpcore.stores import MemoryStore

    server = Server("slow", store=MemoryStore(max_queue=2))
    server.tool("t")(lambda: "x")
    async with DirectPeer(server).listen({"toolsListChanged": True}, id=5) as sub:
        await sub.next()
        for _ in range(10):  # published without yielding: the queue overflows
            await server.subscriptions.store.publish("events", b'{"kind":"tools"}')
        with pytest.raises(TimeoutError):
            while True:
                await sub.next(timeout=0.5)
    # Events were lost: the stream ends with an error the client can act on, never with
    # a result that looks like a graceful end.
    last = sub.received[-1]
    assert last.get("method") is None and "result" not in last
    assert last["id"] == 5
    assert last["error"]["code"] == -32603
    assert last["error"]["data"] == {"reason": "lagged"}
    assert "listen again" in last["error"]["message"]


async def test_malformed_events_are_skipped() -> None:
    server = full_server()
    async with DirectPeer(server).listen({"toolsListChanged": True}) as sub:
        await sub.next()
        await server.subscriptions.store.publish("events", b"not json")
        await server.subscriptions.publish(Event(kind="tools"))
        assert (await sub.next())["method"] == "notifications/tools/list_changed"


def test_a_server_serves_listen_streams_on_successive_event_loops() -> None:
    """This used to end every listen on a second loop at once: the hub held one
    ``asyncio.Event`` bound to the first loop that listened (a module-level server serves
    several loops in tests)."""
    server = full_server()
    checker = schema_checker()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": True}, "_meta": make_meta()}}).encode()

    async def listen_once() -> list[str]:
        got: list[dict[str, Any]] = []

        async def sink(data: bytes) -> None:
            got.append(json.loads(data))

        task = asyncio.ensure_future(server.handle(decode_message(body), sink=sink))  # type: ignore[arg-type]
        await until(lambda: bool(got))
        await server.notify_list_changed("tools")
        with contextlib.suppress(AssertionError):
            await until(lambda: len(got) > 1 or task.done(), passes=200)
        ended_early = task.done()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for message in got:
            checker.check(message)
        return [m["method"] for m in got] + (["<ended>"] if ended_early else [])

    expected = ["notifications/subscriptions/acknowledged", "notifications/tools/list_changed"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asyncio.run(listen_once()) == expected
        assert asyncio.run(listen_once()) == expected


async def test_a_listen_naming_too_many_uris_is_invalid_params() -> None:
    """Each URI a listen stream names is held for the stream's life: a client cannot make
    the server hold more than ``MAX_RESOURCE_SUBSCRIPTIONS`` of them (-32602)."""
    from mcpcore.errors import InvalidParams
    from mcpcore.jsonrpc import Request
    from mcpcore.params import MAX_RESOURCE_SUBSCRIPTIONS

    server = full_server()
    uris = [f"test://r/{n}" for n in range(MAX_RESOURCE_SUBSCRIPTIONS + 1)]
    params = json.dumps({"_meta": make_meta(), "notifications": {
        "resourceSubscriptions": uris}}).encode()
    with pytest.raises(InvalidParams) as refused:
        await server.handle(Request(id=1, method="subscriptions/listen", params=params))
    assert "length <= 1000" in refused.value.message
