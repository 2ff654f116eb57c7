"""What goes on the wire: request bodies, ``_meta`` blocks and the standard HTTP headers.

Pure functions, no I/O. The suite builds every probe from these, then deliberately breaks
one thing at a time (drops a header, changes a value), so a check says exactly what it
sent. Sources: basic/index.mdx "_meta" and basic/transports/streamable-http.mdx
"Standard request headers" and "Value encoding" (revision 2026-07-28).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
#: The revisions the suite speaks, newest first.
ERAS: Final = (MODERN, LEGACY)
#: Versions a legacy ``initialize`` may legitimately answer with.
LEGACY_VERSIONS: Final = frozenset({"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"})

PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

#: Who we say we are in ``clientInfo``.
SUITE_CLIENT: Final = {"name": "mcpcore-conformance", "version": "1.0"}
#: What the suite declares unless a probe says otherwise: every client capability, so a
#: server never has a reason to refuse for want of one.
FULL_CAPABILITIES: Final[Mapping[str, Any]] = {
    "sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}

#: Methods whose ``Mcp-Name`` header mirrors a body field.
NAME_FIELDS: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: Cacheable results (server/utilities/caching.mdx "Cacheable results").
CACHEABLE: Final = frozenset({"server/discover", "tools/list", "resources/list",
                              "resources/templates/list", "resources/read", "prompts/list"})
#: Paginated list methods and the key of their items.
LISTS: Final = {"tools/list": "tools", "prompts/list": "prompts",
                "resources/list": "resources", "resources/templates/list": "resourceTemplates"}
#: The server capability that gates each method (``None``: always served).
CAPABILITY_OF: Final = {"tools/list": "tools", "tools/call": "tools",
                        "prompts/list": "prompts", "prompts/get": "prompts",
                        "resources/list": "resources", "resources/read": "resources",
                        "resources/templates/list": "resources",
                        "completion/complete": "completions"}


def meta(capabilities: Mapping[str, Any] | None = None, *, version: str = MODERN,
         without: Iterable[str] = (), extra: Mapping[str, Any] | None = None,
         ) -> dict[str, Any]:
    """A complete request ``_meta`` minus the keys in ``without``, plus ``extra``."""
    block: dict[str, Any] = {
        PROTOCOL_VERSION: version,
        CLIENT_CAPABILITIES: dict(FULL_CAPABILITIES if capabilities is None else capabilities),
        CLIENT_INFO: dict(SUITE_CLIENT),
    }
    for key in without:
        block.pop(key, None)
    block.update(extra or {})
    return block


def request(method: str, params: Mapping[str, Any] | None = None, *, id: Any = 1,
            meta_block: Mapping[str, Any] | None = None, with_meta: bool = True) -> dict[str, Any]:
    """A modern JSON-RPC request; ``_meta`` is filled in unless ``with_meta`` is false."""
    body_params = dict(params or {})
    if with_meta and "_meta" not in body_params:
        body_params["_meta"] = dict(meta_block) if meta_block is not None else meta()
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": body_params}


def notification(method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def encode(message: Any) -> bytes:
    """Compact UTF-8 JSON, one line."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def sentinel(value: str) -> str:
    """The Base64 sentinel form ``=?base64?…?=`` of a header value."""
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def decode_sentinel(value: str) -> str | None:
    """The decoded value of a sentinel-encoded header, ``None`` if it is not one."""
    if not (value.startswith("=?base64?") and value.endswith("?=")) or len(value) < 11:
        return None
    try:
        return base64.b64decode(value[9:-2], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def header_value(value: str) -> str:
    """``value`` as a client must send it: plain when safe, else the sentinel form."""
    plain = value.isascii() and value.isprintable() and value == value.strip()
    return value if plain and not value.startswith("=?base64?") else sentinel(value)


def param_value(value: Any) -> str | None:
    """The header form of an ``x-mcp-header`` argument (``None``: no header expected)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return header_value(value)
    return None


def header_params(input_schema: Any) -> dict[str, str]:
    """``{property: header suffix}`` for the top-level ``x-mcp-header`` properties."""
    found: dict[str, str] = {}
    props = input_schema.get("properties") if isinstance(input_schema, dict) else None
    if isinstance(props, dict):
        for name, prop in props.items():
            if isinstance(prop, dict) and isinstance(prop.get("x-mcp-header"), str):
                found[name] = prop["x-mcp-header"]
    return found


def standard_headers(body: Mapping[str, Any], *, header_props: Mapping[str, str] | None = None,
                     ) -> dict[str, str]:
    """The headers a conforming client sends with this modern request body."""
    method = str(body.get("method", ""))
    params = body.get("params") if isinstance(body.get("params"), dict) else {}
    assert isinstance(params, dict)
    block = params.get("_meta")
    version = block.get(PROTOCOL_VERSION) if isinstance(block, dict) else None
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version if isinstance(version, str) else MODERN,
        "Mcp-Method": header_value(method),
    }
    field = NAME_FIELDS.get(method)
    if field and isinstance(params.get(field), str):
        headers["Mcp-Name"] = header_value(params[field])
    arguments = params.get("arguments")
    if method == "tools/call" and header_props and isinstance(arguments, dict):
        for prop, suffix in header_props.items():
            value = param_value(arguments.get(prop))
            if value is not None:
                headers[f"Mcp-Param-{suffix}"] = value
    return headers


def legacy_headers(version: str | None = None, session: str | None = None) -> dict[str, str]:
    """Headers of a 2025-era request (after ``initialize``, with the negotiated version)."""
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if version:
        headers["MCP-Protocol-Version"] = version
    if session:
        headers["Mcp-Session-Id"] = session
    return headers


__all__ = [
    "CACHEABLE", "CAPABILITY_OF", "CLIENT_CAPABILITIES", "CLIENT_INFO", "ERAS",
    "FULL_CAPABILITIES", "LEGACY", "LEGACY_VERSIONS", "LISTS", "LOG_LEVEL", "MODERN",
    "NAME_FIELDS", "PROTOCOL_VERSION", "SERVER_INFO", "SUBSCRIPTION_ID", "SUITE_CLIENT",
    "decode_sentinel", "encode", "header_params", "header_value", "legacy_headers", "meta",
    "notification", "param_value", "request", "sentinel", "standard_headers",
]
