"""The tasks extension in the engine, against ``examples.everything`` over every transport.

Negotiation (the extension advertised; requests that did not declare it never get a
task, and -32021 where only a task will do), the three methods, the fixtures the
official suite's ``tasks-*`` scenarios call, ``Mcp-Name`` routing, and the composition
of MRTR before a task. The peers check every message against schema.json plus the
extension's types (``tests.support.task_schema``).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

import examples.everything as everything
from tests.support.peers import HttpPeer, Peer, Reply
from tests.support.wire import FULL_CAPS, SUBSCRIPTION_ID, TASK_CAPS, TASKS_EXTENSION, make_meta

TERMINAL = ("completed", "failed", "cancelled")
MISSING_CAPABILITY = -32021
INVALID_PARAMS = -32602
ACCEPT = {"action": "accept", "content": {"confirm": True}}


@pytest.fixture(autouse=True)
async def stop_tasks() -> AsyncIterator[None]:
    """Work still running in this process when a test ends is stopped with its loop."""
    yield
    await everything.server.tasks.aclose()


def with_tasks() -> dict[str, Any]:
    return make_meta(TASK_CAPS)


async def call(peer: Peer, tool: str, arguments: dict[str, Any] | None = None, *,
               tasks: bool = True, **extra: Any) -> Reply:
    params: dict[str, Any] = {"name": tool, "arguments": arguments or {}, **extra}
    return await peer.request("tools/call", params, meta=with_tasks() if tasks else None)


async def task_request(peer: Peer, method: str, task_id: str, **extra: Any) -> Reply:
    return await peer.request(method, {"taskId": task_id, **extra}, meta=with_tasks())


async def poll(peer: Peer, task_id: str, *, until: tuple[str, ...] = TERMINAL,
               within: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        task = (await task_request(peer, "tasks/get", task_id)).result
        if task["status"] in until:
            return task
        assert time.monotonic() < deadline, f"task stuck in {task['status']}"
        await asyncio.sleep(0.02)


async def created(peer: Peer, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = (await call(peer, tool, arguments)).result
    assert result["resultType"] == "task", result
    task_id: str = result["taskId"]
    return task_id


# -- negotiation ---------------------------------------------------------------------------

async def test_discover_advertises_the_extension_and_no_v1_slot(peer: Peer) -> None:
    caps = (await peer.request("server/discover")).result["capabilities"]
    assert caps["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in caps


async def test_without_the_extension_no_call_becomes_a_task(peer: Peer) -> None:
    result = (await call(peer, "slow_compute", {"seconds": 0, "label": "x"},
                         tasks=False)).result
    assert result["resultType"] == "complete" and "taskId" not in result
    assert result["content"][0]["text"] == "Computed x in 0 s."
    # A declaration in a v1 shape counts for nothing; nor does a v1 `task` param.
    reply = await peer.request("tools/call", {"name": "slow_compute", "arguments": {
        "seconds": 0}, "task": {"ttl": 1000}}, meta=make_meta({**FULL_CAPS, "tasks": {}}))
    assert reply.result["resultType"] == "complete"


@pytest.mark.parametrize("tool", ["failing_job", "test_tool_with_task"])
async def test_a_task_only_tool_refuses_clients_without_the_extension(peer: Peer,
                                                                     tool: str) -> None:
    reply = await call(peer, tool, tasks=False)
    assert reply.code == MISSING_CAPABILITY
    assert reply.error["data"] == {"requiredCapabilities": {"extensions": {
        TASKS_EXTENSION: {}}}}
    if peer.has_headers:
        assert reply.status == 400


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_task_methods_need_the_extension_before_looking_at_the_id(peer: Peer,
                                                                       method: str) -> None:
    extra = {"inputResponses": {}} if method == "tasks/update" else {}
    reply = await peer.request(method, {"taskId": "gate-test", **extra})
    assert reply.code == MISSING_CAPABILITY
    assert reply.error["data"]["requiredCapabilities"] == {"extensions": {TASKS_EXTENSION: {}}}


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_retired_methods_do_not_exist(peer: Peer, method: str) -> None:
    reply = await peer.request(method, {"taskId": "x"}, meta=with_tasks())
    assert reply.code == -32601


async def test_greet_is_synchronous_even_for_clients_with_the_extension(peer: Peer) -> None:
    result = (await call(peer, "greet", {"name": "World"})).result
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "Hello, World!"}]


# -- the lifecycle -------------------------------------------------------------------------

async def test_create_get_complete(peer: Peer) -> None:
    reply = await call(peer, "slow_compute", {"seconds": 0.2, "label": "life"})
    handle = reply.result
    assert handle["resultType"] == "task" and handle["status"] == "working"
    assert handle["ttlMs"] == 3_600_000 and handle["pollIntervalMs"] == 1000
    assert reply.messages == []
    first = (await task_request(peer, "tasks/get", handle["taskId"])).result
    assert first["taskId"] == handle["taskId"] and first["resultType"] == "complete"
    done = await poll(peer, handle["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "Computed life in 0.2 s."}]
    assert done["createdAt"] == handle["createdAt"] <= done["lastUpdatedAt"]


async def test_a_tool_error_completes_and_a_protocol_error_fails(peer: Peer) -> None:
    tool_error = await poll(peer, await created(peer, "failing_job"))
    assert tool_error["status"] == "completed" and tool_error["result"]["isError"] is True
    protocol = await poll(peer, await created(peer, "protocol_error_job"))
    assert protocol["status"] == "failed" and "result" not in protocol
    assert protocol["error"] == {"code": -32603,
                                 "message": "The job hit an internal protocol error"}


async def test_cancel_ends_a_running_task_and_is_idempotent(peer: Peer) -> None:
    task_id = await created(peer, "slow_compute", {"seconds": 60})
    ack = (await task_request(peer, "tasks/cancel", task_id)).result
    assert set(ack) <= {"resultType", "_meta"} and ack["resultType"] == "complete"
    assert (await task_request(peer, "tasks/get", task_id)).result["status"] == "cancelled"
    again = (await task_request(peer, "tasks/cancel", task_id)).result
    assert again["resultType"] == "complete"
    assert (await task_request(peer, "tasks/get", task_id)).result["status"] == "cancelled"


@pytest.mark.parametrize("task_id", ["tasks-conformance-nonexistent-12345",
                                     "A" * 32, "", "x" * 5000])
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_unknown_task_ids_are_invalid_params(peer: Peer, method: str,
                                                  task_id: str) -> None:
    extra = {"inputResponses": {}} if method == "tasks/update" else {}
    reply = await task_request(peer, method, task_id, **extra)
    assert reply.code == INVALID_PARAMS
    assert reply.error["message"] == "Failed to retrieve task: Task not found"


@pytest.mark.parametrize(("method", "params"), [
    ("tasks/get", {}), ("tasks/get", {"taskId": 7}), ("tasks/cancel", {"taskId": None}),
    ("tasks/update", {"taskId": "x"}), ("tasks/update", {"taskId": "x", "inputResponses": []}),
])
async def test_malformed_task_params_are_invalid_params(peer: Peer, method: str,
                                                        params: dict[str, Any]) -> None:
    task_id = params.get("taskId")
    headers = {"Mcp-Name": task_id} if isinstance(task_id, str) else None
    reply = await peer.request(method, params, meta=with_tasks(), headers=headers)
    # Over HTTP a taskId that is not a string cannot match any Mcp-Name: -32020 first.
    expected = -32020 if peer.has_headers and not isinstance(task_id, str) else INVALID_PARAMS
    assert reply.code == expected, reply.response


# -- input through the task ----------------------------------------------------------------

async def test_confirm_delete_waits_on_input_then_completes(peer: Peer) -> None:
    task_id = await created(peer, "confirm_delete", {"filename": "a.txt"})
    waiting = await poll(peer, task_id, until=("input_required",))
    [(key, request)] = waiting["inputRequests"].items()
    assert key.startswith("confirm-") and request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Delete a.txt?"
    # An answer breaking the requested schema is -32602 and records nothing.
    bad = await task_request(peer, "tasks/update", task_id, inputResponses={
        key: {"action": "accept", "content": {"confirm": "yes"}}})
    assert bad.code == INVALID_PARAMS
    assert (await task_request(peer, "tasks/get", task_id)).result["inputRequests"]
    # Unknown keys are ignored and acked.
    ignored = await task_request(peer, "tasks/update", task_id,
                                 inputResponses={"unknown-key": {"ignored": True}})
    assert ignored.result["resultType"] == "complete"
    ack = await task_request(peer, "tasks/update", task_id, inputResponses={key: ACCEPT})
    assert set(ack.result) <= {"resultType", "_meta"}
    done = await poll(peer, task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Deleted a.txt."


async def test_two_questions_at_once_can_be_answered_one_by_one(peer: Peer) -> None:
    task_id = await created(peer, "multi_input")
    deadline = time.monotonic() + 5
    while True:
        task = (await task_request(peer, "tasks/get", task_id)).result
        if len(task.get("inputRequests") or {}) == 2:
            break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    first, second = task["inputRequests"]
    await task_request(peer, "tasks/update", task_id, inputResponses={
        first: {"action": "accept", "content": {"name": "one", "confirm": True}}})
    partial = (await task_request(peer, "tasks/get", task_id)).result
    assert partial["status"] == "input_required"
    assert list(partial["inputRequests"]) == [second]
    await task_request(peer, "tasks/update", task_id, inputResponses={
        second: {"action": "accept", "content": {"name": "two"}}})
    done = await poll(peer, task_id)
    assert done["result"]["content"][0]["text"] == "Answers: one, two"


async def test_mrtr_first_then_the_task(peer: Peer) -> None:
    first = (await call(peer, "test_tool_with_task")).result
    assert first["resultType"] == "input_required" and "taskId" not in first
    [key] = first["inputRequests"]
    second = (await call(peer, "test_tool_with_task", inputResponses={
        key: {"action": "accept", "content": {"name": "Alice"}}},
        requestState=first["requestState"])).result
    assert second["resultType"] == "task" and "requestState" not in second
    done = await poll(peer, second["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Hello, Alice, from a task."


# -- HTTP routing headers ------------------------------------------------------------------

async def test_mcp_name_must_equal_the_task_id() -> None:
    peer = HttpPeer(everything.app)
    task_id = await created(peer, "slow_compute", {"seconds": 30})
    good = await task_request(peer, "tasks/get", task_id)
    assert good.result["taskId"] == task_id
    for headers in ({"Mcp-Name": "some-other-task"}, {"Mcp-Name": None}):
        reply = await peer.request("tasks/get", {"taskId": task_id}, meta=with_tasks(),
                                   headers=headers)
        assert reply.code == -32020 and reply.status == 400
    wrong_method = await peer.request("tools/call", {"name": "greet", "arguments": {
        "name": "x"}}, meta=with_tasks(), headers={"Mcp-Method": "tasks/get"})
    assert wrong_method.code == -32020
    await task_request(peer, "tasks/cancel", task_id)


# -- listen streams ------------------------------------------------------------------------

async def test_listen_reports_each_status_change_of_owned_tasks(peer: Peer) -> None:
    task_id = await created(peer, "confirm_delete", {"filename": "b.txt"})
    async with peer.listen({"taskIds": [task_id, "A" * 32]}, meta=with_tasks()) as sub:
        ack = await sub.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        seen: list[dict[str, Any]] = []
        while not seen or seen[-1]["status"] != "input_required":
            note = await sub.next()
            assert note["method"] == "notifications/tasks"
            assert note["params"]["_meta"][SUBSCRIPTION_ID] == sub.id
            seen.append(note["params"])
        [key] = seen[-1]["inputRequests"]
        await task_request(peer, "tasks/update", task_id, inputResponses={key: ACCEPT})
        while seen[-1]["status"] != "completed":
            seen.append((await sub.next())["params"])
        assert seen[-1]["result"]["content"][0]["text"] == "Deleted b.txt."
        assert all(a != b for a, b in itertools.pairwise(seen))  # each change once
