"""Which era a message belongs to, decided per message (never per connection).

On HTTP a message belongs to a 2025-era session when it is an ``initialize`` request,
or carries ``Mcp-Session-Id``, and has no modern marker: an ``MCP-Protocol-Version``
newer than 2025-11-25, or an ``io.modelcontextprotocol/`` key in its ``_meta``.
Anything else is modern, so a request without headers or ``_meta`` gets a modern error
naming what is missing. Modern requests pay a header lookup here and nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from mcpcore.headers import decode_lenient_params
from mcpcore.jsonrpc import Message, Notification, Request
from mcpcore.meta import RESERVED_PREFIX
from mcpcore.versions import is_modern_version


def has_modern_marker(message: Message) -> bool:
    """Does the message's ``_meta`` carry an ``io.modelcontextprotocol/`` key?"""
    params = message.params if isinstance(message, (Request, Notification)) else None
    if params is None or RESERVED_PREFIX.encode() not in bytes(params):
        return False  # cheap: no reserved prefix anywhere in the params bytes
    try:
        meta = decode_lenient_params(params).meta
    except msgspec.DecodeError:
        return False
    return isinstance(meta, dict) and any(
        isinstance(k, str) and k.startswith(RESERVED_PREFIX) for k in meta)


def modern_header(headers: Mapping[str, str]) -> bool:
    """An ``MCP-Protocol-Version`` header naming a revision after 2025-11-25."""
    version = headers.get("mcp-protocol-version")
    return version is not None and is_modern_version(version.strip())


def http_session_message(message: Message, headers: Mapping[str, str]) -> bool:
    """Is this HTTP message for a 2025-era session (or the ``initialize`` opening one)?"""
    if modern_header(headers):
        return False
    is_init = isinstance(message, Request) and message.method == "initialize"
    if not is_init and "mcp-session-id" not in headers:
        return False
    return not has_modern_marker(message)


def http_session_batch(body: bytes, headers: Mapping[str, str]) -> bool:
    """A JSON-RPC batch for a session (only 2025-03-26 sessions may send one). A modern
    batch is -32600, never a session's."""
    return (not modern_header(headers) and "mcp-session-id" in headers
            and body.lstrip()[:1] == b"[")


__all__ = ["has_modern_marker", "http_session_batch", "http_session_message",
           "modern_header"]
