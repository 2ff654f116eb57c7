"""Wire types of the tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

Named as in the extension's schema (``Task``, ``CreateTaskResult``, ``WorkingTask`` ...
``DetailedTask``, ``GetTaskRequestParams``). Settings come from ``mcpcore.types.Wire``:
camelCase on the wire, absent optionals left out.

- ``CreateTaskResult`` is flat (``Result & Task``) and tagged ``resultType: "task"``,
  the only result that may carry that value (SEP-2663, "Polymorphic Results"), so a
  client decodes ``CallToolResult | InputRequiredResult | CreateTaskResult`` by it.
- The ``DetailedTask`` variants (what ``tasks/get`` and ``notifications/tasks`` carry)
  are tagged by ``status``; each holds only its own payload: ``inputRequests`` when
  ``input_required``, ``result`` when ``completed``, ``error`` when ``failed``. Their
  ``resultType`` is ``"complete"``, which the engine stamps on every ordinary result.
- No ``requestState`` anywhere: that belongs to MRTR, not to tasks.
- ``ttlMs`` is required and may be ``null`` (unlimited); ``pollIntervalMs`` optional.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from mcpcore.types import Wire

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

TaskStatusName: TypeAlias = Literal[
    "working", "input_required", "completed", "failed", "cancelled"
]


class TaskInputRequest(Wire, kw_only=True):
    """One server-to-client request a task waits on (no ``jsonrpc``, no ``id``)."""

    method: str
    params: dict[str, Any] | UnsetType = UNSET


class _TaskFields(Wire, kw_only=True):
    """What every task shape carries besides its status (schema: ``Task``)."""

    task_id: str
    status_message: str | UnsetType = UNSET
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class Task(_TaskFields, kw_only=True):
    """A task's metadata with its status as a plain field."""

    status: TaskStatusName


class CreateTaskResult(_TaskFields, tag_field="resultType", tag="task", kw_only=True):
    """The answer to a ``tools/call`` the server chose to run as a task."""

    status: TaskStatusName


class WorkingTask(_TaskFields, tag_field="status", tag="working", kw_only=True):
    pass


class InputRequiredTask(_TaskFields, tag_field="status", tag="input_required",
                        kw_only=True):
    #: Every outstanding request, under keys never reused in the task's lifetime.
    input_requests: dict[str, TaskInputRequest]


class CompletedTask(_TaskFields, tag_field="status", tag="completed", kw_only=True):
    #: What the original request would have returned (a ``CallToolResult``).
    result: dict[str, Any]


class FailedTask(_TaskFields, tag_field="status", tag="failed", kw_only=True):
    #: The JSON-RPC error object (``code``, ``message``, ``data``?).
    error: dict[str, Any]


class CancelledTask(_TaskFields, tag_field="status", tag="cancelled", kw_only=True):
    pass


DetailedTask: TypeAlias = (
    WorkingTask | InputRequiredTask | CompletedTask | FailedTask | CancelledTask
)


class GetTaskRequestParams(Wire, kw_only=True):
    task_id: str
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class CancelTaskRequestParams(Wire, kw_only=True):
    task_id: str
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class UpdateTaskRequestParams(Wire, kw_only=True):
    task_id: str
    #: Answers keyed by outstanding ``inputRequests`` keys; other keys are ignored.
    input_responses: dict[str, dict[str, Any]]
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class TaskSubscription(Wire, kw_only=True):
    """The extension's field of ``subscriptions/listen`` ``notifications`` (and of its
    acknowledgement: the ids the server agreed to report on)."""

    task_ids: list[str] | UnsetType = UNSET


__all__ = [
    "TASKS_EXTENSION",
    "CancelTaskRequestParams",
    "CancelledTask",
    "CompletedTask",
    "CreateTaskResult",
    "DetailedTask",
    "FailedTask",
    "GetTaskRequestParams",
    "InputRequiredTask",
    "Task",
    "TaskInputRequest",
    "TaskStatusName",
    "TaskSubscription",
    "UpdateTaskRequestParams",
    "WorkingTask",
]
