"""Era routing: which messages the legacy shim claims, as a table.

``LegacyShim.claims`` runs for every HTTP message, ``StdioLegacy.claims`` for every stdio
line. Modern markers always win: a modern ``MCP-Protocol-Version`` header or an
``io.modelcontextprotocol/`` key in ``_meta``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore import jsonrpc
from mcpcore.legacy.era import has_modern_marker
from mcpcore.server import Server
from mcpcore.transports.legacy_http import LegacyShim
from mcpcore.transports.legacy_stdio import StdioLegacy
from tests.support.legacy import LegacyClient

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}
SID = {"mcp-session-id": "abc"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
INIT_MODERN_META = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                               "_meta": MODERN_META}}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
LIST_MODERN = {"jsonrpc": "2.0", "id": 2, "method": "tools/list",
               "params": {"_meta": MODERN_META}}
LIST_PROGRESS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                 "params": {"_meta": {"progressToken": "t"}}}
#: A reserved-looking key outside ``_meta`` is not a marker.
CALL_RESERVED_ARG = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
    "name": "x", "arguments": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}
#: ``_meta`` with a non-reserved key only.
CALL_VENDOR_META = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
    "name": "x", "_meta": {"com.example/trace": "io.modelcontextprotocol/"}}}
NOTE = {"jsonrpc": "2.0", "method": "notifications/initialized"}
NOTE_MODERN = {"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 1, "_meta": MODERN_META}}
RESPONSE = {"jsonrpc": "2.0", "id": "mcpcore-1", "result": {"action": "accept"}}

HTTP_CASES: list[tuple[str, dict[str, Any], dict[str, str] | None, bool]] = [
    # (what, message, headers, legacy?)
    ("initialize, no markers", INIT, {}, True),
    ("initialize, legacy version header", INIT, {"mcp-protocol-version": "2025-06-18"}, True),
    ("initialize, modern header", INIT, {"mcp-protocol-version": "2026-07-28"}, False),
    ("initialize, unknown newer header", INIT, {"mcp-protocol-version": "2027-01-01"}, False),
    ("initialize, modern header with spaces", INIT,
     {"mcp-protocol-version": " 2026-07-28 "}, False),
    ("initialize, modern _meta", INIT_MODERN_META, {}, False),
    ("initialize, session id too", INIT, SID, True),
    ("request with session id", LIST, SID, True),
    ("request with session id, legacy header", LIST,
     {**SID, "mcp-protocol-version": "2025-11-25"}, True),
    ("request with session id + modern _meta", LIST_MODERN, SID, False),
    ("request with session id + modern header", LIST,
     {**SID, "mcp-protocol-version": "2026-07-28"}, False),
    ("request with session id, progressToken only", LIST_PROGRESS, SID, True),
    ("reserved key in arguments, not in _meta", CALL_RESERVED_ARG, SID, True),
    ("vendor _meta key", CALL_VENDOR_META, SID, True),
    ("request without session id", LIST, {}, False),
    ("request without session id, legacy header", LIST,
     {"mcp-protocol-version": "2025-11-25"}, False),
    ("modern request", LIST_MODERN, {"mcp-protocol-version": "2026-07-28"}, False),
    ("notification with session id", NOTE, SID, True),
    ("notification with session id + modern _meta", NOTE_MODERN, SID, False),
    ("notification without session id", NOTE, {}, False),
    ("response with session id", RESPONSE, SID, True),
    ("response without session id", RESPONSE, {}, False),
    ("stdio (no headers) never reaches the HTTP shim", INIT, None, False),
]


@pytest.fixture(scope="module")
def shim() -> LegacyShim:
    return LegacyShim(Server("routing"))


def decode(message: dict[str, Any]) -> jsonrpc.Message:
    return jsonrpc.decode_message(json.dumps(message).encode())


@pytest.mark.parametrize(("message", "headers", "legacy"),
                         [c[1:] for c in HTTP_CASES], ids=[c[0] for c in HTTP_CASES])
def test_http_era_routing(shim: LegacyShim, message: dict[str, Any],
                          headers: dict[str, str] | None, legacy: bool) -> None:
    assert shim.claims(decode(message), headers) is legacy


@pytest.mark.parametrize(("body", "headers", "claimed"), [
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', SID, True),
    (b'  \n[{"jsonrpc":"2.0","id":1,"method":"ping"}]', SID, True),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', {}, False),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', SID, False),
])
def test_batches_are_claimed_only_with_a_session(shim: LegacyShim, body: bytes,
                                                 headers: dict[str, str],
                                                 claimed: bool) -> None:
    assert shim.claims_batch(body, headers) is claimed


@pytest.mark.parametrize(("message", "marked"), [
    (INIT, False), (INIT_MODERN_META, True), (LIST, False), (LIST_MODERN, True),
    (LIST_PROGRESS, False), (CALL_RESERVED_ARG, False), (CALL_VENDOR_META, False),
    (NOTE, False), (NOTE_MODERN, True), (RESPONSE, False),
])
def test_modern_marker(message: dict[str, Any], marked: bool) -> None:
    assert has_modern_marker(decode(message)) is marked


def test_stdio_routing_before_and_after_initialize() -> None:
    stdio = StdioLegacy(Server("routing"))
    # Before initialize: only initialize (without modern markers) is legacy.
    assert stdio.claims(decode(INIT)) is True
    assert stdio.claims(decode(INIT_MODERN_META)) is False
    assert stdio.claims(decode(LIST)) is False
    assert stdio.claims(decode(NOTE)) is False
    assert stdio.claims(decode(RESPONSE)) is False
    # After initialize the process is legacy, but modern requests stay modern.
    stdio.record = object()  # type: ignore[assignment]
    assert stdio.claims(decode(LIST)) is True
    assert stdio.claims(decode(NOTE)) is True
    assert stdio.claims(decode(RESPONSE)) is True
    assert stdio.claims(decode(LIST_MODERN)) is False
    assert stdio.claims(decode(NOTE_MODERN)) is False


# -- the same decisions seen from the wire ---------------------------------------------
async def test_initialize_with_modern_markers_is_a_modern_unknown_method(
        client: LegacyClient) -> None:
    """The conformance suite sends exactly this and expects 404 + -32601."""
    reply = await client.post(INIT_MODERN_META, {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "initialize"})
    assert reply.status == 404
    assert reply.error["code"] == -32601
    assert "mcp-session-id" not in reply.headers


async def test_modern_request_with_a_stale_session_id_is_served_as_modern(
        client: LegacyClient) -> None:
    reply = await client.post(LIST_MODERN, {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list",
        "Mcp-Session-Id": "no-such-session"})
    assert reply.status == 200
    assert reply.result["resultType"] == "complete"
    assert "mcp-session-id" not in reply.headers


async def test_sessionless_legacy_request_is_rejected_with_400(client: LegacyClient) -> None:
    """No session id and no initialize → 400, with a JSON-RPC error body."""
    reply = await client.post(LIST, {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25"})
    assert reply.status == 400
    assert reply.error["code"] in (-32600, -32602, -32020, -32022)


# -- properties ----------------------------------------------------------------------------
METHODS = st.sampled_from(["initialize", "ping", "tools/list", "tools/call",
                           "logging/setLevel", "resources/subscribe", "x/y"])
MODERN_HEADERS = st.sampled_from(["2026-07-28", "2027-01-01", "2026-07-29", "9999-12-31"])


@given(method=METHODS, with_session=st.booleans(), version=MODERN_HEADERS,
       request_id=st.one_of(st.integers(-10**6, 10**6), st.text(max_size=8)))
def test_a_modern_header_is_never_legacy(method: str, with_session: bool, version: str,
                                         request_id: int | str) -> None:
    shim = LegacyShim(Server("routing"))
    headers = {"mcp-protocol-version": version, **(SID if with_session else {})}
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}
    assert shim.claims(decode(message), headers) is False


@given(method=METHODS, with_session=st.booleans(),
       key=st.sampled_from(["protocolVersion", "clientCapabilities", "logLevel", "x"]),
       value=st.one_of(st.none(), st.integers(), st.text(max_size=5)))
def test_a_reserved_meta_key_is_never_legacy(method: str, with_session: bool, key: str,
                                             value: Any) -> None:
    shim = LegacyShim(Server("routing"))
    message = {"jsonrpc": "2.0", "id": 1, "method": method,
               "params": {"_meta": {f"io.modelcontextprotocol/{key}": value}}}
    assert shim.claims(decode(message), SID if with_session else {}) is False


@given(method=METHODS.filter(lambda m: m != "initialize"))
def test_without_session_or_initialize_nothing_is_legacy(method: str) -> None:
    shim = LegacyShim(Server("routing"))
    message = {"jsonrpc": "2.0", "id": 1, "method": method}
    assert shim.claims(decode(message), {"mcp-protocol-version": "2025-11-25"}) is False


def test_a_modern_batch_is_never_legacy(shim: LegacyShim) -> None:
    body = b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'
    assert shim.claims_batch(body, {**SID, "mcp-protocol-version": "2026-07-28"}) is False
