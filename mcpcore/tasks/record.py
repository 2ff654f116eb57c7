"""``TaskRecord``: one task as the store keeps it, and every way it may change.

A record is immutable; each change returns a new one, made only through
``mcpcore.tasks.states`` (so a finished task never moves again) and keeping its rule:
``input_required`` exactly while input requests are outstanding. Times are integer
milliseconds since the epoch from the caller's clock (records travel between instances,
so they hold wall-clock times, never monotonic ones).

What the wire sees is rendered here too (``detailed``, ``created``): the store never
holds wire JSON, so the wire shape can follow the extension without migrating data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from mcpcore.tasks.ids import input_key
from mcpcore.tasks.states import TERMINAL, TaskEvent, TaskStatus, next_status
from mcpcore.tasks.wire import (
    CancelledTask,
    CompletedTask,
    CreateTaskResult,
    DetailedTask,
    FailedTask,
    InputRequiredTask,
    TaskInputRequest,
    WorkingTask,
)


class TaskRecord(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """One task. Build the first one with ``TaskRecord.new``."""

    task_id: str
    #: ``owner_digest`` of the principal that created the task.
    owner: str
    status: TaskStatus
    created_ms: int
    updated_ms: int
    ttl_ms: int
    poll_interval_ms: int | None = None
    status_message: str | None = None
    #: Outstanding input requests: minted key -> ``{"method", "params"?}``.
    inputs: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: The instance running the work, and until when its lease holds.
    worker: str | None = None
    lease_until_ms: int = 0
    #: The next input-request sequence number (keys are never reused).
    next_seq: int = 1

    @classmethod
    def new(cls, task_id: str, owner: str, *, now_ms: int, ttl_ms: int, worker: str,
            lease_ms: int, poll_interval_ms: int | None = None,
            status_message: str | None = None) -> TaskRecord:
        """A ``working`` task whose lease ``worker`` holds for ``lease_ms``."""
        if ttl_ms < 1 or lease_ms < 1:
            raise ValueError("ttl_ms and lease_ms must be positive")
        return cls(task_id=task_id, owner=owner, status=TaskStatus.WORKING,
                   created_ms=now_ms, updated_ms=now_ms, ttl_ms=ttl_ms,
                   poll_interval_ms=poll_interval_ms, status_message=status_message,
                   worker=worker, lease_until_ms=now_ms + lease_ms)

    # -- reading -----------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.status in TERMINAL

    @property
    def expires_ms(self) -> int:
        """When the record may be discarded: ``ttlMs`` counts from creation."""
        return self.created_ms + self.ttl_ms

    def remaining_ms(self, now_ms: int) -> int:
        """Milliseconds of life left (at least 1, so a store TTL is never zero)."""
        return max(1, self.expires_ms - now_ms)

    def same_view(self, other: TaskRecord) -> bool:
        """True if a client would see no difference (only the lease moved)."""
        return msgspec.structs.replace(other, worker=self.worker,
                                       lease_until_ms=self.lease_until_ms) == self

    def lapsed(self, now_ms: int) -> bool:
        """True if the task is unfinished and its worker's lease has run out."""
        return not self.finished and self.lease_until_ms <= now_ms

    # -- changing ----------------------------------------------------------------------
    def _move(self, event: TaskEvent, now_ms: int | None, **changes: Any) -> TaskRecord:
        status = next_status(self.status, event)
        if now_ms is not None:
            changes["updated_ms"] = max(now_ms, self.updated_ms)
        if status in TERMINAL:
            changes.update(inputs={}, worker=None, lease_until_ms=0)
        return msgspec.structs.replace(self, status=status, **changes)

    def ask(self, requests: Iterable[tuple[str | None, Mapping[str, Any]]], now_ms: int
            ) -> tuple[TaskRecord, list[str]]:
        """Add input requests (``(key hint, {"method", "params"?})``); the new record
        and the keys minted for them, in order."""
        inputs, seq, keys = dict(self.inputs), self.next_seq, []
        for hint, request in requests:
            key = input_key(seq, hint)
            seq += 1
            inputs[key] = dict(request)
            keys.append(key)
        if not keys:
            raise ValueError("ask needs at least one request")
        return self._move(TaskEvent.ASK, now_ms, inputs=inputs, next_seq=seq), keys

    def answer(self, keys: Iterable[str], now_ms: int) -> TaskRecord:
        """Drop answered requests (keys that are not outstanding are ignored)."""
        answered = {k for k in keys if k in self.inputs}
        if not answered:
            return self
        left = {k: v for k, v in self.inputs.items() if k not in answered}
        event = TaskEvent.ANSWER_SOME if left else TaskEvent.ANSWER_ALL
        return self._move(event, now_ms, inputs=left)

    def note(self, message: str | None, now_ms: int) -> TaskRecord:
        """A new ``statusMessage`` (``None`` removes it)."""
        return self._move(TaskEvent.NOTE, now_ms, status_message=message)

    def renew(self, worker: str, until_ms: int) -> TaskRecord:
        """Extend the lease; invisible on the wire (``lastUpdatedAt`` stays)."""
        renewed = self._move(TaskEvent.RENEW, None, lease_until_ms=until_ms)
        if worker != self.worker:
            raise ValueError(f"the lease belongs to {self.worker!r}, not {worker!r}")
        return renewed

    def complete(self, result: Mapping[str, Any], now_ms: int) -> TaskRecord:
        return self._move(TaskEvent.COMPLETE, now_ms, result=dict(result))

    def fail(self, error: Mapping[str, Any], now_ms: int, message: str | None = None
             ) -> TaskRecord:
        """End with a JSON-RPC error object; ``message`` becomes the ``statusMessage``."""
        changes: dict[str, Any] = {"error": dict(error)}
        if message is not None:
            changes["status_message"] = message
        return self._move(TaskEvent.FAIL, now_ms, **changes)

    def cancel(self, now_ms: int) -> TaskRecord:
        return self._move(TaskEvent.CANCEL, now_ms, status_message="Cancelled by the client")

    def lapse(self, now_ms: int) -> TaskRecord:
        """The worker is gone: fail with an internal error that says so."""
        error = {"code": -32603,
                 "message": "The server instance running this task stopped before it "
                            "finished (its lease lapsed)"}
        return self._move(TaskEvent.LAPSE, now_ms, error=error,
                          status_message="The task's worker stopped; the task cannot finish")

    # -- the wire ----------------------------------------------------------------------
    def _common(self) -> dict[str, Any]:
        common: dict[str, Any] = {
            "task_id": self.task_id,
            "created_at": iso8601(self.created_ms),
            "last_updated_at": iso8601(self.updated_ms),
            "ttl_ms": self.ttl_ms,
        }
        if self.status_message is not None:
            common["status_message"] = self.status_message
        if self.poll_interval_ms is not None:
            common["poll_interval_ms"] = self.poll_interval_ms
        return common

    def detailed(self) -> DetailedTask:
        """The ``DetailedTask`` for the current status (``tasks/get``, notifications)."""
        common = self._common()
        status = self.status
        if status is TaskStatus.WORKING:
            return WorkingTask(**common)
        if status is TaskStatus.INPUT_REQUIRED:
            return InputRequiredTask(**common, input_requests={
                k: msgspec.convert(v, TaskInputRequest) for k, v in self.inputs.items()})
        if status is TaskStatus.COMPLETED:
            return CompletedTask(**common, result=dict(self.result or {}))
        if status is TaskStatus.FAILED:
            return FailedTask(**common, error=dict(self.error or {}))
        return CancelledTask(**common)

    def created(self) -> CreateTaskResult:
        """The flat ``CreateTaskResult`` announcing this task."""
        return CreateTaskResult(**self._common(), status=self.status.value)


def iso8601(ms: int) -> str:
    """UTC ISO 8601 with milliseconds: ``2026-07-28T10:30:00.000Z``.

    >>> iso8601(0)
    '1970-01-01T00:00:00.000Z'
    """
    stamp = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(TaskRecord)


def encode_record(record: TaskRecord) -> bytes:
    return _encoder.encode(record)


def decode_record(data: bytes) -> TaskRecord:
    """A stored record; ``msgspec.DecodeError`` if the bytes are not one."""
    return _decoder.decode(data)


#: A change: the record read -> the record to write, and an answer batch to log with it.
Change = Callable[[TaskRecord], tuple[TaskRecord, bytes | None]]

#: One batch of the answer log (``tasks/update``'s accepted answers, by key), as written
#: with the change that accepted it and as the worker reads it back.
encode_answers = msgspec.json.Encoder().encode
decode_answers = msgspec.json.Decoder(dict[str, Any]).decode


__all__ = ["Change", "TaskRecord", "decode_answers", "decode_record", "encode_answers",
           "encode_record", "iso8601"]
