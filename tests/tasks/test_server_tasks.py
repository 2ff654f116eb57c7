"""The tasks extension on dedicated servers: what the fixture server cannot show.

Offering follows registration; the default manager lives in the server's store; a task's
handler sends no progress or log; keys are minted per task; a question the request
cannot answer fails the task; tasks belong to their principal; the 2025 era never gets
one; shutting down ends running work; a listen stream reports a task whose worker
died; ``ctx.start_task`` outside the engine and without the extension.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpcore import Context, MemoryStore, Principal, Server, StreamableHTTP, TaskManager
from mcpcore.jsonrpc import Request, decode_message
from mcpcore.meta import RequestMeta
from mcpcore.tasks import TASKS_EXTENSION
from tests.support.legacy import LegacyClient
from tests.support.peers import DirectPeer
from tests.support.wire import FULL_CAPS, SUBSCRIPTION_ID, TASK_CAPS, make_meta

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
YES = {"action": "accept", "content": {"ok": True}}


@pytest.fixture
async def servers() -> AsyncIterator[list[Server]]:
    made: list[Server] = []
    yield made
    for server in made:
        await server.aclose()


def task_server(made: list[Server], **kwargs: Any) -> Server:
    server = Server("tasks-test", "1.0.0", **kwargs)
    made.append(server)
    return server


async def request(server: Server, method: str, params: dict[str, Any], *,
                  caps: dict[str, Any] | None = None, principal: Principal | None = None,
                  sink: Any = None) -> dict[str, Any]:
    """One request through ``Server.handle``: its result (errors raise)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method,
            "params": {**params, "_meta": make_meta(TASK_CAPS if caps is None else caps)}}
    message = decode_message(json.dumps(body).encode())
    assert isinstance(message, Request)
    kwargs: dict[str, Any] = {"sink": sink}
    if principal is not None:
        kwargs["principal"] = principal
    return await server.handle(message, **kwargs)


async def settle(server: Server, task_id: str, *, until: tuple[str, ...] = (
        "completed", "failed", "cancelled"), principal: Principal | None = None
                 ) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while True:
        task = await request(server, "tasks/get", {"taskId": task_id}, principal=principal)
        if task["status"] in until:
            return task
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.01)


async def test_the_extension_is_offered_while_a_task_tool_is_registered(
        servers: list[Server]) -> None:
    server = task_server(servers)
    server.tool("plain")(lambda: "x")
    assert "extensions" not in server.capabilities()
    peer = DirectPeer(server)
    reply = await peer.request("tasks/get", {"taskId": "x"}, meta=make_meta(TASK_CAPS))
    assert reply.code == -32601  # nothing can become a task: the methods do not exist
    server.tool("later", task="optional")(lambda: "y")
    assert server.capabilities()["extensions"] == {TASKS_EXTENSION: {}}
    assert "extensions" not in server.capabilities("2025-11-25")
    server.tools.remove("later")
    assert "extensions" not in server.capabilities()


def test_task_options_are_checked_at_registration() -> None:
    server = Server("bad")
    with pytest.raises(TypeError, match="task must be one of"):
        server.tool("a", task="always")(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="task_start"):
        server.tool("b", task="optional", task_start="later")(lambda: "x")  # type: ignore[arg-type]


async def test_the_default_manager_uses_the_server_store(servers: list[Server]) -> None:
    store = MemoryStore()
    server = task_server(servers, store=store)

    @server.tool(task="optional")
    def quick() -> str:
        return "done"

    handle = await request(server, "tools/call", {"name": "quick"})
    assert server.tasks.manager.store is store
    assert await store.get(f"task:{handle['taskId']}") is not None
    done = await settle(server, handle["taskId"])
    assert done["result"] == {"content": [{"type": "text", "text": "done"}],
                              "resultType": "complete"}


async def test_a_task_sends_no_progress_or_log_and_knows_its_id(
        servers: list[Server]) -> None:
    server = task_server(servers)
    seen: list[str | None] = []

    @server.tool(task="optional")
    async def chatty(ctx: Context) -> str:
        seen.append(ctx.task_id)
        await ctx.report_progress(1, total=2)
        await ctx.log("info", "from a task")
        assert await ctx.start_task() is True  # a no-op inside a task
        return "quiet"

    sent: list[bytes] = []

    async def sink(data: bytes) -> None:
        sent.append(data)

    caps = TASK_CAPS
    body = {"name": "chatty"}
    meta = make_meta(caps, progress_token="p1", log_level="debug")
    message = decode_message(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                         "params": {**body, "_meta": meta}}).encode())
    assert isinstance(message, Request)
    handle = await server.handle(message, sink=sink)
    done = await settle(server, handle["taskId"])
    assert done["result"]["content"][0]["text"] == "quiet"
    assert seen == [handle["taskId"]] and sent == []


async def test_keys_are_minted_per_task_and_never_reused(servers: list[Server]) -> None:
    server = task_server(servers)

    @server.tool(task="optional")
    async def twice(ctx: Context) -> str:
        first = await ctx.elicit("First?", SCHEMA, key="ask")
        second = await ctx.elicit("Second?", SCHEMA, key="ask")
        return f"{first.action} {second.action}"

    task_id = (await request(server, "tools/call", {"name": "twice"}))["taskId"]
    keys = []
    for _ in range(2):
        waiting = await settle(server, task_id, until=("input_required",))
        [key] = waiting["inputRequests"]
        keys.append(key)
        await request(server, "tasks/update", {"taskId": task_id,
                                               "inputResponses": {key: YES}})
        # An answer under a key already answered is ignored: it counts once.
        await request(server, "tasks/update", {"taskId": task_id,
                                               "inputResponses": {key: YES}})
    done = await settle(server, task_id)
    assert done["result"]["content"][0]["text"] == "accept accept"
    assert keys[0] != keys[1] and all(k.startswith("ask-") for k in keys)


async def test_a_question_the_request_cannot_answer_fails_the_task(
        servers: list[Server]) -> None:
    server = task_server(servers)

    @server.tool(task="optional")
    async def asks(ctx: Context) -> str:
        await ctx.elicit("Sure?", SCHEMA)
        return "unreachable"

    no_elicitation = {"extensions": {TASKS_EXTENSION: {}}}
    handle = await request(server, "tools/call", {"name": "asks"}, caps=no_elicitation)
    done = await settle(server, handle["taskId"])
    assert done["status"] == "failed"
    assert done["error"]["code"] == -32021
    assert done["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


async def test_tasks_belong_to_their_principal(servers: list[Server]) -> None:
    server = task_server(servers)
    server.tool("slow", task="optional")(asyncio.Event().wait)
    alice = Principal("alice", issuer="https://idp.example")
    mallory = Principal("mallory", issuer="https://idp.example")
    task_id = (await request(server, "tools/call", {"name": "slow"}, principal=alice))[
        "taskId"]
    assert len(task_id) == 32  # 192 random bits, base64url
    for method, extra in (("tasks/get", {}), ("tasks/cancel", {}),
                          ("tasks/update", {"inputResponses": {}})):
        with pytest.raises(Exception, match="Task not found") as caught:
            await request(server, method, {"taskId": task_id, **extra}, principal=mallory)
        assert getattr(caught.value, "code", None) == -32602
    assert (await request(server, "tasks/get", {"taskId": task_id},
                          principal=alice))["status"] == "working"


async def test_the_2025_era_never_gets_a_task(servers: list[Server]) -> None:
    server = task_server(servers)
    server.tool("job", task="optional")(lambda: "ran synchronously")
    server.tool("only_task", task="required")(lambda: "never")
    client = LegacyClient(StreamableHTTP(server))
    try:
        await client.initialize(capabilities={"extensions": {TASKS_EXTENSION: {}}})
        done = await client.request("tools/call", {"name": "job", "arguments": {}})
        assert done.result == {"content": [{"type": "text", "text": "ran synchronously"}]}
        refused = await client.request("tools/call", {"name": "only_task", "arguments": {}})
        assert refused.error["code"] == -32021
        missing = await client.request("tasks/get", {"taskId": "x"})
        assert missing.error["code"] == -32601
    finally:
        await client.aclose()


async def test_shutting_down_ends_running_work_failed(servers: list[Server]) -> None:
    server = task_server(servers)
    server.tool("forever", task="optional")(asyncio.Event().wait)
    task_id = (await request(server, "tools/call", {"name": "forever"}))["taskId"]
    await server.aclose()
    done = await request(server, "tasks/get", {"taskId": task_id})
    assert done["status"] == "failed"
    assert "shut down" in done["error"]["message"]


async def test_a_listen_stream_reports_a_task_whose_worker_died(servers: list[Server]) -> None:
    store = MemoryStore()

    async def never(seconds: float) -> None:  # a worker that stops renewing its lease
        await asyncio.Event().wait()

    worker = task_server(servers, store=store,
                         tasks=TaskManager(store, lease=0.3, sleep=never))
    watcher = task_server(servers, store=store, tasks=TaskManager(store, lease=0.3))
    for server in (worker, watcher):
        server.tool("forever", task="optional")(asyncio.Event().wait)
    task_id = (await request(worker, "tools/call", {"name": "forever"}))["taskId"]
    started = time.monotonic()
    async with DirectPeer(watcher).listen({"taskIds": [task_id]}, id="w",
                                          meta=make_meta(TASK_CAPS)) as sub:
        ack = await sub.next()
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        working = await sub.next()
        assert working["params"]["status"] == "working"
        assert working["params"]["_meta"] == {SUBSCRIPTION_ID: "w"}
        failed = await sub.next(timeout=3)
        assert failed["params"]["status"] == "failed"
        assert "lease lapsed" in failed["params"]["error"]["message"]
    assert time.monotonic() - started < 2


async def test_start_task_without_the_engine_or_the_extension(servers: list[Server]) -> None:
    ctx = Context(request_id=1, method="tools/call", meta=RequestMeta(
        protocol_version="2026-07-28", client_capabilities={}))
    assert await ctx.start_task() is False and ctx.task_id is None
    await ctx.report_status("nowhere to report to")  # outside a task: nothing happens
    server = task_server(servers)
    went: list[bool] = []

    @server.tool(task="optional", task_start="handler")
    async def maybe(ctx: Context) -> str:
        went.append(await ctx.start_task())
        return "either way"

    sync = await request(server, "tools/call", {"name": "maybe"}, caps=FULL_CAPS)
    assert sync["resultType"] == "complete" and went == [False]
    handle = await request(server, "tools/call", {"name": "maybe"})
    assert handle["resultType"] == "task"
    assert (await settle(server, handle["taskId"]))["status"] == "completed"
    assert went == [False, True]


async def test_a_handler_that_never_starts_the_task_answers_synchronously(
        servers: list[Server]) -> None:
    server = task_server(servers)

    @server.tool(task="optional", task_start="handler")
    async def decides(ctx: Context, big: bool = False) -> str:
        if big:
            await ctx.start_task()
        return "small" if not big else "big"

    small = await request(server, "tools/call", {"name": "decides", "arguments": {}})
    assert small["resultType"] == "complete" and small["content"][0]["text"] == "small"
    big = await request(server, "tools/call", {"name": "decides",
                                               "arguments": {"big": True}})
    assert big["resultType"] == "task"
    assert (await settle(server, big["taskId"]))["result"]["content"][0]["text"] == "big"
