"""A server an operator can watch: a rule file, a fleet-wide rate limit, metrics, traces,
health, JSON logs (docs/operating.md walks through it).

Run one instance::

    MCPCORE_STATE_KEYS=$(.venv/bin/mcpcore new-key) python -m examples.operated --port 8000
    curl -s http://127.0.0.1:8000/healthz
    curl -s http://127.0.0.1:8000/metrics | grep mcpcore_requests_total

or three behind nginx sharing one Redis (``MCPCORE_REDIS_URL``): the rate limit of
``lookup`` (20 calls a minute, ``examples/operated.toml``) then holds for the fleet,
and ``/readyz`` reports whether Redis answers.

Environment: ``MCPCORE_POLICY_FILE`` (default ``examples/operated.toml``; a bad file
stops the server before it listens), ``MCPCORE_REDIS_URL`` (a shared Store and rate
limiter), ``MCPCORE_TRACING=1`` (spans through the OpenTelemetry API, exported by
whatever SDK you configure), ``MCPCORE_LOG_FORMAT=json`` (JSON lines on stderr, the
audit trail on stdout), ``MCPCORE_ALLOWED_HOSTS`` (the Host names to answer for).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcpcore import MrtrConfig, Policy, Server, StreamableHTTP
from mcpcore.cli import allowed_hosts_from_env, serve
from mcpcore.health import Operations
from mcpcore.logs import RequestLog, configure_logging
from mcpcore.metrics import Metrics
from mcpcore.policy import MemoryRateLimiter, RateLimiter, RuleFileError
from mcpcore.stores import Store


def _store() -> Store | None:
    url = os.environ.get("MCPCORE_REDIS_URL")
    if not url:
        return None
    from mcpcore.stores import RedisStore

    return RedisStore.from_url(url)


def _limiter(store: Store | None) -> RateLimiter:
    from mcpcore.stores.redis import RedisStore

    if isinstance(store, RedisStore):
        from mcpcore.stores.redis_ratelimit import RedisRateLimiter

        return RedisRateLimiter(store)
    return MemoryRateLimiter()


def _policy(store: Store | None, path: str | Path | None = None) -> Policy:
    path = path or os.environ.get("MCPCORE_POLICY_FILE") or Path(__file__).with_name(
        "operated.toml")
    try:
        return Policy.from_file(path, limiter=_limiter(store))
    except RuleFileError as exc:
        sys.exit(f"operated: refusing to start with a bad rule file\n{exc}")


_TABLE = {"alpha": "1", "beta": "2", "gamma": "3"}


def build(*, store: Store | None = None, policy_file: str | Path | None = None,
          tracing: bool = False) -> tuple[Server, Operations, Metrics]:
    """The server, the ASGI app (``/mcp`` plus ``/healthz``, ``/readyz``, ``/metrics``)
    and its metrics."""
    server = Server("operated", "1.0.0", instructions="Lookups behind a policy, watched.",
                    mrtr=MrtrConfig.from_env(), store=store,
                    policy=_policy(store, policy_file))

    @server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    def lookup(key: str) -> str:
        """The value stored under ``key`` (rate limited: 20 calls a minute per caller)."""
        return _TABLE.get(key, "no such key")

    @server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def slow(seconds: float) -> str:
        """Wait ``seconds`` and answer; its policy allows half a second, then it is
        cancelled."""
        await asyncio.sleep(seconds)
        return f"waited {seconds:g} s"

    @server.tool(annotations={"destructiveHint": True, "openWorldHint": False})
    def drop_table(name: str) -> str:
        """Never runs: the rule file denies every drop_* tool."""
        return f"dropped {name}"

    metrics = Metrics(server)
    if tracing:
        from mcpcore.tracing import Tracing

        Tracing(server)
    RequestLog(server)  # after Tracing, so its lines carry the trace id
    mcp = StreamableHTTP(server, allowed_hosts=allowed_hosts_from_env())
    return server, Operations(mcp, store=store, metrics=metrics), metrics


store = _store()
server, app, metrics = build(store=store, tracing=os.environ.get("MCPCORE_TRACING") == "1")

if __name__ == "__main__":
    if os.environ.get("MCPCORE_LOG_FORMAT") == "json":
        configure_logging(level="INFO")
    serve(server, app, description="Serve the operated demo.")
