"""OAuth end to end: an authorization server, a protected MCP server, and our client.

::

    python -m examples.oauth_end_to_end                     # all three, on loopback
    python -m examples.oauth_end_to_end --url http://127.0.0.1:8000/mcp   # client only

Without ``--url`` it starts, on free 127.0.0.1 ports, the compact authorization server
(``mcpcore.auth.issuer.LocalAuthorizationServer``, approving as ``demo-user``) and the
everything server behind ``BearerAuthMiddleware`` (which trusts that AS and accepts
Bearer and DPoP tokens). Then three clients run, each a fresh ``mcpcore.client.Client``
with ``auth=mcpcore.auth.OAuth(...)``:

1. **authorization code, Bearer**: the first request gets a 401; the client discovers
   the PRM and the AS metadata, registers (dynamic registration), authorizes with PKCE
   through the headless user agent, checks ``iss`` and ``state``, redeems the code,
   lists the tools, then calls ``test_trigger_tool_change``, which needs
   ``tools:admin``: the 403 makes it step up for ``mcp tools:admin``;
2. **authorization code, DPoP**: the same, but every token request and MCP request
   carries a fresh DPoP proof and the token is bound to the client's key;
3. **client credentials** (only when the AS was started here): a machine client with
   its own secret.

Each prints what it got (token fingerprints, never tokens). Exit status 0 when all
passed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import uvicorn

from examples.protected_server import DEMO_CLIENT, build_app, demo_authorization_server
from mcpcore.auth import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    ClientInfo,
    Grant,
    HeadlessUserAgent,
    NetworkPolicy,
    OAuth,
    fingerprint,
)
from mcpcore.client import Client

LOOPBACK = NetworkPolicy(allow_loopback=True)  # everything here is http://127.0.0.1


def _listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.asynccontextmanager
async def serve(app: Any, sock: socket.socket) -> AsyncIterator[None]:
    """Run ``app`` with uvicorn on ``sock`` for the duration of the block."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()  # raises what stopped it
        await asyncio.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        await task
        sock.close()


async def run_client(url: str, name: str, grant: Grant, *, dpop: bool = False,
                     step_up: bool = True) -> None:
    auth = OAuth(grant, dpop=dpop, network=LOOPBACK)
    async with Client.http(url, auth=auth, timeout=15) as client:
        tools = [tool.name async for tool in client.iter_tools()]
        token = auth.session(url).token
        assert token is not None
        print(f"[{name}] tools/list: {len(tools)} tools with a {token.token_type} token "
              f"{fingerprint(token.access_token)} for {' '.join(sorted(token.scopes))}")
        if step_up:
            await client.call_tool("test_trigger_tool_change", {})
            token = auth.session(url).token
            assert token is not None and "tools:admin" in token.scopes
            print(f"[{name}] step-up: test_trigger_tool_change ran with "
                  f"{' '.join(sorted(token.scopes))} ({token.token_type})")


def user_grant() -> AuthorizationCodeGrant:
    # The demo AS approves at once, so the headless agent needs no browser.
    return AuthorizationCodeGrant(HeadlessUserAgent())


async def everything(argv_url: str | None) -> None:
    if argv_url is not None:
        await run_client(argv_url, "code+bearer", user_grant())
        await run_client(argv_url, "code+dpop", user_grant(), dpop=True)
        return
    as_sock, mcp_sock = _listening_socket(), _listening_socket()
    issuer = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
    public = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}"
    secret = secrets.token_urlsafe(24)
    authorization_server = demo_authorization_server(issuer, public + "/mcp",
                                                     client_secret=secret)
    app, _, config = build_app(public, authorization_server=authorization_server)
    async with serve(authorization_server, as_sock), serve(app, mcp_sock):
        print(f"authorization server {issuer}, MCP server {config.resource}")
        await run_client(config.resource, "code+bearer", user_grant())
        await run_client(config.resource, "code+dpop", user_grant(), dpop=True)
        machine = ClientCredentialsGrant(ClientInfo(DEMO_CLIENT, client_secret=secret))
        await run_client(config.resource, "client-credentials", machine, step_up=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a protected MCP server to use instead of starting one")
    args = parser.parse_args(argv)
    asyncio.run(everything(args.url))
    print("all OAuth flows passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
