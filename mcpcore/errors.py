"""Every error mcpcore sends to a peer, in one hierarchy (and ``UsageError``, the one
it raises at a server's author instead).

Each class knows its JSON-RPC code, the ``data`` it carries and the HTTP status the
Streamable HTTP transport answers with. Handlers and the engine *raise*; each transport
maps an ``McpError`` to the wire in exactly one place (``to_error`` plus ``http_status``).
Anything that is not an ``McpError`` becomes ``InternalError`` at the outermost layer,
without a traceback on the wire.

    McpError (-32603)
      ParseError (-32700, HTTP 400)
      InvalidRequest (-32600, HTTP 400)
        BatchNotSupported, ResponseNotExpected
        HttpRefusal: ForbiddenOrigin (403), MethodNotAllowed (405 + Allow),
                     NotAcceptable (406), BodyTimeout (408), PayloadTooLarge (413),
                     UnsupportedMediaType (415)
      MethodNotFound (-32601, HTTP 404)
      InvalidParams (-32602)
        InvalidMeta (HTTP 400), UnknownTool, UnknownPrompt, ResourceNotFound (data.uri),
        InvalidCursor, InvalidRequestState, InvalidInputResponses,
        mcpcore.tasks.UnknownTask (an unknown, expired or other principal's task),
        mcpcore.gateway.quarantine.ToolQuarantined (data.tool/reason)
      InternalError (-32603)
      HeaderMismatch (-32020, HTTP 400)
      MissingRequiredClientCapability (-32021, HTTP 400, data.requiredCapabilities)
      UnsupportedProtocolVersion (-32022, HTTP 400, data.supported/requested)
      InsufficientScope (-32600, HTTP 403 + WWW-Authenticate, data.requiredScopes)
      ServiceUnavailable (-32603, HTTP 503 + Retry-After, data.reason/retryAfter):
        StoreUnavailable (mcpcore.stores), Overloaded, ShuttingDown
      RateLimited (-32600, HTTP 429 + Retry-After, data.retryAfterSeconds)
      PolicyDenied (-32600, data.reason/rule): a policy refused a read, prompt or
        completion (a refused ``tools/call`` is a tool error instead)

Anything else a transport meets is a bug on our side: ``as_mcp_error`` logs it and
turns it into ``InternalError``, answered like any other JSON-RPC error (HTTP 200).

The spec reserves -32000..-32099 for its own codes; we emit only the ones it defines
(-32020..-32022), with their meaning. Ordinary JSON-RPC errors (unknown tool, not found,
bad cursor, internal) keep HTTP 200: the Streamable HTTP transport page names a status
only for the refusals listed above.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from enum import IntEnum
from typing import Any, ClassVar

from mcpcore.www_authenticate import bearer_challenge

log = logging.getLogger("mcpcore")


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    HEADER_MISMATCH = -32020
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    UNSUPPORTED_PROTOCOL_VERSION = -32022


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


class HttpRefusal(InvalidRequest):
    """Refusals of the HTTP layer, before any JSON-RPC is read: the body is an id-less
    JSON-RPC error, the status says what is wrong."""


class ForbiddenOrigin(HttpRefusal):
    http_status = 403
    default_message = "Forbidden: Origin or Host is not allowed"


class MethodNotAllowed(HttpRefusal):
    http_status = 405
    default_message = "Method not allowed: the MCP endpoint accepts POST"
    http_headers = (("Allow", "POST"),)


class NotAcceptable(HttpRefusal):
    http_status = 406
    default_message = "Not acceptable: Accept must allow application/json or text/event-stream"


class PayloadTooLarge(HttpRefusal):
    http_status = 413
    default_message = "Request body too large"


class BodyTimeout(HttpRefusal):
    """The request body did not arrive in time (a slow or stalled sender): HTTP 408, and
    the connection is closed (RFC 9110 §15.5.9)."""

    http_status = 408
    default_message = "Request body not received in time"
    http_headers = (("Connection", "close"),)


class UnsupportedMediaType(HttpRefusal):
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
    """Required ``_meta`` fields are missing or malformed (HTTP 400: streamable-http.mdx
    names this case)."""

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


class UnnormalizedUri(InvalidParams):
    """A resource URI that a template would route, written in a form other than its
    normal one (RFC 3986 §6.2.2): a percent-encoded unreserved character (``%73`` for
    ``s``), or a ``.`` or ``..`` segment. Refused rather than routed: a policy rule is
    a glob on the URI as written, and the server behind the template (or the reader's
    decoded variables) would see another resource than the rule did. -32602 with
    ``data.uri`` and ``data.reason`` ``"not_normalized"``."""

    def __init__(self, uri: str, why: str) -> None:
        super().__init__(f"Resource URI not in normal form: {why}; send it normalized "
                         "(RFC 3986 §6.2.2)", data={"uri": uri, "reason": "not_normalized"})
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

    ``WWW-Authenticate: Bearer scope="<all it needs>", error="insufficient_scope"`` plus
    ``resource_metadata`` when known (built by ``mcpcore.www_authenticate``, as the
    resource server's challenges are) (authorization.mdx, "Scope Challenge Handling";
    RFC 6750 §3.1). Raise it only when a broader token *would* succeed; denials no scope
    can fix are tool errors, or the client would step up in a loop.

    >>> InsufficientScope({"mcp:write"}).http_headers
    (('WWW-Authenticate', 'Bearer scope="mcp:write", error="insufficient_scope"'),)
    """

    code = ErrorCode.INVALID_REQUEST
    http_status = 403
    default_message = "Insufficient scope"

    def __init__(self, scopes: Iterable[str], *, resource_metadata: str | None = None) -> None:
        self.scopes = frozenset(s for s in scopes if s != "offline_access")
        ordered = sorted(self.scopes)
        super().__init__("Insufficient scope for this operation",
                         data={"requiredScopes": ordered})
        challenge = bearer_challenge(resource_metadata=resource_metadata, scopes=ordered,
                                     error="insufficient_scope")
        self.http_headers = (("WWW-Authenticate", challenge),)


class ServiceUnavailable(McpError):
    """The server cannot serve this request now but expects to soon: HTTP 503 with
    ``Retry-After`` (RFC 9110 §15.6.4, §10.2.3), so clients and load balancers may retry,
    and ``data`` saying why (``reason``) and when (``retryAfter``, seconds).

    The code stays -32603: the JSON-RPC 2.0 specification defines no "unavailable" code
    and MCP reserves -32000..-32099 for its own. Subclasses name the reason: the shared
    Store is unreachable (``mcpcore.stores.StoreUnavailable``), the instance is at
    capacity (``Overloaded``), or it is shutting down (``ShuttingDown``).

    >>> Overloaded("requests").to_error()["data"]
    {'reason': 'overloaded', 'retryAfter': 1}
    """

    code = ErrorCode.INTERNAL_ERROR
    http_status = 503
    default_message = "Service unavailable: retry shortly"
    reason: ClassVar[str] = "unavailable"

    def __init__(self, message: str | None = None, *, retry_after: int = 1) -> None:
        super().__init__(message, data={"reason": self.reason, "retryAfter": retry_after})
        self.retry_after = retry_after
        self.http_headers = (("Retry-After", str(retry_after)),)


class Overloaded(ServiceUnavailable):
    """This instance already serves as many requests (or streams) as it is configured to
    take (``mcpcore.transports.admission``): nothing was run; retry, on any instance."""

    reason = "overloaded"

    def __init__(self, what: str = "requests", *, retry_after: int = 1) -> None:
        super().__init__(f"Server overloaded: too many concurrent {what}; retry in "
                         f"{retry_after} s", retry_after=retry_after)


class ShuttingDown(ServiceUnavailable):
    """This instance is draining before it stops: it takes no new streams; retry on
    another instance."""

    reason = "shutting_down"
    default_message = "Server shutting down: retry on another instance"


class RateLimited(McpError):
    """Too many calls of this tool by this principal in the policy's window.

    A JSON-RPC error (the request is refused as sent) with HTTP 429 and ``Retry-After``
    (RFC 9110 §10.2.3, whole seconds, rounded up); ``data`` carries the same hint for
    transports without headers: ``{"reason": "rate_limited", "retryAfterSeconds": n}``.

    >>> RateLimited(1.2).http_headers
    (('Retry-After', '2'),)
    """

    code = ErrorCode.INVALID_REQUEST
    http_status = 429
    default_message = "Too many calls to this tool; try again later"

    def __init__(self, retry_after: float) -> None:
        self.retry_after = max(0.0, retry_after)
        seconds = max(1, math.ceil(self.retry_after))
        super().__init__(data={"reason": "rate_limited", "retryAfterSeconds": seconds})
        self.http_headers = (("Retry-After", str(seconds)),)


class PolicyDenied(McpError):
    """A policy refused a request that is not a ``tools/call`` (``resources/read``,
    ``prompts/get``, ``completion/complete`` under ``Policy(methods=...)``): no scope
    would change that, so it is no 403. ``data`` names the decision's reason code and
    the rule that made it (``default`` when no rule matched), for the operator reading
    the client's log; a refused ``tools/call`` answers a tool error instead, as the
    model must see it (tools.mdx, "Error Handling").

    >>> PolicyDenied("rule_deny", "no-secrets").to_error()["data"]
    {'reason': 'rule_deny', 'rule': 'no-secrets'}
    """

    code = ErrorCode.INVALID_REQUEST
    default_message = "This request is not permitted by policy"

    def __init__(self, reason: str, rule: str, message: str | None = None) -> None:
        super().__init__(message, data={"reason": reason, "rule": rule})
        self.reason = reason
        self.rule = rule


class UsageError(TypeError):
    """The server's own code used mcpcore wrongly. Never sent to a peer as it is.

    Raised as early as the mistake can be seen: at registration (a hint we cannot serve,
    ``ctx`` without its ``Context`` hint, annotations the schema forbids) or when a
    handler asks (an elicitation form outside the flat schema, an ``elicit`` that was
    never awaited). The message names the tool, prompt or resource and what to change.

    >>> raise UsageError("tool 'greet': parameter 'ctx' has no Context hint")  # doctest: +SKIP
    """


class ConfigError(ValueError):
    """Configuration that cannot be used: an environment variable (``MCPCORE_STATE_KEYS``,
    ``MCPCORE_ALLOWED_HOSTS``, ``MCPCORE_MAX_REQUESTS``, ...) or a file. The message names
    the setting, what is wrong with it and how to fix it, in one line: the ``mcpcore``
    command and ``mcpcore.cli.serve`` print it as it is and exit with status 2.

    >>> raise ConfigError("MCPCORE_STATE_KEYS is set but empty; ...")  # doctest: +SKIP
    """


class MissingExtra(ImportError):
    """A part of mcpcore used without the optional dependencies it needs. The message
    names the extra to install (``pip install 'mcpcore[issuer]'``) in one line; the
    ``mcpcore`` command prints it as it is and exits with status 2."""

    def __init__(self, what: str, extra: str, missing: list[str]) -> None:
        super().__init__(
            f"{what} needs the {extra!r} extra (missing: {', '.join(missing)}): "
            f"pip install 'mcpcore[{extra}]'")
        self.extra = extra
        self.missing = tuple(missing)


def as_mcp_error(exc: BaseException, where: str = "request") -> McpError:
    """``exc`` as the error a peer is sent: an ``McpError`` as it is; anything else is
    our bug, logged with its traceback and sent as ``InternalError`` (no internals)."""
    if isinstance(exc, McpError):
        return exc
    log.error("internal error in %s", where, exc_info=exc)
    return InternalError()


__all__ = [
    "BatchNotSupported",
    "BodyTimeout",
    "ConfigError",
    "ErrorCode",
    "ForbiddenOrigin",
    "HeaderMismatch",
    "HttpRefusal",
    "InsufficientScope",
    "InternalError",
    "InvalidCursor",
    "InvalidInputResponses",
    "InvalidMeta",
    "InvalidParams",
    "InvalidRequest",
    "InvalidRequestState",
    "McpError",
    "MethodNotAllowed",
    "MethodNotFound",
    "MissingExtra",
    "MissingRequiredClientCapability",
    "NotAcceptable",
    "Overloaded",
    "ParseError",
    "PayloadTooLarge",
    "PolicyDenied",
    "RateLimited",
    "ResourceNotFound",
    "ResponseNotExpected",
    "ServiceUnavailable",
    "ShuttingDown",
    "UnknownPrompt",
    "UnknownTool",
    "UnnormalizedUri",
    "UnsupportedMediaType",
    "UnsupportedProtocolVersion",
    "UsageError",
    "as_mcp_error",
]
