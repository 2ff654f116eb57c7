"""Tasks across a fleet: three ``examples.everything`` instances, a real Redis, nginx.

- A task created on instance A (its own port) is polled through nginx (answered by the
  others: ``X-Upstream``), answered with ``tasks/update`` on B, watched on a listen
  stream on C, and completes on A, which runs the work.
- A task cancelled on B ends ``cancelled`` at once, for everyone.
- The instance running a task is SIGKILLed mid-task: once its lease lapses (2 s here)
  any instance reports the task ``failed``, never stuck in ``working``.
- 1,000 tasks (finished, answered, and still waiting for input) expire with their TTL
  and leave no key behind in Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.integration.conftest import Fleet, RedisServer, fleet
from tests.integration.test_listen_fleet import SseStream

pytestmark = pytest.mark.integration

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {},
                                                       "extensions": {TASKS: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-fleet", "version": "1"}}
LEASE = 2.0
#: Slack for polling and a busy machine, on top of the lease.
SLACK = 1.0
ACCEPT = {"action": "accept", "content": {"confirm": True}}
#: The ``ttlMs`` (seconds) of the expiry test's tasks.
SHORT_TTL = 6


def headers(method: str, name: str | None = None) -> dict[str, str]:
    out = {"Content-Type": "application/json",
           "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        out["Mcp-Name"] = name
    return out


async def rpc(client: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]
              ) -> tuple[dict[str, Any], str]:
    """One request; its result and the upstream that answered (nginx's ``X-Upstream``,
    or the URL itself when sent to an instance directly)."""
    name = params.get("taskId") or params.get("name")
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    for attempt in range(5):
        response = await client.post(url, json=body, headers=headers(method, str(name)))
        if response.status_code in (502, 503, 504) and attempt < 4:
            await asyncio.sleep(0.05)  # nginx met the killed instance: retry as a client
            continue
        assert response.status_code == 200, response.text
        message = response.json()
        assert "result" in message, message
        return message["result"], response.headers.get("x-upstream", url)
    raise AssertionError("unreachable")


async def create(client: httpx.AsyncClient, url: str, tool: str,
                 arguments: dict[str, Any]) -> str:
    result, _ = await rpc(client, url, "tools/call", {"name": tool, "arguments": arguments})
    assert result["resultType"] == "task", result
    task_id: str = result["taskId"]
    return task_id


async def until(client: httpx.AsyncClient, url: str, task_id: str,
                statuses: tuple[str, ...], within: float = 10.0
                ) -> tuple[dict[str, Any], list[str]]:
    """Poll ``tasks/get`` until the status is one of ``statuses``; the task and every
    upstream that answered."""
    deadline = time.monotonic() + within
    upstreams: list[str] = []
    while True:
        task, upstream = await rpc(client, url, "tasks/get", {"taskId": task_id})
        upstreams.append(upstream)
        if task["status"] in statuses:
            return task, upstreams
        assert time.monotonic() < deadline, f"still {task['status']}"
        await asyncio.sleep(0.05)


@pytest.fixture
def task_fleet(redis_server: RedisServer, tmp_path: Path) -> Iterator[Fleet]:
    with fleet(tmp_path, env={"MCPCORE_REDIS_URL": redis_server.url,
                              "MCPCORE_TASK_LEASE": str(LEASE)}) as running:
        yield running


@contextlib.asynccontextmanager
async def listen(client: httpx.AsyncClient, url: str, task_ids: list[str]
                 ) -> Any:
    body = {"jsonrpc": "2.0", "id": "watch", "method": "subscriptions/listen",
            "params": {"_meta": META, "notifications": {"taskIds": task_ids}}}
    async with client.stream("POST", url, json=body,
                             headers=headers("subscriptions/listen")) as response:
        assert response.status_code == 200, await response.aread()
        yield SseStream(response)


async def test_a_task_is_polled_answered_watched_and_cancelled_across_instances(
        task_fleet: Fleet) -> None:
    a, b, c = (task_fleet.instance_url(i) for i in range(3))
    home = f"127.0.0.1:{task_fleet.ports[0]}"
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await create(client, a, "confirm_delete", {"filename": "fleet.txt"})
        async with listen(client, c, [task_id]) as watch:
            ack = await watch.next()
            assert ack["params"]["notifications"] == {"taskIds": [task_id]}
            waiting, upstreams = await until(client, task_fleet.url, task_id,
                                             ("input_required",))
            # Round-robin: the polls through nginx reached the other instances too.
            while len(set(upstreams)) < 3:
                _, upstream = await rpc(client, task_fleet.url, "tasks/get",
                                        {"taskId": task_id})
                upstreams.append(upstream)
            assert home in upstreams and len(set(upstreams)) == 3, upstreams
            [key] = waiting["inputRequests"]
            ack_update, _ = await rpc(client, b, "tasks/update",
                                      {"taskId": task_id, "inputResponses": {key: ACCEPT}})
            assert set(ack_update) <= {"resultType", "_meta"}
            done, _ = await until(client, c, task_id, ("completed",))
            assert done["result"]["content"][0]["text"] == "Deleted fleet.txt."
            # C's stream heard A's changes through Redis: each status, the last completed.
            seen: list[str] = []
            while not seen or seen[-1] != "completed":
                note = await watch.next()
                assert note["method"] == "notifications/tasks"
                seen.append(note["params"]["status"])
            assert "input_required" in seen
        # Cancelled on B, the task A runs is cancelled for everyone at once.
        slow = await create(client, a, "slow_compute", {"seconds": 60})
        await rpc(client, b, "tasks/cancel", {"taskId": slow})
        for url in (a, c, task_fleet.url):
            task, _ = await rpc(client, url, "tasks/get", {"taskId": slow})
            assert task["status"] == "cancelled"


async def test_a_killed_worker_s_task_fails_within_the_lease(task_fleet: Fleet) -> None:
    a, b = task_fleet.instance_url(0), task_fleet.instance_url(1)
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await create(client, a, "slow_compute", {"seconds": 60})
        working, _ = await rpc(client, b, "tasks/get", {"taskId": task_id})
        assert working["status"] == "working"
        task_fleet.procs[0].send_signal(signal.SIGKILL)
        assert task_fleet.procs[0].wait(timeout=5) == -signal.SIGKILL
        killed = time.monotonic()
        failed, upstreams = await until(client, task_fleet.url, task_id, ("failed",),
                                        within=LEASE + 5)
        elapsed = time.monotonic() - killed
        print(f"\nfailed {elapsed:.2f} s after the kill (lease {LEASE} s), via {upstreams}")
        assert elapsed <= LEASE + SLACK
        assert "lease lapsed" in failed["error"]["message"]
        assert failed["error"]["code"] == -32603
        # Every survivor agrees; the record stays failed.
        for url in (b, task_fleet.instance_url(2)):
            again, _ = await rpc(client, url, "tasks/get", {"taskId": task_id})
            assert again["status"] == "failed"


@pytest.fixture
def expiring_fleet(redis_server: RedisServer, tmp_path: Path) -> Iterator[Fleet]:
    with fleet(tmp_path, env={"MCPCORE_REDIS_URL": redis_server.url,
                              "MCPCORE_TASK_LEASE": str(LEASE),
                              "MCPCORE_TASK_TTL": str(SHORT_TTL)}) as running:
        yield running


async def test_a_thousand_expired_tasks_leave_no_keys(expiring_fleet: Fleet,
                                                       redis_server: RedisServer) -> None:
    keys = redis.Redis.from_url(redis_server.url)
    keys.flushall()
    limit = asyncio.Semaphore(32)
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(
            max_connections=32)) as client:

        async def one(n: int) -> str:
            """Task ``n``: 50 answered, 50 left waiting for input, 900 finished at once."""
            async with limit:
                if n % 20 > 1:
                    return await create(client, expiring_fleet.url, "slow_compute",
                                        {"seconds": 0, "label": str(n)})
                task_id = await create(client, expiring_fleet.url, "confirm_delete",
                                       {"filename": f"file-{n}"})
                waiting, _ = await until(client, expiring_fleet.url, task_id,
                                         ("input_required",))
                if n % 20 == 0:  # its answer joins the task's stream in Redis
                    [key] = waiting["inputRequests"]
                    await rpc(client, expiring_fleet.url, "tasks/update",
                              {"taskId": task_id, "inputResponses": {key: ACCEPT}})
                return task_id

        started = time.monotonic()
        made = await asyncio.gather(*(one(n) for n in range(1000)))
        print(f"\n1,000 tasks created in {time.monotonic() - started:.1f} s, "
              f"{keys.dbsize()} keys in Redis")
        assert len(set(made)) == 1000
        assert keys.dbsize() > 0
    deadline = time.monotonic() + 30
    while keys.dbsize() and time.monotonic() < deadline:
        await asyncio.sleep(0.25)
    left = list(keys.scan_iter(count=1000))
    assert left == [], left[:10]
    # And the instances agree the tasks are gone (the waiting ones' work stopped too).
    async with httpx.AsyncClient(timeout=10) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                "params": {"taskId": made[0], "_meta": META}}
        response = await client.post(expiring_fleet.url, json=body,
                                     headers=headers("tasks/get", made[0]))
        assert json.loads(response.text)["error"]["code"] == -32602
    await asyncio.sleep(LEASE)  # a lease renewal of stopped work would re-create keys
    assert keys.dbsize() == 0
