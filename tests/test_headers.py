"""mcpcore.headers: the header value codec, x-mcp-header rules, Mcp-Param-* checks."""

from __future__ import annotations

import doctest
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpcore.headers
from mcpcore.headers import (
    MAX_SAFE_INTEGER,
    HeaderAnnotationError,
    HeaderParam,
    HeaderValueError,
    check_header_params,
    client_header_values,
    decode_header_value,
    encode_header_value,
    find_header_params,
    header_param_mismatch,
    tool_headers_valid,
)


def test_docstring_examples_hold() -> None:
    result = doctest.testmod(mcpcore.headers, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


# -- decode -----------------------------------------------------------------------------

DECODES: list[tuple[str, str]] = [
    # The conformance suite's http-custom-header-server-validation and header cases.
    ("=?base64?SGVsbG8=?=", "Hello"),
    ("SGVsbG8=", "SGVsbG8="),  # no prefix: literal
    ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no suffix: literal
    ("  name  ", "name"),
    # More edges.
    ("SGVsbG8=?=", "SGVsbG8=?="),
    ("\tname\t ", "name"),
    ("a\tb c", "a\tb c"),  # inner HTAB and space are fine
    ("", ""),
    ("   ", ""),
    ("=?base64??=", ""),
    ("=?base64?=", "=?base64?="),  # too short to hold both markers
    ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),  # markers are exact, lowercase
    ("=?base64?SGVsbG8=?= ", "Hello"),
    ("=?base64?WsO8cmljaA==?=", "Zürich"),
    ("=?base64?IGxlYWRpbmc=?=", " leading"),
    ("=?base64?YQpi?=", "a\nb"),  # decoded values may hold anything
    ("=?base64?PT9iYXNlNjQ/eD89?=", "=?base64?x?="),
    ("tools/call", "tools/call"),
]


@pytest.mark.parametrize("raw, value", DECODES)
def test_decode(raw: str, value: str) -> None:
    assert decode_header_value(raw) == value


BAD_VALUES: list[tuple[str, str]] = [
    ("=?base64?SGVsbG8?=", "invalid Base64"),  # bad padding (conformance)
    ("=?base64?SGVs!!!bG8=?=", "invalid Base64"),  # bad alphabet (conformance)
    ("=?base64?SGVsbG8==?=", "invalid Base64"),  # excess padding
    ("=?base64?=SGVsbG8?=", "invalid Base64"),  # leading padding
    ("=?base64?SGVs bG8=?=", "invalid Base64"),  # inner space
    ("=?base64?SGVs\nbG8=?=", "invalid Base64"),
    ("=?base64?SGVsbG8-?=", "invalid Base64"),  # URL-safe alphabet is not standard
    ("=?base64?SGVsbG8é?=", "invalid Base64"),
    ("=?base64?/w==?=", "not UTF-8"),
    ("=?base64?wKA=?=", "not UTF-8"),  # overlong encoding
    ("a\x00b", "control or non-ASCII"),
    ("a\nb", "control or non-ASCII"),
    ("a\rb", "control or non-ASCII"),
    ("a\x7fb", "control or non-ASCII"),
    ("Zürich", "control or non-ASCII"),
    ("caf\xe9", "control or non-ASCII"),
]


@pytest.mark.parametrize("raw, problem", BAD_VALUES)
def test_decode_refuses(raw: str, problem: str) -> None:
    with pytest.raises(HeaderValueError, match=problem):
        decode_header_value(raw)


# -- encode -----------------------------------------------------------------------------

ENCODES: list[tuple[str, str]] = [
    ("us-west1", "us-west1"),
    ("Hello World", "Hello World"),
    ("", ""),
    ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # decodes as a literal, so stays plain
    ("Zürich", "=?base64?WsO8cmljaA==?="),
    (" leading", "=?base64?IGxlYWRpbmc=?="),
    ("trailing ", "=?base64?dHJhaWxpbmcg?="),
    ("a\nb", "=?base64?YQpi?="),
    ("a\tb", "=?base64?YQli?="),
    ("=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?="),
    ("=?base64??=", "=?base64?PT9iYXNlNjQ/Pz0=?="),
]


@pytest.mark.parametrize("value, header", ENCODES)
def test_encode(value: str, header: str) -> None:
    assert encode_header_value(value) == header
    assert decode_header_value(header) == value


def test_encode_refuses_lone_surrogates() -> None:
    with pytest.raises(HeaderValueError, match="UTF-8"):
        encode_header_value("\ud800")


@given(st.text())
def test_encode_then_decode_is_identity(value: str) -> None:
    header = encode_header_value(value)
    assert decode_header_value(header) == value
    assert decode_header_value(f" \t{header} ") == value


@given(st.text())
def test_encoded_values_are_valid_header_values(value: str) -> None:
    header = encode_header_value(value)
    assert re.fullmatch(r"[\x20-\x7e]*", header)
    assert header == header.strip(" \t")


@given(st.text() | st.text(alphabet="=?base64SGVsbG8/+ \t", max_size=20))
def test_decode_gives_a_value_or_header_value_error(raw: str) -> None:
    """Any other exception fails; a literal comes back as sent, minus OWS."""
    try:
        value = decode_header_value(raw)
    except HeaderValueError:
        return
    stripped = raw.strip(" \t")
    if not (stripped.startswith("=?base64?") and stripped.endswith("?=") and len(stripped) >= 11):
        assert value == stripped


# -- annotations ------------------------------------------------------------------------


def prop(kind: str, header: object) -> dict[str, Any]:
    return {"type": kind, "x-mcp-header": header}


FOUND: list[tuple[dict[str, Any], tuple[HeaderParam, ...]]] = [
    ({"type": "object"}, ()),
    ({"type": "object", "properties": {"a": {"type": "string"}}}, ()),
    (
        {"type": "object", "properties": {"region": prop("string", "Region")}},
        (HeaderParam(("region",), "Region", "string"),),
    ),
    (
        {
            "type": "object",
            "properties": {
                "n": prop("integer", "N"),
                "flag": prop("boolean", "Flag"),
                "loc": {
                    "type": "object",
                    "properties": {"zone": prop("string", "Zone"), "other": {"type": "string"}},
                },
            },
        },
        (
            HeaderParam(("flag",), "Flag", "boolean"),
            HeaderParam(("loc", "zone"), "Zone", "string"),
            HeaderParam(("n",), "N", "integer"),
        ),
    ),
    # A property *named* x-mcp-header is not an annotation.
    ({"type": "object", "properties": {"x-mcp-header": {"type": "string"}}}, ()),
    # Data that happens to hold the key is not an annotation either.
    (
        {"type": "object", "properties": {"a": {"type": "string", "default": {"x-mcp-header": 1}}}},
        (),
    ),
    ({"type": "object", "properties": {"a": {"const": {"x-mcp-header": "A"}}}}, ()),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "string", "x-mcp-header": "Tok!#$%&'*+-.^_`|~9"}},
        },
        (HeaderParam(("a",), "Tok!#$%&'*+-.^_`|~9", "string"),),
    ),
]


@pytest.mark.parametrize("schema, params", FOUND)
def test_find_header_params(schema: dict[str, Any], params: tuple[HeaderParam, ...]) -> None:
    assert find_header_params(schema) == params
    assert check_header_params(schema) == params
    assert tool_headers_valid({"name": "t", "inputSchema": schema})


def wrap(inner: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"ok": prop("string", "Ok"), **inner}}


BAD_ANNOTATIONS: list[tuple[dict[str, Any], str]] = [
    (wrap({"a": prop("string", "")}), "non-empty string"),
    (wrap({"a": prop("string", 5)}), "non-empty string"),
    (wrap({"a": prop("string", None)}), "non-empty string"),
    (wrap({"a": prop("string", "Bad Name")}), "not an HTTP token"),
    (wrap({"a": prop("string", "a:b")}), "not an HTTP token"),
    (wrap({"a": prop("string", "a/b")}), "not an HTTP token"),
    (wrap({"a": prop("string", "Zürich")}), "not an HTTP token"),
    (wrap({"a": prop("string", "(x)")}), "not an HTTP token"),
    (wrap({"a": prop("string", "A\r\nX-Injected: 1")}), "control characters"),
    (wrap({"a": prop("string", "A\tB")}), "control characters"),
    (wrap({"a": prop("string", "A\x7f")}), "control characters"),
    (wrap({"a": prop("string", "OK")}), "duplicates"),
    (wrap({"a": prop("integer", "ok")}), "duplicates"),
    (wrap({"a": prop("number", "Num")}), "type 'number'"),
    (wrap({"a": prop("object", "Obj")}), "type 'object'"),
    (wrap({"a": prop("array", "Arr")}), "type 'array'"),
    (wrap({"a": {"x-mcp-header": "Untyped"}}), "type None"),
    (
        wrap({"a": {"type": ["string", "null"], "x-mcp-header": "Nullable"}}),
        "type ['string', 'null']",
    ),
    (wrap({"a": {"$ref": "#/$defs/s", "x-mcp-header": "Ref"}}), "type None"),
    # Not statically reachable.
    ({"type": "object", "properties": {}, "x-mcp-header": "Root"}, "not on a statically reachable"),
    (
        wrap({"a": {"type": "array", "items": prop("string", "Item")}}),
        "at /properties/a/items is not on a statically reachable",
    ),
    (
        wrap({"a": {"type": "array", "prefixItems": [prop("string", "Item")]}}),
        "/properties/a/prefixItems/0",
    ),
    (wrap({"a": {"anyOf": [prop("string", "Any")]}}), "/properties/a/anyOf/0"),
    (wrap({"a": {"oneOf": [prop("string", "One")]}}), "/properties/a/oneOf/0"),
    (wrap({"a": {"allOf": [prop("string", "All")]}}), "/properties/a/allOf/0"),
    (wrap({"a": {"not": prop("string", "Not")}}), "/properties/a/not"),
    (
        {
            "type": "object",
            "properties": {},
            "if": {"properties": {"a": prop("string", "If")}},
            "then": {"properties": {"b": prop("string", "Then")}},
            "else": {"properties": {"c": prop("string", "Else")}},
        },
        "/if/properties/a",
    ),
    (
        {
            "type": "object",
            "$defs": {"s": prop("string", "Def")},
            "properties": {"a": {"$ref": "#/$defs/s"}},
        },
        "/$defs/s",
    ),
    ({"type": "object", "definitions": {"s": prop("string", "Def")}}, "/definitions/s"),
    ({"type": "object", "additionalProperties": prop("string", "Extra")}, "/additionalProperties"),
    (
        {"type": "object", "patternProperties": {"^a/": prop("string", "Pat")}},
        "/patternProperties/^a~1",
    ),
    (
        {"type": "object", "dependentSchemas": {"a": {"properties": {"b": prop("string", "Dep")}}}},
        "/dependentSchemas/a",
    ),
    # Reachability is lost for good once off the chain.
    (
        wrap({"a": {"type": "array", "items": {"properties": {"b": prop("string", "Deep")}}}}),
        "/properties/a/items/properties/b",
    ),
]


@pytest.mark.parametrize("schema, problem", BAD_ANNOTATIONS)
def test_check_header_params_refuses(schema: dict[str, Any], problem: str) -> None:
    with pytest.raises(HeaderAnnotationError) as info:
        check_header_params(schema)
    assert problem in str(info.value)
    assert not tool_headers_valid({"name": "t", "inputSchema": schema})
    # find_header_params still finds what is well-formed, reachable and first.
    if "ok" in schema.get("properties", {}):
        assert HeaderParam(("ok",), "Ok", "string") in find_header_params(schema)


def test_every_problem_is_reported() -> None:
    schema = wrap(
        {"a": prop("number", "A"), "b": prop("string", ""), "c": {"items": prop("string", "C")}}
    )
    with pytest.raises(HeaderAnnotationError) as info:
        check_header_params(schema)
    assert str(info.value).count("x-mcp-header") == 3


@pytest.mark.parametrize(
    "tool", [{"name": "t"}, {"name": "t", "inputSchema": None}, {"name": "t", "inputSchema": []}]
)
def test_tool_without_schema_has_nothing_to_break(tool: dict[str, Any]) -> None:
    assert tool_headers_valid(tool)


SCHEMA_KEYS = st.sampled_from(
    ["properties", "x-mcp-header", "type", "items", "anyOf", "$defs", "not", "if", "a", "b"]
)
json_ish = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from(["string", "integer", "boolean", "number", "Region", "bad name"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(SCHEMA_KEYS | st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=30,
)


@given(json_ish)
def test_annotation_scanning_never_crashes(schema: object) -> None:
    params = find_header_params(schema)
    valid = tool_headers_valid({"inputSchema": schema})
    try:
        assert check_header_params(schema) == params
    except HeaderAnnotationError:
        assert not valid
    else:
        assert valid
    assert all(isinstance(p, HeaderParam) and p.path for p in params)


def test_deeply_nested_schema_does_not_overflow() -> None:
    schema: dict[str, Any] = prop("string", "Deep")
    for _ in range(10_000):
        schema = {"type": "object", "properties": {"a": schema}}
    (param,) = find_header_params(schema)
    assert len(param.path) == 10_000


# -- Mcp-Param-* at call time -----------------------------------------------------------

REGION = HeaderParam(("region",), "Region", "string")
COUNT = HeaderParam(("count",), "Count", "integer")
FLAG = HeaderParam(("flag",), "Flag", "boolean")
ZONE = HeaderParam(("loc", "zone"), "Zone", "string")
PARAMS = (REGION, COUNT, FLAG, ZONE)

MATCHES: list[tuple[dict[str, Any], dict[str, str]]] = [
    ({}, {}),
    ({"region": None, "count": None, "loc": None}, {}),
    ({"loc": {}}, {}),
    ({"loc": "not an object"}, {}),
    ({"region": "us-west1"}, {"mcp-param-region": "us-west1"}),
    ({"region": "us-west1"}, {"mcp-param-region": "  us-west1\t"}),
    ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVsbG8=?="}),  # conformance
    ({"region": "SGVsbG8="}, {"mcp-param-region": "SGVsbG8="}),  # conformance
    ({"region": "=?base64?SGVsbG8="}, {"mcp-param-region": "=?base64?SGVsbG8="}),  # conformance
    ({"region": "Zürich"}, {"mcp-param-region": "=?base64?WsO8cmljaA==?="}),
    ({"region": ""}, {"mcp-param-region": ""}),
    ({"count": 42}, {"mcp-param-count": "42"}),
    ({"count": 42}, {"mcp-param-count": "42.0"}),
    ({"count": 42}, {"mcp-param-count": "4.2e1"}),
    ({"count": 42}, {"mcp-param-count": "=?base64?NDI=?="}),
    ({"count": 42.0}, {"mcp-param-count": "42"}),
    ({"count": -7}, {"mcp-param-count": "-7"}),
    ({"count": 0}, {"mcp-param-count": "0"}),
    ({"count": MAX_SAFE_INTEGER}, {"mcp-param-count": "9007199254740991"}),
    ({"count": -MAX_SAFE_INTEGER}, {"mcp-param-count": "-9007199254740991"}),
    ({"flag": True}, {"mcp-param-flag": "true"}),
    ({"flag": False}, {"mcp-param-flag": "false"}),
    ({"loc": {"zone": "a"}}, {"mcp-param-zone": "a"}),
    # Unknown Mcp-Param-* headers are ignored.
    ({}, {"mcp-param-unknown": "x", "mcp-param-other": "\x00"}),
]


@pytest.mark.parametrize("arguments, headers", MATCHES)
def test_headers_that_mirror_the_body_pass(
    arguments: dict[str, Any], headers: dict[str, str]
) -> None:
    assert header_param_mismatch(PARAMS, arguments, headers) is None


MISMATCHES: list[tuple[dict[str, Any], dict[str, str], str]] = [
    # Conformance: bad padding, bad alphabet, header omitted.
    (
        {"region": "Hello"},
        {
            "mcp-param-region": "=?base64?SGVsbG8?=",
        },
        "Mcp-Param-Region header is invalid",
    ),
    (
        {"region": "Hello"},
        {"mcp-param-region": "=?base64?SGVs!!!bG8=?="},
        "Mcp-Param-Region header is invalid",
    ),
    ({"region": "test-value"}, {}, "Mcp-Param-Region header is missing"),
    (
        {"region": "us-west1"},
        {"mcp-param-region": "us-east1"},
        "Mcp-Param-Region header does not match",
    ),
    ({"region": "Us"}, {"mcp-param-region": "us"}, "does not match"),  # values are case-sensitive
    ({"region": "Zürich"}, {"mcp-param-region": "Zürich"}, "Mcp-Param-Region header is invalid"),
    ({"region": "a\nb"}, {"mcp-param-region": "a\nb"}, "header is invalid"),
    (
        {},
        {"mcp-param-region": "us-west1"},
        "Mcp-Param-Region header was sent but the request body has no value",
    ),
    ({"region": None}, {"mcp-param-region": ""}, "was sent but"),
    ({"loc": {}}, {"mcp-param-zone": "a"}, "Mcp-Param-Zone header was sent"),
    ({"count": 42}, {"mcp-param-count": "43"}, "Mcp-Param-Count header does not match"),
    ({"count": 42}, {"mcp-param-count": "42.5"}, "does not match"),
    ({"count": 42}, {"mcp-param-count": "forty-two"}, "does not match"),
    ({"count": 42}, {"mcp-param-count": "0x2a"}, "does not match"),
    ({"count": 42}, {"mcp-param-count": "+42"}, "does not match"),
    ({"count": 42}, {"mcp-param-count": "NaN"}, "does not match"),
    ({"count": 42}, {"mcp-param-count": ""}, "does not match"),
    ({"count": MAX_SAFE_INTEGER + 1}, {"mcp-param-count": str(MAX_SAFE_INTEGER + 1)}, "outside"),
    ({"count": 1.5}, {"mcp-param-count": "1.5"}, "cannot mirror the request body"),
    ({"count": "42"}, {"mcp-param-count": "42"}, "is not a integer"),
    ({"count": True}, {"mcp-param-count": "1"}, "is not a integer"),
    ({"flag": True}, {"mcp-param-flag": "True"}, "Mcp-Param-Flag header does not match"),
    ({"flag": True}, {"mcp-param-flag": "1"}, "does not match"),
    ({"flag": False}, {"mcp-param-flag": "true"}, "does not match"),
    ({"flag": "true"}, {"mcp-param-flag": "true"}, "is not a boolean"),
    ({"region": 5}, {"mcp-param-region": "5"}, "is not a string"),
    ({"loc": {"zone": "a"}}, {"mcp-param-zone": "b"}, "Mcp-Param-Zone header does not match"),
]


@pytest.mark.parametrize("arguments, headers, problem", MISMATCHES)
def test_headers_that_do_not_mirror_the_body_are_named(
    arguments: dict[str, Any], headers: dict[str, str], problem: str
) -> None:
    message = header_param_mismatch(PARAMS, arguments, headers)
    assert message is not None
    assert problem in message


def test_mismatch_message_names_the_header_as_authored() -> None:
    message = header_param_mismatch((REGION,), {"region": "a"}, {"mcp-param-region": "b"})
    assert message == "Mcp-Param-Region header does not match the request body"


CLIENT_HEADERS: list[tuple[dict[str, Any], dict[str, str]]] = [
    ({}, {}),
    ({"region": None, "loc": {"zone": None}}, {}),
    ({"region": "us-west1"}, {"Mcp-Param-Region": "us-west1"}),
    ({"region": "Zürich"}, {"Mcp-Param-Region": "=?base64?WsO8cmljaA==?="}),
    ({"region": " x"}, {"Mcp-Param-Region": "=?base64?IHg=?="}),
    ({"count": 42}, {"Mcp-Param-Count": "42"}),
    ({"count": 42.0}, {"Mcp-Param-Count": "42"}),
    ({"count": -MAX_SAFE_INTEGER}, {"Mcp-Param-Count": "-9007199254740991"}),
    ({"flag": False}, {"Mcp-Param-Flag": "false"}),
    ({"flag": True, "loc": {"zone": "z"}}, {"Mcp-Param-Flag": "true", "Mcp-Param-Zone": "z"}),
]


@pytest.mark.parametrize("arguments, headers", CLIENT_HEADERS)
def test_client_header_values(arguments: dict[str, Any], headers: dict[str, str]) -> None:
    assert client_header_values(PARAMS, arguments) == headers


@pytest.mark.parametrize(
    "arguments, problem",
    [
        ({"count": MAX_SAFE_INTEGER + 1}, "outside"),
        ({"count": 1.5}, "not a integer"),
        ({"flag": "yes"}, "not a boolean"),
        ({"region": ["a"]}, "not a string"),
    ],
)
def test_client_refuses_arguments_no_header_can_mirror(
    arguments: dict[str, Any], problem: str
) -> None:
    with pytest.raises(HeaderValueError, match=problem):
        client_header_values(PARAMS, arguments)


arguments_strategy = st.fixed_dictionaries(
    {},
    optional={
        "region": st.none() | st.text(),
        "count": st.none() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
        "flag": st.none() | st.booleans(),
        "loc": st.none() | st.fixed_dictionaries({}, optional={"zone": st.none() | st.text()}),
    },
)


@given(arguments_strategy)
def test_our_client_and_server_agree(arguments: dict[str, Any]) -> None:
    sent = client_header_values(PARAMS, arguments)
    received = {name.lower(): value for name, value in sent.items()}
    assert header_param_mismatch(PARAMS, arguments, received) is None
