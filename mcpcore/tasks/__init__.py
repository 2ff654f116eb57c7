"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): durable tasks.

A server may answer a ``tools/call`` with a task handle instead of a result; the client
then polls ``tasks/get``, answers input requests with ``tasks/update`` and may
``tasks/cancel``, on any instance of the fleet. This package holds everything about
tasks that does not depend on the engine's shape:

- ``states``: the state machine, one table;
- ``ids``: task ids (192 random bits), owner digests, input-request keys;
- ``wire``: the extension's wire types (``CreateTaskResult``, ``DetailedTask`` ...);
- ``record``: ``TaskRecord``, a task as stored, and every way it may change;
- ``manager``: ``TaskManager``, the operations behind the three methods and task
  creation, on a ``TaskBackend`` (``mcpcore.stores.tasks``: memory or Redis);
- ``run``: ``TaskRun``, the work of one task under a lease, asking through the task.
"""

from mcpcore.tasks.ids import is_task_id, mint_task_id, owner_digest
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
    "Task",
    "TaskEvent",
    "TaskInputRequest",
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
