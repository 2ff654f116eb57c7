"""The fleet's shared Store from the configuration (``[gateway] store_url_env``): the
policy's rate limits hold across gateway instances on the same Redis (a real
redis-server), instead of one count per process; a parked call is answered through
any of them (handoff.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from pathlib import Path

import pytest

from mcpcore import StreamableHTTP
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway import pins_cli
from mcpcore.gateway.config import loads
from mcpcore.stores.redis_ratelimit import RedisRateLimiter
from tests.gateway.inprocess import alpha_server, downstream, serving
from tests.gateway.test_bridge import ADA, answered, handle
from tests.gateway.test_handoff import counting_server
from tests.stores.storekit import redis_server

pytestmark = pytest.mark.integration

RULES = """\
default = "allow"
rate_limit = { calls = 2, seconds = 3600 }

[categories.read]        # the callers here are anonymous: no scope needed for reads
scopes = []
"""


def _config(tmp_path: Path) -> str:
    (tmp_path / "policy.toml").write_text(RULES)
    return ('[gateway]\npolicy = "policy.toml"\nstore_url_env = "GW_REDIS"\n'
            '[[upstream]]\nname = "alpha"\nurl = "http://127.0.0.1:8001/mcp"\n')


async def test_a_rate_limit_holds_across_two_gateways_on_one_redis(tmp_path: Path) -> None:
    config = loads(_config(tmp_path), base_dir=tmp_path)
    upstream = StreamableHTTP(alpha_server())
    with redis_server() as url:
        environ = {"GW_REDIS": url}
        async with contextlib.AsyncExitStack() as stack:
            one = await stack.enter_async_context(
                serving(config, {"alpha": upstream}, environ=environ))
            two = await stack.enter_async_context(
                serving(config, {"alpha": upstream}, environ=environ))
            assert one.policy is not None and two.policy is not None
            assert isinstance(one.policy.limiter, RedisRateLimiter)
            first = await stack.enter_async_context(downstream(one, "2026-07-28"))
            second = await stack.enter_async_context(downstream(two, "2026-07-28"))
            arguments = {"a": 1, "b": 2}
            assert (await first.call_tool("alpha__add", arguments)).content
            assert (await second.call_tool("alpha__add", arguments)).content
            # The third call, on either instance, is the fleet's third: refused.
            with pytest.raises(RemoteProtocolError) as refused:
                await first.call_tool("alpha__add", arguments)
            assert refused.value.data["reason"] == "rate_limited"


async def test_approve_tells_the_running_instances_through_redis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = loads('[gateway]\nstore_url_env = "GW_REDIS"\nrefresh = "1h"\n'
                   '[[upstream]]\nname = "alpha"\nurl = "http://127.0.0.1:8001/mcp"\n')
    with redis_server() as url:
        monkeypatch.setenv("GW_REDIS", url)
        async with serving(config, {"alpha": StreamableHTTP(alpha_server())}) as gateway:
            assert gateway.fanout is not None and gateway.fanout.heard == 0
            # What `mcpcore gateway approve` does once it wrote the lock file.
            await asyncio.to_thread(pins_cli._tell_fleet, config)
            assert "told the gateway's running instances" in capsys.readouterr().out
            async with asyncio.timeout(20):
                while gateway.fanout.heard == 0:
                    await asyncio.sleep(0.01)
    # Redis gone: the lock file is written all the same; the word is said to be lost.
    await asyncio.to_thread(pins_cli._tell_fleet, config)
    assert "read it at their next refresh" in capsys.readouterr().err


def _bridging_config(tmp_path: Path) -> str:
    return ('[gateway]\nstore_url_env = "GW_REDIS"\n'
            '[[upstream]]\nname = "old"\nurl = "http://127.0.0.1:8001/mcp"\n'
            'era = "legacy"\n')


async def test_a_parked_call_is_answered_through_another_gateway_on_one_redis(
        tmp_path: Path) -> None:
    """A 2025 upstream's question parked on one gateway, its answer retried on another
    (the Store is a real Redis): the call completes, the upstream gets one answer, a
    second retry of the round is refused, and an owner that stops is ``owner_gone``."""
    seen: Counter[str] = Counter()
    config = loads(_bridging_config(tmp_path), base_dir=tmp_path)
    upstream = StreamableHTTP(counting_server(seen))
    tally = {"name": "old__tally", "arguments": {"tag": "r"}}
    with redis_server() as url:
        environ = {"GW_REDIS": url}
        async with contextlib.AsyncExitStack() as stack:
            owner, second, third = [await stack.enter_async_context(
                serving(config, {"old": upstream}, environ=environ)) for _ in range(3)]
            first = await handle(owner, tally)
            retry = answered(tally, first, **{next(iter(first["result"]["inputRequests"])): ADA})
            outcomes = await asyncio.wait_for(asyncio.gather(
                handle(second, retry), handle(third, retry)), 60)
            done = [o for o in outcomes if "result" in o]
            assert len(done) == 1, outcomes
            assert done[0]["result"]["content"][0]["text"] == "r: Ada #1"
            refused = [o for o in outcomes if "error" in o]
            assert refused[0]["error"]["data"]["reason"] in ("parked_busy", "answered")
            assert seen["r"] == 1

            who = {"name": "old__who", "arguments": {"tag": "t"}}
            first = await handle(owner, who)
            assert owner.handoff is not None
            await owner.handoff.aclose()  # the owner stops
            gone = await asyncio.wait_for(handle(second, answered(
                who, first, **{next(iter(first["result"]["inputRequests"])): ADA})), 60)
            assert gone["error"]["data"] == {"upstream": "old", "reason": "owner_gone"}
