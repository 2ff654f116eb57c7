"""When the store misbehaves: a backend double that fails on demand, over the real
memory backend. Nothing is lost silently: a failed write either surfaces as an error
to the caller, or leaves the lease to lapse so the task still ends (``failed``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from mcpcore.errors import InternalError
from mcpcore.inputs import elicitation
from mcpcore.stores import LocalTaskBackend, MemoryStore, StoredTask, StoreError
from mcpcore.stores import StoreUnavailable as Down
from mcpcore.tasks import TaskManager, TaskRun
from mcpcore.tasks.manager import MAX_ATTEMPTS
from tests.tasks.conftest import Clock, eventually

ALICE = "|alice"


class Flaky:
    """A ``TaskBackend`` that delegates to a real one and fails the operations named in
    ``failing`` (with ``StoreUnavailable``); ``lose_races`` makes every write lose."""

    def __init__(self, inner: LocalTaskBackend) -> None:
        self.inner = inner
        self.failing: set[str] = set()
        self.lose_races = False
        self.taken_ids: int = 0

    def _check(self, op: str) -> None:
        if op in self.failing:
            raise Down(f"store down during {op}")

    async def insert(self, task_id: str, data: bytes, *, ttl_ms: int) -> bool:
        self._check("insert")
        if self.taken_ids:
            self.taken_ids -= 1
            return False
        return await self.inner.insert(task_id, data, ttl_ms=ttl_ms)

    async def load(self, task_id: str) -> StoredTask | None:
        self._check("load")
        return await self.inner.load(task_id)

    async def replace(self, task_id: str, version: int, data: bytes, *, ttl_ms: int,
                      answers: bytes | None = None, finished: bool = False) -> bool:
        self._check("replace")
        if self.lose_races:
            return False
        return await self.inner.replace(task_id, version, data, ttl_ms=ttl_ms,
                                        answers=answers, finished=finished)

    async def answers(self, task_id: str, after: str | None = None
                      ) -> list[tuple[str, bytes]]:
        self._check("answers")
        return await self.inner.answers(task_id, after)


@pytest.fixture
def flaky(memory_store: MemoryStore) -> Flaky:
    return Flaky(LocalTaskBackend(memory_store))


def status(task: object) -> str:
    data: dict[str, Any] = msgspec.to_builtins(task)
    return str(data["status"])


async def test_a_store_that_is_down_fails_the_request_not_the_server(
        memory_store: MemoryStore, flaky: Flaky, clock: Clock) -> None:
    manager = TaskManager(memory_store, backend=flaky, clock=clock)
    flaky.failing = {"insert"}

    async def quick(run: TaskRun) -> dict[str, Any]:
        return {"content": []}

    with pytest.raises(Down):
        await manager.start(ALICE, quick)
    assert manager.running == 0
    flaky.failing = set()
    created = await manager.start(ALICE, quick)
    flaky.failing = {"load"}
    with pytest.raises(Down):
        await manager.get(created.task_id, ALICE)
    flaky.failing = set()
    await manager.aclose()


async def test_an_id_collision_mints_another_and_gives_up_after_three(
        memory_store: MemoryStore, flaky: Flaky, clock: Clock) -> None:
    manager = TaskManager(memory_store, backend=flaky, clock=clock)

    async def quick(run: TaskRun) -> dict[str, Any]:
        return {"content": []}

    flaky.taken_ids = 2
    created = await manager.start(ALICE, quick)
    assert created.task_id
    flaky.taken_ids = 3
    with pytest.raises(InternalError, match="unique task id"):
        await manager.start(ALICE, quick)
    await manager.aclose()


async def test_endless_write_races_are_an_error_not_a_loop(
        memory_store: MemoryStore, flaky: Flaky, clock: Clock) -> None:
    manager = TaskManager(memory_store, backend=flaky, clock=clock, lease=10.0)
    release = asyncio.Event()

    async def blocked(run: TaskRun) -> dict[str, Any]:
        await release.wait()
        return {"content": []}

    created = await manager.start(ALICE, blocked)
    flaky.lose_races = True
    with pytest.raises(StoreError, match=f"under {MAX_ATTEMPTS} attempts"):
        await manager.cancel(created.task_id, ALICE)
    flaky.lose_races = False
    release.set()
    await eventually(lambda: manager.running == 0)
    assert status(await manager.get(created.task_id, ALICE)) == "completed"
    await manager.aclose()


async def test_a_result_that_cannot_be_written_leaves_the_lease_to_lapse(
        memory_store: MemoryStore, flaky: Flaky, clock: Clock) -> None:
    worker = TaskManager(memory_store, backend=flaky, clock=clock, lease=10.0)
    poller = TaskManager(memory_store, clock=clock, lease=10.0)
    release = asyncio.Event()

    async def blocked(run: TaskRun) -> dict[str, Any]:
        await release.wait()
        return {"content": []}

    created = await worker.start(ALICE, blocked)
    flaky.failing = {"replace"}
    release.set()
    await eventually(lambda: worker.running == 0)
    assert status(await poller.get(created.task_id, ALICE)) == "working"
    clock.advance(10.1)
    assert status(await poller.get(created.task_id, ALICE)) == "failed"
    await worker.aclose()
    await poller.aclose()


async def test_renewals_and_wake_ups_survive_a_store_outage(
        memory_store: MemoryStore, flaky: Flaky, clock: Clock) -> None:
    ticks: list[asyncio.Future[None]] = []

    async def sleep(seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        ticks.append(future)
        await future

    async def tick() -> None:
        await eventually(lambda: bool(ticks))
        ticks.pop(0).set_result(None)
        for _ in range(20):
            await asyncio.sleep(0)

    worker = TaskManager(memory_store, backend=flaky, clock=clock, lease=9.0, sleep=sleep)
    poller = TaskManager(memory_store, clock=clock)
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}

    async def work(run: TaskRun) -> dict[str, Any]:
        [answer] = await run.ask(elicitation("OK?", schema))
        return {"content": [{"type": "text", "text": answer.action}]}  # type: ignore[union-attr]

    created = await worker.start(ALICE, work)

    async def waiting() -> bool:
        return status(await poller.get(created.task_id, ALICE)) == "input_required"

    await eventually(waiting)
    flaky.failing = {"load", "replace", "answers"}
    await tick()  # the renewal fails: logged, tried again next time
    task = msgspec.to_builtins(await poller.get(created.task_id, ALICE))
    [key] = task["inputRequests"]
    await poller.update(created.task_id, ALICE, {key: {"action": "accept",
                                                       "content": {"ok": True}}})
    # The wake-up arrived while the store was down for the worker: nothing happened.
    assert worker.running == 1
    flaky.failing = set()
    clock.advance(3)
    await tick()  # renewal works again, and the waiting ask looks and finds its answer

    async def completed() -> bool:
        return status(await poller.get(created.task_id, ALICE)) == "completed"

    await eventually(completed)
    await worker.aclose()
    await poller.aclose()


async def test_a_subscription_failure_at_start_is_reported(clock: Clock) -> None:
    store = MemoryStore(clock=clock)
    await store.close()  # a closed store refuses to subscribe
    manager = TaskManager(store, backend=LocalTaskBackend(MemoryStore(clock=clock)),
                          clock=clock)

    async def quick(run: TaskRun) -> dict[str, Any]:
        return {"content": []}

    with pytest.raises(Down):
        await manager.start(ALICE, quick)
    await manager.aclose()


async def test_a_run_cancelled_from_outside_ends_its_task_and_re_raises(
        managers: Callable[..., TaskManager]) -> None:
    """Not a client's cancel, not our shutdown: say, the event loop going away."""
    manager = managers()
    started = asyncio.Event()

    async def work(run: TaskRun) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(3600)
        return {"content": []}

    created = await manager.start(ALICE, work)
    await started.wait()
    run_task = manager._runs[created.task_id]._task
    assert run_task is not None
    run_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run_task
    failed: dict[str, Any] = msgspec.to_builtins(await manager.get(created.task_id, ALICE))
    assert failed["status"] == "failed" and "shut down" in failed["error"]["message"]
