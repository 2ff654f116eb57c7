"""``ServerTasks``: what a ``Server`` does for the tasks extension (SEP-2663).

- **Negotiation**: the extension is offered (``capabilities.extensions``, and the three
  methods exist) while a tool registered with ``task="optional"`` or ``"required"``
  exists. A request takes part only if it declared the extension in its own client
  capabilities, in a revision that defines it (2026-07-28); one that did not never gets
  a task: an ``"optional"`` tool runs synchronously for it, a ``"required"`` one and the
  three methods answer -32021 naming the extension, before anything else runs.
- **Tool calls** (``call_tool``): a declaring request to a task tool becomes a task.
  With ``task_start="call"`` before the handler's first line: the task is stored, the
  ``CreateTaskResult`` answers the request, and the handler runs as the task's work
  (``mcpcore.tasks.inputs``). With ``task_start="handler"`` the handler runs as usual
  (MRTR rounds answered synchronously) until it calls ``await ctx.start_task()``; that
  call stores the task and answers the request, and the rest of the handler is the
  task's work. Either way the same handler serves both paths.
- **The methods**: ``tasks/get``, ``tasks/update``, ``tasks/cancel`` (routes of the
  ``Server``'s table; ``Mcp-Name`` must equal ``params.taskId``), answered from the
  store by whichever instance gets them.
- **Listen streams** (``TaskWatch``): ``subscriptions/listen`` with ``taskIds`` reports
  ``notifications/tasks`` for the ids the listener owns.

The work runs on the instance that accepted it, under a lease (``TaskManager``); the
store (memory, or Redis for a fleet) is the only shared state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

from mcpcore.errors import MissingRequiredClientCapability
from mcpcore.outcome import Outcome
from mcpcore.params import TaskParams, UpdateTaskParams
from mcpcore.subscriptions import Event, SubscriptionHub
from mcpcore.tasks.inputs import TaskFlow, TaskInputs
from mcpcore.tasks.manager import TaskManager, UnknownTask
from mcpcore.tasks.wire import TASKS_EXTENSION
from mcpcore.versions import MODERN

if TYPE_CHECKING:
    from mcpcore.call_gate import CallGate
    from mcpcore.context import Context
    from mcpcore.inputs import Handler, Retryable
    from mcpcore.policy.engine import PolicyTarget
    from mcpcore.tasks.record import TaskRecord
    from mcpcore.tasks.run import TaskRun, Work
    from mcpcore.tasks.wire import CreateTaskResult
    from mcpcore.tools import ToolDef, ToolRegistry

log = logging.getLogger("mcpcore.tasks")

#: The revisions that define the extension; under any other, a declaration of it counts
#: for nothing (SEP-2663, "Backward Compatibility").
TASK_VERSIONS: Final = frozenset({MODERN})
#: ``data.requiredCapabilities`` of the -32021 for a request without the extension.
REQUIRED: Final[dict[str, Any]] = {"extensions": {TASKS_EXTENSION: {}}}
#: Task ids one listen stream may watch; more are left out of its acknowledgement.
MAX_WATCHED: Final = 256
NOTIFICATION: Final = "notifications/tasks"

_to_builtins = msgspec.to_builtins


def declared(ctx: Context) -> bool:
    """Did this request declare the extension, in a revision that defines it?"""
    return (ctx.protocol_version in TASK_VERSIONS
            and ctx.has_capability("extensions", TASKS_EXTENSION))


def require(ctx: Context) -> None:
    """-32021 naming the extension unless the request declared it."""
    if not declared(ctx):
        raise MissingRequiredClientCapability(REQUIRED)


class ServerTasks:
    """The tasks extension of one ``Server`` (its ``tasks`` attribute).

    ``hub`` is the server's ``SubscriptionHub`` (task changes are announced on it) and
    ``tools`` its tool registry (the extension exists while a tool may become a task):
    the pieces of the server it uses, not the server, which imports this module.
    ``manager`` is made on first use over the hub's store (so a ``RedisStore`` makes
    tasks fleet-wide), unless one was given.
    """

    def __init__(self, hub: SubscriptionHub, tools: ToolRegistry,
                 manager: TaskManager | None = None) -> None:
        #: Where task changes are announced (the server's hub: ``Server.subscriptions``).
        self.hub = hub
        #: The server's tool registry (``Server.install`` replaces it).
        self.tools = tools
        self._manager = manager
        if manager is not None and manager.on_change is None:
            manager.on_change = self._announce

    @property
    def manager(self) -> TaskManager:
        manager = self._manager
        if manager is None:
            manager = self._manager = TaskManager(self.hub.store,
                                                  on_change=self._announce)
        return manager

    def __len__(self) -> int:
        """The tools that may become tasks: the extension exists while there are any."""
        return self.tools.task_tools

    async def aclose(self) -> None:
        """Stop the work running here (its tasks end ``failed``, "shut down")."""
        if self._manager is not None:
            await self._manager.aclose()

    async def _announce(self, record: TaskRecord) -> None:
        await self.hub.publish(Event(kind="task", task_id=record.task_id))

    # -- tools/call ---------------------------------------------------------------------
    async def call_tool(self, ctx: Context, params: Retryable, tool: ToolDef,
                        run: Handler, gate: CallGate) -> Outcome:
        """A call of a tool registered for tasks: synchronous, a task, or -32021."""
        if not declared(ctx):
            if tool.task == "required":
                raise MissingRequiredClientCapability(REQUIRED)
            return await ctx.inputs.run(ctx, params, run)
        if tool.task_start == "handler":
            return await self._until_started(ctx, params, run, gate)
        work = _work(ctx, gate, lambda task_run: TaskInputs(task_run).run(ctx, params, run))
        created = await self.manager.start(ctx.principal.key, work)
        return _created(created)

    async def _until_started(self, ctx: Context, params: Retryable, run: Handler,
                             gate: CallGate) -> Outcome:
        """Run the handler as usual until it ends or calls ``ctx.start_task()``.

        The handler runs in its own asyncio task, so that it can outlive this request:
        once it starts the task, the request answers with the ``CreateTaskResult`` and
        the handler's asyncio task is the task's work.
        """
        loop = asyncio.get_running_loop()
        started: asyncio.Future[CreateTaskResult] = loop.create_future()
        job = loop.create_task(ctx.inputs.run(ctx, params, run))

        async def start() -> bool:
            ctx.task_start = None  # once

            async def rest(_: TaskRun) -> Outcome:
                return await job  # the task's cancellation cancels the handler too

            created, task_run = await self.manager.launch(ctx.principal.key,
                                                          _work(ctx, gate, rest))
            ctx.enter_task(created.task_id, TaskFlow(ctx, task_run), task_run.note)
            started.set_result(created)
            return True

        ctx.task_start = start
        try:
            await asyncio.wait((job, started), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if not started.done():
                job.cancel()
            raise
        if started.done():
            return _created(started.result())
        ctx.task_start = None
        return job.result()

    # -- the three methods --------------------------------------------------------------
    async def target(self, task_id: str, ctx: Context) -> PolicyTarget | None:
        """What a policy judges a request about ``task_id`` by (``Server._gate``): here
        nothing. A task of this server is its caller's alone (bound to the principal)
        and its call was gated when it was made; a gateway's tasks name the tool of the
        upstream that runs them (``mcpcore.gateway.tasks``)."""
        return None

    async def get(self, params: TaskParams, ctx: Context, headers: Mapping[str, str] | None
                  ) -> Outcome:
        """``tasks/get``: the ``DetailedTask`` for the task's current status."""
        require(ctx)
        task = await self.manager.get(params.task_id, ctx.principal.key)
        return Outcome(_to_builtins(task))

    async def update(self, params: UpdateTaskParams, ctx: Context,
                     headers: Mapping[str, str] | None) -> Outcome:
        """``tasks/update``: answers to outstanding input requests; an empty ack."""
        require(ctx)
        await self.manager.update(params.task_id, ctx.principal.key, params.input_responses)
        return Outcome({})

    async def cancel(self, params: TaskParams, ctx: Context, headers: Mapping[str, str] | None
                     ) -> Outcome:
        """``tasks/cancel``: an unfinished task ends ``cancelled`` at once; an empty ack
        (the same for a task that already finished)."""
        require(ctx)
        await self.manager.cancel(params.task_id, ctx.principal.key)
        return Outcome({})

    # -- listen streams -----------------------------------------------------------------
    def watch(self, ctx: Context, task_ids: list[str]) -> TaskWatch:
        """What a listen stream asking for ``task_ids`` reports; -32021 without the
        extension (SEP-2663, "Task Status Notifications")."""
        if not declared(ctx):
            raise MissingRequiredClientCapability(
                REQUIRED, "taskIds needs the io.modelcontextprotocol/tasks extension in "
                          "the request's client capabilities")
        offered = len(self) > 0
        return TaskWatch(self.manager if offered else None, ctx.principal.key,
                         task_ids if offered else [])


def _created(created: CreateTaskResult) -> Outcome:
    return Outcome(_to_builtins(created), "task")


def _work(ctx: Context, gate: CallGate, body: Any) -> Work:
    """The task's work: ``body(run)`` gives the call's ``Outcome``; the call's gate
    (``mcpcore.call_gate``) hears how the call ended, and the context is closed at the
    end."""

    async def work(task_run: TaskRun) -> Mapping[str, Any]:
        try:
            outcome: Outcome = await body(task_run)
        except BaseException as exc:
            gate.fail(exc)
            raise
        finally:
            ctx.finish_task()
        gate.finish(outcome)
        # What the call would have returned: a 2026-07-28 CallToolResult, resultType too.
        return {**outcome.body, "resultType": "complete"}

    return work


class TaskWatch:
    """The tasks one listen stream reports on: ids its principal owns, at most
    ``MAX_WATCHED``. Each change is sent once, as the full ``DetailedTask``; between
    events the stream looks every third of a lease, so a task whose worker died is
    reported ``failed`` even if no one polls it."""

    def __init__(self, manager: TaskManager | None, principal_key: str,
                 requested: list[str]) -> None:
        self._manager = manager
        self._principal = principal_key
        self._requested = list(dict.fromkeys(requested))[:MAX_WATCHED]
        #: Watched id -> the last task body sent for it.
        self._sent: dict[str, dict[str, Any]] = {}

    @property
    def interval(self) -> float | None:
        """Seconds between looks while an unfinished task is watched; else None."""
        if self._manager is None or not any(
                body.get("status") in ("working", "input_required")
                for body in self._sent.values()):
            return None
        return self._manager.lease / 3

    async def acknowledge(self) -> list[str]:
        """The requested ids this principal owns (the others are dropped unsaid), with
        their current state remembered for ``poll``."""
        for task_id in self._requested:
            body = await self._load(task_id)
            if body is not None:
                self._sent[task_id] = {}
        return list(self._sent)

    async def changed(self, task_id: str) -> dict[str, Any] | None:
        """The task's body if it is watched and changed since last sent."""
        if task_id not in self._sent:
            return None
        body = await self._load(task_id)
        if body is None:
            del self._sent[task_id]  # expired: nothing more will come
            return None
        if body == self._sent[task_id]:
            return None
        self._sent[task_id] = body
        return dict(body)

    async def poll(self) -> list[dict[str, Any]]:
        """Every watched task that changed since last sent (the first poll: all)."""
        out = []
        for task_id in list(self._sent):
            body = await self.changed(task_id)
            if body is not None:
                out.append(body)
        return out

    async def _load(self, task_id: str) -> dict[str, Any] | None:
        if self._manager is None:
            return None
        try:
            task = await self._manager.get(task_id, self._principal)
        except UnknownTask:
            return None
        body: dict[str, Any] = _to_builtins(task)
        return body


__all__ = ["MAX_WATCHED", "NOTIFICATION", "REQUIRED", "TASK_VERSIONS", "ServerTasks",
           "TaskWatch", "declared", "require"]
