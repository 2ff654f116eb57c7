"""Header values and the ``x-mcp-header`` extension, without any I/O.

What lives here: the value codec shared by ``Mcp-Name`` and ``Mcp-Param-*`` (plain
values and the Base64 sentinel ``=?base64?...?=``), the rules for ``x-mcp-header``
annotations in a tool's ``inputSchema``, the server's check that ``Mcp-Param-*`` headers
mirror the body and the client's computation of them (streamable-http.mdx, "Value
Encoding", "Schema Extension", "Server Behavior for Custom Headers"; tools.mdx).
What must not: Starlette, HTTP status codes, JSON-RPC error objects. Callers turn a
mismatch message into ``errors.HeaderMismatch`` (-32020, HTTP 400); a transport hands
in headers as a mapping of lower-cased names to raw values.

Server use, after the tool is resolved (a tool that does not exist has no annotations
to check)::

    problem = header_param_mismatch(tool.header_params, arguments, headers)
    if problem is not None:
        raise HeaderMismatch(problem)

Client use: ``tool_headers_valid(tool)`` to drop tools whose annotations break the rules
("clients MUST drop them"), then ``client_header_values(params, arguments)``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias

import msgspec

__all__ = [
    "MAX_SAFE_INTEGER",
    "NAME_PARAMS",
    "HeaderAnnotationError",
    "HeaderParam",
    "HeaderType",
    "HeaderValueError",
    "LenientParams",
    "check_header_params",
    "client_header_values",
    "decode_header_value",
    "decode_lenient_params",
    "encode_header_value",
    "find_header_params",
    "header_param_mismatch",
    "named_by_name",
    "param_header_name",
    "tool_headers_valid",
]

HeaderType: TypeAlias = Literal["string", "integer", "boolean"]

#: Integers mirrored into headers must be exact in an IEEE double: ±(2**53 - 1).
MAX_SAFE_INTEGER: Final = 2**53 - 1

#: Which param names the primitive a request acts on, per method: the value ``Mcp-Name``
#: mirrors (streamable-http, "Standard Headers"; the tasks extension, SEP-2663, "Streamable
#: HTTP: Routing Headers", adds ``taskId``). The one table: the client's headers, the
#: scope check of ``mcpcore.auth`` (methods named by ``name``), the 2025 era's per-call
#: scope check and the conformance checks read it.
NAME_PARAMS: Final[Mapping[str, str]] = MappingProxyType({
    "tools/call": "name", "prompts/get": "name", "resources/read": "uri",
    "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId",
})



class LenientParams(msgspec.Struct, kw_only=True, rename="camel"):
    """A request's params read leniently: ``_meta`` and the fields ``NAME_PARAMS`` names,
    whatever their types, every other field ignored. What the checks that come before a
    method's own decoding read: the server's ``_meta`` and ``Mcp-Name`` checks (for an
    unknown method, or params its route rejects), the per-call scope checks (the name a
    call names) and the 2025 era's marker (an ``io.modelcontextprotocol/`` key in
    ``_meta``)."""

    meta: Any = msgspec.field(default=None, name="_meta")
    name: Any = None
    uri: Any = None
    task_id: Any = None


#: Decodes ``LenientParams`` (raises ``msgspec.DecodeError``, ``ValidationError`` when
#: the params are not an object).
decode_lenient_params: Final = msgspec.json.Decoder(LenientParams).decode


def named_by_name(method: str, params: bytes) -> str | None:
    """The tool or prompt a request names (``params.name`` of ``tools/call`` and
    ``prompts/get``, per ``NAME_PARAMS``), or None: another method, params that are not
    an object or do not decode, a name that is not a string. The one decoder the
    per-call scope checks use (``mcpcore.auth``'s middleware, the 2025 era's endpoint).

    >>> named_by_name("tools/call", b'{"name": "echo", "arguments": {}}')
    'echo'
    >>> named_by_name("resources/read", b'{"uri": "file:///x"}') is None
    True
    """
    if NAME_PARAMS.get(method) != "name" or bytes(params)[:1] != b"{":
        return None
    try:
        name = decode_lenient_params(params).name
    except (msgspec.DecodeError, RecursionError):
        return None
    return name if isinstance(name, str) else None


_PREFIX: Final = "=?base64?"
_SUFFIX: Final = "?="
_OWS: Final = " \t"
# RFC 9110 §5.6.2: token = 1*tchar.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Raw (non-sentinel) values: visible ASCII, space and HTAB only (no CTLs, no obs-text).
_RAW_VALUE: Final = re.compile(r"[\t\x20-\x7e]*")
_PLAIN: Final = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?")
_NUMBER: Final = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_HEADER_TYPES: Final = frozenset({"string", "integer", "boolean"})
_ANNOTATION: Final = "x-mcp-header"

# Keywords whose values hold subschemas (2020-12 and draft-07). Only "properties" keeps
# a subschema statically reachable; the others lead somewhere a header cannot mirror.
_ONE_SCHEMA: Final = frozenset(
    {
        "additionalItems", "additionalProperties", "contains", "contentSchema", "else",
        "if", "items", "not", "propertyNames", "then", "unevaluatedItems",
        "unevaluatedProperties",
    }
)  # fmt: skip
_SCHEMA_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_MAP: Final = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties", "dependencies"}
)


class HeaderValueError(ValueError):
    """A header value that cannot be decoded, or holds characters a header may not."""


class HeaderAnnotationError(ValueError):
    """An ``x-mcp-header`` annotation that breaks the rules (streamable-http.mdx, "Schema
    Extension")."""


@dataclass(frozen=True)
class HeaderParam:
    """One annotated argument: where it is in ``arguments`` and which header mirrors it.

    >>> HeaderParam(path=("region",), header="Region", type="string").header_name
    'Mcp-Param-Region'
    """

    path: tuple[str, ...]
    header: str
    type: HeaderType

    @property
    def header_name(self) -> str:
        """The full header name, ``Mcp-Param-<header>``."""
        return param_header_name(self.header)


def param_header_name(suffix: str) -> str:
    """``Mcp-Param-<suffix>``, the header an ``x-mcp-header: <suffix>`` argument uses."""
    return f"Mcp-Param-{suffix}"


# -- values -----------------------------------------------------------------------------


def _is_sentinel(value: str) -> bool:
    return (
        len(value) >= len(_PREFIX) + len(_SUFFIX)
        and value.startswith(_PREFIX)
        and value.endswith(_SUFFIX)
    )


def decode_header_value(raw: str) -> str:
    """The value a header carries: OWS stripped, the Base64 sentinel decoded.

    Only the exact form ``=?base64?<standard base64, padded>?=`` is decoded
    (streamable-http.mdx, "Value Encoding");
    a value with just one of the markers is a literal. Raises ``HeaderValueError`` for a
    sentinel whose payload is not strict Base64 or not UTF-8, and for a raw value with
    control characters (other than HTAB) or non-ASCII.

    >>> decode_header_value("=?base64?SGVsbG8=?=")
    'Hello'
    >>> decode_header_value("  name  ")
    'name'
    >>> decode_header_value("=?base64?SGVsbG8=")
    '=?base64?SGVsbG8='
    """
    value = raw.strip(_OWS)
    if not _is_sentinel(value):
        # Visible ASCII and spaces is the common case, checked without the regex.
        if value.isascii() and value.isprintable():
            return value
        if _RAW_VALUE.fullmatch(value) is None:
            raise HeaderValueError("header value has control or non-ASCII characters")
        return value
    payload = value[len(_PREFIX) : -len(_SUFFIX)]
    try:
        data = binascii.a2b_base64(payload, strict_mode=True)
    except ValueError as exc:  # binascii.Error, or a non-ASCII payload
        raise HeaderValueError(f"invalid Base64 in header value: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise HeaderValueError("Base64 header value is not UTF-8") from None


def encode_header_value(value: str) -> str:
    """The header form of ``value``: plain when it can be, else the Base64 sentinel.

    Plain means visible ASCII and inner spaces, no leading or trailing whitespace, and not
    itself shaped like a sentinel (streamable-http.mdx, "Value Encoding").
    ``decode_header_value`` inverts it.

    >>> encode_header_value("us-west1")
    'us-west1'
    >>> encode_header_value("Zürich")
    '=?base64?WsO8cmljaA==?='
    """
    if _PLAIN.fullmatch(value) is not None and not _is_sentinel(value):
        return value
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError:
        raise HeaderValueError("value is not encodable as UTF-8") from None
    return _PREFIX + base64.b64encode(data).decode("ascii") + _SUFFIX


# -- annotations ------------------------------------------------------------------------


def _scan(input_schema: object) -> tuple[list[HeaderParam], list[str]]:
    """Every well-formed annotation, and a message per rule broken."""
    params: list[HeaderParam] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    # (node, pointer, path of property names, or None once off the properties chain)
    stack: list[tuple[object, str, tuple[str, ...] | None]] = [(input_schema, "", ())]
    while stack:
        node, at, path = stack.pop()
        if not isinstance(node, Mapping):
            continue
        if _ANNOTATION in node:
            problem = _annotation_problem(node, at, path, seen)
            if problem is not None:
                problems.append(problem)
            elif path:  # _annotation_problem rejects path None and the root ()
                seen[node[_ANNOTATION].lower()] = at
                params.append(HeaderParam(path, node[_ANNOTATION], node["type"]))
        # Reversed so nodes pop in document order: the first of two duplicates wins.
        stack.extend(reversed(_children(node, at, path)))
    params.sort(key=lambda p: p.path)
    return params, problems


def _children(
    node: Mapping[Any, Any], at: str, path: tuple[str, ...] | None
) -> list[tuple[object, str, tuple[str, ...] | None]]:
    out: list[tuple[object, str, tuple[str, ...] | None]] = []
    for key, value in node.items():
        if not isinstance(key, str):
            continue
        here = f"{at}/{_escape(key)}"
        if key in _ONE_SCHEMA and isinstance(value, Mapping):
            out.append((value, here, None))
        elif key in _SCHEMA_LIST and isinstance(value, list):
            out.extend((item, f"{here}/{i}", None) for i, item in enumerate(value))
        elif key in _SCHEMA_MAP and isinstance(value, Mapping):
            for name, sub in value.items():
                if isinstance(name, str):
                    reachable = path is not None and key == "properties"
                    sub_path = (*path, name) if reachable and path is not None else None
                    out.append((sub, f"{here}/{_escape(name)}", sub_path))
    return out


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _annotation_problem(
    node: Mapping[Any, Any], at: str, path: tuple[str, ...] | None, seen: dict[str, str]
) -> str | None:
    name = node[_ANNOTATION]
    where = at or "/"
    if not path:
        return (
            f"x-mcp-header at {where} is not on a statically reachable property "
            "(only a chain of 'properties' keys from the root is)"
        )
    if not isinstance(name, str) or not name:
        return f"x-mcp-header at {where} must be a non-empty string"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return f"x-mcp-header at {where} contains control characters"
    if _TOKEN.fullmatch(name) is None:
        return f"x-mcp-header {name!r} at {where} is not an HTTP token (RFC 9110 tchar)"
    if name.lower() in seen:
        return f"x-mcp-header {name!r} at {where} duplicates the one at {seen[name.lower()]}"
    kind = node.get("type")
    if not isinstance(kind, str) or kind not in _HEADER_TYPES:
        return (
            f"x-mcp-header {name!r} at {where} is on a property of type {kind!r}; "
            "only string, integer and boolean properties may carry it"
        )
    return None


def find_header_params(input_schema: object) -> tuple[HeaderParam, ...]:
    """The well-formed ``x-mcp-header`` annotations of a tool's ``inputSchema``.

    Only statically reachable properties count: a chain of ``properties`` keys from the
    root, never through ``items``, ``anyOf``/``oneOf``/``allOf``/``not``,
    ``if``/``then``/``else``, ``$defs`` or ``$ref``. Malformed annotations are left out
    (``check_header_params`` reports them). Never raises, whatever it is given.

    >>> schema = {"type": "object", "properties": {
    ...     "region": {"type": "string", "x-mcp-header": "Region"}}}
    >>> find_header_params(schema)
    (HeaderParam(path=('region',), header='Region', type='string'),)
    """
    return tuple(_scan(input_schema)[0])


def check_header_params(input_schema: object) -> tuple[HeaderParam, ...]:
    """``find_header_params``, raising ``HeaderAnnotationError`` if any rule is broken.

    Rules (streamable-http.mdx, "Schema Extension"): a non-empty RFC 9110 token without
    control characters, unique case-insensitively, on a ``string``/``integer``/``boolean``
    property (never ``number``), statically reachable. A server calls this when a tool is
    registered, so it never publishes a tool clients must drop.
    """
    params, problems = _scan(input_schema)
    if problems:
        raise HeaderAnnotationError("; ".join(problems))
    return tuple(params)


def tool_headers_valid(tool: Mapping[str, Any]) -> bool:
    """Whether a ``tools/list`` entry's ``x-mcp-header`` annotations are all valid.

    A client drops a tool for which this is ``False`` (the spec says clients MUST). A tool
    with no (or a non-object) ``inputSchema`` has no annotations to break: ``True``.
    """
    return not _scan(tool.get("inputSchema"))[1]


# -- values at call time ----------------------------------------------------------------


def _value_at(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for name in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(name)
    return node


def _wire_value(param: HeaderParam, value: Any) -> str:
    """The header form of an argument of the param's type; ``HeaderValueError`` if
    the argument is not of that type."""
    if param.type == "string":
        if isinstance(value, str):
            return value
    elif param.type == "boolean":
        if isinstance(value, bool):
            return "true" if value else "false"
    elif _is_integral(value):
        number = int(value)
        if abs(number) > MAX_SAFE_INTEGER:
            raise HeaderValueError(f"argument {'.'.join(param.path)} is outside ±(2**53 - 1)")
        return str(number)
    raise HeaderValueError(f"argument {'.'.join(param.path)} is not a {param.type}")


def _is_integral(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _header_equals(param: HeaderParam, decoded: str, expected: str) -> bool:
    if param.type != "integer":
        return decoded == expected
    # Integers compare numerically (streamable-http.mdx, "Server Validation"), so
    # "42.0" and "4.2e1" equal 42.
    return _NUMBER.fullmatch(decoded) is not None and Decimal(decoded) == Decimal(expected)


def header_param_mismatch(
    params: tuple[HeaderParam, ...], arguments: Mapping[str, Any], headers: Mapping[str, str]
) -> str | None:
    """``None`` if each ``Mcp-Param-*`` header mirrors its argument, else why not.

    ``headers`` maps lower-cased header names to raw values. For each param: an
    argument present and non-null needs its header, equal after decoding (strings
    as-is, integers numerically within ±(2**53 - 1), booleans ``true``/``false``); an
    absent or null argument must not have one. Unknown ``Mcp-Param-*`` headers are
    ignored. The message names the header; the caller raises ``HeaderMismatch``.

    >>> p = (HeaderParam(("n",), "N", "integer"),)
    >>> header_param_mismatch(p, {"n": 42}, {"mcp-param-n": "42.0"}) is None
    True
    >>> header_param_mismatch(p, {"n": 42}, {})
    'Mcp-Param-N header is missing but the request body has the value'
    """
    for param in params:
        name = param.header_name
        raw = headers.get(name.lower())
        value = _value_at(arguments, param.path)
        if value is None:
            if raw is not None:
                return f"{name} header was sent but the request body has no value for it"
            continue
        if raw is None:
            return f"{name} header is missing but the request body has the value"
        try:
            expected = _wire_value(param, value)
        except HeaderValueError as exc:
            return f"{name} header cannot mirror the request body: {exc}"
        try:
            decoded = decode_header_value(raw)
        except HeaderValueError as exc:
            return f"{name} header is invalid: {exc}"
        if not _header_equals(param, decoded, expected):
            return f"{name} header does not match the request body"
    return None


def client_header_values(
    params: tuple[HeaderParam, ...], arguments: Mapping[str, Any]
) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers a client sends with ``tools/call``.

    Integers as decimal, booleans ``true``/``false``, strings encoded with
    ``encode_header_value``; absent or null arguments get no header. Raises
    ``HeaderValueError`` for an argument not of its declared type, or an integer beyond
    ±(2**53 - 1): no header could mirror it.

    >>> client_header_values((HeaderParam(("city",), "City", "string"),), {"city": "Zürich"})
    {'Mcp-Param-City': '=?base64?WsO8cmljaA==?='}
    """
    out: dict[str, str] = {}
    for param in params:
        value = _value_at(arguments, param.path)
        if value is not None:
            out[param.header_name] = encode_header_value(_wire_value(param, value))
    return out
