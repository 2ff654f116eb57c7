"""``mcpcore gateway serve FILE``: the gateway as a process (docs/gateway.md).

Over HTTP (the default): one Streamable HTTP endpoint at ``/mcp`` serving 2026-07-28
clients and 2025-era clients (the legacy shim) on the same handlers, like ``mcpcore
serve``, with ``/healthz`` (up) and ``/readyz`` (ready once the catalog has been built;
the body is JSON with each upstream's state) in front of it, under
``mcpcore.serving.run`` (socket limits, graceful shutdown). The gateway starts with the
server (its lifespan) and stops with it: stdio upstreams are stopped then.

With ``--stdio``: the gateway serves one client over this process's stdin/stdout.

A file that cannot be loaded is one line on stderr and exit 2 (``mcpcore gateway check
FILE`` lists every problem).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

from mcpcore.cli import add_serving_flags, allowed_hosts_from_env
from mcpcore.gateway.app import Gateway, GatewayLifespan
from mcpcore.gateway.config import load
from mcpcore.health import Operations
from mcpcore.transports.http import StreamableHTTP

PROG = "mcpcore gateway serve"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the gateway's configuration (TOML: docs/gateway.md)")
    add_serving_flags(parser)


def build(gateway: Gateway, *, allowed_hosts: frozenset[str]) -> Operations:
    """The gateway's ASGI app: ``/mcp`` (both eras), ``/healthz``, ``/readyz``."""
    endpoint = StreamableHTTP(gateway.server, allowed_hosts=allowed_hosts)
    return Operations(GatewayLifespan(endpoint, gateway), allowed_hosts=allowed_hosts,
                      ready=lambda: None if gateway.ready else "the catalog is not built yet",
                      details=lambda: {"upstreams": readiness(gateway)})


def readiness(gateway: Gateway) -> dict[str, Any]:
    """Each upstream's state and era, and with pinned tool definitions the number of
    its tools held in quarantine (docs/gateway-pinning.md). No error text: ``/readyz``
    answers anyone; the errors are in the log."""
    return {name: {key: health[key] for key in ("state", "era", "quarantinedTools")
                   if key in health}
            for name, health in gateway.health().items()}


def serve(args: argparse.Namespace) -> int:
    try:
        config = load(args.file)
        hosts = allowed_hosts_from_env()
        gateway = Gateway(config)  # reads the secrets and env_from variables it names
    except (ValueError, OSError) as exc:  # GatewayConfigError, ConfigError: ValueErrors
        problems = str(exc).splitlines()
        more = (f" (and {len(problems) - 1} more: mcpcore gateway check {args.file})"
                if len(problems) > 1 else "")
        print(f"{PROG}: {problems[0] if problems else exc}{more}", file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper())
    if args.stdio:
        asyncio.run(_stdio(gateway))
        return 0
    from mcpcore.serving import ListenError, run

    try:
        run(build(gateway, allowed_hosts=hosts), host=args.host, port=args.port,
            log_level=args.log_level, name=config.name, path="/mcp",
            header_timeout=args.header_timeout, keep_alive=args.keep_alive,
            graceful_timeout=args.graceful_timeout, drain_seconds=args.drain_seconds,
            max_connections=args.max_connections)
    except ListenError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    return 0


async def _stdio(gateway: Gateway) -> None:
    from mcpcore.transports.stdio import serve_stdio

    await gateway.start()
    try:
        await serve_stdio(gateway.server)
    finally:
        await gateway.aclose()


__all__ = ["build", "configure", "readiness", "serve"]
