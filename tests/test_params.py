"""The engine's params Structs (mcpcore/params.py): what sealed state binds to."""

from __future__ import annotations

import msgspec
import pytest

from mcpcore.params import CallToolParams, GetPromptParams, ReadResourceParams
from mcpcore.sealing import params_digest


def decode(type_: type, body: bytes) -> object:
    return msgspec.json.decode(body, type=type_)


@pytest.mark.parametrize(("type_", "original", "retry"), [
    (CallToolParams, b'{"name":"t","arguments":{"a":1,"b":[2]}}',
     b'{"arguments":{"b":[2],"a":1},"name":"t","requestState":"s","inputResponses":{},'
     b'"_meta":{"x":1}}'),
    (GetPromptParams, b'{"name":"p","arguments":{"a":"1"}}',
     b'{"name":"p","arguments":{"a":"1"},"inputResponses":{"k":{}}}'),
    (ReadResourceParams, b'{"uri":"file:///x"}', b'{"uri":"file:///x","requestState":"s"}'),
])
def test_a_retry_binds_like_its_original(type_: type, original: bytes, retry: bytes) -> None:
    first = decode(type_, original).salient()  # type: ignore[attr-defined]
    again = decode(type_, retry).salient()  # type: ignore[attr-defined]
    assert params_digest("m", first) == params_digest("m", again)


def test_the_salient_params_are_those_of_the_whole_request() -> None:
    """Same as digesting the decoded params minus the retry's fields."""
    body = b'{"name":"t","arguments":{"a":1},"_meta":{}}'
    whole = msgspec.json.decode(body)
    del whole["_meta"]
    assert decode(CallToolParams, body).salient() == whole  # type: ignore[attr-defined]


def test_other_arguments_bind_otherwise() -> None:
    a = decode(CallToolParams, b'{"name":"t","arguments":{"a":1}}').salient()  # type: ignore[attr-defined]
    b = decode(CallToolParams, b'{"name":"t","arguments":{"a":2}}').salient()  # type: ignore[attr-defined]
    absent = decode(CallToolParams, b'{"name":"t"}').salient()  # type: ignore[attr-defined]
    assert len({params_digest("m", x) for x in (a, b, absent)}) == 3


def test_params_that_break_the_routes_struct_are_invalid_params() -> None:
    """The engine decodes each route's params once (``server._decode``); a mismatch is
    -32602 naming what is wrong."""
    from mcpcore.errors import ErrorCode, McpError
    from mcpcore.server import _decode

    with pytest.raises(McpError) as info:
        _decode(msgspec.Raw(b'{"name": 1}'), CallToolParams)
    assert info.value.code == ErrorCode.INVALID_PARAMS
    assert "name" in info.value.message
    assert _decode(msgspec.Raw(b'{"name": "n"}'), CallToolParams).name == "n"
