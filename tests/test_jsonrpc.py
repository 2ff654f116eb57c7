"""mcpcore.jsonrpc: decoding, limits, encoding. Tables for edges, a property for the rest."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore import jsonrpc
from mcpcore.errors import ErrorCode, InvalidRequest, McpError, ParseError, PayloadTooLarge
from mcpcore.jsonrpc import Limits, Notification, Request, Response
from tests.support.schema import schema_checker

PARSE, INVALID = ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST

BAD_BODIES: list[tuple[bytes, int]] = [
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', PARSE),            # truncated
    (b"", PARSE),
    (b"   ", PARSE),
    (b"{bad}", PARSE),
    (b"\xff\xfe", PARSE),                                                      # not UTF-8
    (b'{"jsonrpc":"2.0","id":1,"method":"x"} {}', PARSE),                     # trailing data
    (b"[]", INVALID),                                                           # batch
    (b'[{"jsonrpc":"2.0","id":1,"method":"x"}]', INVALID),
    (b"1", INVALID),
    (b'"x"', INVALID),
    (b"null", INVALID),
    (b"true", INVALID),
    (b"{}", INVALID),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', INVALID),
    (b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}', INVALID),
    (b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}', INVALID),
    (b'{"id": 1, "method": "ping"}', INVALID),                                  # no jsonrpc
    (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', INVALID),
    (b'{"jsonrpc": 2.0, "id": 1, "method": "ping"}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 1}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1, "method": ""}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1, "method": null}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": []}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": "p"}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": 0}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": true}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "result": {}}', INVALID),
    (b'{"jsonrpc": "2.0", "id": 1}', INVALID),                                  # neither
    (b'{"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}}', INVALID),       # both
    (b'{"jsonrpc": "2.0", "result": {}}', INVALID),                             # response, no id
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": ' + b"[" * 10_000
     + b"]" * 10_000 + b"}", INVALID),                                          # deep nesting
    (b"[" * 100_000, INVALID),                                                  # deep, unclosed
    (b'{"a":' * 65 + b"1" + b"}" * 65, INVALID),                                 # just over depth
]


@pytest.mark.parametrize(("body", "code"), BAD_BODIES,
                         ids=[f"{i}:{b[:30]!r}" for i, (b, _) in enumerate(BAD_BODIES)])
def test_bad_body_gets_its_jsonrpc_code(body: bytes, code: int) -> None:
    with pytest.raises(McpError) as info:
        jsonrpc.decode_message(body)
    assert info.value.code == code


GOOD_BODIES: list[tuple[bytes, Any]] = [
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}',
     Request(1, "tools/list", msgspec.Raw(b"{}"))),
    (b'{"jsonrpc":"2.0","id":"a","method":"m"}', Request("a", "m", None)),
    (b'{"jsonrpc":"2.0","id":0,"method":"m","params":null}', Request(0, "m", None)),
    (b'{"method":"m","jsonrpc":"2.0","id":-7,"extra":{"x":[1]}}', Request(-7, "m", None)),
    (b'  {"jsonrpc":"2.0","method":"notifications/x"}\n', Notification("notifications/x")),
    (b'{"jsonrpc":"2.0","method":"n","params":{"a":1}}',
     Notification("n", msgspec.Raw(b'{"a":1}'))),
    (b'{"jsonrpc":"2.0","id":3,"result":{"x":1}}', Response(3, msgspec.Raw(b'{"x":1}'))),
    (b'{"jsonrpc":"2.0","id":"r","error":{"code":1,"message":"m"}}',
     Response("r", None, msgspec.Raw(b'{"code":1,"message":"m"}'))),
    (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":' + b"[" * 60 + b"]" * 60 + b"}}",
     Request(1, "m", msgspec.Raw(b'{"a":' + b"[" * 60 + b"]" * 60 + b"}"))),
]


@pytest.mark.parametrize(("body", "expected"), GOOD_BODIES)
def test_good_body_decodes(body: bytes, expected: Any) -> None:
    message = jsonrpc.decode_message(body)
    assert type(message) is type(expected)
    assert message == expected


def test_ids_keep_their_type() -> None:
    one = jsonrpc.decode_message(b'{"jsonrpc":"2.0","id":1,"method":"m"}')
    text = jsonrpc.decode_message(b'{"jsonrpc":"2.0","id":"1","method":"m"}')
    assert isinstance(one, Request) and isinstance(text, Request)
    assert one.id == 1 and text.id == "1"


# -- limits -------------------------------------------------------------------------------

LIMIT_CASES: list[tuple[Limits, bytes, type[McpError] | None]] = [
    (Limits(max_body_bytes=10), b"x" * 10, None),
    (Limits(max_body_bytes=10), b"x" * 11, PayloadTooLarge),
    (Limits(max_depth=3), b"[[[]]]", None),
    (Limits(max_depth=3), b"[[[[]]]]", McpError),
    (Limits(max_depth=3), b'{"a":{"b":{"c":{}}}}', McpError),
    (Limits(max_depth=3), b'["[[[[[[", "]]]]]"]', None),          # brackets inside strings
    (Limits(max_depth=3), b'["\\"[[[[", 1]', None),               # escaped quote in a string
    (Limits(max_depth=3), b"[][][][][][][][]", None),             # many, shallow
]


@pytest.mark.parametrize(("limits", "body", "error"), LIMIT_CASES)
def test_check_limits(limits: Limits, body: bytes, error: type[McpError] | None) -> None:
    if error is None:
        jsonrpc.check_limits(body, limits)
    else:
        with pytest.raises(error) as info:
            jsonrpc.check_limits(body, limits)
        assert info.value.code == INVALID


@pytest.mark.parametrize("size", [300, 511, 512, 513, 600, 5000])
def test_check_limits_counts_the_same_way_on_both_sides_of_the_small_body_size(
        size: int) -> None:
    # Small bodies count brackets with bytes.count, larger ones step with find: the
    # verdict must not depend on which.
    def padded(body: bytes) -> bytes:
        return b'{"pad":"' + b"x" * (size - len(body) - 15) + b'","v":' + body + b"}"

    deep = padded(b"[" * 64 + b"]" * 64)        # 65 levels with the outer object
    ok = padded(b"[" * 63 + b"]" * 63)          # 64 levels: at the limit
    shallow = padded(b"[]" * 100)               # many brackets, 2 levels
    inside = padded(b'"' + b"[" * 100 + b'"')   # brackets inside a string
    for body, error in ((deep, True), (ok, False), (shallow, False), (inside, False)):
        assert len(body) == size
        if error:
            with pytest.raises(McpError):
                jsonrpc.check_limits(body)
        else:
            jsonrpc.check_limits(body)


def test_payload_too_large_is_http_413() -> None:
    with pytest.raises(PayloadTooLarge) as info:
        jsonrpc.decode_message(b" " * 65, Limits(max_body_bytes=64))
    assert info.value.http_status == 413


@pytest.mark.parametrize(("value", "limits", "ok"), [
    ("x" * 100, Limits(max_string_bytes=100, max_array_items=10), True),
    ("x" * 101, Limits(max_string_bytes=100, max_array_items=10), False),
    ({"k" * 101: 1}, Limits(max_string_bytes=100, max_array_items=10), False),  # keys too
    ([1] * 11, Limits(max_string_bytes=100, max_array_items=10), False),
    ({"a": [[1] * 11]}, Limits(max_string_bytes=100, max_array_items=10), False),
    ({"a": [[1] * 10]}, Limits(max_string_bytes=100, max_array_items=10), True),
])
def test_check_value_limits(value: Any, limits: Limits, ok: bool) -> None:
    body_len = 10_000  # big enough that the check really walks
    if ok:
        jsonrpc.check_value_limits(value, body_len, limits)
    else:
        with pytest.raises(McpError) as info:
            jsonrpc.check_value_limits(value, body_len, limits)
        assert info.value.code == INVALID


def test_check_value_limits_skips_small_bodies() -> None:
    jsonrpc.check_value_limits("x" * 50, 4, Limits(max_string_bytes=10, max_array_items=2))


# -- other helpers ------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "expected"), [
    (b'{"jsonrpc":"1.0","id":7,"method":"x"}', 7),
    (b'{"id":"s"}', "s"),
    (b'{"id":null}', None),
    (b'{"id":true}', None),
    (b'{"id":1.0}', None),
    (b"{broken", None),
    (b"[" * 10_000, None),
    (b"[1]", None),
])
def test_peek_id(body: bytes, expected: Any) -> None:
    got = jsonrpc.peek_id(body)
    assert got == expected and type(got) is type(expected)


def test_encoders_produce_schema_valid_messages() -> None:
    checker = schema_checker()
    assert json.loads(jsonrpc.encode_error(None, ParseError())) == {
        "jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}  # no id
    checker.check(json.loads(jsonrpc.encode_error(None, ParseError())))
    error = json.loads(jsonrpc.encode_error("x", McpError("boom", data={"k": [1]})))
    assert error == {"jsonrpc": "2.0", "id": "x",
                     "error": {"code": -32603, "message": "boom", "data": {"k": [1]}}}
    checker.check(error)
    note = json.loads(jsonrpc.encode_notification("notifications/progress",
                                                  {"progressToken": 1, "progress": 0.5}))
    checker.check(note)
    result = json.loads(jsonrpc.encode_result(2, {"resultType": "complete", "completion": {
        "values": []}}))
    checker.check(result, "completion/complete")
    assert json.loads(jsonrpc.encode_request(1, "m", {})) == {
        "jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}
    assert jsonrpc.decode_any(jsonrpc.encode({"a": [1, None]})) == {"a": [1, None]}


# -- properties ---------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=10,
)
envelope_like = st.dictionaries(
    st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"]),
    json_values | st.just("2.0"), max_size=6,
).map(lambda d: json.dumps(d).encode())


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=200) | envelope_like | json_values.map(
    lambda v: json.dumps(v).encode()))
def test_any_bytes_give_a_message_or_an_mcp_error(body: bytes) -> None:
    try:
        message = jsonrpc.decode_message(body)
    except McpError as exc:
        assert exc.code in (PARSE, INVALID)
        return
    assert isinstance(message, Request | Notification | Response)
    if isinstance(message, Request):
        assert type(message.id) in (int, str) and message.method
        assert message.params is None or bytes(message.params).startswith(b"{")


@settings(max_examples=100, deadline=None)
@given(request_id=st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
       method=st.text(min_size=1, max_size=20),
       params=st.dictionaries(st.text(max_size=5), json_values, max_size=3))
def test_request_round_trip(request_id: int | str, method: str, params: dict[str, Any]) -> None:
    encoded = jsonrpc.encode_request(request_id, method, params)
    message = jsonrpc.decode_message(encoded)
    assert isinstance(message, Request)
    assert message.id == request_id and type(message.id) is type(request_id)
    assert message.method == method
    assert message.params is not None and jsonrpc.decode_any(message.params) == params


@pytest.mark.parametrize(("field", "value"), [
    ("a long string", "x" * 2_000),
    ("a long array", list(range(1_500))),
])
def test_decode_message_enforces_string_and_array_limits(field: str, value: Any) -> None:
    limits = Limits(max_string_bytes=1_000, max_array_items=1_000)
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "t", "arguments": {"v": value}}}).encode()
    with pytest.raises(InvalidRequest):
        jsonrpc.decode_message(body, limits)
    small = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                        "params": {"name": "t", "arguments": {"v": value[:10]}}}).encode()
    assert isinstance(jsonrpc.decode_message(small, limits), jsonrpc.Request)


@pytest.mark.parametrize(("body", "may"), [
    (b'{"a":"' + b"x" * 100 + b'"}', False),                # short: no long string
    (b'{"a":"' + b"x" * 200 + b'"}', True),                 # longer than the string limit
    (b'{"a":"' + b"x," * 30 + b'"}', False),                # commas, but no "[" at all
    (b'{"a":[' + b"1," * 29 + b'1]}', True),                # a "[" and enough commas
    (b'{"a":[1],"b":"' + b"," * 40 + b'"}', True),          # conservative: commas in a string
    (b'{"a":[' + b"1," * 3 + b'1]}' + b" " * 60, False),    # a "[" but too few commas
])
def test_value_limits_are_bounded_before_any_walk(body: bytes, may: bool) -> None:
    limits = Limits(max_string_bytes=150, max_array_items=20)
    assert jsonrpc.may_break_value_limits(body, limits) is may
