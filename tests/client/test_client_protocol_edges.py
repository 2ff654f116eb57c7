"""Protocol edges the fixture server never produces, against tiny fake servers."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import httpx
import pytest
from client_doubles import Answer, FakeServer, error, result, sse

from mcpcore import types
from mcpcore.client import (
    Client,
    ClientError,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    TransportError,
)
from tests.support.clock import ManualClock

MODERN = "2026-07-28"
URL = "http://localhost/mcp"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
TOOLS_PAGE = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}


def client_for(server: FakeServer, **options: Any) -> Client:
    # The era is named, so no test here depends on another having cached this URL's
    # era (the process-wide EraCache) or waits out a probe; probing has its own tests.
    options.setdefault("mode", "2026-07-28")
    return Client.http(URL, http_client=server.client(), **options)


def calls(handler: Any) -> FakeServer:
    """A server answering ``tools/list`` with no tools and everything else by ``handler``
    (``call_tool`` over HTTP lists the tools first to learn their header annotations)."""

    def answer(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        if request["method"] == "tools/list":
            return result(request, {**TOOLS_PAGE, "tools": []})
        value: Answer = handler(request, headers)
        return value

    return FakeServer(answer)


def unsupported(request: dict[str, Any], supported: list[str]) -> Answer:
    return error(request, -32022, "Unsupported protocol version",
                 {"supported": supported,
                  "requested": request["params"]["_meta"][VERSION_KEY]}, status=400)


# -- version negotiation ----------------------------------------------------------------


async def test_unsupported_version_naming_ours_is_retried_once_with_a_new_id() -> None:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        if len(server.seen) == 1:  # like the suite's request-metadata: reject the first
            return unsupported(request, [MODERN])
        return result(request, {**TOOLS_PAGE, "tools": []})

    server = FakeServer(handler)
    async with client_for(server) as client:
        page = await client.list_tools()
    assert page.tools == []
    first, retry = server.seen
    assert first.body["id"] != retry.body["id"]
    assert first.body["method"] == retry.body["method"] == "tools/list"
    assert retry.headers["mcp-protocol-version"] == MODERN
    assert retry.body["params"]["_meta"][VERSION_KEY] == MODERN


async def test_unsupported_version_is_retried_only_once() -> None:
    server = FakeServer(lambda request, headers: unsupported(request, [MODERN]))
    async with client_for(server) as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.discover()
    assert len(server.seen) == 2
    assert info.value.code == -32022 and info.value.http_status == 400
    assert info.value.data["supported"] == [MODERN]


async def test_no_shared_version_is_not_retried() -> None:
    server = FakeServer(lambda request, headers: unsupported(request, ["2025-11-25"]))
    async with client_for(server) as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.discover()
    assert len(server.seen) == 1
    assert info.value.code == -32022


async def test_each_request_gets_its_own_retry() -> None:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        if len(server.seen) in (1, 3):
            return unsupported(request, [MODERN])
        return result(request, {**TOOLS_PAGE, "tools": []})

    server = FakeServer(handler)
    async with client_for(server) as client:
        await client.list_tools()
        await client.list_tools()
    assert len(server.seen) == 4


# -- MRTR against a scripted server ----------------------------------------------------


def echo_state_server(state: str | None) -> FakeServer:
    """Round 1 asks to confirm (with ``state`` if given); round 2 completes."""

    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        params = request["params"]
        if request["method"] == "tools/list":
            return result(request, {**TOOLS_PAGE, "tools": [
                {"name": "t", "inputSchema": {"type": "object"}},
                {"name": "other", "inputSchema": {"type": "object"}}]})
        if params["name"] == "other" or "inputResponses" in params:
            return result(request, {"resultType": "complete",
                                    "content": [{"type": "text", "text": "done"}]})
        value: dict[str, Any] = {"resultType": "input_required", "inputRequests": {
            "confirm": {"method": "elicitation/create", "params": {
                "message": "ok?", "requestedSchema": {
                    "type": "object", "properties": {"ok": {"type": "boolean"}}}}}}}
        if state is not None:
            value["requestState"] = state
        return result(request, value)

    return FakeServer(handler)


@pytest.mark.parametrize("state", [' {"b": 1,  "a": [2]} ', "opaque\u00e9\n", None])
async def test_request_state_is_echoed_byte_for_byte_or_omitted(state: str | None) -> None:
    server = echo_state_server(state)
    answer = {"action": "accept", "content": {"ok": True}}
    async with client_for(server, on_elicit=lambda params: answer) as client:
        done = await client.call_tool("t")
        await client.call_tool("other")
    assert done.content[0].text == "done"  # type: ignore[union-attr]
    calls = [seen.body for seen in server.seen if seen.body["method"] == "tools/call"]
    first, retry, other = calls
    assert retry["params"]["inputResponses"] == {"confirm": answer}
    if state is None:
        assert "requestState" not in retry["params"]
    else:
        assert retry["params"]["requestState"] == state
    assert len({first["id"], retry["id"], other["id"]}) == 3
    assert "inputResponses" not in other["params"] and "requestState" not in other["params"]


async def test_state_only_input_required_is_retried_with_state_alone() -> None:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        if "requestState" in request["params"]:
            return result(request, {"resultType": "complete", "ttlMs": 0,
                                    "cacheScope": "private", "contents": []})
        return result(request, {"resultType": "input_required", "requestState": "later"})

    server = FakeServer(handler)
    async with client_for(server) as client:
        read = await client.read_resource("file:///x")
    assert read.contents == []
    retry = server.seen[1].body["params"]
    assert retry["requestState"] == "later" and "inputResponses" not in retry
    assert retry["uri"] == "file:///x"


async def test_result_without_result_type_is_complete() -> None:
    server = calls(lambda request, headers: result(
        request, {"content": [{"type": "text", "text": "legacy"}]}))
    async with client_for(server) as client:
        got = await client.call_tool("t")
    assert got.content[0].text == "legacy"  # type: ignore[union-attr]
    assert len([s for s in server.seen if s.body["method"] == "tools/call"]) == 1


@pytest.mark.parametrize("value, match", [
    ({"resultType": "task", "taskId": "1"}, "unknown resultType"),
    ({"resultType": "input_required"}, "without inputRequests"),
    ({"resultType": "input_required", "inputRequests": []}, "not an object"),
    ({"resultType": "input_required", "requestState": 5}, "not a string"),
    ({"resultType": "input_required", "inputRequests": {"k": 1}}, "not an input request"),
    ({"resultType": "complete", "content": "nope"}, "invalid result"),
])
async def test_malformed_results_are_remote_errors(value: dict[str, Any], match: str) -> None:
    server = calls(lambda request, headers: result(request, value))
    async with client_for(server) as client:
        with pytest.raises(RemoteProtocolError, match=match):
            await client.call_tool("t")


async def test_unknown_input_request_kind_is_a_local_error() -> None:
    server = calls(lambda request, headers: result(request, {
        "resultType": "input_required",
        "inputRequests": {"k": {"method": "tasks/frobnicate", "params": {}}}}))
    async with client_for(server) as client:
        with pytest.raises(LocalProtocolError, match="tasks/frobnicate"):
            await client.call_tool("t")


async def test_bad_resolver_answer_is_a_local_error() -> None:
    server = echo_state_server("s")
    async with client_for(server, on_elicit=lambda params: "yes") as client:  # type: ignore[arg-type,return-value]
        with pytest.raises(LocalProtocolError, match="JSON object"):
            await client.call_tool("t")


# -- transport-level faults ------------------------------------------------------------


async def test_sse_response_with_notifications_then_result() -> None:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        return sse(
            {"jsonrpc": "2.0", "method": "notifications/message",
             "params": {"level": "info", "data": "one"}},
            {"jsonrpc": "2.0", "id": "not-a-notification", "method": "sampling/createMessage",
             "params": {}},
            {"jsonrpc": "2.0", "id": request["id"], "result": {
                "resultType": "complete", "content": []}})

    seen: list[types.Notification] = []
    server = calls(handler)
    async with client_for(server, on_notification=seen.append) as client:
        await client.call_tool("t")
    assert [n.method for n in seen] == ["notifications/message"]


async def test_sse_stream_that_ends_early_is_a_remote_error() -> None:
    server = FakeServer(lambda request, headers: sse(
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": 1, "progress": 1}}))
    async with client_for(server) as client:
        with pytest.raises(RemoteProtocolError, match="ended before the response"):
            await client.request("tools/list", {})


async def test_response_for_another_id_is_a_remote_error() -> None:
    server = FakeServer(lambda request, headers: Answer(
        {"jsonrpc": "2.0", "id": 999, "result": {"resultType": "complete"}}))
    async with client_for(server) as client:
        with pytest.raises(RemoteProtocolError, match="does not match"):
            await client.request("tools/list", {})


@pytest.mark.parametrize("answer, status", [
    (Answer(b"<html>Bad gateway</html>", status=502, content_type="text/html"), 502),
    (Answer({"detail": "nope"}, status=500), 500),
    (Answer(b"", status=202), 202),
    (Answer(b"{not json", status=200), 200),
    (Answer([1, 2], status=200), 200),
])
async def test_non_jsonrpc_answers_are_remote_errors_without_code(answer: Answer,
                                                                  status: int) -> None:
    server = FakeServer(lambda request, headers: answer)
    async with client_for(server) as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.discover()
    assert info.value.code is None
    assert info.value.http_status == status


async def test_error_without_id_is_accepted_as_ours() -> None:
    server = FakeServer(lambda request, headers: Answer(
        {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}, status=400))
    async with client_for(server) as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.discover()
    assert (info.value.code, info.value.http_status) == (-32700, 400)
    assert str(info.value) == "[-32700] Parse error (HTTP 400)"


async def test_slow_server_is_a_request_timeout() -> None:
    clock = ManualClock()

    async def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        await clock.sleep(5)
        return result(request, {})

    server = FakeServer(handler)
    async with client_for(server, timeout=1, clock=clock) as client:
        discover = asyncio.ensure_future(client.discover())
        await clock.until_sleeping(2)  # the request's timeout and the slow handler
        await clock.advance(0.9)
        assert not discover.done()
        await clock.advance(0.1)
        with pytest.raises(RequestTimeout) as info:
            await discover
    assert isinstance(info.value, LocalProtocolError)


async def test_connection_refused_is_a_transport_error() -> None:
    # mode="auto" probes while opening: a refused connection is no era verdict.
    with pytest.raises(TransportError):
        async with Client.http("http://127.0.0.1:9/mcp", timeout=5, era_cache=None):
            pass
    async with Client.http("http://127.0.0.1:9/mcp", timeout=5, mode="2026-07-28") as client:
        with pytest.raises(TransportError):
            await client.discover()


def test_error_tree() -> None:
    assert issubclass(LocalProtocolError, ClientError)
    assert issubclass(RemoteProtocolError, ClientError)
    assert issubclass(TransportError, ClientError)
    assert not issubclass(RemoteProtocolError, LocalProtocolError)
    err = RemoteProtocolError("x", code=-32602, data={"uri": "u"})
    assert repr(err) == "RemoteProtocolError('x', code=-32602, http_status=None)"


# -- tool definitions ---------------------------------------------------------------------


def tools_server(tools: list[dict[str, Any]]) -> FakeServer:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        if request["method"] == "tools/list":
            return result(request, {**TOOLS_PAGE, "tools": tools})
        return result(request, {"resultType": "complete", "content": []})

    return FakeServer(handler)


async def test_tools_with_invalid_header_annotations_are_dropped(
        caplog: pytest.LogCaptureFixture) -> None:
    server = tools_server([
        {"name": "good", "inputSchema": {"type": "object", "properties": {
            "n": {"type": "integer", "x-mcp-header": "N"}}}},
        {"name": "bad", "inputSchema": {"type": "object", "properties": {
            "score": {"type": "number", "x-mcp-header": "Score"}}}},
        {"name": "dup", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "X"},
            "b": {"type": "string", "x-mcp-header": "x"}}}},
        {"name": "shapeless"},
        "not a tool",
    ])
    with caplog.at_level(logging.WARNING, logger="mcpcore.client"):
        async with client_for(server) as client:
            page = await client.list_tools()
            await client.call_tool("good", {"n": 42.0})
            with pytest.raises(LocalProtocolError, match="dropped"):
                await client.call_tool("bad", {"score": 1.5})
    assert [tool.name for tool in page.tools] == ["good"]
    assert "dropping tool 'bad'" in caplog.text and "dropping tool 'dup'" in caplog.text
    call = server.seen[1]
    assert call.headers["mcp-param-n"] == "42"
    assert len(server.seen) == 2  # the dropped tool was never called


async def test_network_refs_in_schemas_are_never_fetched() -> None:
    requested: list[str] = []
    ref = "http://canary.invalid/profile.json"
    tools = [{"name": "lookup", "inputSchema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"profile": {"$ref": ref}, "id": {"$ref": "#/$defs/id"}},
        "$defs": {"id": {"type": "string"}}}}]
    server = tools_server(tools)

    async def record(request: httpx.Request) -> None:
        requested.append(str(request.url))

    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=server),
                             event_hooks={"request": [record]})
    async with http, Client.http(URL, http_client=http, mode="2026-07-28") as client:
        listed = [tool async for tool in client.iter_tools()]
        await client.call_tool("lookup", {"id": "a"})
    assert set(requested) == {URL}
    assert listed[0].input_schema["properties"]["profile"] == {"$ref": ref}  # kept as given


async def test_pagination_loop_is_detected() -> None:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        return result(request, {**TOOLS_PAGE, "prompts": [], "nextCursor": "same"})

    async with client_for(FakeServer(handler)) as client:
        with pytest.raises(RemoteProtocolError, match="repeats"):
            [p async for p in client.iter_prompts()]


async def test_cacheable_result_without_hints_reads_as_not_cacheable() -> None:
    server = FakeServer(lambda request, headers: result(request, {
        "supportedVersions": [MODERN], "capabilities": {}}))
    async with client_for(server) as client:
        info = await client.discover()
    assert (info.ttl_ms, info.cache_scope) == (0, "private")


async def test_raw_request_merges_meta() -> None:
    server = FakeServer(lambda request, headers: result(request, {"resultType": "complete"}))
    async with client_for(server) as client:
        got = await client.request("x/custom", {"a": 1, "_meta": {"traceparent": "00-x"}},
                                   headers={"X-Extra": "1"})
    assert got == {"resultType": "complete"}
    seen = server.seen[0]
    assert seen.body["params"]["a"] == 1
    assert seen.body["params"]["_meta"]["traceparent"] == "00-x"
    assert seen.body["params"]["_meta"][VERSION_KEY] == MODERN
    assert seen.headers["x-extra"] == "1" and seen.headers["mcp-method"] == "x/custom"
    assert "mcp-name" not in seen.headers
    assert json.loads(json.dumps(seen.body)) == seen.body


async def test_call_proceeds_when_the_tool_listing_fails(
        caplog: pytest.LogCaptureFixture) -> None:
    def handler(request: dict[str, Any], headers: dict[str, str]) -> Answer:
        if request["method"] == "tools/list":
            return error(request, -32601, "Method not found", status=404)
        return result(request, {"resultType": "complete", "content": []})

    server = FakeServer(handler)
    with caplog.at_level(logging.WARNING, logger="mcpcore.client"):
        async with client_for(server) as client:
            await client.call_tool("t", {"a": 1})
    assert [s.body["method"] for s in server.seen] == ["tools/list", "tools/call"]
    assert "tools/list before tools/call t failed" in caplog.text
