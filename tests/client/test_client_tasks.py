"""The client's task API (``mcpcore.client.tasks``) against ``examples.everything``.

Explicit handles (``client.tasks``: create, poll at ``pollIntervalMs``, answer, cancel,
resume, listen) and the transparent path (a client declaring the extension gets the
final ``CallToolResult`` from ``call_tool``), in process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from client_doubles import Connect

from mcpcore import types
from mcpcore.client import Client, LocalProtocolError, RemoteProtocolError
from mcpcore.client.tasks import MAX_POLL, MIN_POLL, TaskCancelled, TaskHandle, task_of
from mcpcore.conformance.asgi import StreamingASGITransport
from mcpcore.subscriptions import SubscriptionHub
from mcpcore.tasks import TASKS_EXTENSION, CompletedTask, CreateTaskResult

URL = "http://localhost/mcp"


@pytest.fixture(autouse=True)
async def stop_tasks(everything: Any, monkeypatch: pytest.MonkeyPatch
                     ) -> AsyncIterator[None]:
    """Quick polls (the handles honour ``pollIntervalMs``); no work left running."""
    monkeypatch.setattr(everything.server.tasks.manager, "poll_interval", 0.05)
    yield
    await everything.server.tasks.aclose()


def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
    props = params.get("requestedSchema", {}).get("properties", {})
    content = {k: {"name": "Ada", "confirm": True}[k] for k in props}
    return {"action": "accept", "content": content}


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_a_handle_polls_to_the_result(connect: Connect) -> None:
    sent: list[httpx.Request] = []
    async with connect(sent=sent) as client:
        handle = await client.tasks.call_tool("slow_compute", {"seconds": 0.1,
                                                               "label": "it"})
        assert isinstance(handle, TaskHandle)
        assert isinstance(handle.created, CreateTaskResult)
        assert handle.interval() == 0.05  # the server's pollIntervalMs
        result = await handle.wait()
        assert text(result) == "Computed it in 0.1 s." and not result.is_error
        assert isinstance(handle.last, CompletedTask)
        gets = [r for r in sent if r.headers.get("mcp-method") == "tasks/get"]
        assert gets and all(r.headers["mcp-name"] == handle.task_id for r in gets)
        call = next(r for r in sent if r.headers.get("mcp-method") == "tools/call")
        assert TASKS_EXTENSION.encode() in call.content
        # The client's own capabilities are untouched: the declaration was per request.
        assert "extensions" not in client.capabilities


async def test_a_sync_answer_is_a_plain_result(connect: Connect) -> None:
    async with connect() as client:
        result = await client.tasks.call_tool("greet", {"name": "Ada"})
        assert isinstance(result, types.CallToolResult) and text(result) == "Hello, Ada!"


async def test_questions_are_answered_through_the_resolvers(connect: Connect) -> None:
    async with connect(on_elicit=on_elicit) as client:
        handle = await client.tasks.call_tool("multi_input")
        assert isinstance(handle, TaskHandle)
        assert text(await handle.wait()) == "Answers: Ada, Ada"
        assert len(handle.answered) == 2


async def test_mrtr_rounds_then_a_task(connect: Connect) -> None:
    async with connect(on_elicit=on_elicit) as client:
        handle = await client.tasks.call_tool("test_tool_with_task")
        assert isinstance(handle, TaskHandle)
        assert text(await handle.wait()) == "Hello, Ada, from a task."


async def test_cancel_failure_and_tool_errors(connect: Connect) -> None:
    async with connect() as client:
        slow = await client.tasks.call_tool("slow_compute", {"seconds": 60})
        assert isinstance(slow, TaskHandle)
        await slow.cancel()
        with pytest.raises(TaskCancelled, match="cancelled"):
            await slow.wait()
        broken = await client.tasks.call_tool("protocol_error_job")
        assert isinstance(broken, TaskHandle)
        with pytest.raises(RemoteProtocolError) as failed:
            await broken.wait()
        assert failed.value.code == -32603
        failing = await client.tasks.call_tool("failing_job")
        assert isinstance(failing, TaskHandle)
        assert (await failing.wait()).is_error is True


async def test_a_persisted_id_resumes(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.tasks.call_tool("slow_compute", {"seconds": 0})
        assert isinstance(handle, TaskHandle)
    async with connect() as later:
        resumed = later.tasks.handle(handle.task_id)
        assert text(await resumed.wait()) == "Computed a result in 0 s."
        with pytest.raises(RemoteProtocolError) as unknown:
            await later.tasks.get("A" * 32)
        assert unknown.value.code == -32602


async def test_a_client_declaring_the_extension_gets_results_transparently(
        connect: Connect) -> None:
    caps = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
    async with connect(capabilities=caps, on_elicit=on_elicit) as client:
        deleted = await client.call_tool("confirm_delete", {"filename": "a.txt"})
        assert text(deleted) == "Deleted a.txt."
        assert (await client.call_tool("failing_job")).is_error is True
    async with connect() as plain:  # without it, a task-only tool is refused
        with pytest.raises(RemoteProtocolError) as refused:
            await plain.call_tool("failing_job")
        assert refused.value.code == -32021


def test_the_poll_interval_is_clamped() -> None:
    def handle(ms: int | None) -> TaskHandle:
        created = CreateTaskResult(task_id="t", status="working", created_at="x",
                                   last_updated_at="x", ttl_ms=None,
                                   **({"poll_interval_ms": ms} if ms else {}))
        return TaskHandle(None, "t", created=created)  # type: ignore[arg-type]

    assert handle(250).interval() == 0.25
    assert handle(1).interval() == MIN_POLL
    assert handle(10**9).interval() == MAX_POLL
    assert handle(10**400).interval() == MAX_POLL  # not an OverflowError out of ms / 1000
    assert handle(None).interval() == 1.0


async def test_listen_reports_task_changes(everything: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(everything.server, "subscriptions", SubscriptionHub())
    transport = StreamingASGITransport(everything.app)
    async with httpx.AsyncClient(transport=transport) as http, \
            Client.http(URL, http_client=http, on_elicit=on_elicit) as client:
        handle = await client.tasks.call_tool("confirm_delete", {"filename": "b.txt"})
        assert isinstance(handle, TaskHandle)
        async with client.tasks.listen([handle.task_id]) as sub:
            ack = await asyncio.wait_for(anext(sub), 5)
            assert ack.method == "notifications/subscriptions/acknowledged"
            assert ack.params["notifications"] == {"taskIds": [handle.task_id]}
            waiter = asyncio.ensure_future(handle.wait())
            statuses = []
            while not statuses or statuses[-1] != "completed":
                note = await asyncio.wait_for(anext(sub), 5)
                task = task_of(note)
                assert task.task_id == handle.task_id
                statuses.append(type(task).__struct_config__.tag)
            assert "input_required" in statuses
            assert text(await waiter) == "Deleted b.txt."


async def test_the_2025_era_has_no_tasks(everything: Any) -> None:
    transport = StreamingASGITransport(everything.app)
    async with httpx.AsyncClient(transport=transport) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None) as client:
        with pytest.raises(LocalProtocolError, match="2026-07-28"):
            await client.tasks.call_tool("slow_compute")
