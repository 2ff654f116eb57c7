"""``TaskManager`` and ``TaskRun`` on the memory backend, several managers sharing one
store as the instances of a fleet would share Redis. Time moves by hand (``clock``);
lease renewals tick by hand (``Ticks``), so nothing here waits for a timer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec
import pytest

from mcpcore.errors import InternalError, InvalidInputResponses, InvalidParams, McpError
from mcpcore.inputs import ElicitAnswer, elicitation
from mcpcore.stores import MemoryStore
from mcpcore.tasks import (
    CompletedTask,
    FailedTask,
    InputRequiredTask,
    TaskManager,
    TaskRecord,
    TaskRun,
    UnknownTask,
)
from mcpcore.tasks.record import encode_record
from tests.tasks.conftest import Clock, eventually

Make = Callable[..., TaskManager]
ALICE, BOB = "https://idp.example|alice", "https://idp.example|bob"
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
           "required": ["confirm"]}


def text(value: str, *, error: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"content": [{"type": "text", "text": value}]}
    if error:
        body["isError"] = True
    return body


def wire(value: object) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(value)
    return data


async def status_of(manager: TaskManager, task_id: str, owner: str = ALICE) -> str:
    return wire(await manager.get(task_id, owner))["status"]


async def until_status(manager: TaskManager, task_id: str, status: str) -> dict[str, Any]:
    async def reached() -> bool:
        return await status_of(manager, task_id) == status

    await eventually(reached)
    return wire(await manager.get(task_id, ALICE))


class Ticks:
    """A ``sleep`` for lease loops that returns only when the test says ``tick``."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.sleeping = 0

    async def sleep(self, seconds: float) -> None:
        self.sleeping += 1
        try:
            await self._event.wait()
        finally:
            self.sleeping -= 1

    async def tick(self) -> None:
        """Release the sleepers (waiting for at least one to be asleep first)."""
        await eventually(lambda: self.sleeping > 0)
        event, self._event = self._event, asyncio.Event()
        event.set()
        for _ in range(20):
            await asyncio.sleep(0)


def blocked() -> tuple[asyncio.Event, Callable[[TaskRun], Awaitable[dict[str, Any]]]]:
    """Work that runs until the event is set; records if it was cancelled."""
    release = asyncio.Event()

    async def work(run: TaskRun) -> dict[str, Any]:
        await release.wait()
        return text("released")

    return release, work


# -- creation and results -------------------------------------------------------------

async def test_a_task_is_durable_before_its_creation_is_answered(managers: Make) -> None:
    a, b = managers(), managers()
    release, work = blocked()
    created = wire(await a.start(ALICE, work))
    assert created["resultType"] == "task" and created["status"] == "working"
    # Another instance finds it at once.
    got = wire(await b.get(created["taskId"], ALICE))
    assert got["taskId"] == created["taskId"] and got["status"] == "working"
    assert got["createdAt"] == "2026-07-28T00:00:00.000Z" and got["pollIntervalMs"] == 1000
    release.set()
    done = await until_status(b, created["taskId"], "completed")
    assert done["result"] == text("released")
    assert a.running == 0


@pytest.mark.parametrize("outcome, status, check", [
    (text("no such file", error=True), "completed",
     lambda t: t["result"]["isError"] is True),
    (InternalError("the upstream API refused"), "failed",
     lambda t: t["error"] == {"code": -32603, "message": "the upstream API refused"}),
    (InvalidParams("bad thing", data={"why": 1}), "failed",
     lambda t: t["error"] == {"code": -32602, "message": "bad thing", "data": {"why": 1}}),
    (RuntimeError("password=hunter2"), "failed",
     lambda t: t["error"]["code"] == -32603 and "hunter2" not in repr(t)),
])
async def test_how_the_work_ends_decides_the_status(
        managers: Make, outcome: object, status: str,
        check: Callable[[dict[str, Any]], bool]) -> None:
    manager = managers()

    async def work(run: TaskRun) -> Mapping[str, Any]:
        if isinstance(outcome, BaseException):
            raise outcome
        assert isinstance(outcome, dict)
        return outcome

    created = await manager.start(ALICE, work)
    ended = await until_status(manager, created.task_id, status)
    assert check(ended)
    assert "result" not in ended if status == "failed" else "error" not in ended


async def test_work_that_returns_no_result_object_fails(managers: Make) -> None:
    manager = managers()

    async def wrong(run: TaskRun) -> Any:
        return "a bare string"

    created = await manager.start(ALICE, wrong)
    failed = await until_status(manager, created.task_id, "failed")
    assert failed["error"]["code"] == -32603 and "bare string" not in repr(failed)


async def test_start_takes_ttl_poll_interval_and_message(managers: Make) -> None:
    manager = managers(ttl=120.0, poll_interval=None)
    release, work = blocked()
    created = wire(await manager.start(ALICE, work, ttl=30.0, poll_interval=0.25,
                                       status_message="queued"))
    assert created["ttlMs"] == 30_000 and created["pollIntervalMs"] == 250
    assert created["statusMessage"] == "queued"
    other = wire(await manager.start(ALICE, work))
    assert other["ttlMs"] == 120_000 and "pollIntervalMs" not in other
    release.set()


async def test_an_instance_runs_a_bounded_number_of_tasks(managers: Make) -> None:
    manager = managers(max_running=2)
    release, work = blocked()
    await manager.start(ALICE, work)
    await manager.start(ALICE, work)
    with pytest.raises(InternalError, match="already runs 2 tasks"):
        await manager.start(ALICE, work)
    release.set()
    await eventually(lambda: manager.running == 0)
    await manager.start(ALICE, work)


@pytest.mark.parametrize("options", [{"lease": 0}, {"ttl": -1}, {"max_running": 0}])
def test_bad_settings_are_refused(options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        TaskManager(MemoryStore(), **options)  # type: ignore[arg-type]


# -- who may see a task ---------------------------------------------------------------

async def test_another_principal_gets_not_found(managers: Make) -> None:
    manager = managers()
    release, work = blocked()
    created = await manager.start(ALICE, work)
    for call in (manager.get(created.task_id, BOB),
                 manager.update(created.task_id, BOB, {}),
                 manager.cancel(created.task_id, BOB)):
        with pytest.raises(UnknownTask) as info:
            await call
        assert info.value.code == -32602
        assert info.value.message == "Failed to retrieve task: Task not found"
    assert await status_of(manager, created.task_id) == "working"
    release.set()


@pytest.mark.parametrize("task_id", ["tasks-conformance-nonexistent-12345", "A" * 32,
                                     "", "x" * 10_000, "../../etc"])
async def test_unknown_and_malformed_ids_are_not_found(managers: Make, task_id: str) -> None:
    manager = managers()
    for call in (manager.get(task_id, ALICE), manager.update(task_id, ALICE, {}),
                 manager.cancel(task_id, ALICE)):
        with pytest.raises(UnknownTask):
            await call


# -- input through the task -----------------------------------------------------------

def confirming() -> Callable[[TaskRun], Awaitable[dict[str, Any]]]:
    async def work(run: TaskRun) -> dict[str, Any]:
        [answer] = await run.ask(elicitation("Delete report.txt?", CONFIRM, key="confirm"))
        assert isinstance(answer, ElicitAnswer)
        confirmed = answer.accepted and bool((answer.content or {}).get("confirm"))
        return text("deleted" if confirmed else "kept")

    return work


async def test_input_asked_on_one_instance_is_answered_on_another(managers: Make) -> None:
    a, b = managers(), managers()
    created = await a.start(ALICE, confirming())
    waiting = await until_status(b, created.task_id, "input_required")
    [key] = waiting["inputRequests"]
    assert key.startswith("confirm-")
    assert waiting["inputRequests"][key]["method"] == "elicitation/create"
    # Polling again shows the same outstanding request, under the same key.
    again = wire(await b.get(created.task_id, ALICE))
    assert again["inputRequests"] == waiting["inputRequests"]
    await b.update(created.task_id, ALICE, {key: {"action": "accept",
                                                  "content": {"confirm": True}}})
    done = await until_status(b, created.task_id, "completed")
    assert done["result"] == text("deleted")


async def test_partial_answers_leave_the_rest_outstanding(managers: Make) -> None:
    a, b = managers(), managers()
    named = {"type": "object", "properties": {"name": {"type": "string"},
                                              "confirm": {"type": "boolean"}}}

    async def work(run: TaskRun) -> dict[str, Any]:
        first, second = await asyncio.gather(run.ask(elicitation("One?", named)),
                                             run.ask(elicitation("Two?", named)))
        names = [(x[0].content or {}).get("name") for x in (first, second)]
        return text(" and ".join(str(n) for n in names))

    created = await a.start(ALICE, work)

    async def both_asked() -> bool:
        task = wire(await b.get(created.task_id, ALICE))
        return len(task.get("inputRequests", {})) == 2

    await eventually(both_asked)
    one, two = wire(await b.get(created.task_id, ALICE))["inputRequests"]
    assert one != two
    await b.update(created.task_id, ALICE,
                   {one: {"action": "accept", "content": {"name": "ann", "confirm": True}}})
    after = wire(await b.get(created.task_id, ALICE))
    assert after["status"] == "input_required" and list(after["inputRequests"]) == [two]
    await b.update(created.task_id, ALICE,
                   {two: {"action": "accept", "content": {"name": "bo", "confirm": True}}})
    done = await until_status(b, created.task_id, "completed")
    assert done["result"] == text("ann and bo")


async def test_unknown_keys_are_ignored_and_acknowledged(managers: Make) -> None:
    manager = managers()
    created = await manager.start(ALICE, confirming())
    waiting = await until_status(manager, created.task_id, "input_required")
    await manager.update(created.task_id, ALICE, {"unknown-key": {"ignored": True}})
    assert wire(await manager.get(created.task_id, ALICE)) == waiting


async def test_a_malformed_answer_is_refused_and_loses_nothing(managers: Make) -> None:
    manager = managers()
    created = await manager.start(ALICE, confirming())
    waiting = await until_status(manager, created.task_id, "input_required")
    [key] = waiting["inputRequests"]
    for bad in ({"action": "maybe"}, {"action": "accept", "content": {"confirm": "yes"}},
                {"action": "accept"}):
        with pytest.raises(InvalidInputResponses):
            await manager.update(created.task_id, ALICE, {key: bad})
    assert wire(await manager.get(created.task_id, ALICE)) == waiting
    await manager.update(created.task_id, ALICE, {key: {"action": "decline"}})
    done = await until_status(manager, created.task_id, "completed")
    assert done["result"] == text("kept")


async def test_an_answer_counts_once_even_when_two_instances_race(managers: Make) -> None:
    a, b, c = managers(), managers(), managers()
    release = asyncio.Event()
    got: list[bool] = []

    async def work(run: TaskRun) -> dict[str, Any]:
        [answer] = await run.ask(elicitation("Delete?", CONFIRM))
        got.append(bool((answer.content or {}).get("confirm")))  # type: ignore[union-attr]
        await release.wait()
        return text("done")

    created = await a.start(ALICE, work)
    [key] = (await until_status(b, created.task_id, "input_required"))["inputRequests"]
    await asyncio.gather(
        b.update(created.task_id, ALICE, {key: {"action": "accept",
                                                "content": {"confirm": True}}}),
        c.update(created.task_id, ALICE, {key: {"action": "accept",
                                                "content": {"confirm": False}}}))
    assert len(await a.backend.answers(created.task_id)) == 1
    await eventually(lambda: len(got) == 1)
    release.set()
    await until_status(b, created.task_id, "completed")
    assert len(got) == 1


async def test_keys_stay_unique_over_many_rounds(managers: Make) -> None:
    manager = managers()
    rounds = 5

    async def work(run: TaskRun) -> dict[str, Any]:
        for _ in range(rounds):
            await run.ask(elicitation("Again?", CONFIRM, key="same"))
        return text("done")

    created = await manager.start(ALICE, work)
    seen: list[str] = []
    for _ in range(rounds):
        async def new_key() -> bool:
            task = wire(await manager.get(created.task_id, ALICE))
            keys = [k for k in task.get("inputRequests", {}) if k not in seen]
            return bool(keys)

        await eventually(new_key)
        [key] = wire(await manager.get(created.task_id, ALICE))["inputRequests"]
        seen.append(key)
        # An answer to an earlier key is ignored: it was already answered.
        await manager.update(created.task_id, ALICE,
                             {k: {"action": "accept", "content": {"confirm": True}}
                              for k in seen})
    await until_status(manager, created.task_id, "completed")
    assert len(set(seen)) == rounds


async def test_a_lost_wake_up_is_made_good_by_the_lease_renewal(
        managers: Make, memory_store: MemoryStore) -> None:
    ticks = Ticks()
    a = managers(sleep=ticks.sleep)
    created = await a.start(ALICE, confirming())
    [key] = (await until_status(a, created.task_id, "input_required"))["inputRequests"]

    class Deaf(TaskManager):
        async def _wake(self, worker: str | None, task_id: str) -> None:
            return  # the wake-up is lost on the way

    deaf = Deaf(memory_store, clock=a.clock)
    await deaf.update(created.task_id, ALICE, {key: {"action": "accept",
                                                     "content": {"confirm": True}}})
    assert await status_of(a, created.task_id) == "working"
    await ticks.tick()
    await until_status(a, created.task_id, "completed")
    await deaf.aclose()


# -- cancellation ---------------------------------------------------------------------

async def test_cancel_ends_the_task_at_once_and_stops_the_work(managers: Make) -> None:
    a, b = managers(), managers()
    stopped = asyncio.Event()

    async def work(run: TaskRun) -> dict[str, Any]:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return text("never")

    created = await a.start(ALICE, work)
    await asyncio.sleep(0)
    await b.cancel(created.task_id, ALICE)
    got = wire(await b.get(created.task_id, ALICE))
    assert got["status"] == "cancelled" and "result" not in got and "error" not in got
    await asyncio.wait_for(stopped.wait(), 2.0)
    await eventually(lambda: a.running == 0)
    assert await status_of(b, created.task_id) == "cancelled"


async def test_cancelling_while_input_is_required(managers: Make) -> None:
    manager = managers()
    created = await manager.start(ALICE, confirming())
    await until_status(manager, created.task_id, "input_required")
    await manager.cancel(created.task_id, ALICE)
    got = wire(await manager.get(created.task_id, ALICE))
    assert got["status"] == "cancelled" and "inputRequests" not in got
    assert await manager.backend.answers(created.task_id) == []
    await eventually(lambda: manager.running == 0)


async def test_cancel_is_idempotent_and_leaves_finished_tasks_alone(managers: Make) -> None:
    manager = managers()

    async def quick(run: TaskRun) -> dict[str, Any]:
        return text("done")

    created = await manager.start(ALICE, quick)
    await until_status(manager, created.task_id, "completed")
    await manager.cancel(created.task_id, ALICE)
    await manager.cancel(created.task_id, ALICE)
    assert await status_of(manager, created.task_id) == "completed"


async def test_work_that_outlives_its_cancellation_cannot_complete(managers: Make) -> None:
    manager = managers()
    finished = asyncio.Event()

    async def stubborn(run: TaskRun) -> dict[str, Any]:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)  # ignores the cancellation, returns a result anyway
        finished.set()
        return text("done anyway")

    created = await manager.start(ALICE, stubborn)
    await asyncio.sleep(0)
    await manager.cancel(created.task_id, ALICE)
    await asyncio.wait_for(finished.wait(), 2.0)
    await eventually(lambda: manager.running == 0)
    assert await status_of(manager, created.task_id) == "cancelled"


# -- leases and lifetimes -------------------------------------------------------------

async def test_a_dead_workers_task_ends_failed_once_its_lease_lapses(
        managers: Make, clock: Clock) -> None:
    ticks = Ticks()  # never ticked: this worker never renews, as if it had died
    dead, alive = managers(lease=10.0, sleep=ticks.sleep), managers(lease=10.0)
    release, work = blocked()
    created = await dead.start(ALICE, work)
    clock.advance(9.9)
    assert await status_of(alive, created.task_id) == "working"
    clock.advance(0.2)
    failed = wire(await alive.get(created.task_id, ALICE))
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == -32603 and "lease lapsed" in failed["error"]["message"]
    assert "statusMessage" in failed
    # The "dead" worker's late result does not resurrect the task.
    release.set()
    await eventually(lambda: dead.running == 0)
    assert await status_of(alive, created.task_id) == "failed"


@pytest.mark.parametrize("method", ["get", "update", "cancel"])
async def test_every_method_notices_a_lapsed_lease(managers: Make, clock: Clock,
                                                   memory_store: MemoryStore,
                                                   method: str) -> None:
    manager = managers(lease=10.0)
    record = TaskRecord.new("L" * 32, _owner(ALICE), now_ms=int(clock() * 1000),
                            ttl_ms=600_000, worker="gone", lease_ms=10_000)
    assert await manager.backend.insert(record.task_id, encode_record(record),
                                        ttl_ms=600_000)
    clock.advance(11)
    call: Callable[..., Awaitable[Any]] = getattr(manager, method)
    await call(record.task_id, ALICE, *([{}] if method == "update" else []))
    expected = "cancelled" if method == "cancel" else "failed"
    assert await status_of(manager, record.task_id) == expected


def _owner(key: str) -> str:
    from mcpcore.tasks import owner_digest

    return owner_digest(key)


async def test_a_renewing_worker_keeps_its_task_alive(managers: Make, clock: Clock) -> None:
    ticks = Ticks()
    worker, other = managers(lease=10.0, sleep=ticks.sleep), managers(lease=10.0)
    release, work = blocked()
    created = await worker.start(ALICE, work)
    for _ in range(5):
        clock.advance(6)
        await ticks.tick()
        assert await status_of(other, created.task_id) == "working"
    release.set()
    await until_status(other, created.task_id, "completed")


async def test_expired_tasks_are_gone_with_their_keys(managers: Make, clock: Clock,
                                                      memory_store: MemoryStore) -> None:
    manager = managers(ttl=10.0)
    created = await manager.start(ALICE, confirming())
    await until_status(manager, created.task_id, "input_required")
    clock.advance(10.1)
    with pytest.raises(UnknownTask):
        await manager.get(created.task_id, ALICE)
    assert await memory_store.get(f"task:{created.task_id}") is None
    assert await memory_store.get(f"task:{created.task_id}:answers") is None


async def test_a_task_stays_readable_for_its_whole_ttl(managers: Make, clock: Clock) -> None:
    manager = managers(ttl=10.0)

    async def quick(run: TaskRun) -> dict[str, Any]:
        return text("done")

    created = await manager.start(ALICE, quick)
    await until_status(manager, created.task_id, "completed")
    clock.advance(9.9)
    assert await status_of(manager, created.task_id) == "completed"


async def test_the_running_worker_stops_when_its_task_expires(managers: Make,
                                                              clock: Clock) -> None:
    ticks = Ticks()
    manager = managers(ttl=10.0, lease=60.0, sleep=ticks.sleep)
    stopped = asyncio.Event()

    async def work(run: TaskRun) -> dict[str, Any]:
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.set()
        return text("never")

    await manager.start(ALICE, work)
    clock.advance(11)
    await ticks.tick()
    await asyncio.wait_for(stopped.wait(), 2.0)
    await eventually(lambda: manager.running == 0)


async def test_shutdown_fails_running_tasks_with_a_clear_error(managers: Make) -> None:
    a, b = managers(), managers()
    _, work = blocked()
    created = await a.start(ALICE, confirming())
    other = await a.start(ALICE, work)
    await until_status(b, created.task_id, "input_required")
    await a.aclose()
    for task_id in (created.task_id, other.task_id):
        failed = wire(await b.get(task_id, ALICE))
        assert failed["status"] == "failed" and "shut down" in failed["error"]["message"]
    assert a.running == 0


# -- status messages and change announcements -----------------------------------------

async def test_changes_are_announced_and_renewals_are_not(managers: Make,
                                                          clock: Clock) -> None:
    seen: list[tuple[str, str | None]] = []

    async def on_change(record: TaskRecord) -> None:
        seen.append((record.status.value, record.status_message))

    ticks = Ticks()
    manager = managers(on_change=on_change, sleep=ticks.sleep)

    async def work(run: TaskRun) -> dict[str, Any]:
        await run.note("half way")
        await run.ask(elicitation("Sure?", CONFIRM))
        return text("done")

    created = await manager.start(ALICE, work)
    key = next(iter((await until_status(manager, created.task_id,
                                        "input_required"))["inputRequests"]))
    clock.advance(1)
    await ticks.tick()  # a renewal: not announced
    await manager.update(created.task_id, ALICE, {key: {"action": "accept",
                                                        "content": {"confirm": True}}})
    await until_status(manager, created.task_id, "completed")
    assert seen == [("working", "half way"), ("input_required", "half way"),
                    ("working", "half way"), ("completed", "half way")]


async def test_a_failing_announcement_does_not_fail_the_task(managers: Make) -> None:
    async def broken(record: TaskRecord) -> None:
        raise RuntimeError("listener down")

    manager = managers(on_change=broken)

    async def quick(run: TaskRun) -> dict[str, Any]:
        await run.note("x")
        return text("done")

    created = await manager.start(ALICE, quick)
    await until_status(manager, created.task_id, "completed")


async def test_work_that_asks_after_its_task_ended_stops(managers: Make) -> None:
    manager = managers()
    go, asked = asyncio.Event(), asyncio.Event()
    outcome: list[str] = []

    async def work(run: TaskRun) -> dict[str, Any]:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(go.wait())
        try:
            await run.note("still here?")
        except asyncio.CancelledError:
            outcome.append("stopped")
            raise
        finally:
            asked.set()
        return text("never")

    created = await manager.start(ALICE, work)
    await asyncio.sleep(0)
    await manager.cancel(created.task_id, ALICE)
    go.set()
    await asyncio.wait_for(asked.wait(), 2.0)
    assert outcome == ["stopped"]
    assert await status_of(manager, created.task_id) == "cancelled"


async def test_results_of_every_kind_decode_as_the_extension_says(managers: Make) -> None:
    manager = managers()
    created = await manager.start(ALICE, confirming())
    await until_status(manager, created.task_id, "input_required")
    waiting = await manager.get(created.task_id, ALICE)
    assert isinstance(waiting, InputRequiredTask)
    [key] = waiting.input_requests
    await manager.update(created.task_id, ALICE, {key: {"action": "cancel"}})
    await until_status(manager, created.task_id, "completed")
    assert isinstance(await manager.get(created.task_id, ALICE), CompletedTask)

    async def broken(run: TaskRun) -> dict[str, Any]:
        raise McpError("x")

    failed = await manager.start(ALICE, broken)
    await until_status(manager, failed.task_id, "failed")
    assert isinstance(await manager.get(failed.task_id, ALICE), FailedTask)
