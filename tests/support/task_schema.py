"""JSON Schemas for the tasks extension's messages, written from SEP-2663's TypeScript
("Tasks", "Task Status", "Task Polling", "Task Update Requests", "Task Cancellation",
"Task Status Notifications"): the core schema.json has no task types.

``SchemaChecker`` adds these ``$defs`` to the official ones, so every task message a
peer receives is checked like every other message. Stricter than the SEP's types where
the SEP's prose is: integer milliseconds, ISO 8601 timestamps, each status carrying
its own payload and no other, and no ``requestState`` anywhere.
"""

from __future__ import annotations

from typing import Any

ISO_8601 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$"
STATUSES = ["working", "input_required", "completed", "failed", "cancelled"]
#: Fields that belong to one status each (or, ``requestState``, to MRTR only).
PAYLOADS = ("inputRequests", "result", "error", "requestState")

_TASK_PROPERTIES: dict[str, Any] = {
    "taskId": {"type": "string", "minLength": 1},
    "status": {"enum": STATUSES},
    "statusMessage": {"type": "string"},
    "createdAt": {"type": "string", "pattern": ISO_8601},
    "lastUpdatedAt": {"type": "string", "pattern": ISO_8601},
    "ttlMs": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
    "pollIntervalMs": {"type": "integer", "minimum": 1},
    "_meta": {"type": "object"},
}
_REQUIRED = ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"]


def _variant(status: str, payload: str | None, payload_schema: Any = None) -> dict[str, Any]:
    absent = [p for p in PAYLOADS if p != payload]
    out: dict[str, Any] = {
        "type": "object",
        "properties": {**_TASK_PROPERTIES, "status": {"const": status}},
        "required": [*_REQUIRED, *([payload] if payload else [])],
        "not": {"anyOf": [{"required": [p]} for p in absent]},
    }
    if payload:
        out["properties"][payload] = payload_schema
    return out


TASK_DEFS: dict[str, Any] = {
    "TaskInputRequest": {
        "type": "object",
        "properties": {"method": {"enum": ["elicitation/create", "sampling/createMessage",
                                           "roots/list"]},
                       "params": {"type": "object"}},
        "required": ["method"],
    },
    "DetailedTask": {"oneOf": [
        _variant("working", None),
        _variant("input_required", "inputRequests", {
            "type": "object", "minProperties": 1,
            "additionalProperties": {"$ref": "#/$defs/TaskInputRequest"}}),
        _variant("completed", "result", {"$ref": "#/$defs/CallToolResult"}),
        _variant("failed", "error", {
            "type": "object", "properties": {"code": {"type": "integer"},
                                             "message": {"type": "string"}},
            "required": ["code", "message"]}),
        _variant("cancelled", None),
    ]},
    "CreateTaskResult": {
        "type": "object",
        "properties": {**_TASK_PROPERTIES, "resultType": {"const": "task"}},
        "required": ["resultType", *_REQUIRED],
        "not": {"anyOf": [{"required": [p]} for p in PAYLOADS] + [{"required": ["task"]}]},
    },
    "GetTaskResult": {
        "allOf": [{"$ref": "#/$defs/DetailedTask"},
                  {"properties": {"resultType": {"const": "complete"}},
                   "required": ["resultType"]}],
    },
    "TaskAck": {
        "type": "object",
        "properties": {"resultType": {"const": "complete"}, "_meta": {"type": "object"}},
        "required": ["resultType"],
        "additionalProperties": False,
    },
    "TaskStatusNotification": {
        "type": "object",
        "properties": {"jsonrpc": {"const": "2.0"}, "method": {"const": "notifications/tasks"},
                       "params": {"$ref": "#/$defs/DetailedTask"}},
        "required": ["jsonrpc", "method", "params"],
    },
}
#: Task request method -> the ``$defs`` name of its result.
TASK_RESULT_DEFS = {"tasks/get": "GetTaskResult", "tasks/update": "TaskAck",
                    "tasks/cancel": "TaskAck"}

__all__ = ["ISO_8601", "TASK_DEFS", "TASK_RESULT_DEFS"]
