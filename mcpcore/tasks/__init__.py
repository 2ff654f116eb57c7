"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): durable tasks.

A server may answer a ``tools/call`` with a task handle instead of a result; the client
then polls ``tasks/get``, answers input requests with ``tasks/update`` and may
``tasks/cancel``, on any instance of the fleet. The modules:

- ``states``: the state machine, one table;
- ``ids``: task ids (192 random bits), owner digests, input-request keys;
- ``wire``: the extension's wire types (``CreateTaskResult``, ``DetailedTask`` ...);
- ``record``: ``TaskRecord``, a task as stored, and every way it may change;
- ``manager``: ``TaskManager``, the operations behind the three methods and task
  creation, on a ``TaskBackend`` (``mcpcore.stores.tasks``: memory or Redis);
- ``run``: ``TaskRun``, the work of one task under a lease, asking through the task;
- ``inputs``: ``TaskFlow`` and ``TaskInputs``, how a handler's questions become the
  task's ``inputRequests``;
- ``engine``: ``ServerTasks``, what a ``Server`` does for the extension (the three
  routes, tool calls that become tasks, task ids on listen streams).

Every name loads on first use (PEP 562), so a client that only needs ``wire`` does not
load the manager, the stores or the MRTR machinery.
"""

from typing import TYPE_CHECKING

from mcpcore.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from mcpcore.tasks.engine import ServerTasks
    from mcpcore.tasks.ids import is_task_id, mint_task_id, owner_digest
    from mcpcore.tasks.inputs import TaskFlow, TaskInputs
    from mcpcore.tasks.manager import TaskManager, UnknownTask
    from mcpcore.tasks.record import TaskRecord
    from mcpcore.tasks.run import TaskRun, Work
    from mcpcore.tasks.states import (
        TERMINAL,
        TRANSITIONS,
        InvalidTransition,
        TaskEvent,
        TaskStatus,
        next_status,
    )
    from mcpcore.tasks.wire import (
        TASKS_EXTENSION,
        CancelledTask,
        CancelTaskRequestParams,
        CompletedTask,
        CreateTaskResult,
        DetailedTask,
        FailedTask,
        GetTaskRequestParams,
        InputRequiredTask,
        Task,
        TaskInputRequest,
        TaskSubscription,
        UpdateTaskRequestParams,
        WorkingTask,
    )

#: Where each public name lives; ``__getattr__`` imports it from there on first use.
_HOMES: dict[str, str] = {
    "ServerTasks": "mcpcore.tasks.engine",
    **dict.fromkeys(("is_task_id", "mint_task_id", "owner_digest"), "mcpcore.tasks.ids"),
    **dict.fromkeys(("TaskFlow", "TaskInputs"), "mcpcore.tasks.inputs"),
    **dict.fromkeys(("TaskManager", "UnknownTask"), "mcpcore.tasks.manager"),
    "TaskRecord": "mcpcore.tasks.record",
    **dict.fromkeys(("TaskRun", "Work"), "mcpcore.tasks.run"),
    **dict.fromkeys(("TERMINAL", "TRANSITIONS", "InvalidTransition", "TaskEvent",
                     "TaskStatus", "next_status"), "mcpcore.tasks.states"),
    **dict.fromkeys(("TASKS_EXTENSION", "CancelledTask", "CancelTaskRequestParams",
                     "CompletedTask", "CreateTaskResult", "DetailedTask", "FailedTask",
                     "GetTaskRequestParams", "InputRequiredTask", "Task",
                     "TaskInputRequest", "TaskSubscription", "UpdateTaskRequestParams",
                     "WorkingTask"), "mcpcore.tasks.wire"),
}


__getattr__, __dir__ = _lazy_exports(__name__, _HOMES)


__all__ = [
    "TASKS_EXTENSION",
    "TERMINAL",
    "TRANSITIONS",
    "CancelTaskRequestParams",
    "CancelledTask",
    "CompletedTask",
    "CreateTaskResult",
    "DetailedTask",
    "FailedTask",
    "GetTaskRequestParams",
    "InputRequiredTask",
    "InvalidTransition",
    "ServerTasks",
    "Task",
    "TaskEvent",
    "TaskFlow",
    "TaskInputRequest",
    "TaskInputs",
    "TaskManager",
    "TaskRecord",
    "TaskRun",
    "TaskStatus",
    "TaskSubscription",
    "UnknownTask",
    "UpdateTaskRequestParams",
    "Work",
    "WorkingTask",
    "is_task_id",
    "mint_task_id",
    "next_status",
    "owner_digest",
]
