"""An upstream's list changes reach the gateway's own listeners: the gateway follows each
upstream (``subscriptions/listen`` on a 2026-07-28 upstream, the session's
``list_changed`` notifications on a 2025 one), refreshes its catalog at once, and the
engine tells its listeners of each list that changed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpcore import StreamableHTTP
from mcpcore.gateway.app import Gateway
from tests.gateway.inprocess import alpha_server, beta_server, downstream, serving, two_upstreams

ERAS = ["2026-07-28", "legacy"]


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("changed", ["alpha", "beta"])  # alpha: 2026-07-28, beta: 2025
async def test_an_upstreams_new_tool_reaches_the_gateways_listeners(mode: str,
                                                                    changed: str) -> None:
    servers = {"alpha": alpha_server(), "beta": beta_server()}
    apps = {name: StreamableHTTP(server) for name, server in servers.items()}
    async with serving(two_upstreams(), apps) as gateway, \
            downstream(gateway, mode) as client, \
            client.listen({"toolsListChanged": True}) as subscription:
        assert f"{changed}__added" not in {t.name for t in await client.tools()}

        @servers[changed].tool()
        def added() -> str:
            """A tool the upstream adds while it runs."""
            return "new"

        async def next_change() -> str:
            async for note in subscription:
                if note.method == "notifications/tools/list_changed":
                    return note.method
            raise AssertionError("the subscription ended")

        assert await asyncio.wait_for(next_change(), timeout=30) == \
            "notifications/tools/list_changed"
        names = {t.name for t in await client.tools(refresh=True)}
        assert f"{changed}__added" in names
        assert (await client.call_tool(f"{changed}__added")).content[0].text == "new"


@pytest.mark.parametrize("mode", ERAS)
async def test_an_announced_change_is_passed_on_even_when_the_list_looks_the_same(
        mode: str) -> None:
    """An upstream may announce a change the gateway cannot see (the contents it serves
    look the same): its listeners hear it all the same, and re-read at worst."""
    servers = {"alpha": alpha_server(), "beta": beta_server()}
    apps = {name: StreamableHTTP(server) for name, server in servers.items()}
    async with serving(two_upstreams(), apps) as gateway, \
            downstream(gateway, mode) as client, \
            client.listen({"promptsListChanged": True}) as subscription:
        await servers["alpha"].notify_list_changed("prompts")

        async def next_change() -> str:
            async for note in subscription:
                if note.method == "notifications/prompts/list_changed":
                    return note.method
            raise AssertionError("the subscription ended")

        assert await asyncio.wait_for(next_change(), timeout=30) == \
            "notifications/prompts/list_changed"


def count_listings(gateway: Gateway) -> dict[str, int]:
    """How many times each upstream is listed from now on."""
    counts = dict.fromkeys(gateway.upstreams, 0)
    for name, upstream in gateway.upstreams.items():
        async def listing(original: Any = upstream.listing, name: str = name) -> Any:
            counts[name] += 1
            return await original()

        upstream.listing = listing  # type: ignore[method-assign]
    return counts


async def test_a_storm_of_changes_from_one_upstream_relists_only_that_upstream() -> None:
    # Each list_changed re-listed every upstream (once a second): one noisy upstream
    # cost N listings a second. Now it costs its own; the periodic refresh lists all.
    servers = {"alpha": alpha_server(), "beta": beta_server()}
    apps = {name: StreamableHTTP(server) for name, server in servers.items()}
    async with serving(two_upstreams(), apps) as gateway, downstream(gateway) as client:
        counts = count_listings(gateway)
        before = {t.name for t in await client.tools()}

        @servers["alpha"].tool()
        def added() -> str:
            """A tool the upstream adds while it runs."""
            return "new"

        for _ in range(30):  # a storm: every one announces the tools changed
            await servers["alpha"].notify_list_changed("tools")
            await asyncio.sleep(0.02)
        for _ in range(1500):
            if gateway.snapshot is not None and "alpha__added" in gateway.snapshot.tool_owner:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(1.5)  # what the storm still causes, done
        assert counts["alpha"] >= 1 and counts["beta"] == 0, counts
        # beta's tools are still served, from its last listing.
        assert {t.name for t in await client.tools(refresh=True)} == before | {"alpha__added"}
        # An upstream back from an outage re-lists itself alone too.
        gateway._came_back(gateway.upstreams["beta"])
        for _ in range(1500):
            if counts["beta"]:
                break
            await asyncio.sleep(0.02)
        alpha = counts["alpha"]
        await asyncio.sleep(0.3)
        assert counts == {"alpha": alpha, "beta": 1}
        # The periodic refresh lists every upstream.
        await gateway.refresh()
        assert counts == {"alpha": alpha + 1, "beta": 2}
