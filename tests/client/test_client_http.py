"""Our client against our fixture server, in process over HTTP (httpx ASGITransport)."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import msgspec
import pytest
from client_doubles import Connect, Resolvers

from mcpcore import types
from mcpcore.client import Client, LocalProtocolError, RemoteProtocolError

MODERN = "2026-07-28"


async def test_discover_reads_versions_capabilities_and_server_info(connect: Connect) -> None:
    async with connect() as client:
        info = await client.discover()
    assert info.supported_versions[0] == MODERN
    assert info.capabilities.tools is not msgspec.UNSET
    assert isinstance(info.meta, dict)
    assert info.meta["io.modelcontextprotocol/serverInfo"]["name"] == "mcpcore-everything"
    assert client.server is info


async def test_iter_tools_follows_next_cursor(connect: Connect, everything: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(everything.server, "page_size", 3)
    sent: list[httpx.Request] = []
    async with connect(sent=sent) as client:
        first = await client.list_tools()
        names = [tool.name async for tool in client.iter_tools()]
    assert len(first.tools) == 3 and isinstance(first.next_cursor, str)
    assert names[:3] == [t.name for t in first.tools]
    assert len(names) == len(set(names)) > 20
    assert "test_custom_header" in names
    cursors = [json.loads(r.content)["params"].get("cursor") for r in sent[1:]]
    assert cursors[0] is None and all(isinstance(c, str) for c in cursors[1:])


async def test_iter_resources_templates_and_prompts(connect: Connect, everything: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(everything.server, "page_size", 2)
    async with connect() as client:
        resources = [r.uri async for r in client.iter_resources()]
        templates = [t.uri_template async for t in client.iter_resource_templates()]
        prompts = [p.name async for p in client.iter_prompts()]
    assert "test://static-text" in resources and len(resources) >= 3
    assert templates == ["test://template/{id}/data"]
    assert "test_prompt_with_arguments" in prompts and len(prompts) >= 5


async def test_call_tool_returns_typed_content(connect: Connect) -> None:
    async with connect() as client:
        result = await client.call_tool("test_simple_text")
        image = await client.call_tool("test_image_content")
    assert isinstance(result, types.CallToolResult)
    assert result.content == [types.TextContent(
        text="This is a simple text response for testing.")]
    assert isinstance(image.content[0], types.ImageContent)


async def test_tool_error_is_a_result_not_an_exception(connect: Connect) -> None:
    async with connect() as client:
        result = await client.call_tool("test_error_handling")
    assert result.is_error is True


async def test_progress_notifications_arrive_in_order_before_the_result(
        connect: Connect) -> None:
    seen: list[types.Notification] = []
    async with connect() as client:
        result = await client.call_tool("test_tool_with_progress", on_notification=seen.append)
    assert result.content[0].text == "Progress test completed."  # type: ignore[union-attr]
    assert [n.method for n in seen] == ["notifications/progress"] * 3
    progress = [n.params["progress"] for n in seen if isinstance(n.params, dict)]
    assert progress == [0, 50, 100]
    tokens = {n.params["progressToken"] for n in seen if isinstance(n.params, dict)}
    assert len(tokens) == 1


async def test_async_handler_and_explicit_token_and_log_level(connect: Connect) -> None:
    seen: list[types.Notification] = []

    async def handler(note: types.Notification) -> None:
        seen.append(note)

    async with connect() as client:
        await client.call_tool("test_tool_with_progress", on_notification=handler,
                               progress_token=7)
        await client.call_tool("test_tool_with_logging", on_notification=handler,
                               log_level="info")
    assert {n.params["progressToken"] for n in seen[:3] if isinstance(n.params, dict)} == {7}
    logs = [n for n in seen if n.method == "notifications/message"]
    assert len(logs) == 3


async def test_client_level_handler_gets_notifications(connect: Connect) -> None:
    seen: list[types.Notification] = []
    async with connect(on_notification=seen.append) as client:
        await client.call_tool("test_tool_with_progress", progress_token="p")
    assert len(seen) == 3


async def test_input_required_result_multiple_inputs(connect: Connect,
                                                     resolvers: Resolvers) -> None:
    sent: list[httpx.Request] = []
    async with connect(sent=sent, **resolvers.options()) as client:
        result = await client.call_tool("test_input_required_result_multiple_inputs")
    assert result.content[0].text == "name=Ada greeting=Hello! roots=1"  # type: ignore[union-attr]
    assert sorted(kind for kind, _ in resolvers.asked) == [
        "elicitation/create", "roots/list", "sampling/createMessage"]
    calls = [json.loads(r.content) for r in sent if r.headers["mcp-method"] == "tools/call"]
    assert len(calls) == 2
    first, retry = calls
    assert first["id"] != retry["id"]
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
    responses = retry["params"]["inputResponses"]
    assert set(responses) == {"user_name", "greeting", "roots"}
    assert responses["roots"] == {"roots": [{"uri": "file:///work", "name": "work"}]}
    assert isinstance(retry["params"]["requestState"], str)
    caps = retry["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert caps == {"elicitation": {}, "sampling": {}, "roots": {}}


async def test_input_required_result_multi_round(connect: Connect,
                                                 resolvers: Resolvers) -> None:
    sent: list[httpx.Request] = []
    async with connect(sent=sent, **resolvers.options()) as client:
        result = await client.call_tool("test_input_required_result_multi_round")
    assert result.content[0].text == "Ada likes teal"  # type: ignore[union-attr]
    calls = [json.loads(r.content)["params"] for r in sent
             if r.headers["mcp-method"] == "tools/call"]
    assert len(calls) == 3
    assert list(calls[1]["inputResponses"]) == ["user_name"]
    assert list(calls[2]["inputResponses"]) == ["favorite_color"]  # only the last round
    assert calls[1]["requestState"] != calls[2]["requestState"]
    ids = [json.loads(r.content)["id"] for r in sent]
    assert len(ids) == len(set(ids))


async def test_mrtr_in_read_resource_free_and_get_prompt(connect: Connect,
                                                         resolvers: Resolvers) -> None:
    async with connect(**resolvers.options()) as client:
        read = await client.read_resource("test://static-text")
        prompt = await client.get_prompt("test_input_required_result_prompt")
        args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    assert read.ttl_ms == 60_000 and read.cache_scope == "public"
    assert read.contents[0].text == "This is the content of the static text resource."
    assert prompt.messages[0].content == types.TextContent(
        text="Prompt built with context: tests")
    assert "arg1='a'" in args.messages[0].content.text  # type: ignore[union-attr]


async def test_resolvers_may_return_structs(connect: Connect) -> None:
    def elicit(params: dict[str, Any]) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Struct"})

    async with connect(on_elicit=elicit) as client:
        result = await client.call_tool("test_input_required_result_elicitation")
    assert result.content[0].text == "Hello, Struct!"  # type: ignore[union-attr]


async def test_complete(connect: Connect) -> None:
    async with connect() as client:
        result = await client.complete(
            types.PromptReference(name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "te"}, {"arg2": "alpha"})
    assert result.completion.values == ["test", "testing", "tested"]


async def test_round_limit_is_a_local_error(connect: Connect, resolvers: Resolvers) -> None:
    async with connect(max_rounds=1, **resolvers.options()) as client:
        with pytest.raises(LocalProtocolError, match="max_rounds") as info:
            await client.call_tool("test_input_required_result_multi_round")
    assert not hasattr(info.value, "code")


async def test_missing_resolver_is_a_local_error_naming_the_kind(connect: Connect) -> None:
    async with connect(capabilities={"sampling": {}}) as client:
        with pytest.raises(LocalProtocolError, match="sampling/createMessage"):
            await client.call_tool("test_input_required_result_sampling")


async def test_undeclared_capability_is_a_remote_error(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.call_tool("test_missing_capability")
    assert info.value.code == -32021
    assert info.value.http_status == 400
    assert info.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_unknown_tool_is_a_remote_error_with_code_and_status(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.call_tool("no_such_tool")
    assert info.value.code == -32602
    assert info.value.http_status == 200
    assert "no_such_tool" in info.value.message


async def test_resource_not_found_carries_data(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.read_resource("test://missing")
    assert (info.value.code, info.value.data) == (-32602, {"uri": "test://missing"})


# -- headers ----------------------------------------------------------------------------


async def test_tools_call_sends_exact_headers_and_meta(connect: Connect) -> None:
    sent: list[httpx.Request] = []
    async with connect(sent=sent) as client:
        result = await client.call_tool("test_custom_header", {"region": "us-west1",
                                                               "query": "q"})
    assert result.content[0].text == "region=us-west1 query=q"  # type: ignore[union-attr]
    # Not cached yet: the client lists the tools first to learn the x-mcp-header names.
    assert [r.headers["mcp-method"] for r in sent] == ["tools/list", "tools/call"]
    call = sent[-1]
    mcp_headers = {k: v for k, v in call.headers.items()
                   if k.startswith("mcp-") or k in ("accept", "content-type")}
    assert mcp_headers == {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "test_custom_header",
        "mcp-param-region": "us-west1",
    }
    body = json.loads(call.content)
    assert body["params"]["_meta"] == {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcpcore-client", "version": "0.1.0"},
    }


async def test_non_ascii_values_use_the_base64_sentinel(connect: Connect) -> None:
    sent: list[httpx.Request] = []
    async with connect(sent=sent) as client:
        await client.call_tool("test_custom_header", {"region": "Zürich"})
        with pytest.raises(RemoteProtocolError) as info:
            await client.call_tool("wetter_zürich")
    assert sent[1].headers["mcp-param-region"] == "=?base64?WsO8cmljaA==?="
    encoded = base64.b64encode("wetter_zürich".encode()).decode()
    assert sent[-1].headers["mcp-name"] == f"=?base64?{encoded}?="
    # The server decoded the sentinel, matched the body, then did not know the tool.
    assert info.value.code == -32602


async def test_resources_read_and_prompts_get_mirror_mcp_name(connect: Connect) -> None:
    sent: list[httpx.Request] = []
    async with connect(sent=sent) as client:
        await client.read_resource("test://static-text")
        await client.get_prompt("test_simple_prompt")
        await client.list_prompts()
    assert [(r.headers["mcp-method"], r.headers.get("mcp-name")) for r in sent] == [
        ("resources/read", "test://static-text"),
        ("prompts/get", "test_simple_prompt"),
        ("prompts/list", None),
    ]


async def test_user_headers_go_on_every_request(everything: Any) -> None:
    sent: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request)

    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=everything.app),
                             event_hooks={"request": [record]})
    async with http:
        async with Client.http("http://localhost/mcp", http_client=http,
                               headers={"Authorization": "Bearer t"}) as client:
            await client.discover()
        assert not http.is_closed  # a client we were given is the caller's to close
    assert sent[0].headers["authorization"] == "Bearer t"


async def test_argument_that_cannot_mirror_into_a_header_is_local(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(LocalProtocolError, match="region"):
            await client.call_tool("test_custom_header", {"region": 42})


# -- argument checking ------------------------------------------------------------------


@pytest.mark.parametrize("options", [
    {"capabilities": {"sampling": True}},
    {"capabilities": ["roots"]},
    {"max_rounds": -1},
    {"mode": "2024-11-05"},
    {"max_concurrency": 0},
    {"client_info": "me"},
])
def test_bad_options_are_local_errors(options: dict[str, Any]) -> None:
    with pytest.raises(LocalProtocolError):
        Client.http("http://localhost/mcp", **options)


async def test_bad_call_arguments_are_local_errors(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(LocalProtocolError):
            await client.call_tool("test_simple_text", ["not", "a", "mapping"])  # type: ignore[arg-type]
        with pytest.raises(LocalProtocolError):
            await client.call_tool("test_simple_text", log_level="loud")
        with pytest.raises(LocalProtocolError):
            await client.call_tool("test_simple_text", {"x": object()})


async def test_requests_before_open_are_local_errors() -> None:
    client = Client.http("http://localhost/mcp")
    with pytest.raises(LocalProtocolError, match="not open"):
        await client.discover()
