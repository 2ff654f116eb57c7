"""The apps ``bench_hot.py`` compares: one server, served plainly and behind bearer auth.

- ``plain``: ``StreamableHTTP`` over a server with ``echo`` and ``greet`` (a tool that
  elicits a name: two MRTR rounds), sealed with a key of its own;
- ``protected``: the same behind ``BearerAuthMiddleware`` with the default
  verified-token cache, trusting the issuer named by ``MCPCORE_BENCH_ISSUER`` (its JWKS
  is fetched once, by the first request).
"""

from __future__ import annotations

import os
from typing import Any

from mcpcore import Context, MrtrConfig, Server, StreamableHTTP
from mcpcore.auth import BearerAuthMiddleware, IssuerConfig, NetworkPolicy, ResourceServerConfig
from mcpcore.sealing import KeyRing, Sealer

RESOURCE = "http://127.0.0.1:8000/mcp"
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _server() -> Server:
    ring = KeyRing.from_config(KeyRing.new_key("bench"))
    server = Server("bench-hot", "1.0.0", mrtr=MrtrConfig(sealer=Sealer(ring)))

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def greet(ctx: Context) -> str:
        """Ask a name, then greet."""
        answer = await ctx.elicit("Name?", NAME, key="user_name")
        return f"Hello, {answer.content['name']}!"

    return server


plain = StreamableHTTP(_server())


def _protected() -> Any:
    issuer = os.environ.get("MCPCORE_BENCH_ISSUER")
    if not issuer:
        return None
    config = ResourceServerConfig(
        resource=RESOURCE,
        authorization_servers=(IssuerConfig(issuer, jwks_uri=issuer.rstrip("/") + "/jwks"),),
        required_scopes=frozenset({"mcp"}),
        scope_map={"tools/call:delete_file": frozenset({"files:write"})},
        network=NetworkPolicy(allow_loopback=True),
    )
    return BearerAuthMiddleware(StreamableHTTP(_server()), config=config)


protected = _protected()
