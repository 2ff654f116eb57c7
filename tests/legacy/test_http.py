"""Legacy sessions over Streamable HTTP, in-process (examples/everything through ASGI).

Handshake and negotiation, session ids, unknown and terminated sessions, the
session-only methods, -32002, results in the era's shape, batches, modern-only methods,
session log levels, and the GET stream (2025-11-25 transports.mdx and lifecycle.mdx).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.asgi import Exchange
from tests.support.legacy import (
    BASE_HEADERS,
    MODERN_FIELDS,
    SERVER_INFO,
    SUBSCRIPTION_ID,
    LegacyClient,
)

WATCHED = "test://watched-resource"


# -- initialize ------------------------------------------------------------------------
@pytest.mark.parametrize(("requested", "answered"), [
    ("2025-11-25", "2025-11-25"),
    ("2025-06-18", "2025-06-18"),
    ("2025-03-26", "2025-03-26"),
    ("2026-07-28", "2025-11-25"),   # never the modern revision
    ("2030-01-01", "2025-11-25"),
    ("2024-11-05", "2025-11-25"),
    ("not-a-version", "2025-11-25"),
])
async def test_initialize_negotiates_a_legacy_version(client: LegacyClient, requested: str,
                                                      answered: str) -> None:
    result = await client.initialize(requested)
    assert result["protocolVersion"] == answered


async def test_initialize_without_a_version_gets_the_latest_legacy_one(
        client: LegacyClient) -> None:
    reply = await client.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"capabilities": {}}}, BASE_HEADERS)
    assert reply.status == 200
    assert reply.result["protocolVersion"] == "2025-11-25"


async def test_initialize_result_shape(client: LegacyClient) -> None:
    result = await client.initialize()
    assert set(result) == {"protocolVersion", "capabilities", "serverInfo", "instructions"}
    caps = result["capabilities"]
    assert "extensions" not in caps  # not in the legacy schema
    assert caps["resources"]["subscribe"] is True
    assert caps["tools"] == {"listChanged": True}
    assert "logging" in caps
    assert result["serverInfo"]["name"] == "mcpcore-everything"


async def test_session_ids_are_visible_ascii_and_unguessable(app: Any) -> None:
    ids = []
    for _ in range(5):
        legacy = LegacyClient(app)
        await legacy.initialize()
        assert legacy.session_id is not None
        ids.append(legacy.session_id)
        await legacy.aclose()
    for sid in ids:
        assert re.fullmatch(r"[\x21-\x7e]+", sid), sid
        assert len(sid) >= 32
    assert len(set(ids)) == len(ids)


async def test_initialize_with_bad_capabilities_is_invalid_params(
        client: LegacyClient) -> None:
    reply = await client.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"protocolVersion": "2025-11-25",
                                          "capabilities": ["sampling"]}}, BASE_HEADERS)
    assert reply.error["code"] == -32602
    assert "mcp-session-id" not in reply.headers


async def test_requests_may_be_pipelined_before_initialized(client: LegacyClient) -> None:
    await client.initialize(initialized=False)
    reply = await client.request("tools/list")
    assert reply.status == 200 and reply.result["tools"]


# -- unknown and terminated sessions -----------------------------------------------------
async def test_unknown_session_is_404_for_every_kind_of_message(app: Any) -> None:
    legacy = LegacyClient(app)
    legacy.session_id = "no-such-session"
    try:
        request = await legacy.request("tools/list", id=5)
        assert request.status == 404
        assert request.error["code"] == -32600 and request.body["id"] == 5
        notification = await legacy.notify("notifications/initialized")
        assert notification.status == 404 and "id" not in notification.body
        response = await legacy.answer("mcpcore-x", {})
        assert response.status == 404
        for method in ("GET", "DELETE"):
            reply = await legacy.http.request(method, "/mcp", headers=legacy.headers())
            assert reply.status_code == 404
            assert reply.json()["error"]["code"] == -32600
    finally:
        await legacy.aclose()


async def test_delete_ends_the_session_then_everything_is_404(client: LegacyClient) -> None:
    await client.initialize()
    gone = await client.http.delete("/mcp", headers=client.headers())
    assert gone.status_code == 200
    assert (await client.request("ping")).status == 404
    assert (await client.notify("notifications/initialized")).status == 404
    assert (await client.http.get("/mcp", headers=client.headers())).status_code == 404
    assert (await client.http.delete("/mcp", headers=client.headers())).status_code == 404


async def test_get_and_delete_without_a_session_are_405(client: LegacyClient) -> None:
    for method in ("GET", "DELETE"):
        reply = await client.http.request(method, "/mcp", headers=BASE_HEADERS)
        assert reply.status_code == 405


async def test_an_unsupported_version_header_in_a_session_is_400(
        client: LegacyClient) -> None:
    await client.initialize()
    reply = await client.post({"jsonrpc": "2.0", "id": 9, "method": "ping"},
                              client.headers(**{"MCP-Protocol-Version": "1999-01-01"}))
    assert reply.status == 400
    assert reply.error["code"] == -32600


async def test_a_header_naming_another_legacy_version_is_400(client: LegacyClient) -> None:
    await client.initialize("2025-06-18")
    reply = await client.post({"jsonrpc": "2.0", "id": 9, "method": "ping"},
                              client.headers(**{"MCP-Protocol-Version": "2025-11-25"}))
    assert reply.status == 400


# -- legacy-only methods ---------------------------------------------------------------
async def test_ping_is_exactly_empty(client: LegacyClient) -> None:
    await client.initialize()
    reply = await client.request("ping", id="p-1")
    assert reply.status == 200
    assert reply.body == {"jsonrpc": "2.0", "id": "p-1", "result": {}}


async def test_ping_with_params_and_meta_is_still_empty(client: LegacyClient) -> None:
    await client.initialize()
    reply = await client.request("ping", {"_meta": {"progressToken": 1}}, id=3)
    assert reply.body == {"jsonrpc": "2.0", "id": 3, "result": {}}


async def test_set_level_is_exactly_empty_and_validated(client: LegacyClient) -> None:
    await client.initialize()
    reply = await client.request("logging/setLevel", {"level": "info"}, id=4)
    assert reply.body == {"jsonrpc": "2.0", "id": 4, "result": {}}
    bad = await client.request("logging/setLevel", {"level": "chatty"})
    assert bad.error["code"] == -32602
    missing = await client.request("logging/setLevel", {})
    assert missing.error["code"] == -32602


async def test_subscribe_and_unsubscribe_are_empty(client: LegacyClient) -> None:
    await client.initialize()
    for method in ("resources/subscribe", "resources/unsubscribe"):
        reply = await client.request(method, {"uri": WATCHED}, id=method)
        assert reply.body == {"jsonrpc": "2.0", "id": method, "result": {}}


async def test_initialize_inside_a_session_starts_a_new_one(client: LegacyClient) -> None:
    await client.initialize()
    first = client.session_id
    reply = await client.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"protocolVersion": "2025-11-25",
                                          "capabilities": {}}})
    assert reply.status == 200
    assert reply.headers["mcp-session-id"] != first


@pytest.mark.parametrize("method", ["server/discover", "subscriptions/listen"])
async def test_modern_only_methods_are_unknown_in_a_session(client: LegacyClient,
                                                            method: str) -> None:
    await client.initialize()
    reply = await client.request(method, {"notifications": {"toolsListChanged": True}})
    assert reply.error["code"] == -32601


async def test_unknown_method_is_32601(client: LegacyClient) -> None:
    await client.initialize()
    assert (await client.request("no/such/method")).error["code"] == -32601


# -- resources and down-levelled results -------------------------------------------------
@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
async def test_missing_resource_is_32002_with_the_uri(client: LegacyClient,
                                                      version: str) -> None:
    await client.initialize(version)
    reply = await client.request("resources/read", {"uri": "test://nope"})
    assert reply.status == 200
    assert reply.error["code"] == -32002  # -32602 is for modern requests only
    assert reply.error["data"] == {"uri": "test://nope"}


RESULT_REQUESTS: list[tuple[str, dict[str, Any] | None]] = [
    ("tools/list", None),
    ("tools/call", {"name": "test_simple_text", "arguments": {}}),
    ("tools/call", {"name": "test_error_handling", "arguments": {}}),
    ("resources/list", None),
    ("resources/templates/list", None),
    ("resources/read", {"uri": "test://static-text"}),
    ("resources/read", {"uri": "test://template/7/data"}),
    ("prompts/list", None),
    ("prompts/get", {"name": "test_simple_prompt"}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                             "argument": {"name": "arg1", "value": "te"}}),
]


@pytest.mark.parametrize(("method", "params"), RESULT_REQUESTS,
                         ids=[f"{m}-{i}" for i, (m, _) in enumerate(RESULT_REQUESTS)])
async def test_results_carry_no_modern_fields(client: LegacyClient, method: str,
                                              params: dict[str, Any] | None) -> None:
    await client.initialize()
    reply = await client.request(method, params)
    result = reply.result
    assert not set(MODERN_FIELDS) & set(result), result
    assert SERVER_INFO not in result.get("_meta", {}), result


async def test_tool_call_results_keep_their_content(client: LegacyClient) -> None:
    await client.initialize()
    ok = await client.request("tools/call", {"name": "test_simple_text", "arguments": {}})
    assert ok.result == {"content": [{"type": "text",
                                      "text": "This is a simple text response for testing."}]}
    failed = await client.request("tools/call", {"name": "test_error_handling"})
    assert failed.result["isError"] is True
    unknown = await client.request("tools/call", {"name": "nope"})
    assert unknown.error["code"] == -32602


# -- batches ---------------------------------------------------------------------------
async def test_batches_are_accepted_in_a_2025_03_26_session(client: LegacyClient) -> None:
    await client.initialize("2025-03-26")
    reply = await client.post([
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/call",
         "params": {"name": "test_simple_text"}},
        {"jsonrpc": "2.0", "id": "c", "method": "resources/read",
         "params": {"uri": "test://nope"}},
    ])
    assert reply.status == 200
    assert isinstance(reply.body, list)
    by_id = {item["id"]: item for item in reply.body}
    assert set(by_id) == {"a", "b", "c"}
    assert by_id["a"]["result"] == {}
    assert by_id["b"]["result"]["content"][0]["type"] == "text"
    assert "resultType" not in by_id["b"]["result"]
    assert by_id["c"]["error"]["code"] == -32002


async def test_a_batch_of_notifications_is_202(client: LegacyClient) -> None:
    await client.initialize("2025-03-26", initialized=False)
    reply = await client.post([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    assert reply.status == 202 and reply.body is None


async def test_a_bad_item_in_a_batch_gets_its_own_error(client: LegacyClient) -> None:
    await client.initialize("2025-03-26")
    reply = await client.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                               {"jsonrpc": "2.0", "id": 2}])
    assert reply.status == 200
    by_id = {item.get("id"): item for item in reply.body}
    assert by_id[1]["result"] == {}
    assert by_id[2]["error"]["code"] == -32600


async def test_an_empty_batch_is_invalid(client: LegacyClient) -> None:
    await client.initialize("2025-03-26")
    reply = await client.post([])
    assert reply.status == 400
    assert reply.error["code"] == -32600


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
async def test_batches_are_rejected_after_2025_03_26(client: LegacyClient,
                                                     version: str) -> None:
    await client.initialize(version)
    reply = await client.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert reply.status == 400
    assert reply.error["code"] == -32600
# -- log levels and progress on the request's stream --------------------------------------
async def test_no_log_notifications_before_set_level(client: LegacyClient) -> None:
    await client.initialize()
    reply = await client.request("tools/call", {"name": "test_tool_with_logging"})
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.result["content"][0]["text"] == "Logging test completed."


async def test_log_notifications_after_set_level(client: LegacyClient) -> None:
    await client.initialize()
    await client.request("logging/setLevel", {"level": "info"})
    call = client.stream("tools/call", {"name": "test_tool_with_logging"}, id="logs")
    logs = [await call.next() for _ in range(3)]
    final = await call.next()
    await call.finished()
    assert call.is_sse
    assert [m["method"] for m in logs] == ["notifications/message"] * 3
    assert [m["params"]["data"] for m in logs] == [
        "Tool execution started", "Tool execution processing", "Tool execution completed"]
    for message in logs:
        assert message["params"]["level"] == "info"
        assert "_meta" not in message["params"]  # session-scoped: no subscriptionId
        assert "id" not in message
    assert final["id"] == "logs"
    assert final["result"]["content"][0]["text"] == "Logging test completed."


async def test_log_level_threshold_filters(client: LegacyClient) -> None:
    await client.initialize()
    await client.request("logging/setLevel", {"level": "error"})
    reply = await client.request("tools/call", {"name": "test_tool_with_logging"})
    assert reply.headers["content-type"].startswith("application/json")


async def test_progress_notifications_use_the_request_token(client: LegacyClient) -> None:
    await client.initialize()
    call = client.stream("tools/call", {"name": "test_tool_with_progress",
                                        "_meta": {"progressToken": "tok"}})
    progress = [await call.next() for _ in range(3)]
    final = await call.next()
    await call.finished()
    assert [p["params"]["progress"] for p in progress] == [0, 50, 100]
    assert all(p["params"]["progressToken"] == "tok" for p in progress)
    assert final["result"]["content"][0]["text"] == "Progress test completed."


# -- the GET stream ----------------------------------------------------------------------
async def open_get(client: LegacyClient) -> Exchange:
    stream = client.get_stream()
    await stream.started()
    assert stream.status == 200 and stream.is_sse
    assert stream.headers["mcp-session-id"] == client.session_id
    return stream


async def test_get_stream_delivers_subscribed_updates_without_subscription_ids(
        client: LegacyClient) -> None:
    await client.initialize()
    await client.request("resources/subscribe", {"uri": WATCHED})
    stream = await open_get(client)
    try:
        for uri in ("test://unrelated", WATCHED, WATCHED + "/part"):
            reply = await client.request("tools/call", {
                "name": "test_trigger_resource_update", "arguments": {"uri": uri}})
            assert reply.status == 200
        first, second = await stream.next(), await stream.next()
        # a sub-resource of the subscribed URI is delivered too.
        assert first == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                         "params": {"uri": WATCHED}}
        assert second["params"] == {"uri": WATCHED + "/part"}
        assert SUBSCRIPTION_ID not in str(first)

        await client.request("resources/unsubscribe", {"uri": WATCHED})
        await client.request("tools/call", {"name": "test_trigger_resource_update",
                                            "arguments": {"uri": WATCHED}})
        await client.request("tools/call", {"name": "test_trigger_tool_change"})
        changed = await stream.next()
        # Unsubscribed: the update is gone; list changes are unsolicited.
        assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                           "params": {}}
    finally:
        await stream.hang_up()
        await stream.finished()


async def test_get_stream_ends_when_the_client_goes_away(client: LegacyClient) -> None:
    await client.initialize()
    stream = await open_get(client)
    await stream.hang_up()
    await stream.finished()
    # The session survives its GET stream.
    assert (await client.request("ping")).result == {}


async def test_a_notification_goes_to_one_stream_of_the_session(
        client: LegacyClient) -> None:
    await client.initialize()
    one, two = await open_get(client), client.get_stream()
    await two.started()
    try:
        await client.request("tools/call", {"name": "test_trigger_tool_change"})
        await one.next()  # the list change, on the stream that holds the session's claim
        assert two.status == 409  # one stream per session: the second never opened
        assert one.pending() == []
    finally:
        for stream in (one, two):
            await stream.hang_up()
            await stream.finished()


async def test_a_get_stream_ends_once_its_session_is_deleted(app: Any) -> None:
    """The GET stream re-checks its session at each keepalive and ends when it is gone."""
    from mcpcore import StreamableHTTP
    from mcpcore.transports.legacy_http import LegacyShim
    from tests.support.clock import ManualClock

    server = app.server
    clock = ManualClock()
    quick = StreamableHTTP(server, legacy=LegacyShim(server, keepalive=15, sleep=clock.sleep))
    legacy = LegacyClient(quick)
    try:
        await legacy.initialize()
        stream = await open_get(legacy)
        await clock.until_sleeping()
        await clock.advance(15)  # a keepalive: the session is still there
        assert stream.comments == 2 and not stream.complete  # ": open" and one keepalive
        assert (await legacy.http.delete("/mcp", headers=legacy.headers())).status_code == 200
        await clock.advance(15)  # the next check finds it gone
        await stream.finished(timeout=2.0)
        assert stream.complete
    finally:
        await legacy.aclose()


@pytest.mark.parametrize("method", ["notifications/initialized",
                                    "notifications/roots/list_changed",
                                    "notifications/progress", "notifications/whatever"])
async def test_client_notifications_are_202(client: LegacyClient, method: str) -> None:
    await client.initialize()
    reply = await client.notify(method, {"progressToken": 1, "progress": 1})
    assert reply.status == 202 and reply.body is None


async def test_a_session_id_presented_by_another_principal_is_unknown(app: Any) -> None:
    """A leaked session id grants nothing: the session belongs to whoever opened it."""
    from mcpcore.principal import PRINCIPAL_SCOPE_KEY, Principal

    async def as_user(scope: Any, receive: Any, send: Any) -> None:
        user = dict(scope["headers"]).get(b"x-test-user", b"alice").decode()
        scope[PRINCIPAL_SCOPE_KEY] = Principal(subject=user, issuer="https://idp.test",
                                               auth_method="test")
        await app(scope, receive, send)

    alice = LegacyClient(as_user)
    try:
        await alice.initialize()
        assert (await alice.request("ping")).result == {}
        stolen = alice.headers(**{"X-Test-User": "mallory"})
        reply = await alice.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, stolen)
        assert reply.status == 404
        for method in ("GET", "DELETE"):
            assert (await alice.http.request(method, "/mcp", headers=stolen)).status_code == 404
        assert (await alice.request("ping")).result == {}  # still alice's
    finally:
        await alice.aclose()
