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

from bench.bench_mrtr import build_server  # the same echo and greet as in process
from mcpcore import StreamableHTTP
from mcpcore.auth import BearerAuthMiddleware, IssuerConfig, NetworkPolicy, ResourceServerConfig

RESOURCE = "http://127.0.0.1:8000/mcp"

plain = StreamableHTTP(build_server())


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
    return BearerAuthMiddleware(StreamableHTTP(build_server()), config=config)


protected = _protected()
