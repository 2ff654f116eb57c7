"""Protected Resource Metadata (RFC 9728) and the pure-ASGI endpoint that serves it.

The document is built once from the configuration: its ``resource`` is the configured
canonical URL, which is exactly the audience tokens must carry (RFC 8707), never a value
derived from ``Host`` or ``X-Forwarded-*`` (RFC 9728 §3.3). Two URLs are served:

* the path-suffixed one (``/.well-known/oauth-protected-resource/mcp``), whose
  ``resource`` is the MCP endpoint, and which every challenge points at;
* the root one (``/.well-known/oauth-protected-resource``), whose ``resource`` is the
  origin, for clients that probe it (RFC 9728 §3.3).

Both answer GET (and HEAD, and a CORS preflight) without authentication.
"""

from __future__ import annotations

from typing import Any

import msgspec

from mcpcore.asgi_types import Receive, Scope, Send
from mcpcore.auth.config import ResourceServerConfig
from mcpcore.transports.asgi import JSON, respond

_CORS = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"GET, HEAD, OPTIONS"),
    (b"access-control-allow-headers", b"*"),
]


def protected_resource_metadata(
    config: ResourceServerConfig, *, resource: str | None = None
) -> dict[str, Any]:
    """The RFC 9728 §2 document for ``resource`` (default: the configured one)."""
    doc: dict[str, Any] = {
        "resource": resource or config.resource,
        "authorization_servers": list(config.issuers),
        "scopes_supported": list(config.published_scopes),
        "bearer_methods_supported": ["header"],
        "resource_signing_alg_values_supported": list(config.algorithms),
    }
    if config.dpop is not None:  # RFC 9449 §5.1 names for PRM (RFC 9728 §2)
        doc["dpop_signing_alg_values_supported"] = list(config.dpop.algorithms)
        doc["dpop_bound_access_tokens_required"] = config.dpop.required
    if config.resource_name:
        doc["resource_name"] = config.resource_name
    if config.resource_documentation:
        doc["resource_documentation"] = config.resource_documentation
    return doc


class MetadataEndpoint:
    """Answers the well-known PRM paths; ``match(path)`` says whether a path is one."""

    def __init__(self, config: ResourceServerConfig, *, max_age: int = 3600) -> None:
        self._documents: dict[str, bytes] = {
            config.metadata_path: msgspec.json.encode(protected_resource_metadata(config)),
        }
        root = "/.well-known/oauth-protected-resource"
        if config.metadata_path != root:
            self._documents[root] = msgspec.json.encode(
                protected_resource_metadata(config, resource=config.origin)
            )
        self._cache = f"public, max-age={max_age}".encode()

    def match(self, path: str) -> bool:
        return path in self._documents or path.rstrip("/") in self._documents

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = self._documents.get(scope["path"]) or self._documents[scope["path"].rstrip("/")]
        method = scope.get("method", "GET")
        if method == "OPTIONS":
            await respond(send, 204, headers=_CORS)
            return
        if method not in ("GET", "HEAD"):
            await respond(send, 405, headers=[(b"allow", b"GET, HEAD, OPTIONS"), *_CORS])
            return
        await respond(send, 200, body, content_type=JSON,
                      headers=[(b"cache-control", self._cache), *_CORS], head=method == "HEAD")


__all__ = ["MetadataEndpoint", "protected_resource_metadata"]
