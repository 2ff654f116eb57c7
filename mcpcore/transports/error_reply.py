"""The one mapping of an exception to an HTTP reply: status, JSON-RPC error, headers.

Used by every HTTP layer that answers with an error (``http``, ``admission``,
``mcpcore.health``), so each refusal is shaped the same way wherever it happens.
"""

from __future__ import annotations

from mcpcore import jsonrpc
from mcpcore.errors import as_mcp_error
from mcpcore.transports.asgi import Send, send_json


def error_reply(exc: BaseException, request_id: jsonrpc.RequestId | None,
                where: str = "MCP request") -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """Status, JSON-RPC error body and headers for ``exc``.

    An ``McpError`` brings its status and headers (e.g. a step-up ``WWW-Authenticate``);
    anything else is logged and answered as -32603 with HTTP 200, like every ordinary
    JSON-RPC error (the transport page names a status only for the refusals).
    """
    error = as_mcp_error(exc, where)
    extra = [(name.lower().encode("latin-1", "replace"), value.encode("latin-1", "replace"))
             for name, value in error.http_headers]
    return error.http_status, jsonrpc.encode_error(request_id, error), extra


async def send_error(send: Send, exc: BaseException,
                     request_id: jsonrpc.RequestId | None = None) -> None:
    """Answer with ``exc`` as a JSON-RPC error response (status from ``error_reply``)."""
    status, payload, extra = error_reply(exc, request_id)
    await send_json(send, status, payload, extra)


__all__ = ["error_reply", "send_error"]
