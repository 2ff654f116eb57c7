"""``TaskManager``: durable tasks for one server instance, shared with its fleet.

What it does, in the extension's words (SEP-2663):

- ``start`` stores a new ``working`` task *before* returning its ``CreateTaskResult``
  ("a ``tasks/get`` for the returned ``taskId`` would resolve", on any instance), then
  runs the work here, under a lease this instance renews (``mcpcore.tasks.run``);
- ``get`` answers ``tasks/get`` with the ``DetailedTask`` for the current status;
- ``update`` answers ``tasks/update``: answers to outstanding input requests are
  checked, recorded and logged for the worker in one atomic write; keys that are not
  outstanding are ignored; partial answers leave the rest outstanding;
- ``cancel`` answers ``tasks/cancel``: an unfinished task becomes ``cancelled`` at once
  and its worker is told to stop; a finished one is left as it is (idempotent ack).

Every read notices a lapsed lease (the worker died) and ends the task ``failed``, so no
task stays ``working`` for ever. Tasks belong to the principal that created them: any
other principal, a malformed id, an unknown or expired id all get the same -32602
``UnknownTask``. Records expire ``ttlMs`` after creation, with every key they used.

State changes are read, decided by ``TaskRecord`` (the state table), and written with
compare-and-set; a lost race reads again. The store is the only shared state.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from mcpcore.errors import InternalError, InvalidParams
from mcpcore.inputs import InputMethod, InputRequest, parse_answer
from mcpcore.stores.backends import task_backend
from mcpcore.stores.base import Store, StoreError
from mcpcore.stores.memory import MemoryStore
from mcpcore.stores.tasks import TaskBackend
from mcpcore.tasks.ids import is_task_id, mint_task_id, owner_digest, same_owner
from mcpcore.tasks.record import (
    Change,
    TaskRecord,
    decode_record,
    encode_answers,
    encode_record,
)
from mcpcore.tasks.run import TaskRun, Work

if TYPE_CHECKING:
    from mcpcore.tasks.wire import CreateTaskResult, DetailedTask

log = logging.getLogger("mcpcore.tasks")

#: Store pub/sub channel (plus the worker id) that tells a worker to look again.
WAKE_CHANNEL: Final = "tasks:wake:"
#: Compare-and-set attempts before a change is given up (each lost race re-reads).
MAX_ATTEMPTS: Final = 32

#: Called after every change a client could see (not lease renewals).
OnChange = Callable[[TaskRecord], Awaitable[None]]

class UnknownTask(InvalidParams):
    """No task by that id for this principal (never created, expired, or not theirs).

    The extension's wording and code for ``tasks/get`` (-32602, "Failed to retrieve
    task: Task not found"); the same for ``tasks/update`` and ``tasks/cancel``.
    """

    def __init__(self) -> None:
        super().__init__("Failed to retrieve task: Task not found")


class TaskManager:
    """Tasks on this instance, stored where every instance of the fleet reads them.

    >>> manager = TaskManager(RedisStore.from_url(url), lease=30.0)   # doctest: +SKIP
    >>> created = await manager.start(principal.key, work)            # doctest: +SKIP
    >>> await manager.get(created.task_id, principal.key)             # doctest: +SKIP
    WorkingTask(task_id=..., ...)

    ``lease`` (seconds) bounds how long a dead worker's task stays unfinished; the
    worker renews every third of it. ``ttl`` is the default ``ttlMs`` (seconds), and
    ``poll_interval`` the ``pollIntervalMs`` suggested to clients. ``clock`` is wall-clock
    seconds and ``sleep`` paces lease renewal: both injectable for tests.
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        backend: TaskBackend | None = None,
        worker_id: str | None = None,
        lease: float = 30.0,
        ttl: float = 3600.0,
        poll_interval: float | None = 1.0,
        max_running: int = 1024,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_change: OnChange | None = None,
    ) -> None:
        if not lease > 0 or not ttl > 0:
            raise ValueError("lease and ttl must be positive numbers of seconds")
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.store: Store = store if store is not None else MemoryStore()
        self.backend: TaskBackend = backend if backend is not None else task_backend(
            self.store)
        #: Names this instance as the holder of its tasks' leases.
        self.worker_id = worker_id or secrets.token_hex(8)
        self.lease = lease
        self.ttl = ttl
        self.poll_interval = poll_interval
        self.max_running = max_running
        self.clock = clock
        self.sleep = sleep
        self.on_change = on_change
        self._runs: dict[str, TaskRun] = {}
        self._listener: asyncio.Task[None] | None = None

    # -- time ---------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def lease_ms(self) -> int:
        return _ms(self.lease)

    @property
    def running(self) -> int:
        """Tasks whose work runs on this instance now."""
        return len(self._runs)

    # -- the client's side --------------------------------------------------------------
    async def start(self, principal_key: str, work: Work, *, ttl: float | None = None,
                    poll_interval: float | None = None, status_message: str | None = None
                    ) -> CreateTaskResult:
        """Store a new task owned by ``principal_key``, start ``work`` on this instance,
        and return the ``CreateTaskResult`` (the task is durable when this returns).

        ``work(run)`` returns the result the original request would have returned; a
        raised ``McpError`` ends the task ``failed`` with that error.
        """
        created, _ = await self.launch(principal_key, work, ttl=ttl,
                                       poll_interval=poll_interval,
                                       status_message=status_message)
        return created

    async def launch(self, principal_key: str, work: Work, *, ttl: float | None = None,
                     poll_interval: float | None = None, status_message: str | None = None
                     ) -> tuple[CreateTaskResult, TaskRun]:
        """``start``, also returning the run, for a caller that must ask through the
        task before the work's first step (a handler that goes on as this task)."""
        if len(self._runs) >= self.max_running:
            raise InternalError(f"This server instance already runs {self.max_running} "
                                "tasks; try again later")
        await self._ensure_listening()
        now = self.now_ms()
        interval = self.poll_interval if poll_interval is None else poll_interval
        ttl_ms = _ms(self.ttl if ttl is None else ttl)
        for _ in range(3):  # 192 random bits: a collision is only a theoretical worry
            record = TaskRecord.new(
                mint_task_id(), owner_digest(principal_key), now_ms=now, ttl_ms=ttl_ms,
                worker=self.worker_id, lease_ms=self.lease_ms,
                poll_interval_ms=None if interval is None else _ms(interval),
                status_message=status_message)
            if await self.backend.insert(record.task_id, encode_record(record),
                                         ttl_ms=ttl_ms):
                break
        else:
            raise InternalError("Could not mint a unique task id")
        run = TaskRun(self, record.task_id, record.expires_ms)
        self._runs[record.task_id] = run
        run.start(work)
        return record.created(), run

    async def get(self, task_id: str, principal_key: str) -> DetailedTask:
        """``tasks/get``: the task as it is now."""
        record = await self._settled(await self._owned(task_id, principal_key))
        return record.detailed()

    async def update(self, task_id: str, principal_key: str,
                     responses: Mapping[str, Any]) -> None:
        """``tasks/update``: record answers to outstanding input requests.

        Each answer is checked against the request it answers (a malformed one is
        -32602 and nothing is recorded); answers under keys that are not outstanding
        (never issued, already answered, or the task finished) are ignored.
        """
        record = await self._settled(await self._owned(task_id, principal_key))
        worker: str | None = None

        def accept(current: TaskRecord) -> tuple[TaskRecord, bytes | None]:
            nonlocal worker
            worker = None
            fresh = {k: v for k, v in responses.items() if k in current.inputs}
            if current.finished or not fresh:
                return current, None
            for key, value in fresh.items():
                parse_answer(key, _input_request(current.inputs[key]), value)
            worker = current.worker
            return current.answer(fresh, self.now_ms()), encode_answers(fresh)

        if record.inputs:
            await self.change(task_id, accept)
            await self._wake(worker, task_id)

    async def cancel(self, task_id: str, principal_key: str) -> None:
        """``tasks/cancel``: end an unfinished task ``cancelled`` and stop its work."""
        record = await self._owned(task_id, principal_key)
        worker: str | None = None

        def end(current: TaskRecord) -> tuple[TaskRecord, bytes | None]:
            nonlocal worker
            worker = current.worker
            return (current if current.finished else current.cancel(self.now_ms())), None

        if not record.finished:
            await self.change(task_id, end)
            await self._wake(worker, task_id)

    # -- shared machinery ---------------------------------------------------------------
    async def _owned(self, task_id: str, principal_key: str) -> TaskRecord:
        if not is_task_id(task_id):
            raise UnknownTask()
        stored = await self.backend.load(task_id)
        if stored is None:
            raise UnknownTask()
        record = decode_record(stored.data)
        if not same_owner(record.owner, principal_key):
            raise UnknownTask()
        return record

    async def _settled(self, record: TaskRecord) -> TaskRecord:
        """``record``, or its ``failed`` successor if its worker's lease lapsed."""
        if not record.lapsed(self.now_ms()):
            return record

        def lapse(current: TaskRecord) -> tuple[TaskRecord, bytes | None]:
            now = self.now_ms()
            return (current.lapse(now) if current.lapsed(now) else current), None

        settled = await self.change(record.task_id, lapse)
        if settled is None:
            raise UnknownTask()
        return settled

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        """Apply ``change`` by compare-and-set, re-reading after every lost race.

        Returns the record written (or the one read, if ``change`` returned it as is),
        None if the task does not exist. ``InvalidTransition`` from ``change`` passes.
        """
        for _ in range(MAX_ATTEMPTS):
            stored = await self.backend.load(task_id)
            if stored is None:
                return None
            before = decode_record(stored.data)
            after, answers = change(before)
            if after is before:
                return before
            written = await self.backend.replace(
                task_id, stored.version, encode_record(after),
                ttl_ms=after.remaining_ms(self.now_ms()), answers=answers,
                finished=after.finished)
            if written:
                if self.on_change is not None and not after.same_view(before):
                    await self._announce(after)
                return after
        raise StoreError(f"task {task_id[:8]}… kept changing under {MAX_ATTEMPTS} "
                         "attempts to change it")

    async def _announce(self, record: TaskRecord) -> None:
        assert self.on_change is not None
        try:
            await self.on_change(record)
        except Exception:
            log.exception("announcing a change of task %s… failed", record.task_id[:8])

    async def _wake(self, worker: str | None, task_id: str) -> None:
        """Tell ``worker`` to look at ``task_id`` again; best effort (it also looks on
        every lease renewal), so a store failure here does not fail the request."""
        if worker is None:
            return
        try:
            await self.store.publish(WAKE_CHANNEL + worker, task_id.encode())
        except StoreError as exc:
            log.warning("could not wake the worker of task %s…: %s", task_id[:8], exc)

    async def _ensure_listening(self) -> None:
        listener = self._listener
        loop = asyncio.get_running_loop()
        if listener is not None and not listener.done() and listener.get_loop() is loop:
            return
        ready: asyncio.Future[None] = loop.create_future()
        self._listener = loop.create_task(self._listen(ready), name="mcpcore-task-wakes")
        await ready

    async def _listen(self, ready: asyncio.Future[None]) -> None:
        """Hear wake-ups for the tasks this instance runs; resubscribe after failures."""
        channel = WAKE_CHANNEL + self.worker_id
        while True:
            try:
                async with self.store.subscribe(channel) as subscription:
                    if not ready.done():
                        ready.set_result(None)
                    async for message in subscription:
                        run = self._runs.get(message.decode(errors="replace"))
                        if run is not None:
                            await run.refresh()
                return  # the store closed
            except StoreError as exc:
                if not ready.done():
                    ready.set_exception(exc)
                    return
                log.warning("task wake-ups interrupted (%s); resubscribing", exc)
                await self.sleep(1.0)

    def run_ended(self, task_id: str) -> None:
        """Called by a ``TaskRun`` when its work has ended: it no longer runs here."""
        self._runs.pop(task_id, None)

    async def aclose(self) -> None:
        """Stop: running work ends its tasks ``failed`` ("shut down"), wake-ups stop.

        The store is the caller's to close.
        """
        runs = list(self._runs.values())
        for run in runs:
            run.stop("shutdown")
        await asyncio.gather(*(run.wait() for run in runs), return_exceptions=True)
        listener, self._listener = self._listener, None
        if listener is not None and not listener.done():
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)


def _input_request(wire: Mapping[str, Any]) -> InputRequest:
    """The engine's ``InputRequest`` for a stored ``{"method", "params"?}``."""
    return InputRequest(cast(InputMethod, wire["method"]), dict(wire.get("params") or {}))


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


__all__ = ["MAX_ATTEMPTS", "WAKE_CHANNEL", "OnChange", "TaskManager", "UnknownTask"]
