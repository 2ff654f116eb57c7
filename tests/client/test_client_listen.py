"""``subscriptions/listen`` over HTTP SSE, in process through a streaming ASGI transport."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from mcpcore import types
from mcpcore.client import Client
from mcpcore.conformance.asgi import StreamingASGITransport
from mcpcore.subscriptions import SubscriptionHub

URL = "http://localhost/mcp"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


@pytest.fixture(autouse=True)
def hub(everything: Any, monkeypatch: pytest.MonkeyPatch) -> SubscriptionHub:
    """A fresh hub per test: the shared server's hub binds its closing event to the first
    event loop that listens (other modules run theirs on the session loop), and closing
    a hub is final."""
    fresh = SubscriptionHub()
    monkeypatch.setattr(everything.server, "subscriptions", fresh)
    return fresh


def streaming(everything: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=StreamingASGITransport(everything.app))


async def next_note(sub: Any) -> types.Notification:
    note: types.Notification = await asyncio.wait_for(anext(sub), 5)
    return note


async def test_listen_acknowledges_then_delivers_changes(everything: Any) -> None:
    wanted = {"toolsListChanged": True, "resourceSubscriptions": ["test://watched-resource"]}
    async with streaming(everything) as http, Client.http(URL, http_client=http) as client, \
            client.listen(wanted) as sub:
        ack = await next_note(sub)
        assert ack.method == "notifications/subscriptions/acknowledged"
        assert sub.acknowledged == types.SubscriptionFilter(
            tools_list_changed=True, resource_subscriptions=["test://watched-resource"])
        await client.call_tool("test_trigger_tool_change")
        changed = await next_note(sub)
        await client.call_tool("test_trigger_resource_update")
        updated = await next_note(sub)
    assert changed.method == "notifications/tools/list_changed"
    assert updated.method == "notifications/resources/updated"
    for note in (ack, changed, updated):
        assert isinstance(note.params, dict)
        assert note.params["_meta"][SUBSCRIPTION_ID] == sub.subscription_id
    assert updated.params["uri"] == "test://watched-resource"  # type: ignore[index]


async def test_breaking_out_of_the_loop_closes_the_stream(everything: Any) -> None:
    async with streaming(everything) as http, Client.http(URL, http_client=http) as client:
        sub = client.listen(types.SubscriptionFilter(prompts_list_changed=True))
        async for note in sub:
            assert note.method == "notifications/subscriptions/acknowledged"
            break
        await sub.aclose()
        await sub.aclose()  # idempotent
        # The server saw the disconnect and dropped the listener: the next change
        # reaches nobody, and new requests still work.
        await client.call_tool("test_trigger_prompt_change")
        assert (await client.call_tool("test_simple_text")).content


async def test_graceful_server_close_ends_iteration(everything: Any,
                                                    hub: SubscriptionHub) -> None:
    async with streaming(everything) as http, Client.http(URL, http_client=http) as client:
        sub = client.listen({"toolsListChanged": True})
        seen = [await next_note(sub)]

        async def collect() -> None:
            async for note in sub:
                seen.append(note)

        task = asyncio.ensure_future(collect())
        await asyncio.sleep(0.05)
        await hub.close()
        await asyncio.wait_for(task, 5)
    assert [n.method for n in seen] == ["notifications/subscriptions/acknowledged"]
    assert sub.result is not None
    assert sub.result["_meta"][SUBSCRIPTION_ID] == sub.subscription_id
