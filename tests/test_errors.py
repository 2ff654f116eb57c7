"""The error hierarchy (mcpcore/errors.py): each error knows its code, data and status.

One table of what each class answers with, and the one policy for anything else.
"""

from __future__ import annotations

import logging

import pytest

from mcpcore import errors
from mcpcore.errors import ErrorCode, McpError, as_mcp_error

#: class, arguments, JSON-RPC code, HTTP status, extra headers.
TABLE: list[tuple[type[McpError], tuple[object, ...], int, int, tuple[tuple[str, str], ...]]] = [
    (errors.ParseError, (), -32700, 400, ()),
    (errors.InvalidRequest, (), -32600, 400, ()),
    (errors.BatchNotSupported, (), -32600, 400, ()),
    (errors.ResponseNotExpected, (), -32600, 400, ()),
    (errors.ForbiddenOrigin, (), -32600, 403, ()),
    (errors.MethodNotAllowed, (), -32600, 405, (("Allow", "POST"),)),
    (errors.NotAcceptable, (), -32600, 406, ()),
    (errors.PayloadTooLarge, (), -32600, 413, ()),
    (errors.UnsupportedMediaType, (), -32600, 415, ()),
    (errors.MethodNotFound, (), -32601, 404, ()),
    (errors.InvalidParams, (), -32602, 200, ()),
    (errors.InvalidMeta, (), -32602, 400, ()),
    (errors.UnknownTool, ("t",), -32602, 200, ()),
    (errors.UnknownPrompt, ("p",), -32602, 200, ()),
    (errors.ResourceNotFound, ("file:///x",), -32602, 200, ()),
    (errors.InvalidCursor, (), -32602, 200, ()),
    (errors.InvalidRequestState, (), -32602, 200, ()),
    (errors.InvalidInputResponses, (), -32602, 200, ()),
    (errors.InternalError, (), -32603, 200, ()),
    (errors.HeaderMismatch, (), -32020, 400, ()),
    (errors.MissingRequiredClientCapability, ({"sampling": {}},), -32021, 400, ()),
    (errors.UnsupportedProtocolVersion, ("1999-01-01", ["2026-07-28"]), -32022, 400, ()),
]


@pytest.mark.parametrize(("cls", "args", "code", "status", "headers"), TABLE,
                         ids=[row[0].__name__ for row in TABLE])
def test_each_error_knows_its_code_and_status(cls: type[McpError], args: tuple[object, ...],
                                              code: int, status: int,
                                              headers: tuple[tuple[str, str], ...]) -> None:
    error = cls(*args)  # type: ignore[arg-type]
    assert error.code == code and error.http_status == status
    assert error.http_headers == headers
    wire = error.to_error()
    assert wire["code"] == code and wire["message"]


def test_every_refusal_of_the_http_layer_is_an_invalid_request() -> None:
    for cls in (errors.ForbiddenOrigin, errors.MethodNotAllowed, errors.NotAcceptable,
                errors.PayloadTooLarge, errors.UnsupportedMediaType):
        assert issubclass(cls, errors.HttpRefusal)
        assert issubclass(cls, errors.InvalidRequest)


def test_data_carries_what_the_spec_asks() -> None:
    assert errors.ResourceNotFound("file:///x").to_error()["data"] == {"uri": "file:///x"}
    assert errors.UnsupportedProtocolVersion("x", ["2026-07-28"]).to_error()["data"] == {
        "supported": ["2026-07-28"], "requested": "x"}
    assert errors.MissingRequiredClientCapability({"roots": {}}).to_error()["data"] == {
        "requiredCapabilities": {"roots": {}}}


def test_insufficient_scope_is_a_step_up_challenge() -> None:
    error = errors.InsufficientScope({"b", "a", "offline_access"},
                                     resource_metadata='https://x/"prm"')
    assert error.http_status == 403 and error.code == ErrorCode.INVALID_REQUEST
    assert error.to_error()["data"] == {"requiredScopes": ["a", "b"]}
    [(name, value)] = error.http_headers
    assert name == "WWW-Authenticate"
    assert value == ('Bearer resource_metadata="https://x/\\"prm\\"", scope="a b", '
                     'error="insufficient_scope"')


def test_anything_else_is_an_internal_error_logged_with_its_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    known = errors.UnknownTool("t")
    assert as_mcp_error(known) is known
    with caplog.at_level(logging.ERROR, "mcpcore"):
        mapped = as_mcp_error(KeyError("secret detail"), "tools/call")
    assert isinstance(mapped, errors.InternalError)
    assert "secret detail" not in mapped.message  # nothing internal on the wire
    assert "internal error in tools/call" in caplog.text
    assert caplog.records[-1].exc_info is not None


def test_usage_errors_are_never_sent_to_a_peer() -> None:
    assert not issubclass(errors.UsageError, McpError)
    assert issubclass(errors.UsageError, TypeError)
