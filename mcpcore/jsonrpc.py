"""JSON-RPC 2.0 envelopes: decode incoming bytes, encode outgoing messages.

A pure, synchronous codec on msgspec with hard limits. Decoding is two-step (msgspec docs, "Raw"):
the envelope first, with ``params`` kept as ``msgspec.Raw``; the engine decodes params
once it knows the method, so an unknown method is -32601 and bad params are -32602 rather
than one generic validation error.

Limits (``Limits``) bound the body size, nesting depth, string length and array length.
Each is first bounded by something cheap that the body cannot hide: a body shorter than
the string limit holds no longer string, one with fewer opening brackets than the depth
limit nests no deeper (counted with ``bytes.find``, which is memchr, and only up to the
limit), one with fewer commas than the item limit holds no longer array. Only a body
that fails a bound is checked exactly, so a large argument is decoded once, not twice.

Never here: sockets, HTTP, Starlette, MCP method semantics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

from mcpcore.errors import (
    BatchNotSupported,
    InvalidRequest,
    McpError,
    ParseError,
    PayloadTooLarge,
)

RequestId = int | str


@dataclass(frozen=True, slots=True)
class Limits:
    """Hard limits on one incoming message. Defaults are safe for public servers."""

    max_body_bytes: int = 4 * 1024 * 1024
    max_depth: int = 64
    max_string_bytes: int = 1024 * 1024
    max_array_items: int = 10_000


DEFAULT_LIMITS: Final = Limits()


class Envelope(msgspec.Struct):
    """A JSON-RPC 2.0 message as it came (JSON-RPC 2.0 specification, sections 4 and
    5): every member optional and of any type, ``params``/``result``/``error`` kept
    raw. ``decode_message`` checks it by hand, so that each fault gets its own clear
    message; a reader that needs less (a per-call scope check) reads it as it is."""

    jsonrpc: Any = UNSET
    id: Any = UNSET
    method: Any = UNSET
    params: msgspec.Raw | UnsetType = UNSET
    result: msgspec.Raw | UnsetType = UNSET
    error: msgspec.Raw | UnsetType = UNSET


class Request(msgspec.Struct, frozen=True):
    """An incoming request; ``params`` still undecoded."""

    id: RequestId
    method: str
    params: msgspec.Raw | None = None


class Notification(msgspec.Struct, frozen=True):
    method: str
    params: msgspec.Raw | None = None


class Response(msgspec.Struct, frozen=True):
    """A JSON-RPC response a peer sent us (legacy bridged requests only)."""

    id: RequestId
    result: msgspec.Raw | None = None
    error: msgspec.Raw | None = None


Message = Request | Notification | Response

_decoder: Final = msgspec.json.Decoder(Envelope)
_any_decoder: Final = msgspec.json.Decoder()
_encoder: Final = msgspec.json.Encoder()
_STRING_RE: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET_RE: Final = re.compile(rb"[\[\]{}]")
_WS: Final = b" \t\r\n"


def _first_byte(body: bytes) -> int:
    stripped = body.lstrip(_WS)
    return stripped[0] if stripped else -1


def _nesting_depth(body: bytes) -> int:
    """Maximum bracket depth outside string literals (exact, C-speed scanning)."""
    depth = deepest = 0
    for match in _BRACKET_RE.finditer(_STRING_RE.sub(b'""', body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _more_than(body: bytes, needles: tuple[bytes, ...], limit: int) -> bool:
    """Are there more than ``limit`` occurrences of the needles? Stops at ``limit + 1``."""
    seen = 0
    for needle in needles:
        at = body.find(needle)
        while at != -1:
            seen += 1
            if seen > limit:
                return True
            at = body.find(needle, at + 1)
    return False


#: Bodies up to this size count their brackets with ``bytes.count`` (see check_limits).
_COUNT_BELOW: Final = 512


def check_limits(body: bytes, limits: Limits = DEFAULT_LIMITS) -> None:
    """Reject a body that breaks the size or depth limit. Cheap for every body."""
    if len(body) > limits.max_body_bytes:
        raise PayloadTooLarge(f"Request body exceeds {limits.max_body_bytes} bytes")
    # A body with no more brackets than the depth limit cannot nest deeper than it.
    # Counting them: for a small body two ``count`` calls; for a larger one ``find``
    # (memchr: it skips bracket-free text) step by step, stopping past the limit, as
    # ``count`` reads every byte (~0.8 ns each: 160 us for 200 KiB).
    depth = limits.max_depth
    size = len(body)
    if size <= depth:
        return
    many = (body.count(b"{") + body.count(b"[") > depth if size <= _COUNT_BELOW
            else _more_than(body, (b"[", b"{"), depth))
    if many and _nesting_depth(body) > depth:
        raise InvalidRequest(f"JSON nesting deeper than {limits.max_depth} levels")


def may_break_value_limits(body: bytes, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Could a string or an array in ``body`` exceed the limits? ``False`` is certain:
    a string of N characters needs N bytes, an array a "[" and N - 1 commas."""
    if len(body) > limits.max_string_bytes:
        return True
    # No "[" at all (memchr): no array. Else count the commas (one pass).
    return len(body) > 2 * limits.max_array_items and b"[" in body and (
        body.count(b",") >= limits.max_array_items)


def check_value_limits(value: Any, body_len: int, limits: Limits = DEFAULT_LIMITS) -> None:
    """Reject decoded strings/arrays over the limits; skipped when the body is too small."""
    if body_len <= min(limits.max_string_bytes, 2 * limits.max_array_items):
        return
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if len(node) > limits.max_string_bytes:
                raise InvalidRequest(f"A string exceeds {limits.max_string_bytes} characters")
        elif isinstance(node, list):
            if len(node) > limits.max_array_items:
                raise InvalidRequest(f"An array exceeds {limits.max_array_items} items")
            stack.extend(node)
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())


def decode_message(body: bytes, limits: Limits = DEFAULT_LIMITS) -> Message:
    """Decode one JSON-RPC message, or raise the ``McpError`` the spec asks for.

    >>> decode_message(b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}')
    Request(id=1, method='tools/list', params=Raw(b'{}'))    # doctest: +SKIP
    """
    check_limits(body, limits)
    try:
        env = _decoder.decode(body)
    except msgspec.ValidationError as exc:
        first = _first_byte(body)
        if first == ord("["):
            raise BatchNotSupported() from None
        raise InvalidRequest(f"Not a JSON-RPC message object: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ParseError(f"Parse error: {_reason(exc)}") from None
    except RecursionError:
        raise InvalidRequest("JSON nesting too deep") from None
    _check_values(body, limits)
    if env.jsonrpc != "2.0":
        raise InvalidRequest('"jsonrpc" must be exactly "2.0"')
    msg_id = env.id
    if msg_id is not UNSET and not _valid_id(msg_id):
        raise InvalidRequest('"id" must be a string or an integer (never null)')
    if env.method is not UNSET:
        if not isinstance(env.method, str) or not env.method:
            raise InvalidRequest('"method" must be a non-empty string')
        if env.result is not UNSET or env.error is not UNSET:
            raise InvalidRequest("A request cannot carry result or error")
        params = None if env.params is UNSET else env.params
        if params is not None:
            # Raw holds exactly the value's bytes: its first byte tells the JSON type.
            # JSON-RPC allows by-position arrays; MCP params are always objects.
            first = memoryview(params)[0]
            if first == ord("n"):
                params = None
            elif first != ord("{"):
                raise InvalidRequest('"params" must be an object')
        if msg_id is UNSET:
            return Notification(env.method, params)
        return Request(msg_id, env.method, params)
    if msg_id is not UNSET and (env.result is not UNSET) != (env.error is not UNSET):
        result = env.result if isinstance(env.result, msgspec.Raw) else None
        error = env.error if isinstance(env.error, msgspec.Raw) else None
        return Response(msg_id, result, error)
    raise InvalidRequest('Missing "method": not a request or notification')


def _check_values(body: bytes, limits: Limits) -> None:
    if len(body) > 2 * limits.max_array_items and may_break_value_limits(body, limits):
        # Only such a body can hold a string or an array over the limits: check exactly.
        check_value_limits(_any_decoder.decode(body), len(body), limits)


_typed_decoders: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def _typed_decoder(params_type: type[Any]) -> msgspec.json.Decoder[Any]:
    decoder = _typed_decoders.get(params_type)
    if decoder is None:
        # The envelope with its params typed (a subclass overrides the one field).
        envelope = msgspec.defstruct(f"Envelope_{params_type.__name__}",
                                     [("params", params_type | None, None)],
                                     bases=(Envelope,))
        if len(_typed_decoders) >= 1024:  # tools registered again and again: start over
            _typed_decoders.clear()
        decoder = _typed_decoders[params_type] = msgspec.json.Decoder(envelope)
    return decoder


def decode_request_as(body: bytes, method: str, params_type: type[Any],
                      limits: Limits = DEFAULT_LIMITS) -> tuple[Request, Any] | None:
    """One pass over the body for a caller that already expects ``method`` (an HTTP
    ``Mcp-Method`` header says it): the envelope and its params decoded together, the
    params straight into ``params_type``. Returns the request (its ``params`` left
    ``None``: they are in the second item) and the params, or ``None`` when the body is
    anything else (another method, a notification, params missing or not of that type,
    not JSON at all): the caller then decodes it with ``decode_message`` and the route's
    own decoder, which name exactly what is wrong; so does a body over the limits
    (checked the same way, and again there, where the error can carry the id).
    """
    try:
        check_limits(body, limits)
        env = _typed_decoder(params_type).decode(body)
        if (env.method != method or env.params is None or env.jsonrpc != "2.0"
                or not _valid_id(env.id) or env.result is not UNSET
                or env.error is not UNSET):
            return None
        _check_values(body, limits)
    except (McpError, msgspec.DecodeError, RecursionError):  # ValidationError included
        return None
    return Request(env.id, method), env.params


def _valid_id(value: Any) -> bool:
    return type(value) is int or type(value) is str


def _reason(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) < 200 else text[:200] + "…"


def peek_id(body: bytes) -> RequestId | None:
    """Best-effort id of a message we could not fully accept (for error responses)."""
    try:
        env = _decoder.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    return env.id if _valid_id(env.id) else None


def decode_any(raw: bytes | msgspec.Raw) -> Any:
    return _any_decoder.decode(raw)


def encode(obj: Any) -> bytes:
    return _encoder.encode(obj)


class _ResultResponse(msgspec.Struct):
    jsonrpc: str
    id: RequestId
    result: Any


def encode_result(request_id: RequestId, result: Any) -> bytes:
    # One encode straight into the response bytes: a large result is never copied.
    return _encoder.encode(_ResultResponse("2.0", request_id, result))


def encode_error(request_id: RequestId | None, error: McpError) -> bytes:
    err = _encoder.encode(error.to_error())
    if request_id is None:
        # MCP's RequestId excludes null (schema.json): an error whose id we could not read
        # omits it.
        return b'{"jsonrpc":"2.0","error":%b}' % err
    return b'{"jsonrpc":"2.0","id":%b,"error":%b}' % (_encoder.encode(request_id), err)


def encode_notification(method: str, params: Any) -> bytes:
    return _encoder.encode({"jsonrpc": "2.0", "method": method, "params": params})


def encode_request(request_id: RequestId, method: str, params: Any) -> bytes:
    return _encoder.encode({"jsonrpc": "2.0", "id": request_id, "method": method,
                            "params": params})


__all__ = [
    "DEFAULT_LIMITS",
    "Envelope",
    "Limits",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "check_limits",
    "check_value_limits",
    "decode_any",
    "decode_message",
    "decode_request_as",
    "encode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
    "may_break_value_limits",
    "peek_id",
]
