"""What the gateway answers when an upstream cannot: three typed errors, mapped by the
transports like every other ``McpError``.

- ``UpstreamError``: the upstream did not answer usably (down, timed out, its circuit
  is open, it answered something that is not MCP or too large). JSON-RPC -32603 with
  ``data: {"upstream": NAME, "reason": REASON}``; the message names both. HTTP 200: the
  gateway itself is fine, so a balancer must not take this instance out (or retry the
  call elsewhere: a retry must not repeat a side effect).
- ``UpstreamRejected``: the upstream answered with a JSON-RPC error (an unknown tool,
  invalid params, an application error): its code and message are relayed, the
  message cut to ``MAX_RELAYED_MESSAGE`` characters and ``data`` dropped beyond
  ``MAX_RELAYED_DATA`` bytes, so a hostile upstream cannot make the gateway send
  megabytes;
- ``CredentialUnavailable``: the gateway could not obtain its credential for the
  upstream (``credentials.py``), so the call was not sent: -32603 with ``data:
  {"upstream": NAME, "reason": REASON}`` (and the authorization server's OAuth
  ``error`` code when it sent one).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from mcpcore.errors import ErrorCode, McpError, MissingRequiredClientCapability

#: Why an upstream did not answer usably (``data.reason``).
Reason = Literal["down", "timeout", "circuit_open", "invalid_response", "too_large",
                 "unsupported", "input_rounds", "too_many_waiting"]
#: Characters of an upstream's error message relayed.
MAX_RELAYED_MESSAGE: Final = 1000
#: Bytes of an upstream's error ``data`` (as JSON) relayed; larger is dropped.
MAX_RELAYED_DATA: Final = 4096
#: JSON-RPC codes of an upstream's error that are about the gateway's own request, not
#: the caller's (the gateway spoke the protocol wrongly, or the upstream lacks the
#: method): not relayed as such, they become an ``UpstreamError``.
_NOT_RELAYED: Final = frozenset({ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST,
                                 ErrorCode.METHOD_NOT_FOUND, ErrorCode.INTERNAL_ERROR,
                                 ErrorCode.HEADER_MISMATCH,
                                 ErrorCode.UNSUPPORTED_PROTOCOL_VERSION})


class UpstreamError(McpError):
    """An upstream did not answer usably; ``upstream`` and ``reason`` say which and why.

    >>> UpstreamError("weather", "timeout", "no answer within 30 s").to_error()["data"]
    {'upstream': 'weather', 'reason': 'timeout'}
    """

    code = ErrorCode.INTERNAL_ERROR

    def __init__(self, upstream: str, reason: Reason, detail: str) -> None:
        super().__init__(f"Upstream {upstream!r} is unavailable ({reason}): "
                         f"{cut(detail, MAX_RELAYED_MESSAGE)}",
                         data={"upstream": upstream, "reason": reason})
        self.upstream = upstream
        self.reason = reason


#: Why the gateway holds no credential for a call to an upstream (``data.reason``).
CredentialReason = Literal["no_caller_token", "consent_required", "scope_missing",
                           "exchange_refused", "not_allowed", "token_endpoint_failed"]


class CredentialUnavailable(McpError):
    """The gateway could not obtain its credential for an upstream (for this caller, or
    for itself): the call was not sent. JSON-RPC -32603 with ``data: {"upstream": NAME,
    "reason": REASON}`` (and ``"error"``, the authorization server's OAuth error code,
    when it sent one). Never a bare 401: the caller's own token was fine, the gateway's
    token for the upstream is what is missing.

    >>> CredentialUnavailable("notes", "scope_missing", "invalid_scope").to_error()["data"]
    {'upstream': 'notes', 'reason': 'scope_missing', 'error': 'invalid_scope'}
    """

    code = ErrorCode.INTERNAL_ERROR

    def __init__(self, upstream: str, reason: CredentialReason,
                 error: str | None = None) -> None:
        why = _CREDENTIAL_WHY[reason]
        data: dict[str, Any] = {"upstream": upstream, "reason": reason}
        if error is not None:
            data["error"] = error
        super().__init__(f"No credential for upstream {upstream!r} ({reason}"
                         f"{', ' + error if error else ''}): {why}", data=data)
        self.upstream = upstream
        self.reason = reason
        self.error = error


_CREDENTIAL_WHY: Final[dict[str, str]] = {
    "no_caller_token": "this upstream acts as the caller, and the call carries no "
                       "bearer token to exchange (the gateway must require one: "
                       "docs/gateway-credentials.md)",
    "consent_required": "the authorization server needs the user's consent or sign-in "
                        "first",
    "scope_missing": "the authorization server would not grant the scopes this upstream "
                     "needs",
    "exchange_refused": "the authorization server refused to issue a token for this "
                        "upstream",
    "not_allowed": "the policy does not let this call obtain a token for this upstream",
    "token_endpoint_failed": "the authorization server could not be reached, or answered "
                             "something unusable",
}


class UpstreamRejected(McpError):
    """An upstream's JSON-RPC error, relayed (bounded: see the module docstring)."""

    def __init__(self, upstream: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(cut(message, MAX_RELAYED_MESSAGE) or "Error",
                         data=bounded_data(data))
        # The upstream's code, not the class's: this error stands for its answer.
        self.code = code  # type: ignore[misc]
        # ... and the HTTP status the spec gives that code, where it gives one: the
        # caller's request lacked a capability the upstream needs (basic/utilities
        # MRTR: -32021 is HTTP 400 on Streamable HTTP).
        self.http_status = _RELAYED_STATUS.get(code, 200)  # type: ignore[misc]
        self.upstream = upstream


#: Relayed codes whose HTTP status is not 200, as the engine's own errors answer them.
_RELAYED_STATUS: Final[dict[int, int]] = {
    MissingRequiredClientCapability.code: MissingRequiredClientCapability.http_status}


def relayable(code: int) -> bool:
    """Whether an upstream's error code is relayed to the caller as is."""
    return code not in _NOT_RELAYED


def cut(text: str, size: int) -> str:
    """``text`` cut to ``size`` characters (marked when cut)."""
    return text if len(text) <= size else text[:size] + "..."


def bounded_data(data: Any) -> Any:
    """``data`` if its JSON is at most ``MAX_RELAYED_DATA`` bytes, else ``None``."""
    if data is None:
        return None
    try:
        size = len(msgspec.json.encode(data))
    except (TypeError, ValueError, OverflowError):
        return None
    return data if size <= MAX_RELAYED_DATA else None


__all__ = ["MAX_RELAYED_DATA", "MAX_RELAYED_MESSAGE", "CredentialReason",
           "CredentialUnavailable", "Reason", "UpstreamError",
           "UpstreamRejected", "bounded_data", "cut", "relayable"]
