"""The fleet's shared Store from the configuration (``[gateway] store_url_env``): the
policy's rate limits hold across gateway instances on the same Redis (a real
redis-server), instead of one count per process."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from mcpcore import StreamableHTTP
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway.config import loads
from mcpcore.stores.redis_ratelimit import RedisRateLimiter
from tests.gateway.inprocess import alpha_server, downstream, serving
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
