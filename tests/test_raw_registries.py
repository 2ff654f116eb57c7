"""Definitions given as JSON with raw handlers (``add_raw``), served by the engine like
any other entry, and ``Server.install`` swapping the registries at once."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import Context, Server
from mcpcore.errors import UsageError
from mcpcore.jsonrpc import Request
from mcpcore.prompts import CompletionRegistry, PromptRegistry
from mcpcore.resources import ResourceRegistry
from mcpcore.tools import ToolRegistry
from mcpcore.versions import MODERN

META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}


async def call(server: Server, method: str, **params: Any) -> dict[str, Any]:
    import msgspec

    raw = msgspec.Raw(msgspec.json.encode({**params, "_meta": META}))
    return await server.handle(Request(id=1, method=method, params=raw))


async def forward_tool(arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": repr(sorted(arguments.items()))}],
            "structuredContent": {"seen": arguments}}


async def test_a_raw_tool_is_listed_as_given_and_gets_the_raw_arguments() -> None:
    server = Server("s")
    definition = {"name": "up__find", "description": "Find.", "annotations":
                  {"readOnlyHint": True},
                  "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
                  "outputSchema": {"type": "object"}}
    tool = server.tools.add_raw(definition, forward_tool)
    assert tool.category == "read"
    listed = await call(server, "tools/list")
    assert listed["tools"] == [definition]
    # Not validated here (the handler's side owns the schema): passed through as sent.
    result = await call(server, "tools/call", name="up__find", arguments={"q": 1, "x": [2]})
    assert result["structuredContent"] == {"seen": {"q": 1, "x": [2]}}
    assert result["resultType"] == "complete"


def test_a_raw_definition_is_checked() -> None:
    tools = ToolRegistry()
    with pytest.raises(ValueError, match="invalid tool name"):
        tools.add_raw({"name": "has space", "inputSchema": {"type": "object"}}, forward_tool)
    with pytest.raises(UsageError, match="not a valid Tool"):
        tools.add_raw({"name": "t", "inputSchema": []}, forward_tool)
    tools.add_raw({"name": "t", "inputSchema": {"type": "object"}}, forward_tool)
    with pytest.raises(ValueError, match="already registered"):
        tools.add_raw({"name": "t", "inputSchema": {"type": "object"}}, forward_tool)


async def test_raw_resources_templates_and_prompts() -> None:
    server = Server("s")

    async def read(uri: str, ctx: Context) -> dict[str, Any]:
        return {"contents": [{"uri": uri, "text": f"read {uri}"}]}

    async def render(arguments: dict[str, str], ctx: Context) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": {"type": "text",
                                                           "text": arguments["who"]}}]}

    server.resources.add_raw({"uri": "x://a", "name": "a"}, read)
    server.resources.add_raw({"uriTemplate": "x://t/{id}", "name": "t"}, read)
    server.prompts.add_raw({"name": "p", "arguments": [{"name": "who", "required": True}]},
                           render)
    assert (await call(server, "resources/read", uri="x://t/7"))["contents"][0]["text"] == \
        "read x://t/7"
    assert (await call(server, "resources/read", uri="x://a"))["contents"][0]["text"] == \
        "read x://a"
    got = await call(server, "prompts/get", name="p", arguments={"who": "Ada", "extra": "1"})
    assert got["messages"][0]["content"]["text"] == "Ada"
    with pytest.raises(Exception, match="Missing required arguments: who"):
        await call(server, "prompts/get", name="p", arguments={})


async def test_install_swaps_the_registries_and_offered_features_exist_while_empty() -> None:
    server = Server("s")
    assert "tools" not in server.capabilities()
    server.offered = frozenset({"tools", "prompts"})
    assert "tools" in server.capabilities() and "prompts" in server.capabilities()
    assert (await call(server, "tools/list"))["tools"] == []
    tools = ToolRegistry()
    tools.add_raw({"name": "new", "inputSchema": {"type": "object"}}, forward_tool)
    server.install(tools=tools, resources=ResourceRegistry(), prompts=PromptRegistry(),
                   completions=CompletionRegistry())
    assert [t["name"] for t in (await call(server, "tools/list"))["tools"]] == ["new"]
    assert server.tools is tools and server.tasks.tools is tools
