"""The interoperability matrix: our client against real servers, each started on loopback.

Servers: ``@modelcontextprotocol/server-everything`` (npm, a 2025-era TypeScript SDK
server), a server written with the official Python SDK (``mcp`` 2.3.0, dual-era), one
written with FastMCP 4 (dual-era), and our ``examples.everything`` (dual-era). Each runs
over stdio and over Streamable HTTP; dual-era servers are driven in ``mode="auto"``
(which finds 2026-07-28) and pinned to ``mode="legacy"`` (the 2025 session wire).

``OFFERED`` says which features each server offers in each era; every offered feature is
exercised, the rest are the server's limits (docs/client.md has the table).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from client_doubles import Resolvers
from third_party import environment, http_server, launch

from mcpcore import types
from mcpcore.client import Client, EraCache, RemoteProtocolError, RequestTimeout

pytestmark = pytest.mark.integration

Feature = Callable[[Client, Resolvers], Awaitable[None]]
ALL = ("tools", "resources", "templates", "prompts", "completion", "elicitation",
       "sampling", "roots", "progress", "logging", "subscriptions", "cancellation")
#: (server, era) → the features it offers there.
OFFERED: dict[tuple[str, str], tuple[str, ...]] = {
    ("server-everything", "legacy"): ALL,
    ("sdk", "modern"): tuple(f for f in ALL if f != "subscriptions"),
    ("sdk", "legacy"): tuple(f for f in ALL if f != "subscriptions"),
    ("fastmcp", "modern"): ("tools", "resources", "templates", "prompts", "progress",
                            "logging", "cancellation"),
    ("fastmcp", "legacy"): ("tools", "resources", "templates", "prompts", "elicitation",
                            "progress", "logging", "cancellation"),
    ("mcpcore", "modern"): ALL,
    ("mcpcore", "legacy"): ALL,
}
CASES = [
    ("server-everything", "stdio", "auto", "legacy"),
    ("server-everything", "http", "auto", "legacy"),
    *[(server, transport, mode, "modern" if mode == "auto" else "legacy")
      for server in ("sdk", "fastmcp", "mcpcore") for transport in ("stdio", "http")
      for mode in ("auto", "legacy")],
]


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def waiting_for(method: str, seen: list[types.Notification], seconds: float) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not any(n.method == method for n in seen):
        assert asyncio.get_running_loop().time() < deadline, f"no {method} in {seconds} s"
        await asyncio.sleep(0.05)


# -- @modelcontextprotocol/server-everything ---------------------------------------------


async def ts_tools(client: Client, r: Resolvers) -> None:
    names = [t.name for t in await client.tools()]
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= set(names)
    assert "hi" in text(await client.call_tool("echo", {"message": "hi"}))
    assert "5" in text(await client.call_tool("get-sum", {"a": 2, "b": 3}))


async def ts_resources(client: Client, r: Resolvers) -> None:
    resources = await client.resources()
    assert resources
    read = await client.read_resource(resources[0].uri)
    assert read.contents and read.contents[0].uri == resources[0].uri


async def ts_templates(client: Client, r: Resolvers) -> None:
    templates = [t.uri_template for t in await client.resource_templates()]
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    read = await client.read_resource("demo://resource/dynamic/text/1")
    assert read.contents


async def ts_prompts(client: Client, r: Resolvers) -> None:
    names = [p.name for p in await client.prompts()]
    assert "simple-prompt" in names
    assert (await client.get_prompt("simple-prompt")).messages


async def ts_completion(client: Client, r: Resolvers) -> None:
    done = await client.complete({"type": "ref/prompt", "name": "completable-prompt"},
                                 {"name": "department", "value": "Eng"})
    assert "Engineering" in done.completion.values


async def ts_elicitation(client: Client, r: Resolvers) -> None:
    result = await client.call_tool("trigger-elicitation-request")
    assert any(kind == "elicitation/create" for kind, _ in r.asked)
    assert not result.is_error


async def ts_sampling(client: Client, r: Resolvers) -> None:
    result = await client.call_tool("trigger-sampling-request", {"prompt": "hi"})
    assert "Hello!" in text(result)


async def ts_roots(client: Client, r: Resolvers) -> None:
    assert "file:///work" in text(await client.call_tool("get-roots-list"))


async def ts_progress(client: Client, r: Resolvers) -> None:
    seen: list[types.Notification] = []
    await client.call_tool("trigger-long-running-operation", {"duration": 0.4, "steps": 2},
                           on_notification=seen.append)
    assert [n.method for n in seen].count("notifications/progress") >= 2


async def ts_logging(client: Client, r: Resolvers) -> None:
    seen: list[types.Notification] = []
    client.on_notification = seen.append
    await client.set_logging_level("debug")
    await client.call_tool("toggle-simulated-logging")
    try:
        await waiting_for("notifications/message", seen, 12)  # it logs every 5 s
    finally:
        await client.call_tool("toggle-simulated-logging")


async def ts_subscriptions(client: Client, r: Resolvers) -> None:
    uri = (await client.resources())[0].uri
    async with client.listen({"resourceSubscriptions": [uri]}) as sub:
        ack = await anext(sub)
        assert ack.method == "notifications/subscriptions/acknowledged"
        await client.call_tool("toggle-subscriber-updates")
        try:
            update = await asyncio.wait_for(anext(sub), 12)  # it updates every 5 s
        finally:
            await client.call_tool("toggle-subscriber-updates")
    assert update.method == "notifications/resources/updated"


async def ts_cancellation(client: Client, r: Resolvers) -> None:
    with pytest.raises(RequestTimeout):
        await client.call_tool("trigger-long-running-operation",
                               {"duration": 5, "steps": 5}, timeout=0.5)
    assert "still" in text(await client.call_tool("echo", {"message": "still here"}))


# -- the Python SDK and FastMCP fixtures (tests/client/servers) ---------------------------


async def py_tools(client: Client, r: Resolvers) -> None:
    names = {t.name for t in await client.tools()}
    assert {"add", "slow_progress", "nap"} <= names
    assert text(await client.call_tool("add", {"a": 2, "b": 3})) == "5.0"


async def py_resources(client: Client, r: Resolvers) -> None:
    assert "fixture://static" in [str(x.uri) for x in await client.resources()]
    read = await client.read_resource("fixture://static")
    assert getattr(read.contents[0], "text", None) == "static text"


async def py_templates(client: Client, r: Resolvers) -> None:
    assert [t.uri_template for t in await client.resource_templates()] == [
        "fixture://items/{item}"]
    read = await client.read_resource("fixture://items/x")
    assert getattr(read.contents[0], "text", None) == "item x"


async def py_prompts(client: Client, r: Resolvers) -> None:
    assert "greet" in [p.name for p in await client.prompts()]
    got = await client.get_prompt("greet", {"name": "Ada"})
    assert "Ada" in getattr(got.messages[0].content, "text", "")


async def py_completion(client: Client, r: Resolvers) -> None:
    done = await client.complete({"type": "ref/prompt", "name": "greet"},
                                 {"name": "name", "value": "a"})
    assert done.completion.values == ["ada", "alan"]


async def py_elicitation(client: Client, r: Resolvers) -> None:
    assert text(await client.call_tool("ask_name")) == "hello Ada"


async def py_sampling(client: Client, r: Resolvers) -> None:
    assert text(await client.call_tool("ask_model")) == "model said Hello!"


async def py_roots(client: Client, r: Resolvers) -> None:
    assert text(await client.call_tool("ask_roots")) == "file:///work"


async def py_progress(client: Client, r: Resolvers) -> None:
    seen: list[types.Notification] = []
    assert text(await client.call_tool("slow_progress", on_notification=seen.append)) == "done"
    assert [n.params.get("progress") for n in seen if isinstance(n.params, dict)] == [1, 2, 3]


async def py_logging(client: Client, r: Resolvers) -> None:
    seen: list[types.Notification] = []
    try:
        await client.set_logging_level("info")
    except RemoteProtocolError as exc:  # the SDK's 2025 sessions lack logging/setLevel
        assert exc.code == -32601 and client.era == "legacy"
    await client.call_tool("log_something", on_notification=seen.append)
    await waiting_for("notifications/message", seen, 5)


async def py_cancellation(client: Client, r: Resolvers) -> None:
    with pytest.raises(RequestTimeout):
        await client.call_tool("nap", {"seconds": 10}, timeout=0.3)
    assert text(await client.call_tool("add", {"a": 1, "b": 1})) == "2.0"


# -- our examples.everything ---------------------------------------------------------------


async def our_tools(client: Client, r: Resolvers) -> None:
    assert "test_simple_text" in [t.name for t in await client.tools()]
    assert "simple text" in text(await client.call_tool("test_simple_text"))


async def our_resources(client: Client, r: Resolvers) -> None:
    read = await client.read_resource("test://static-text")
    assert read.contents and "test://static-text" in [x.uri for x in await client.resources()]


async def our_templates(client: Client, r: Resolvers) -> None:
    assert "test://template/{id}/data" in [t.uri_template
                                           for t in await client.resource_templates()]
    assert (await client.read_resource("test://template/7/data")).contents


async def our_prompts(client: Client, r: Resolvers) -> None:
    got = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    assert got.messages


async def our_completion(client: Client, r: Resolvers) -> None:
    done = await client.complete({"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                                 {"name": "arg1", "value": "te"})
    assert isinstance(done.completion.values, list)


async def our_elicitation(client: Client, r: Resolvers) -> None:
    assert "ada@example.com" in text(await client.call_tool("test_elicitation",
                                                            {"message": "who?"}))


async def our_sampling(client: Client, r: Resolvers) -> None:
    assert "Hello!" in text(await client.call_tool("test_sampling", {"prompt": "hi"}))


async def our_roots(client: Client, r: Resolvers) -> None:
    assert "file:///work" in text(await client.call_tool("test_input_required_result_list_roots"))


async def our_progress(client: Client, r: Resolvers) -> None:
    seen: list[types.Notification] = []
    await client.call_tool("test_tool_with_progress", on_notification=seen.append)
    assert [n.method for n in seen] == ["notifications/progress"] * 3


async def our_logging(client: Client, r: Resolvers) -> None:
    seen: list[types.Notification] = []
    await client.set_logging_level("info")
    await client.call_tool("test_tool_with_logging", on_notification=seen.append)
    await waiting_for("notifications/message", seen, 5)


async def our_subscriptions(client: Client, r: Resolvers) -> None:
    async with client.listen({"resourceSubscriptions": ["test://watched-resource"]}) as sub:
        assert (await anext(sub)).method == "notifications/subscriptions/acknowledged"
        await client.call_tool("test_trigger_resource_update")
        update = await asyncio.wait_for(anext(sub), 10)
    assert update.method == "notifications/resources/updated"


async def our_cancellation(client: Client, r: Resolvers) -> None:
    with pytest.raises(RequestTimeout):
        await client.call_tool("test_tool_with_progress", timeout=0.02)
    assert (await client.call_tool("test_simple_text")).content


FEATURES: dict[str, dict[str, Feature]] = {
    "server-everything": {
        "tools": ts_tools, "resources": ts_resources, "templates": ts_templates,
        "prompts": ts_prompts, "completion": ts_completion, "elicitation": ts_elicitation,
        "sampling": ts_sampling, "roots": ts_roots, "progress": ts_progress,
        "logging": ts_logging, "subscriptions": ts_subscriptions,
        "cancellation": ts_cancellation,
    },
    "sdk": {
        "tools": py_tools, "resources": py_resources, "templates": py_templates,
        "prompts": py_prompts, "completion": py_completion, "elicitation": py_elicitation,
        "sampling": py_sampling, "roots": py_roots, "progress": py_progress,
        "logging": py_logging, "cancellation": py_cancellation,
    },
    "mcpcore": {
        "tools": our_tools, "resources": our_resources, "templates": our_templates,
        "prompts": our_prompts, "completion": our_completion, "elicitation": our_elicitation,
        "sampling": our_sampling, "roots": our_roots, "progress": our_progress,
        "logging": our_logging, "subscriptions": our_subscriptions,
        "cancellation": our_cancellation,
    },
}
FEATURES["fastmcp"] = FEATURES["sdk"]


async def exercise(client: Client, resolvers: Resolvers, server: str, era: str) -> None:
    assert client.era == era, client.attempts
    offered = OFFERED[(server, era)]
    # The slow ones (server-everything's 5 s timers) run side by side; the rest in turn.
    slow = [f for f in offered
            if f in ("logging", "subscriptions") and server == "server-everything"]
    for feature in offered:
        if feature not in slow:
            await FEATURES[server][feature](client, resolvers)
    await asyncio.gather(*(FEATURES[server][f](client, resolvers) for f in slow))


@pytest.mark.parametrize("server, transport, mode, era", CASES,
                         ids=[f"{s}-{t}-{m}" for s, t, m, _ in CASES])
async def test_matrix(server: str, transport: str, mode: str, era: str,
                      state_keys: str) -> None:
    spec = launch(server, state_keys)
    resolvers = Resolvers()
    options: dict[str, Any] = {"mode": mode, "era_cache": EraCache(), "timeout": 30,
                               "probe_timeout": 10, **resolvers.options()}
    if transport == "stdio":
        async with Client.stdio(spec.stdio, env=environment(spec), **options) as client:
            await exercise(client, resolvers, server, era)
        assert client.transport.returncode is not None  # stopped and reaped
        return
    with http_server(spec) as url:
        async with Client.http(url, **options) as client:
            await exercise(client, resolvers, server, era)
