"""The gateway end to end over in-process upstreams: lists, calls, reads, prompts and
completions routed to their owners, in both downstream eras."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import Context, Server, StreamableHTTP
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from mcpcore.pagination import encode_cursor
from tests.gateway.inprocess import (
    URL,
    alpha_server,
    beta_server,
    downstream,
    serving,
    two_upstreams,
)

ERAS = ["2026-07-28", "legacy"]


def apps() -> dict[str, object]:
    return {"alpha": StreamableHTTP(alpha_server()), "beta": StreamableHTTP(beta_server())}


@pytest.mark.parametrize("mode", ERAS)
async def test_lists_are_federated_and_prefixed(mode: str) -> None:
    async with serving(two_upstreams(), apps()) as gateway, downstream(gateway, mode) as client:
        tools = {t.name: t for t in await client.tools()}
        assert set(tools) == {"alpha__add", "alpha__shared", "alpha__slow_progress",
                              "alpha__fail", "beta__shared", "beta__echo"}
        assert tools["alpha__add"].description == "Add two numbers."
        assert tools["alpha__add"].annotations.read_only_hint is True
        prompts = [p.name for p in await client.prompts()]
        assert prompts == ["alpha__greet"]
        uris = [r.uri for r in await client.resources()]
        # A URI identifies the resource: the earlier upstream owns it.
        assert uris == ["mem://shared/readme", "mem://beta/notes"]
        templates = [t.uri_template for t in await client.resource_templates()]
        assert templates == ["mem://alpha/{id}"]


@pytest.mark.parametrize("mode", ERAS)
async def test_calls_reach_their_owner(mode: str) -> None:
    async with serving(two_upstreams(), apps()) as gateway, downstream(gateway, mode) as client:
        added = await client.call_tool("alpha__add", {"a": 2, "b": 3})
        assert added.content[0].text == "5"
        assert (await client.call_tool("alpha__shared")).content[0].text == "alpha"
        assert (await client.call_tool("beta__shared")).content[0].text == "beta"
        echoed = await client.call_tool("beta__echo", {"text": "hi"})
        assert echoed.content[0].text == "beta: hi"
        failed = await client.call_tool("alpha__fail")
        assert failed.is_error is True
        assert failed.content[0].text == "alpha failed on purpose"


@pytest.mark.parametrize("mode", ERAS)
async def test_upstream_errors_are_relayed(mode: str) -> None:
    async with serving(two_upstreams(), apps()) as gateway, downstream(gateway, mode) as client:
        # Unknown to the gateway: its own -32602.
        with pytest.raises(RemoteProtocolError) as unknown:
            await client.call_tool("alpha__nope")
        assert unknown.value.code == -32602
        # Arguments the upstream's schema refuses: the upstream's tool error, relayed.
        bad = await client.call_tool("alpha__add", {"a": "x"})
        assert bad.is_error is True
        # Not found: -32602 (2026-07-28), -32002 for 2025 clients (the legacy shim's).
        not_found = -32602 if mode != "legacy" else -32002
        with pytest.raises(RemoteProtocolError) as missing:
            await client.read_resource("mem://nobody/here")
        assert missing.value.code == not_found
        # The owner's own error, relayed with its message.
        with pytest.raises(RemoteProtocolError) as relayed:
            await client.read_resource("mem://alpha/missing")
        assert relayed.value.code == not_found
        assert relayed.value.data == {"uri": "mem://alpha/missing"}


@pytest.mark.parametrize("mode", ERAS)
async def test_reads_prompts_and_completions(mode: str) -> None:
    async with serving(two_upstreams(), apps()) as gateway, downstream(gateway, mode) as client:
        readme = await client.read_resource("mem://shared/readme")
        assert readme.contents[0].text == "alpha's readme"
        notes = await client.read_resource("mem://beta/notes")
        assert notes.contents[0].text == "beta's notes"
        item = await client.read_resource("mem://alpha/42")
        assert item.contents[0].text == "alpha item 42"
        prompt = await client.get_prompt("alpha__greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Hello Ada"
        done = await client.complete({"type": "ref/prompt", "name": "alpha__greet"},
                                     {"name": "name", "value": "al"})
        assert done.completion.values == ["alice", "albert"]


async def test_progress_passes_through() -> None:
    seen: list[object] = []

    async with serving(two_upstreams(), apps()) as gateway, downstream(gateway) as client:
        result = await client.call_tool("alpha__slow_progress", {"steps": 3},
                                        on_notification=seen.append)
    assert result.content[0].text == "done"
    progress = [n for n in seen if getattr(n, "method", "") == "notifications/progress"]
    assert [n.params["progress"] for n in progress] == [1, 2, 3]  # type: ignore[attr-defined]


async def test_discover_describes_the_gateway() -> None:
    config = two_upstreams(name="front-door", version="9.9.9")
    async with serving(config, apps()) as gateway, downstream(gateway) as client:
        found = await client.discover()
        caps = found.capabilities
        assert caps.tools is not None and caps.prompts is not None
        assert caps.resources is not None and caps.completions is not None
    async with serving(config, {}) as gateway, downstream(gateway, "legacy") as client:
        # No upstream reachable at all: the gateway still describes itself in full.
        assert client.server is not None
        info = client.server.capabilities
        assert info.tools is not None and info.resources is not None
        assert await client.tools() == []


@pytest.mark.parametrize("mode", ERAS)
async def test_lists_are_paged_with_sealed_cursors(mode: str) -> None:
    async with serving(two_upstreams(), apps(), page_size=2) as gateway, \
            downstream(gateway, mode) as client:
        first = await client.list_tools()
        assert len(first.tools) == 2 and isinstance(first.next_cursor, str)
        names = [t.name for t in await client.tools()]  # every page, followed
        assert len(names) == 6 and len(set(names)) == 6
        forged = first.next_cursor[:-6] + ("A" if first.next_cursor[-6] != "A" else "B") + \
            first.next_cursor[-5:]
        with pytest.raises(RemoteProtocolError) as refused:
            await client.list_tools(forged)
        assert refused.value.code == -32602
        assert "Invalid cursor" in refused.value.message
        # A cursor written by hand (the engine's plain kind) is no cursor of the gateway's.
        with pytest.raises(RemoteProtocolError) as handmade:
            await client.list_tools(encode_cursor("tools", 4))
        assert handmade.value.code == -32602


async def test_an_upstream_pinned_to_2026_07_28_lists_only_what_it_offers() -> None:
    # Pinned, the era is never probed: what it offers is asked for before listing (beta
    # has no prompts: asking for them would be -32601 and lose its tools too).
    config = GatewayConfig(upstreams=(UpstreamConfig("beta", url=URL, era="2026-07-28"),))
    async with serving(config, {"beta": StreamableHTTP(beta_server())}) as gateway, \
            downstream(gateway) as client:
        assert gateway.snapshot is not None and gateway.snapshot.missing == ()
        assert [t.name for t in await client.tools()] == ["beta__shared", "beta__echo"]
        assert await client.prompts() == []


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
async def test_a_cancelled_call_is_cancelled_upstream(era: str) -> None:
    import asyncio

    started, cancelled = asyncio.Event(), asyncio.Event()
    upstream = _talker(started, cancelled)  # its ``wait`` waits until cancelled
    config = GatewayConfig(upstreams=(UpstreamConfig("up", url=URL, era=era),))
    async with serving(config, {"up": StreamableHTTP(upstream)}) as gateway, \
            downstream(gateway) as client:
        call = asyncio.ensure_future(client.call_tool("up__wait"))
        await asyncio.wait_for(started.wait(), 30)
        call.cancel()
        await asyncio.wait_for(cancelled.wait(), 30)


async def test_relayed_notifications_are_bounded() -> None:
    chatty = Server("chatty")

    @chatty.tool()
    async def talk(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "m" * 100_000)
        await ctx.log("info", {"blob": "x" * 100_000})
        await ctx.log("info", "small")
        return "said"

    seen: list[Any] = []
    config = GatewayConfig(upstreams=(UpstreamConfig("up", url=URL),))
    async with serving(config, {"up": StreamableHTTP(chatty)}) as gateway, \
            downstream(gateway) as client:
        result = await client.call_tool("up__talk", on_notification=seen.append,
                                        log_level="info")
    assert result.content[0].text == "said"
    (progress,) = [n for n in seen if n.method == "notifications/progress"]
    assert len(progress.params["message"]) <= 1003
    logs = [n.params["data"] for n in seen if n.method == "notifications/message"]
    assert logs == ["(a log message over 4096 bytes, left out)", "small"]


def _talker(started: Any, cancelled: Any) -> Server:
    import asyncio

    server = Server("talker")

    @server.tool()
    async def talk(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        await ctx.log("info", "said")
        await ctx.report_progress(2, 2, "all")
        return "talked"

    @server.tool()
    async def wait() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    return server


@pytest.mark.parametrize("down", ["2026-07-28", "legacy"])
@pytest.mark.parametrize("up", ["2026-07-28", "legacy"])
async def test_progress_logs_and_cancellation_cross_in_every_pair_of_eras(down: str,
                                                                         up: str) -> None:
    import asyncio

    started, cancelled = asyncio.Event(), asyncio.Event()
    config = GatewayConfig(upstreams=(UpstreamConfig("up", url=URL, era=up),))  # type: ignore[arg-type]
    seen: list[Any] = []
    async with serving(config, {"up": StreamableHTTP(_talker(started, cancelled))}) as gw, \
            downstream(gw, down) as client:
        result = await client.call_tool("up__talk", on_notification=seen.append,
                                        log_level="info")
        assert result.content[0].text == "talked"
        progress = [n.params for n in seen if n.method == "notifications/progress"]
        assert [(p["progress"], p.get("message")) for p in progress] == [
            (1, "half"), (2, "all")]
        logs = [n.params for n in seen if n.method == "notifications/message"]
        assert [p["data"] for p in logs] == ["said"]
        call = asyncio.ensure_future(client.call_tool("up__wait"))
        await asyncio.wait_for(started.wait(), 30)
        call.cancel()
        await asyncio.wait_for(cancelled.wait(), 30)
