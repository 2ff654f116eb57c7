"""Tasks across instances on a real Redis: each ``TaskManager`` has its own
``RedisStore`` (its own connections), as the instances of a fleet do.

Created on one, polled, answered and cancelled on the others; a worker process killed
mid-task leaves its task ``failed`` within the lease time; a thousand tasks leave no key
once they expire.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import redis.asyncio as aioredis

from mcpcore.inputs import elicitation
from mcpcore.stores import RedisStore
from mcpcore.tasks import TaskManager, TaskRun, UnknownTask

pytestmark = pytest.mark.integration

ALICE, BOB = "|alice", "|bob"
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
WORKER = Path(__file__).with_name("worker_process.py")


def wire(value: object) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(value)
    return data


@pytest.fixture
def prefix() -> str:
    return f"fleet-{uuid.uuid4().hex[:8]}:"


@pytest.fixture
async def fleet(redis_url: str, prefix: str) -> AsyncIterator[Callable[..., TaskManager]]:
    made: list[TaskManager] = []

    def instance(**options: Any) -> TaskManager:
        manager = TaskManager(RedisStore.from_url(redis_url, prefix=prefix), **options)
        made.append(manager)
        return manager

    yield instance
    for manager in made:
        await manager.aclose()
        await manager.store.close()


async def until(manager: TaskManager, task_id: str, status: str, within: float = 5.0
                ) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        task = wire(await manager.get(task_id, ALICE))
        if task["status"] == status:
            return task
        assert time.monotonic() < deadline, f"still {task['status']}, not {status}"
        await asyncio.sleep(0.02)


async def test_created_on_one_instance_served_by_the_others(
        fleet: Callable[..., TaskManager]) -> None:
    # A 60 s lease: renewals (every 20 s) cannot be what delivers answers here, so a
    # prompt completion shows the pub/sub wake-up reached the worker instance.
    worker, poller, answerer = fleet(lease=60.0), fleet(), fleet()

    async def work(run: TaskRun) -> dict[str, Any]:
        [answer] = await run.ask(elicitation("Proceed?", CONFIRM, key="go"))
        return {"content": [{"type": "text", "text": f"answer: {answer.action}"}]}

    created = await worker.start(ALICE, work)
    assert wire(await poller.get(created.task_id, ALICE))["taskId"] == created.task_id
    with pytest.raises(UnknownTask):
        await poller.get(created.task_id, BOB)
    waiting = await until(poller, created.task_id, "input_required")
    [key] = waiting["inputRequests"]
    started = time.monotonic()
    await answerer.update(created.task_id, ALICE, {key: {"action": "accept",
                                                         "content": {"confirm": True}}})
    done = await until(poller, created.task_id, "completed", within=3.0)
    assert time.monotonic() - started < 3.0
    assert done["result"]["content"][0]["text"] == "answer: accept"


async def test_cancelled_through_another_instance(fleet: Callable[..., TaskManager]) -> None:
    worker, other = fleet(lease=60.0), fleet()
    stopped = asyncio.Event()

    async def work(run: TaskRun) -> dict[str, Any]:
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.set()
        return {"content": []}

    created = await worker.start(ALICE, work)
    await other.cancel(created.task_id, ALICE)
    assert wire(await other.get(created.task_id, ALICE))["status"] == "cancelled"
    await asyncio.wait_for(stopped.wait(), 3.0)
    await other.cancel(created.task_id, ALICE)  # idempotent


async def test_a_killed_worker_leaves_its_task_failed_within_the_lease(
        redis_url: str, prefix: str, fleet: Callable[..., TaskManager]) -> None:
    lease = 1.5
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), redis_url, prefix, str(lease), ALICE],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    try:
        assert proc.stdout is not None
        task_id = proc.stdout.readline().decode().strip()
        assert task_id, proc.stderr.read().decode() if proc.stderr else "no task id"
        poller = fleet()
        await asyncio.sleep(lease * 1.5)  # the worker renews meanwhile
        assert wire(await poller.get(task_id, ALICE))["status"] == "working"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=5)
        killed = time.monotonic()
        failed = await until(poller, task_id, "failed", within=lease + 1.0)
        assert time.monotonic() - killed <= lease + 0.5
        assert "lease lapsed" in failed["error"]["message"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


async def test_a_thousand_expired_tasks_leave_no_key(
        redis_url: str, prefix: str, fleet: Callable[..., TaskManager]) -> None:
    manager = fleet(ttl=3.0)

    async def quick(run: TaskRun) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "done"}]}

    async def asks(run: TaskRun) -> dict[str, Any]:
        await run.ask(elicitation("Never answered", CONFIRM))
        return {"content": []}

    ids: list[str] = []
    for _ in range(10):
        created = await asyncio.gather(*(
            manager.start(ALICE, asks if i % 10 == 0 else quick) for i in range(100)))
        ids.extend(c.task_id for c in created)
    assert len(set(ids)) == 1000
    raw = aioredis.Redis.from_url(redis_url)
    try:
        assert wire(await manager.get(ids[-1], ALICE))["taskId"] == ids[-1]
        deadline = time.monotonic() + 15.0
        while keys := await raw.keys(f"{prefix}*"):
            assert time.monotonic() < deadline, f"{len(keys)} keys outlived their tasks"
            await asyncio.sleep(0.1)
        with pytest.raises(UnknownTask):
            await manager.get(ids[-1], ALICE)
        deadline = time.monotonic() + 10.0
        while manager.running:  # the unanswered ones notice and stop
            assert time.monotonic() < deadline, f"{manager.running} still running"
            await asyncio.sleep(0.1)
    finally:
        await raw.aclose()
