"""mcpcore.meta: the per-request ``_meta`` every modern request must carry."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpcore.errors import ErrorCode, InvalidMeta
from mcpcore.jsonrpc import Request
from mcpcore.legacy.era import has_modern_marker
from mcpcore.meta import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    LOG_LEVELS,
    PROTOCOL_VERSION,
    parse_request_meta,
)

V = "2026-07-28"
BASE = {PROTOCOL_VERSION: V, CLIENT_CAPABILITIES: {}}

GOOD: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (BASE, {"protocol_version": V, "client_capabilities": {}, "client_info": None,
            "log_level": None, "progress_token": None, "trace": {}}),
    ({**BASE, CLIENT_INFO: {"name": "c", "version": "1", "title": "C"}},
     {"client_info": {"name": "c", "version": "1", "title": "C"}}),
    ({**BASE, LOG_LEVEL: "warning"}, {"log_level": "warning"}),
    ({**BASE, "progressToken": "t"}, {"progress_token": "t"}),
    ({**BASE, "progressToken": 0}, {"progress_token": 0}),
    ({**BASE, "progressToken": None}, {"progress_token": None}),
    ({**BASE, "traceparent": "00-abc-def-01", "baggage": "k=v"},
     {"trace": {"traceparent": "00-abc-def-01", "baggage": "k=v"}}),
    ({**BASE, CLIENT_CAPABILITIES: {"elicitation": {"url": {}}}},
     {"client_capabilities": {"elicitation": {"url": {}}}}),
    ({**BASE, "com.example/x": [1], "io.modelcontextprotocol/future": True}, {}),
    ({PROTOCOL_VERSION: "1900-01-01", CLIENT_CAPABILITIES: {}},            # checked elsewhere
     {"protocol_version": "1900-01-01"}),
]


@pytest.mark.parametrize(("meta", "expected"), GOOD)
def test_parse_good_meta(meta: dict[str, Any], expected: dict[str, Any]) -> None:
    parsed = parse_request_meta(meta)
    for name, value in expected.items():
        assert getattr(parsed, name) == value, name
    assert parsed.raw is meta  # unknown keys stay available to handlers


BAD: list[tuple[str, Any]] = [
    ("absent", None),
    ("a list", []),
    ("a string", "meta"),
    ("empty", {}),
    ("no version", {CLIENT_CAPABILITIES: {}}),
    ("version null", {PROTOCOL_VERSION: None, CLIENT_CAPABILITIES: {}}),
    ("version a number", {PROTOCOL_VERSION: 20260728, CLIENT_CAPABILITIES: {}}),
    ("no capabilities", {PROTOCOL_VERSION: V}),
    ("capabilities null", {PROTOCOL_VERSION: V, CLIENT_CAPABILITIES: None}),
    ("capabilities a list", {PROTOCOL_VERSION: V, CLIENT_CAPABILITIES: ["sampling"]}),
    ("capabilities true", {PROTOCOL_VERSION: V, CLIENT_CAPABILITIES: True}),
    ("clientInfo a string", {**BASE, CLIENT_INFO: "c"}),
    ("clientInfo without name", {**BASE, CLIENT_INFO: {"version": "1"}}),
    ("clientInfo version a number", {**BASE, CLIENT_INFO: {"name": "c", "version": 1}}),
    ("logLevel unknown", {**BASE, LOG_LEVEL: "verbose"}),
    ("logLevel capitalised", {**BASE, LOG_LEVEL: "Info"}),
    ("logLevel a number", {**BASE, LOG_LEVEL: 3}),
    ("progressToken true", {**BASE, "progressToken": True}),
    ("progressToken a float", {**BASE, "progressToken": 1.5}),
    ("progressToken a list", {**BASE, "progressToken": ["t"]}),
    ("traceparent a number", {**BASE, "traceparent": 1}),
    ("tracestate an object", {**BASE, "tracestate": {}}),
]


@pytest.mark.parametrize(("why", "meta"), BAD, ids=[b[0] for b in BAD])
def test_parse_bad_meta_is_invalid_params_http_400(why: str, meta: Any) -> None:
    with pytest.raises(InvalidMeta) as info:
        parse_request_meta(meta)
    assert info.value.code == ErrorCode.INVALID_PARAMS
    assert info.value.http_status == 400
    assert info.value.message


@pytest.mark.parametrize("level", LOG_LEVELS)
def test_every_log_level_is_accepted(level: str) -> None:
    assert parse_request_meta({**BASE, LOG_LEVEL: level}).log_level == level


@pytest.mark.parametrize(("caps", "path", "expected"), [
    ({"elicitation": {}}, ("elicitation",), True),
    ({"elicitation": {}}, ("elicitation", "url"), False),
    ({"elicitation": {"url": {}}}, ("elicitation", "url"), True),
    ({"sampling": None}, ("sampling",), False),
    ({"sampling": False}, ("sampling",), False),
    ({"sampling": {"tools": {}}}, ("sampling", "tools"), True),
    ({"roots": True}, ("roots", "listChanged"), False),
    ({}, ("roots",), False),
])
def test_has_capability(caps: dict[str, Any], path: tuple[str, ...], expected: bool) -> None:
    assert parse_request_meta({**BASE, CLIENT_CAPABILITIES: caps}).has_capability(*path) is expected


@pytest.mark.parametrize(("meta", "expected"), [
    (BASE, True),
    ({"io.modelcontextprotocol/anything": 1}, True),
    ({"progressToken": 1}, False),
    ({"com.example/x": 1}, False),
    ({1: 2}, False),
    ([], False),
    (None, False),
])
def test_has_modern_marker(meta: Any, expected: bool) -> None:
    """Era routing looks for an ``io.modelcontextprotocol/`` key in ``_meta``."""
    request = Request(1, "tools/list", msgspec.Raw(msgspec.json.encode({"_meta": meta})))
    assert has_modern_marker(request) is expected
