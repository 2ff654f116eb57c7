"""A destructive tool awaiting confirmation becomes a task waiting on ``input_required``.

The confirmation the policy asks for is an ordinary question of the handler's round; in a
task it is the task's input request, so the approval can come hours later, through
``tasks/update`` on any instance, without a held connection. The audit trail: one event
when the task is created (``result: "task"``) and one when its work ends, both naming
the task.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from mcpcore import MemoryAuditSink, Policy, Principal, Rule, Ruleset, Server
from mcpcore.jsonrpc import Request, decode_message
from tests.support.wire import TASK_CAPS, make_meta

ALICE = Principal("alice", issuer="https://idp.example", tenant="contoso",
                  scopes=frozenset({"mcp:admin"}), auth_method="jwt")


def rig() -> tuple[Server, MemoryAuditSink, list[str]]:
    audit, ran = MemoryAuditSink(), []
    policy = Policy(Ruleset([Rule("confirm-destructive", "confirm", categories={"destructive"})],
                            allowed_tenants={"contoso"}), sinks=[audit])
    server = Server("policy-tasks", policy=policy)

    @server.tool(annotations={"destructiveHint": True}, task="optional")
    def drop_table(name: str) -> str:
        """Drops a table (for the test: remembers that it would have)."""
        ran.append(name)
        return f"dropped {name}"

    return server, audit, ran


async def request(server: Server, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method,
            "params": {**params, "_meta": make_meta(TASK_CAPS)}}
    message = decode_message(json.dumps(body).encode())
    assert isinstance(message, Request)
    return await server.handle(message, principal=ALICE)


async def until(server: Server, task_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while True:
        task = await request(server, "tasks/get", {"taskId": task_id})
        if task["status"] in statuses:
            return task
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.01)


@pytest.mark.parametrize(("answer", "text", "confirmation"), [
    ({"action": "accept", "content": {"confirm": True}}, "dropped users", "accepted"),
    ({"action": "decline"}, "The user did not approve this tool call.", "declined"),
])
async def test_confirmation_inside_a_task(answer: dict[str, Any], text: str,
                                          confirmation: str) -> None:
    server, audit, ran = rig()
    try:
        handle = await request(server, "tools/call", {"name": "drop_table",
                                                      "arguments": {"name": "users"}})
        assert handle["resultType"] == "task"
        task_id = handle["taskId"]
        waiting = await until(server, task_id, ("input_required",))
        [(key, question)] = waiting["inputRequests"].items()
        assert key.startswith("policy_confirm_")
        assert "drop_table" in question["params"]["message"]
        assert ran == []
        [created] = audit.events
        assert (created.result, created.task_id, created.decision) == ("task", task_id,
                                                                        "confirm")
        await request(server, "tasks/update", {"taskId": task_id,
                                               "inputResponses": {key: answer}})
        done = await until(server, task_id, ("completed", "failed", "cancelled"))
        assert done["status"] == "completed"
        assert done["result"]["content"][0]["text"] == text
        assert ran == (["users"] if confirmation == "accepted" else [])
        first, last = audit.events
        assert first is created and first.result == "task"  # not changed afterwards
        assert last.task_id == task_id and last.confirmation == confirmation
        assert last.result == ("ok" if confirmation == "accepted" else "tool_error")
        # The question is asked inside the task, after the first event was written.
        assert first.confirmation_id is None and last.confirmation_id in key
    finally:
        await server.aclose()
