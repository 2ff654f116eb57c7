"""The tasks extension from the client's side (``io.modelcontextprotocol/tasks``, SEP-2663).

A server that negotiated the extension may answer a ``tools/call`` with a task handle
(``resultType: "task"``) and let the client poll for the result. Two ways to use it:

- **Transparent**: declare the extension in the client's ``capabilities`` and keep
  calling ``client.call_tool``; a task handle is driven to its end (polls at the
  server's ``pollIntervalMs``, questions answered by the client's resolvers) and the
  final ``CallToolResult`` returned, as SEP-2663 ("Polymorphic Results") suggests for
  fixed-shape APIs.
- **Explicit**: ``client.tasks`` (``ClientTasks``) declares the extension on its own
  requests only. ``await client.tasks.call_tool(...)`` returns the ``CallToolResult``
  if the server answered at once, else a ``TaskHandle``: ``get``, ``update``,
  ``cancel``, ``wait``, and ``client.tasks.listen(ids)`` for ``notifications/tasks``.
  Persist ``handle.task_id`` and ``client.tasks.handle(task_id)`` resumes after a
  restart (SEP-2663, "Task Polling").

Each ``tasks/*`` request carries ``Mcp-Name: <taskId>`` over HTTP (SEP-2663, "Streamable
HTTP: Routing Headers"). A ``failed`` task raises ``RemoteProtocolError`` with the task's
JSON-RPC error; a ``cancelled`` one ``TaskCancelled``.

    >>> handle = await client.tasks.call_tool("report", {"year": 2026})  # doctest: +SKIP
    >>> result = await handle.wait()                                     # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Mapping
from types import EllipsisType
from typing import Any, Final, Protocol, cast

import msgspec

from mcpcore import types
from mcpcore.client.errors import (
    ClientError,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
)
from mcpcore.client.resolvers import Resolvers
from mcpcore.client.subscription import ListeningClient, Subscription
from mcpcore.client.wire import typed_result
from mcpcore.meta import CLIENT_CAPABILITIES
from mcpcore.tasks.wire import (
    TASKS_EXTENSION,
    CompletedTask,
    CreateTaskResult,
    DetailedTask,
    FailedTask,
    InputRequiredTask,
)
from mcpcore.timing import Clock

TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
#: Poll no faster than this, and no slower, whatever ``pollIntervalMs`` says (seconds).
MIN_POLL: Final = 0.05
MAX_POLL: Final = 30.0
#: When the server suggests no interval.
DEFAULT_POLL: Final = 1.0


class TaskCancelled(ClientError):
    """The task ended ``cancelled`` (by us, another client of the same principal, or the
    server); ``task`` is its last state."""

    def __init__(self, task: DetailedTask) -> None:
        message = getattr(task, "status_message", None)
        super().__init__(f"task {task.task_id} was cancelled"
                         + (f": {message}" if isinstance(message, str) else ""))
        self.task = task


def declares_tasks(capabilities: Mapping[str, Any]) -> bool:
    """Do these client capabilities declare the tasks extension?"""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


class TaskClient(ListeningClient, Protocol):
    """What the task API needs of the ``Client`` it belongs to (``client.py`` imports
    this module, not the reverse)."""

    capabilities: dict[str, Any]
    resolvers: Resolvers
    max_rounds: int
    timeout: float | None
    task_timeout: float | None
    clock: Clock

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def tasks(self) -> ClientTasks: ...

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]: ...

    async def call_tool_raw(self, name: str, arguments: Mapping[str, Any] | None, *,
                            meta: Mapping[str, Any] | None = None,
                            timeout: float | EllipsisType | None = ...
                            ) -> dict[str, Any]: ...


class ClientTasks:
    """The task API of one ``Client`` (``client.tasks``); see the module docstring."""

    def __init__(self, client: TaskClient) -> None:
        self._client = client

    def meta(self) -> dict[str, Any]:
        """The ``_meta`` that declares the extension on one request (SEP-2663,
        "Capability Negotiation": per request, over the client's own capabilities)."""
        caps = dict(self._client.capabilities)
        extensions = dict(caps.get("extensions") or {})
        extensions.setdefault(TASKS_EXTENSION, {})
        caps["extensions"] = extensions
        return {CLIENT_CAPABILITIES: caps}

    def _check_era(self) -> None:
        if self._client.era == "legacy":
            raise LocalProtocolError("the tasks extension needs protocol version "
                                     "2026-07-28; this server speaks "
                                     f"{self._client.protocol_version}")

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                        timeout: float | EllipsisType | None = ...
                        ) -> types.CallToolResult | TaskHandle:
        """``tools/call`` with the extension declared: the result if the server answered
        at once (MRTR rounds first answered by the resolvers), else a ``TaskHandle``."""
        self._check_era()
        result = await self._client.call_tool_raw(name, arguments, meta=self.meta(),
                                                   timeout=timeout)
        if result.get("resultType") == "task":
            created = typed_result(result, CreateTaskResult, "tools/call")
            return TaskHandle(self, created.task_id, created=created)
        return typed_result(result, types.CallToolResult, "tools/call")

    def handle(self, task_id: str) -> TaskHandle:
        """A handle on a task created earlier (its id persisted across a restart)."""
        return TaskHandle(self, task_id)

    async def request(self, method: str, task_id: str, **params: Any) -> dict[str, Any]:
        self._check_era()
        if not isinstance(task_id, str) or not task_id:
            raise LocalProtocolError("task ids are non-empty strings")
        return await self._client.request(method, {"taskId": task_id, **params,
                                                   "_meta": self.meta()})

    async def get(self, task_id: str) -> DetailedTask:
        """``tasks/get``: the task as it is now (the variant of its status)."""
        result = await self.request("tasks/get", task_id)
        task = _detailed(result, "tasks/get")
        if task.task_id != task_id:
            raise RemoteProtocolError(f"tasks/get: asked for {task_id}, got {task.task_id}")
        return task

    async def update(self, task_id: str, responses: Mapping[str, Any]) -> None:
        """``tasks/update``: answers to outstanding input requests (an ack only)."""
        await self.request("tasks/update", task_id, inputResponses=dict(responses))

    async def cancel(self, task_id: str) -> None:
        """``tasks/cancel`` (an ack only: the task may still end otherwise)."""
        await self.request("tasks/cancel", task_id)

    def listen(self, task_ids: list[str]) -> Subscription:
        """``subscriptions/listen`` for ``notifications/tasks`` about these tasks (the
        acknowledgement names those the server agreed to report on); ``task_of`` reads
        each notification."""
        self._check_era()
        return Subscription(self._client, {"taskIds": list(task_ids)}, meta=self.meta())


def task_of(note: types.Notification) -> DetailedTask:
    """The ``DetailedTask`` a ``notifications/tasks`` carries."""
    if note.method != "notifications/tasks" or not isinstance(note.params, dict):
        raise LocalProtocolError(f"{note.method} is not a task notification")
    return _detailed(note.params, note.method)


def _detailed(value: dict[str, Any], method: str) -> DetailedTask:
    try:  # a union of tagged Structs (the stubs take only one type: hence the casts)
        task = cast("DetailedTask", msgspec.convert(value, cast(Any, DetailedTask)))
    except msgspec.ValidationError as exc:
        raise RemoteProtocolError(f"{method}: invalid task: {exc}") from None
    return task


class TaskHandle:
    """One task on the server: poll it, answer it, cancel it, or wait for its result."""

    def __init__(self, tasks: ClientTasks, task_id: str, *,
                 created: CreateTaskResult | None = None) -> None:
        self._tasks = tasks
        self.task_id = task_id
        #: The ``CreateTaskResult`` that announced it (None for a resumed handle).
        self.created = created
        #: The last state seen (``get``, ``wait``).
        self.last: DetailedTask | None = None
        #: Input-request keys already answered (keys are never reused in a task).
        self.answered: set[str] = set()

    def __repr__(self) -> str:
        return f"TaskHandle({self.task_id!r}, {self.status or '?'})"

    @property
    def status(self) -> str | None:
        """The last status seen (``working``, ``input_required``, ``completed``,
        ``failed``, ``cancelled``), or None before the first ``get``."""
        source = self.last if self.last is not None else self.created
        if isinstance(source, CreateTaskResult):
            return source.status
        return _status(source) if source is not None else None

    @property
    def status_message(self) -> str | None:
        """The last ``statusMessage`` seen (how far the work got, why it ended)."""
        source = self.last if self.last is not None else self.created
        message = getattr(source, "status_message", None)
        return message if isinstance(message, str) else None

    async def get(self) -> DetailedTask:
        self.last = await self._tasks.get(self.task_id)
        return self.last

    async def update(self, responses: Mapping[str, Any]) -> None:
        await self._tasks.update(self.task_id, responses)
        self.answered.update(responses)

    async def cancel(self) -> None:
        await self._tasks.cancel(self.task_id)

    def interval(self) -> float:
        """Seconds until the next poll: the server's ``pollIntervalMs``, clamped."""
        source = self.last if self.last is not None else self.created
        ms = getattr(source, "poll_interval_ms", None)
        if not isinstance(ms, int):
            return DEFAULT_POLL
        # Clamped before dividing: a server's 400-digit integer is an OverflowError in /.
        return min(max(ms, MIN_POLL * 1000), MAX_POLL * 1000) / 1000

    async def wait(self, *, answer: bool = True,
                   on_update: Callable[[DetailedTask], Any] | None = None
                   ) -> types.CallToolResult:
        """Poll until the task ends; its ``CallToolResult`` (``is_error`` included).

        With ``answer`` (the default) each new input request is answered through the
        client's resolvers (``on_elicit``, ``on_sample``, ``on_roots``) and sent with
        ``tasks/update``, for at most the client's ``max_rounds`` rounds
        (``LocalProtocolError`` after: a server that keeps asking is not finishing);
        without, the wait goes on until someone else answers. ``on_update(task)`` (sync
        or async) hears each new state seen. ``failed`` raises ``RemoteProtocolError``
        (the task's error), ``cancelled`` ``TaskCancelled``. Bound the wait with
        ``asyncio.timeout`` if need be (``call_tool``'s transparent wait is bounded by
        the client's ``task_timeout``).
        """
        seen: DetailedTask | None = None
        rounds = 0
        while True:
            task = await self.get()
            if on_update is not None and task != seen:
                seen = task
                outcome = on_update(task)
                if inspect.isawaitable(outcome):
                    await outcome
            if _status(task) in TERMINAL:
                return self._outcome(task)
            if answer and isinstance(task, InputRequiredTask):
                fresh = {key: msgspec.to_builtins(request)
                         for key, request in task.input_requests.items()
                         if key not in self.answered}
                if fresh:
                    client = self._tasks._client
                    rounds += 1
                    if rounds > client.max_rounds:
                        raise LocalProtocolError(
                            f"task {self.task_id}: the server still needs input after "
                            f"{client.max_rounds} rounds (max_rounds); giving up")
                    await self.update(await client.resolvers.answer_round("tasks/get", fresh))
                    continue
            await self._tasks._client.clock.sleep(self.interval())

    def _outcome(self, task: DetailedTask) -> types.CallToolResult:
        if isinstance(task, CompletedTask):
            return typed_result(task.result, types.CallToolResult, "tasks/get")
        if isinstance(task, FailedTask):
            error = task.error
            code, message = error.get("code"), error.get("message")
            raise RemoteProtocolError(
                message if isinstance(message, str) and message else
                f"task {self.task_id} failed",
                code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                data=error.get("data"))
        raise TaskCancelled(task)


def _status(task: DetailedTask) -> str:
    """A ``DetailedTask``'s status: the variant's tag."""
    tag: str = type(task).__struct_config__.tag  # type: ignore[assignment]
    return tag


async def drive(client: TaskClient, result: dict[str, Any]) -> types.CallToolResult:
    """``client.call_tool``'s transparent path: a task handle's final result, within the
    client's ``task_timeout`` (a task that never ends is cancelled, best effort, and the
    call raises ``RequestTimeout``)."""
    created = typed_result(result, CreateTaskResult, "tools/call")
    handle = TaskHandle(client.tasks, created.task_id, created=created)
    try:
        async with client.clock.timeout(client.task_timeout):
            return await handle.wait()
    except TimeoutError:
        with contextlib.suppress(ClientError, TimeoutError):
            async with client.clock.timeout(client.timeout):
                await handle.cancel()
        raise RequestTimeout(f"tools/call: task {handle.task_id} did not end within "
                             f"{client.task_timeout} s (task_timeout); cancelled") from None


__all__ = ["DEFAULT_POLL", "MAX_POLL", "MIN_POLL", "ClientTasks", "TaskCancelled",
           "TaskClient", "TaskHandle", "declares_tasks", "drive", "task_of"]
