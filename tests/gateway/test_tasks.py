"""The tasks extension through the gateway (docs/gateway.md, "Calls"): an upstream's task
is the caller's under an id the gateway seals; ``tasks/get``, ``tasks/update`` and
``tasks/cancel`` with it reach the owner with the upstream's own id; another principal's,
a tampered or a removed upstream's id is refused with a typed error; status
notifications reach a listen stream; an upstream that makes no task (or a 2025 one)
answers synchronously."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import pytest

from mcpcore import StreamableHTTP
from mcpcore.client import TaskHandle
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.client.tasks import task_of
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.tasks import RelayedTask
from mcpcore.principal import ANONYMOUS
from mcpcore.tasks.wire import TASKS_EXTENSION
from tests.gateway.inprocess import (
    alpha_server,
    beta_server,
    downstream,
    jobs_server,
    serving,
    two_upstreams,
    with_jobs,
)

TASKS = {"extensions": {TASKS_EXTENSION: {}}}


def accept(params: dict[str, Any]) -> dict[str, Any]:
    if "name" in params["requestedSchema"]["properties"]:
        return {"action": "accept", "content": {"name": "Ada"}}
    return {"action": "accept", "content": {"confirm": True}}


def apps() -> tuple[dict[str, object], dict[str, str]]:
    """The three upstreams, and what the ``jobs`` upstream's tasks are now (its own task
    id -> status), as it records them."""
    jobs = jobs_server()
    seen: dict[str, str] = {}
    manager = jobs.tasks.manager
    announce = manager.on_change
    assert announce is not None

    async def spy(record: Any) -> None:
        seen[record.task_id] = record.status.value
        await announce(record)

    manager.on_change = spy
    return ({"alpha": StreamableHTTP(alpha_server()), "beta": StreamableHTTP(beta_server()),
             "jobs": StreamableHTTP(jobs)}, seen)


async def test_an_upstream_task_is_the_callers_under_a_sealed_id() -> None:
    served, jobs = apps()
    async with serving(with_jobs(two_upstreams()), served) as gateway, \
            downstream(gateway, "2026-07-28", on_elicit=accept) as client:
        handle = await client.tasks.call_tool("jobs__build", {"seconds": 0.2})
        assert isinstance(handle, TaskHandle)
        assert handle.created is not None and handle.created.status == "working"
        [upstream_id] = list(jobs)
        # The caller's id is the gateway's: the upstream's own never shows in clear.
        assert handle.task_id != upstream_id and upstream_id not in handle.task_id
        result = await handle.wait()
        assert result.content[0].text == "built in 0.2 s"
        assert handle.last is not None and handle.last.task_id == handle.task_id
        # A second call is a second task, with an id of its own.
        other = await client.tasks.call_tool("jobs__build", {"seconds": 0})
        assert isinstance(other, TaskHandle) and other.task_id != handle.task_id


async def test_questions_answers_and_cancellation_reach_the_owner() -> None:
    served, jobs = apps()
    async with serving(with_jobs(two_upstreams()), served) as gateway, \
            downstream(gateway, "2026-07-28", on_elicit=accept) as client:
        # input_required: the upstream's question on tasks/get, answered by tasks/update.
        handle = await client.tasks.call_tool("jobs__approve", {"item": "budget"})
        assert isinstance(handle, TaskHandle)
        for _ in range(500):
            task = await get(client, handle.task_id)
            if task["status"] == "input_required":
                break
            await asyncio.sleep(0.02)
        assert task["taskId"] == handle.task_id
        [(key, request)] = task["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert request["params"]["message"] == "Approve budget?"
        await handle.update({key: {"action": "accept", "content": {"confirm": True}}})
        assert (await handle.wait()).content[0].text == "budget approved"
        # cancel: the upstream's task ends cancelled, and so does the caller's view.
        long = await client.tasks.call_tool("jobs__build", {"seconds": 60})
        assert isinstance(long, TaskHandle)
        await long.cancel()
        assert (await get(client, long.task_id))["status"] == "cancelled"
        assert sorted(jobs.values()) == ["cancelled", "completed"]
        # A protocol error inside the task: failed, its error relayed.
        broken = await client.tasks.call_tool("jobs__broken", {})
        assert isinstance(broken, TaskHandle)
        with pytest.raises(RemoteProtocolError) as failed:
            await broken.wait()
        assert failed.value.code == -32602 and "broken on purpose" in str(failed.value)


async def test_input_rounds_first_then_a_task() -> None:
    """SEP-2663's composition: the upstream asks (MRTR, relayed in the gateway's sealed
    state), then makes the call a task on the retry: the caller gets the gateway's
    handle on that round."""
    served, _ = apps()
    async with serving(with_jobs(two_upstreams()), served) as gateway, \
            downstream(gateway, "2026-07-28", on_elicit=accept) as client:
        handle = await client.tasks.call_tool("jobs__named", {})
        assert isinstance(handle, TaskHandle)
        assert (await handle.wait()).content[0].text == "Hello, Ada"


async def test_no_task_without_the_extension_or_from_a_2025_upstream() -> None:
    served, jobs = apps()
    async with serving(with_jobs(two_upstreams()), served) as gateway:
        async with downstream(gateway, "2026-07-28") as client:
            # Not declared: the upstream runs it synchronously, or needs the extension.
            result = await client.call_tool("jobs__build", {"seconds": 0})
            assert result.content[0].text == "built in 0 s"
            with pytest.raises(RemoteProtocolError) as required:
                await client.call_tool("jobs__named", {})
            assert required.value.code == -32021
            assert required.value.data == {"requiredCapabilities": TASKS}
            with pytest.raises(RemoteProtocolError) as undeclared:
                await client.request("tasks/get", {"taskId": "x"})
            assert undeclared.value.code == -32021
        async with downstream(gateway, "2026-07-28", on_elicit=accept) as client:
            # Declared, but a 2025 upstream (beta) or a tool that is never a task.
            assert await client.tasks.call_tool("beta__echo", {"text": "hi"}) == \
                await client.call_tool("beta__echo", {"text": "hi"})
            quick = await client.tasks.call_tool("jobs__quick", {})
            assert not isinstance(quick, TaskHandle) and quick.content[0].text == "quick"
        async with downstream(gateway, "legacy") as legacy:
            # A 2025 caller never gets a task, and has no tasks/* methods.
            assert (await legacy.call_tool("jobs__build", {"seconds": 0})).content[0].text \
                == "built in 0 s"
            with pytest.raises(RemoteProtocolError) as missing:
                await legacy.request("tasks/get", {"taskId": "x"})
            assert missing.value.code == -32601
    assert list(jobs.values()) == []  # the upstream made no task at all


async def get(client: Any, task_id: str) -> dict[str, Any]:
    return await client.tasks.request("tasks/get", task_id)


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_ids_the_gateway_will_not_route(method: str) -> None:
    served, jobs = apps()
    config = with_jobs(two_upstreams())
    async with serving(config, served) as gateway, \
            downstream(gateway, "2026-07-28") as client:
        handle = await client.tasks.call_tool("jobs__build", {"seconds": 60})
        assert isinstance(handle, TaskHandle)
        [upstream_id] = list(jobs)
        extra = {"inputResponses": {}} if method == "tasks/update" else {}

        async def refused(task_id: str) -> dict[str, Any]:
            with pytest.raises(RemoteProtocolError) as error:
                await client.tasks.request(method, task_id, **extra)
            assert error.value.code == -32602
            assert isinstance(error.value.data, dict)
            return error.value.data

        # Another principal's task: the id it holds names it as its owner.
        theirs = gateway.tasks.seal(RelayedTask("jobs", upstream_id, "jobs__build"),
                                    "https://idp.example|mallory")
        assert await refused(theirs) == {"reason": "other_principal"}
        # Tampered with (one character changed), made up, or the upstream's own id.
        middle = len(handle.task_id) // 2
        flipped = "A" if handle.task_id[middle] != "A" else "B"
        tampered = handle.task_id[:middle] + flipped + handle.task_id[middle + 1:]
        for bad in (tampered, "tasks-conformance-nonexistent-12345", upstream_id):
            assert await refused(bad) == {"reason": "invalid_task_id"}
        # An upstream no longer configured (the same key ring: another instance of the
        # fleet, started with a config without it).
        gone = gateway.tasks.seal(RelayedTask("retired", upstream_id, "retired__build"),
                                  ANONYMOUS.key)
        assert await refused(gone) == {"reason": "upstream_removed", "upstream": "retired"}
        # None of those reached the upstream: its task still runs, and ours still works.
        assert jobs[upstream_id] == "working"
        assert (await get(client, handle.task_id))["status"] == "working"
        await handle.cancel()


async def test_status_notifications_reach_a_listen_stream() -> None:
    served, _ = apps()
    async with serving(with_jobs(two_upstreams()), served) as gateway, \
            downstream(gateway, "2026-07-28") as client:
        gateway.tasks.watch_interval = 0.05
        handle = await client.tasks.call_tool("jobs__build", {"seconds": 0.3})
        assert isinstance(handle, TaskHandle)
        unknown = gateway.tasks.seal(RelayedTask("jobs", "x" * 32, "jobs__build"),
                                     "|someone-else")
        seen: list[str] = []
        async with asyncio.timeout(30):
            async with client.tasks.listen([handle.task_id, unknown, "junk"]) as stream:
                async for note in stream:
                    if note.method == "notifications/subscriptions/acknowledged":
                        assert isinstance(note.params, dict)
                        assert note.params["notifications"]["taskIds"] == [handle.task_id]
                        continue
                    assert task_of(note).task_id == handle.task_id
                    assert isinstance(note.params, dict)
                    seen.append(note.params["status"])
                    if seen[-1] == "completed":
                        break
        assert seen[0] == "working" and seen[-1] == "completed"
        assert len(seen) == len(set(seen))  # each change once


def test_the_gateway_advertises_the_extension() -> None:
    gateway = Gateway(two_upstreams())
    assert gateway.server.capabilities("2026-07-28")["extensions"] == {TASKS_EXTENSION: {}}
    assert "extensions" not in gateway.server.capabilities("2025-11-25")


class Forging:
    """The ``jobs`` upstream, except that requests of a method in ``forged`` get that
    result instead (a hostile or broken upstream's answers)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.forged: dict[str, dict[str, Any]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not self.forged:
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        request = json.loads(raw)
        if request.get("method") not in self.forged:
            replayed = [{"type": "http.request", "body": raw, "more_body": False}]

            async def again() -> Any:
                return replayed.pop() if replayed else await receive()

            await self.app(scope, again, send)
            return
        reply = {"jsonrpc": "2.0", "id": request["id"],
                 "result": self.forged[request["method"]]}
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(reply).encode()})


def forged_task(task_id: str = "t-1", **fields: Any) -> dict[str, Any]:
    return {"resultType": "task", "taskId": task_id, "status": "working",
            "createdAt": "2026-07-28T00:00:00Z", "lastUpdatedAt": "2026-07-28T00:00:00Z",
            "ttlMs": 60_000, **fields}


async def test_an_upstreams_task_answers_are_checked_and_bounded() -> None:
    forging = Forging(StreamableHTTP(jobs_server()))
    served = {"alpha": StreamableHTTP(alpha_server()), "beta": StreamableHTTP(beta_server()),
              "jobs": forging}
    async with serving(with_jobs(two_upstreams()), served) as gateway, \
            downstream(gateway, "2026-07-28") as client:

        async def invalid(call: Any) -> str:
            with pytest.raises(RemoteProtocolError) as failed:
                await call
            assert failed.value.code == -32603
            assert failed.value.data["reason"] == "invalid_response"
            return failed.value.message

        # A task handle that is not one, or whose id could not travel in a header.
        for bad in (forged_task("has spaces"), forged_task("x" * 300),
                    forged_task(status="sleeping"), {"resultType": "task"},
                    forged_task(createdAt="2026" * 100)):
            forging.forged["tools/call"] = bad
            await invalid(client.tasks.call_tool("jobs__build", {}))
        # One that is, with an unbounded lifetime, a junk poll interval and a huge
        # message: bounded on the way.
        forging.forged["tools/call"] = forged_task(ttlMs=None, pollIntervalMs=-5,
                                                   statusMessage="s" * 100_000,
                                                   _meta={"upstream": "secret"})
        handle = await client.tasks.call_tool("jobs__build", {})
        assert isinstance(handle, TaskHandle) and handle.created is not None
        assert handle.created.ttl_ms == 7 * 24 * 3600 * 1000
        assert handle.created.poll_interval_ms is msgspec.UNSET
        assert len(handle.created.status_message or "") < 1100
        assert "upstream" not in (handle.created.meta or {})  # its own _meta left out
        assert len(handle.task_id) < 512
        # tasks/get answers: about another task, a result that is not a CallToolResult,
        # questions that are not ones a client answers, a failure's huge message.
        for bad in ({**forged_task("t-2"), "status": "working"},
                    {**forged_task(), "status": "completed", "result": {"content": 1}},
                    {**forged_task(), "status": "input_required",
                     "inputRequests": {"k": {"method": "tools/call", "params": {}}}}):
            bad.pop("resultType")
            forging.forged["tasks/get"] = bad
            await invalid(get(client, handle.task_id))
        failed = {**forged_task(), "status": "failed",
                  "error": {"code": -32000, "message": "m" * 100_000, "data": "d" * 100_000}}
        failed.pop("resultType")
        forging.forged["tasks/get"] = failed
        body = await get(client, handle.task_id)
        assert body["taskId"] == handle.task_id
        assert body["error"]["code"] == -32000 and len(body["error"]["message"]) < 1100
        assert "data" not in body["error"]
