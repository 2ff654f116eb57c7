"""The everything server behind OAuth (Bearer and DPoP tokens), with its own authorization
server mounted under ``/as`` unless you bring one.

Run it (nothing external needed)::

    python -m examples.protected_server --port 8000 --print-token

then call it with the printed token, get one by client credentials::

    curl -s -u demo-client:$SECRET -d grant_type=client_credentials \\
         -d resource=http://127.0.0.1:8000/mcp -d scope=mcp http://127.0.0.1:8000/as/token

or let an OAuth client do the whole dance (``python -m examples.oauth_end_to_end --url
http://127.0.0.1:8000/mcp``).

* ``GET /.well-known/oauth-protected-resource/mcp``: Protected Resource Metadata;
* ``POST /mcp``: the MCP endpoint; a request without a valid token gets a 401 challenge
  (``Bearer`` and ``DPoP``); every request needs the ``mcp`` scope, and ``tools/call`` of
  ``test_trigger_tool_change`` also needs ``tools:admin`` (a 403 asks for step-up);
* ``/as/authorize``, ``/as/token``, ``/as/register``, ``/as/jwks``, ``/as/introspect`` and
  ``/.well-known/oauth-authorization-server/as``: the local authorization server, in
  demo mode (every authorization is approved as ``demo-user`` without asking).

The module-level ``app`` is built on first use from ``MCPCORE_PUBLIC_URL`` (default
``http://127.0.0.1:8000``), so ``uvicorn examples.protected_server:app`` works too.
"""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import Sequence
from typing import Any

from mcpcore.asgi_types import ASGIApp, Receive, Scope, Send
from mcpcore.auth import (
    BearerAuthMiddleware,
    DPoPSettings,
    IssuerConfig,
    NetworkPolicy,
    ResourceServerConfig,
    install_redaction,
)
from mcpcore.auth.issuer import LocalAuthorizationServer, RegisteredClient, SigningKey, approve_as
from mcpcore.transports.http import OriginGuard

DEMO_CLIENT = "demo-client"


SCOPES = ("mcp", "tools:admin")


def demo_authorization_server(
    issuer: str, resource: str, *, client_secret: str | None = None
) -> LocalAuthorizationServer:
    """The AS this example uses: demo approval, one machine client, the example's scopes."""
    return LocalAuthorizationServer(
        issuer,
        keys=[SigningKey.generate(alg) for alg in ("RS256", "ES256", "EdDSA")],
        clients=[RegisteredClient(DEMO_CLIENT, secret=client_secret or secrets.token_urlsafe(24))],
        resources=[resource],
        exchangeable_audiences=[resource],
        scopes_supported=SCOPES,
        # Demo: clients that register themselves may get every scope (step-up included).
        registration_scopes=SCOPES,
        resource_owner=approve_as("demo-user"),  # demo mode: nobody is asked
        network=NetworkPolicy(allow_loopback=True),  # client metadata documents on loopback
    )


def build_app(
    public_url: str = "http://127.0.0.1:8000",
    *,
    inner: ASGIApp | None = None,
    client_secret: str | None = None,
    authorization_server: LocalAuthorizationServer | None = None,
) -> tuple[ASGIApp, LocalAuthorizationServer, ResourceServerConfig]:
    """Return (ASGI app, the AS, the resource-server config) for ``public_url``.

    Without ``authorization_server`` a demo one is mounted under ``/as``; with one (on
    its own origin, say), the MCP server trusts it and mounts nothing.
    """
    if inner is None:
        from examples.everything import app as everything_app

        inner = everything_app
    resource = public_url.rstrip("/") + "/mcp"
    mounted = authorization_server is None
    if authorization_server is None:
        authorization_server = demo_authorization_server(
            public_url.rstrip("/") + "/as", resource, client_secret=client_secret)
    issuer = authorization_server.issuer
    config = ResourceServerConfig(
        resource=resource,
        resource_name="mcpcore everything server (protected)",
        authorization_servers=(IssuerConfig(issuer, jwks_uri=authorization_server.jwks_uri),),
        required_scopes=frozenset({"mcp"}),
        scope_map={"tools/call:test_trigger_tool_change": frozenset({"tools:admin"})},
        scopes_supported=("mcp",),  # the baseline; tools:admin is asked for by step-up
        network=NetworkPolicy(allow_loopback=True),  # the AS is on loopback http
        dpop=DPoPSettings(),  # DPoP-bound tokens accepted (and Bearer ones)
    )
    # Host/Origin first (403), then authentication (401/403), then the MCP endpoint.
    protected = OriginGuard(BearerAuthMiddleware(inner, config=config))
    as_prefix = "/as/"

    local = authorization_server if mounted else None

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if local is not None and scope["type"] == "http" and (
            path.startswith(as_prefix) or path == local.metadata_path
        ):
            await local(scope, receive, send)
            return
        await protected(scope, receive, send)

    return app, authorization_server, config


class _LazyApp:
    """Builds the app on first use, so importing this module needs nothing else."""

    def __init__(self) -> None:
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            url = os.environ.get("MCPCORE_PUBLIC_URL", "http://127.0.0.1:8000")
            self._app = build_app(url)[0]
        await self._app(scope, receive, send)


app = _LazyApp()


def main(argv: Sequence[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="Serve the everything server behind auth.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--print-token",
        action="store_true",
        help="print a ready-made test access token (local testing only)",
    )
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    public_url = f"http://{args.host}:{args.port}"
    secret = secrets.token_urlsafe(24)
    asgi, authorization_server, config = build_app(public_url, client_secret=secret)
    install_redaction()
    print(f"MCP endpoint:       {config.resource}")
    print(f"resource metadata:  {config.metadata_url}")
    print(f"authorization srv:  {authorization_server.issuer} (demo: approves as demo-user)")
    print(f"demo client:        {DEMO_CLIENT} / {secret}")
    print(
        "get a token:        curl -s -u "
        f"{DEMO_CLIENT}:{secret} -d grant_type=client_credentials "
        f"-d resource={config.resource} -d scope=mcp {authorization_server.token_endpoint}"
    )
    if args.print_token:
        token: Any = authorization_server.mint(
            sub="demo-user", aud=config.resource, scope="mcp", ttl=3600
        )
        print(f"test token (1 h):   {token}")
    uvicorn.run(asgi, host=args.host, port=args.port, log_level=args.log_level, lifespan="on")


if __name__ == "__main__":
    main()
