"""The task state machine, as one table. Everything that decides a task's next status
lives in this file; anything not in ``TRANSITIONS`` is invalid.

Statuses and their rules come from the tasks extension (SEP-2663, "Task Status")::

    working ──ask──▶ input_required ──answer_all──▶ working
       │                  │  ▲   answer_some, ask, note, renew: stays
       │                  │  └─┘
       └──────┬───────────┘
              ▼ complete | fail | cancel | lapse
      completed · failed · cancelled      (terminal: "the task's state does not change")

- ``complete``: the work returned a result. A tool result with ``isError: true`` is
  still ``completed``; ``failed`` is only for JSON-RPC errors (SEP-2663, "Task
  Execution Errors").
- ``fail``: the work raised a protocol error.
- ``lapse``: the worker running the task stopped renewing its lease (it died); the task
  becomes ``failed`` so it is never stuck in ``working``.
- ``cancel``: ``tasks/cancel``; we honour it at once, from any instance.
- ``renew`` and ``note`` (a new ``statusMessage``) change no status.

Rule: ``input_required`` holds exactly while the task has outstanding input requests.
The table only names the moves; ``mcpcore.tasks.record`` keeps that rule when it moves.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class TaskStatus(StrEnum):
    """A task's status, as on the wire."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TaskEvent(StrEnum):
    """What can happen to a task."""

    ASK = "ask"
    ANSWER_SOME = "answer_some"
    ANSWER_ALL = "answer_all"
    NOTE = "note"
    RENEW = "renew"
    COMPLETE = "complete"
    FAIL = "fail"
    CANCEL = "cancel"
    LAPSE = "lapse"


TERMINAL: Final = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})

_W, _I = TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED
_ENDINGS: Final = {
    TaskEvent.COMPLETE: TaskStatus.COMPLETED,
    TaskEvent.FAIL: TaskStatus.FAILED,
    TaskEvent.CANCEL: TaskStatus.CANCELLED,
    TaskEvent.LAPSE: TaskStatus.FAILED,
}

#: ``(status, event) -> next status``. Terminal statuses have no row: nothing moves them.
TRANSITIONS: Final[dict[tuple[TaskStatus, TaskEvent], TaskStatus]] = {
    (_W, TaskEvent.ASK): _I,
    (_W, TaskEvent.NOTE): _W,
    (_W, TaskEvent.RENEW): _W,
    (_I, TaskEvent.ASK): _I,
    (_I, TaskEvent.ANSWER_SOME): _I,
    (_I, TaskEvent.ANSWER_ALL): _W,
    (_I, TaskEvent.NOTE): _I,
    (_I, TaskEvent.RENEW): _I,
    **{(status, event): end for status in (_W, _I) for event, end in _ENDINGS.items()},
}


class InvalidTransition(Exception):
    """``event`` cannot happen in ``status`` (most often: the task already ended).

    Not an ``McpError``: callers decide what it means (a result that arrives after a
    cancellation is dropped; a cancellation of a finished task is acknowledged).
    """

    def __init__(self, status: TaskStatus, event: TaskEvent) -> None:
        super().__init__(f"a task that is {status.value} cannot {event.value}")
        self.status = status
        self.event = event


def next_status(status: TaskStatus, event: TaskEvent) -> TaskStatus:
    """The status after ``event``, or ``InvalidTransition``.

    >>> next_status(TaskStatus.WORKING, TaskEvent.ASK)
    <TaskStatus.INPUT_REQUIRED: 'input_required'>
    """
    try:
        return TRANSITIONS[status, event]
    except KeyError:
        raise InvalidTransition(status, event) from None


__all__ = [
    "TERMINAL",
    "TRANSITIONS",
    "InvalidTransition",
    "TaskEvent",
    "TaskStatus",
    "next_status",
]
