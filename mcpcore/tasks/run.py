"""``TaskRun``: the work of one task, on the instance that accepted it.

The work is an async function of its ``TaskRun``; while it runs, the run

- renews the task's lease every third of the lease time, so other instances can tell a
  live worker from a dead one (a lapsed lease ends the task ``failed``), and stops the
  work when the task expires (its ``ttlMs`` from creation);
- lets the work ask the client for input (``ask``): the requests are recorded on the
  task under freshly minted keys (status ``input_required``), and the run waits until
  ``tasks/update`` on any instance has logged an answer for each, then returns them
  parsed (``mcpcore.inputs`` answers) in order. Several asks may be outstanding at once;
- notices when the task ended elsewhere (cancelled, or expired) on a wake-up or a lease
  renewal, and cancels the work.

When the work returns, its result ends the task ``completed`` (a tool result with
``isError`` included); an ``McpError`` ends it ``failed`` with that error; any other
exception ends it ``failed`` with an internal error and no detail on the wire. If the
server shuts down first, the task ends ``failed`` saying so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mcpcore.errors import InternalError, McpError
from mcpcore.inputs import Answer, InputRequest, parse_answer
from mcpcore.stores.base import StoreError
from mcpcore.tasks.record import Change, TaskRecord, decode_answers, decode_record
from mcpcore.tasks.states import InvalidTransition

if TYPE_CHECKING:
    from mcpcore.stores.tasks import TaskBackend

log = logging.getLogger("mcpcore.tasks")

#: The work of a task: gets its run, returns the original request's result body.
Work = Callable[["TaskRun"], Awaitable[Mapping[str, Any]]]
StopReason = Literal["ended", "shutdown"]

_SHUTDOWN = InternalError("The server instance running this task shut down before it "
                          "finished")


class TaskKeeper(Protocol):
    """What a run needs of the ``TaskManager`` that started it (which imports this
    module, not the reverse): its clock and pacing, the lease, the records, and to hear
    when the work has ended."""

    backend: TaskBackend
    worker_id: str
    lease: float
    sleep: Callable[[float], Awaitable[None]]

    @property
    def lease_ms(self) -> int: ...

    def now_ms(self) -> int: ...

    async def change(self, task_id: str, change: Change) -> TaskRecord | None: ...

    def run_ended(self, task_id: str) -> None: ...


class TaskRun:
    """What the work of a task can do besides computing: ask, and say how it goes.

    >>> async def work(run: TaskRun) -> dict:                      # doctest: +SKIP
    ...     await run.note("copying")
    ...     [ok] = await run.ask(elicitation("Really delete?", schema))
    ...     return {"content": [{"type": "text", "text": "deleted"}]}
    """

    def __init__(self, manager: TaskKeeper, task_id: str, expires_ms: int) -> None:
        self.task_id = task_id
        #: When the task's record expires: the work stops then, at the latest.
        self.expires_ms = expires_ms
        self._manager = manager
        #: Every answer logged for this task so far (keys are never reused).
        self._answers: dict[str, Any] = {}
        self._cursor: str | None = None
        self._reading = asyncio.Lock()
        self._changed = asyncio.Event()
        self._stop: StopReason | None = None
        self._finishing = False
        #: True once ``_main`` runs: a task cancelled before its first step never does.
        self._began = False
        self._task: asyncio.Task[None] | None = None

    # -- what the work calls --------------------------------------------------------------
    async def ask(self, *requests: InputRequest) -> list[Answer]:
        """Put ``requests`` to the client through the task; their answers, in order."""
        keys: list[str] = []

        def put(record: TaskRecord) -> tuple[TaskRecord, bytes | None]:
            nonlocal keys
            hints = [(r.key or r.method.split("/", 1)[0], r.wire()) for r in requests]
            updated, keys = record.ask(hints, self._manager.now_ms())
            return updated, None

        await self._change(put)
        while True:
            changed = self._changed
            await self._read_answers()
            if all(k in self._answers for k in keys):
                break
            await changed.wait()
        return [parse_answer(k, r, self._answers[k]) for k, r in zip(keys, requests,
                                                                       strict=True)]

    async def note(self, message: str | None) -> None:
        """Set (or, with None, clear) the task's ``statusMessage``."""
        await self._change(lambda r: (r.note(message, self._manager.now_ms()), None))

    # -- driven by the manager ----------------------------------------------------------
    def start(self, work: Work) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._main(work), name=f"mcpcore-task-{self.task_id[:8]}")
        self._task.add_done_callback(self._done)

    def _done(self, _: asyncio.Task[None]) -> None:
        if not self._began:  # cancelled before its first step: no bookkeeping ran
            self._manager.run_ended(self.task_id)

    def stop(self, reason: StopReason) -> None:
        """Cancel the work: the task ``ended`` elsewhere, or the server shuts down."""
        if self._stop is None:
            self._stop = reason
        if self._task is not None and not self._finishing:
            self._task.cancel()

    async def wait(self) -> None:
        """Until the work and its bookkeeping are over."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            if not self._began and self._stop == "shutdown":
                await self._fail(_SHUTDOWN)  # stopped before it began: say so all the same

    async def refresh(self) -> None:
        """A wake-up: stop the work if the task ended, else let waiting asks look."""
        try:
            stored = await self._manager.backend.load(self.task_id)
        except StoreError as exc:
            log.warning("could not look at task %s…: %s", self.task_id[:8], exc)
            return
        if stored is None or decode_record(stored.data).finished:
            self.stop("ended")
        else:
            self.poke()

    def poke(self) -> None:
        """Wake every ask waiting for answers."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # -- inside -------------------------------------------------------------------------
    async def _main(self, work: Work) -> None:
        self._began = True
        lease = asyncio.get_running_loop().create_task(self._keep_lease())
        try:
            try:
                body = await work(self)
            except asyncio.CancelledError:
                if self._stop != "ended":
                    await self._fail(_SHUTDOWN)
                if self._stop is None:
                    raise  # not ours: whoever cancelled us expects CancelledError
            except McpError as exc:
                await self._fail(exc)
            except Exception:
                log.exception("the work of task %s… failed", self.task_id[:8])
                await self._fail(InternalError("The task failed with an internal error"))
            else:
                if isinstance(body, Mapping):
                    await self._end(lambda r, now: r.complete(body, now))
                else:
                    log.error("the work of task %s… returned %s, not a result object",
                              self.task_id[:8], type(body).__name__)
                    await self._fail(InternalError("The task failed with an internal error"))
        finally:
            lease.cancel()
            self._manager.run_ended(self.task_id)

    async def _fail(self, error: McpError) -> None:
        wire = error.to_error()
        await self._end(lambda r, now: r.fail(wire, now, error.message))

    async def _end(self, end: Callable[[TaskRecord, int], TaskRecord]) -> None:
        """Write the task's end; a task that already ended (cancelled, lapsed) stays as
        it is, and a store failure leaves the lease to lapse (the task ends failed)."""
        self._finishing = True
        try:
            await self._manager.change(
                self.task_id, lambda r: (end(r, self._manager.now_ms()), None))
        except InvalidTransition:
            log.info("task %s… ended before its work did; result dropped",
                     self.task_id[:8])
        except StoreError as exc:
            log.error("could not record the end of task %s…: %s", self.task_id[:8], exc)

    async def _change(self, change: Callable[[TaskRecord],
                                             tuple[TaskRecord, bytes | None]]) -> None:
        """A change the work asked for; if the task ended meanwhile, the work stops."""
        try:
            record = await self._manager.change(self.task_id, change)
        except InvalidTransition:
            record = None
        if record is None:
            self.stop("ended")
            raise asyncio.CancelledError()

    async def _read_answers(self) -> None:
        async with self._reading:
            batches = await self._manager.backend.answers(self.task_id, self._cursor)
            for cursor, batch in batches:
                self._answers.update(decode_answers(batch))
                self._cursor = cursor

    async def _keep_lease(self) -> None:
        manager = self._manager
        while True:
            # Renew every third of the lease, and look once more when the task expires
            # (not sooner than 50 ms apart, however the clocks of store and host differ).
            left = (self.expires_ms - manager.now_ms()) / 1000
            await manager.sleep(min(manager.lease / 3, max(left, 0.05)))

            def renew(record: TaskRecord) -> tuple[TaskRecord, bytes | None]:
                until = manager.now_ms() + manager.lease_ms
                return record.renew(manager.worker_id, until), None

            try:
                record = await manager.change(self.task_id, renew)
            except (InvalidTransition, ValueError):
                record = None  # ended, or another worker took it over
            except StoreError as exc:
                log.warning("could not renew the lease of task %s…: %s",
                            self.task_id[:8], exc)
                continue
            if record is None:
                self.stop("ended")
                return
            self.poke()  # answers whose wake-up was lost are found now


__all__ = ["StopReason", "TaskKeeper", "TaskRun", "Work"]
