"""Every error mcpcore sends to a peer, in one hierarchy.

Each class knows its JSON-RPC code, the ``data`` it carries and the HTTP status the
Streamable HTTP transport answers with. Handlers and the engine *raise*; each transport
maps an ``McpError`` to the wire in exactly one place (``to_error`` plus ``http_status``).
Anything that is not an ``McpError`` becomes ``InternalError`` at the outermost layer,
without a traceback on the wire.

    McpError (-32603)
      ParseError (-32700, HTTP 400)
      InvalidRequest (-32600, HTTP 400)
        BatchNotSupported, ResponseNotExpected
        TransportError: ForbiddenOrigin (403), MethodNotAllowed (405),
                        NotAcceptable (406), PayloadTooLarge (413),
                        UnsupportedMediaType (415)
      MethodNotFound (-32601, HTTP 404)
      InvalidParams (-32602)
        InvalidMeta (HTTP 400), UnknownTool, UnknownPrompt, ResourceNotFound (data.uri),
        InvalidCursor, InvalidRequestState, InvalidInputResponses
      LegacyResourceNotFound (-32002, legacy sessions only)
      InternalError (-32603)
      HeaderMismatch (-32020, HTTP 400)
      MissingRequiredClientCapability (-32021, HTTP 400, data.requiredCapabilities)
      UnsupportedProtocolVersion (-32022, HTTP 400, data.supported/requested)
      InsufficientScope (-32600, HTTP 403 + WWW-Authenticate, data.requiredScopes)

Spec: "-32020..-32099 is reserved": we emit only the codes defined there, with their
meaning. Ordinary JSON-RPC errors (unknown tool, not found, bad cursor) keep HTTP 200:
only the cases listed in the transport's status table are mandated (core §5g, trap T4).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any, ClassVar


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    HEADER_MISMATCH = -32020
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    UNSUPPORTED_PROTOCOL_VERSION = -32022
    # Legacy sessions only (2025-11-25 and older): resource not found.
    LEGACY_RESOURCE_NOT_FOUND = -32002


class McpError(Exception):
    """Base of every error we send to a peer.

    >>> raise ResourceNotFound("file:///missing.txt")   # doctest: +SKIP

    ``http_status`` is what the HTTP transport answers with; 200 means "a normal JSON-RPC
    error response" (the spec leaves the status of ordinary errors open).
    """

    code: ClassVar[int] = ErrorCode.INTERNAL_ERROR
    http_status: ClassVar[int] = 200
    default_message: ClassVar[str] = "Internal error"
    #: Extra response headers the HTTP transport sends with this error (name, value).
    http_headers: tuple[tuple[str, str], ...] = ()

    def __init__(self, message: str | None = None, *, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member."""
        err: dict[str, Any] = {"code": int(self.code), "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={int(self.code)})"


class ParseError(McpError):
    code = ErrorCode.PARSE_ERROR
    http_status = 400
    default_message = "Parse error"


class InvalidRequest(McpError):
    code = ErrorCode.INVALID_REQUEST
    http_status = 400
    default_message = "Invalid request"


class BatchNotSupported(InvalidRequest):
    default_message = "JSON-RPC batches are not supported in this protocol revision"


class ResponseNotExpected(InvalidRequest):
    default_message = "This server sends no requests, so it expects no JSON-RPC responses"


class TransportError(InvalidRequest):
    """HTTP-level refusals; the body is an id-less JSON-RPC error."""


class ForbiddenOrigin(TransportError):
    http_status = 403
    default_message = "Forbidden: Origin or Host is not allowed"


class MethodNotAllowed(TransportError):
    http_status = 405
    default_message = "Method not allowed: the MCP endpoint accepts POST"


class NotAcceptable(TransportError):
    http_status = 406
    default_message = "Not acceptable: Accept must allow application/json or text/event-stream"


class PayloadTooLarge(TransportError):
    http_status = 413
    default_message = "Request body too large"


class UnsupportedMediaType(TransportError):
    http_status = 415
    default_message = "Unsupported media type: Content-Type must be application/json"


class MethodNotFound(McpError):
    code = ErrorCode.METHOD_NOT_FOUND
    http_status = 404
    default_message = "Method not found"

    @classmethod
    def for_method(cls, method: str) -> MethodNotFound:
        return cls(f"Method not found: {method}")


class InvalidParams(McpError):
    code = ErrorCode.INVALID_PARAMS
    default_message = "Invalid params"


class InvalidMeta(InvalidParams):
    """Required ``_meta`` fields are missing or malformed (HTTP 400 per core §5g)."""

    http_status = 400
    default_message = "Invalid _meta"


class UnknownTool(InvalidParams):
    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown tool: {name}")
        self.name = name


class UnknownPrompt(InvalidParams):
    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown prompt: {name}")
        self.name = name


class ResourceNotFound(InvalidParams):
    """Spec: unknown resource → -32602 with ``data.uri`` (never empty ``contents``)."""

    def __init__(self, uri: str) -> None:
        super().__init__("Resource not found", data={"uri": uri})
        self.uri = uri


class LegacyResourceNotFound(McpError):
    """What legacy sessions (2025-11-25 and older) expect for a missing resource."""

    code = ErrorCode.LEGACY_RESOURCE_NOT_FOUND

    def __init__(self, uri: str) -> None:
        super().__init__("Resource not found", data={"uri": uri})
        self.uri = uri


class InvalidCursor(InvalidParams):
    default_message = "Invalid cursor"


class InvalidRequestState(InvalidParams):
    default_message = "Invalid requestState"


class InvalidInputResponses(InvalidParams):
    default_message = "Invalid inputResponses"


class InternalError(McpError):
    code = ErrorCode.INTERNAL_ERROR
    default_message = "Internal error"


class HeaderMismatch(McpError):
    code = ErrorCode.HEADER_MISMATCH
    http_status = 400
    default_message = "Header mismatch"


class MissingRequiredClientCapability(McpError):
    code = ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY
    http_status = 400
    default_message = "Missing required client capability"

    def __init__(self, required: dict[str, Any], message: str | None = None) -> None:
        names = ", ".join(sorted(required)) or "?"
        super().__init__(
            message or f"Missing required client capability: {names}",
            data={"requiredCapabilities": required},
        )
        self.required = required


class UnsupportedProtocolVersion(McpError):
    code = ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
    http_status = 400
    default_message = "Unsupported protocol version"

    def __init__(self, requested: str, supported: list[str]) -> None:
        super().__init__(
            f"Unsupported protocol version: {requested}",
            data={"supported": list(supported), "requested": requested},
        )
        self.requested = requested
        self.supported = supported


class InsufficientScope(McpError):
    """The principal lacks a scope this operation needs: HTTP 403 with a step-up challenge.

    ``WWW-Authenticate: Bearer error="insufficient_scope", scope="<all it needs>"`` plus
    ``resource_metadata`` when known (auth requirements 1.05, 1.06). Raise it only when a
    broader token *would* succeed; denials no scope can fix are tool errors (6.35).

    >>> InsufficientScope({"mcp:write"}).http_headers
    (('WWW-Authenticate', 'Bearer error="insufficient_scope", scope="mcp:write"'),)
    """

    code = ErrorCode.INVALID_REQUEST
    http_status = 403
    default_message = "Insufficient scope"

    def __init__(self, scopes: Iterable[str], *, resource_metadata: str | None = None) -> None:
        self.scopes = frozenset(s for s in scopes if s != "offline_access")
        ordered = sorted(self.scopes)
        super().__init__("Insufficient scope for this operation",
                         data={"requiredScopes": ordered})
        params = ['error="insufficient_scope"']
        if ordered:
            params.append(f"scope={_quoted(' '.join(ordered))}")
        if resource_metadata:
            params.append(f"resource_metadata={_quoted(resource_metadata)}")
        self.http_headers = (("WWW-Authenticate", "Bearer " + ", ".join(params)),)


def _quoted(value: str) -> str:
    """An RFC 9110 quoted-string: controls dropped, backslash and quote escaped."""
    cleaned = "".join(ch for ch in value if ch >= " " and ch != "\x7f")
    return '"' + cleaned.replace("\\", "\\\\").replace('"', '\\"') + '"'


__all__ = [
    "BatchNotSupported",
    "ErrorCode",
    "ForbiddenOrigin",
    "HeaderMismatch",
    "InsufficientScope",
    "InternalError",
    "InvalidCursor",
    "InvalidInputResponses",
    "InvalidMeta",
    "InvalidParams",
    "InvalidRequest",
    "InvalidRequestState",
    "LegacyResourceNotFound",
    "McpError",
    "MethodNotAllowed",
    "MethodNotFound",
    "MissingRequiredClientCapability",
    "NotAcceptable",
    "ParseError",
    "PayloadTooLarge",
    "ResourceNotFound",
    "ResponseNotExpected",
    "TransportError",
    "UnknownPrompt",
    "UnknownTool",
    "UnsupportedMediaType",
    "UnsupportedProtocolVersion",
]
