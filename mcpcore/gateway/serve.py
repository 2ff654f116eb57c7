"""``mcpcore gateway serve FILE``: the gateway as a process (docs/gateway.md).

Over HTTP (the default): one Streamable HTTP endpoint at ``/mcp`` serving 2026-07-28
clients and 2025-era clients (the legacy shim) on the same handlers, like ``mcpcore
serve``, with ``/healthz`` (up) and ``/readyz`` (ready once the catalog has been built;
the body is JSON with each upstream's state) in front of it, under
``mcpcore.serving.run`` (socket limits, graceful shutdown). The gateway starts with the
server (its lifespan) and stops with it: stdio upstreams are stopped then.

With ``[gateway] auth = "FILE"`` (a resource server's TOML file, docs/auth.md), every
request to ``/mcp`` needs a bearer token the resource server validates
(``mcpcore.auth.BearerAuthMiddleware``; the Protected Resource Metadata is served, the
health routes stay open): the gateway knows its callers, and the upstreams whose
credentials act as the caller (``token_exchange``, ``id_jag``) exchange their tokens
(docs/gateway-credentials.md). Such an upstream without ``auth`` is a warning at start:
every call to it is refused (``no_caller_token``).

With ``--stdio``: the gateway serves one client over this process's stdin/stdout (no
bearer tokens there).

With ``[gateway] metrics = true``, ``GET /metrics`` answers the server's series and each
upstream's (``observe``); with ``[gateway] tracing = true``, a span per request and per
upstream call, its trace context sent upstream (docs/gateway.md, "Observability").

A file that cannot be loaded is one line on stderr and exit 2 (``mcpcore gateway check
FILE`` lists every problem).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Any

from mcpcore.asgi_types import ASGIApp
from mcpcore.cli import add_serving_flags, allowed_hosts_from_env, stdio_conflict
from mcpcore.gateway.app import Gateway, GatewayLifespan
from mcpcore.gateway.config import GatewayConfig, load
from mcpcore.gateway.credentials import CALLER_KINDS
from mcpcore.health import Operations
from mcpcore.transports.http import StreamableHTTP

if TYPE_CHECKING:
    from mcpcore.auth import ResourceServerConfig
    from mcpcore.metrics import Metrics

PROG = "mcpcore gateway serve"
log = logging.getLogger("mcpcore.gateway")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the gateway's configuration (TOML: docs/gateway.md)")
    add_serving_flags(parser)


def build(gateway: Gateway, *, allowed_hosts: frozenset[str],
          auth: ResourceServerConfig | None = None,
          metrics: Metrics | None = None) -> Operations:
    """The gateway's ASGI app: ``/mcp`` (both eras), ``/healthz``, ``/readyz``, and
    ``/metrics`` with ``metrics`` (``observe``); with ``auth``, ``/mcp`` needs a bearer
    token it validates (module docstring)."""
    endpoint = StreamableHTTP(gateway.server, allowed_hosts=allowed_hosts)
    app: ASGIApp = GatewayLifespan(endpoint, gateway)
    if auth is not None:
        from mcpcore.auth import BearerAuthMiddleware

        app = BearerAuthMiddleware(app, config=auth)
    return Operations(app, allowed_hosts=allowed_hosts, metrics=metrics,
                      ready=lambda: None if gateway.ready else "the catalog is not built yet",
                      details=lambda: {"upstreams": readiness(gateway)})


def observe(gateway: Gateway) -> Metrics | None:
    """Turn on what ``[gateway] metrics`` and ``tracing`` ask for: the server's series
    and each upstream's (``mcpcore.gateway.metrics``) in one registry, returned for
    ``build``; a span per request and per upstream call (``mcpcore.gateway.tracing``).
    ``ImportError`` names the extra to install."""
    metrics = None
    config = gateway.config
    if config.metrics:
        try:
            from mcpcore.gateway.metrics import GatewayMetrics
            from mcpcore.metrics import Metrics
        except ImportError:
            raise ImportError("[gateway] metrics = true needs prometheus_client: pip "
                              "install 'mcpcore[metrics]'") from None
        metrics = Metrics(gateway.server)
        GatewayMetrics(gateway, registry=metrics.registry)
    if config.tracing:
        try:
            from mcpcore.gateway.tracing import GatewayTracing
            from mcpcore.tracing import Tracing
        except ImportError:
            raise ImportError("[gateway] tracing = true needs OpenTelemetry: pip install "
                              "'mcpcore[tracing-sdk]'") from None
        Tracing(gateway.server)
        GatewayTracing(gateway)
    return metrics


def readiness(gateway: Gateway) -> dict[str, Any]:
    """Each upstream's state and era, and with pinned tool definitions the number of
    its tools held in quarantine (docs/gateway-pinning.md). No error text: ``/readyz``
    answers anyone; the errors are in the log."""
    return {name: {key: health[key] for key in ("state", "era", "quarantinedTools")
                   if key in health}
            for name, health in gateway.health().items()}


def inbound_auth(config: GatewayConfig) -> ResourceServerConfig | None:
    """The resource server ``[gateway] auth`` names (None without one); an upstream
    that acts as the caller without it is a warning (module docstring)."""
    acting = [u.name for u in config.upstreams if u.credentials.kind in CALLER_KINDS]
    if config.auth is None:
        if acting:
            log.warning("upstreams %s act as the caller, but the gateway takes no bearer "
                        "token (no [gateway] auth): every call to them is refused",
                        ", ".join(acting))
        return None
    from mcpcore.auth import ResourceServerConfig

    return ResourceServerConfig.from_toml(config.auth)


def serve(args: argparse.Namespace) -> int:
    if (conflict := stdio_conflict(args)) is not None:
        print(f"{PROG}: {conflict}", file=sys.stderr)
        return 2
    try:
        config = load(args.file)
        hosts = allowed_hosts_from_env()
        auth = None if args.stdio else inbound_auth(config)
        gateway = Gateway(config)  # reads the secrets and env_from variables it names
        metrics = observe(gateway)
    except (ValueError, OSError, ImportError) as exc:  # config errors are ValueErrors
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
        run(build(gateway, allowed_hosts=hosts, auth=auth, metrics=metrics), host=args.host,
            port=args.port,
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


__all__ = ["build", "configure", "inbound_auth", "observe", "readiness", "serve"]
