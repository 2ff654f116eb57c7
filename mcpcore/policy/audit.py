"""Audit events: one per gated call under a policy (every ``tools/call``; every routed
method when the policy gates them all), whatever its outcome.

What lives here: the event (digests only: never a token, an ID-JAG or an argument), the
sink protocol and two sinks (one JSON line per event on the ``mcpcore.audit`` logger; a
list in memory). The audit stream is its own logger so it can be routed apart from the
operational log (``mcpcore.logs.configure_logging(audit=...)``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

audit_log = logging.getLogger("mcpcore.audit")


@dataclass(slots=True)
class AuditEvent:
    """One decision and its result. Digests only: never a token or an argument."""

    ts: float
    request_id: str
    method: str
    #: The target the call names: a tool's name (or, under a policy that gates every
    #: routed method, a prompt's name or a resource's URI).
    tool: str
    #: The server a gateway forwarded the call to (``None``: the server's own).
    upstream: str | None = None
    ruleset_hash: str = ""
    rule_id: str = ""
    decision: str = ""
    reason_code: str = ""
    issuer: str | None = None
    tenant: str | None = None
    subject: str = ""
    client_id: str | None = None
    auth_kind: str = ""
    token_id_sha256: str | None = None
    category: str | None = None
    external: bool | None = None
    args_digest: str = ""
    required_scopes: list[str] = field(default_factory=list)
    granted_scopes: list[str] = field(default_factory=list)
    confirmation_id: str | None = None
    confirmation: str | None = None
    #: The task the call became (the tasks extension), if it did.
    task_id: str | None = None
    result: str = ""
    error_code: int | None = None
    #: The handler's time budget when it overran it (``result == "timeout"``).
    timeout_seconds: float | None = None
    #: Each token exchange the tool asked for: audience, scopes, "allowed" or "refused".
    downstream: list[dict[str, Any]] = field(default_factory=list)
    latency_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def to_json(self) -> str:
        """One line of JSON: compact, keys sorted, ASCII only (what is not ASCII is
        escaped as ``\\uXXXX``, so no character of the event can end the line for a
        reader that splits on Unicode line breaks). Encoded in one pass (msgspec); an
        event with text that is not ASCII, or that msgspec cannot encode (a lone
        surrogate), takes ``json.dumps``, which escapes it."""
        try:
            line = _ENCODER.encode(self)
        except (TypeError, msgspec.EncodeError, UnicodeEncodeError):
            line = b"\x80"  # below: the escaping encoder
        if line.isascii():
            return line.decode("ascii")
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)


#: Dataclass fields and dict keys in sorted order, as ``json.dumps(sort_keys=True)``.
_ENCODER = msgspec.json.Encoder(order="sorted")


class AuditSink(Protocol):
    def emit(self, event: AuditEvent) -> None: ...


class AuditLineWriter(Protocol):
    """A logging handler that can write an audit line without a ``LogRecord``
    (``mcpcore.logs``' audit handler): written and flushed at once, as its ``emit``
    writes a record's."""

    def write_line(self, line: str) -> None: ...


class LoggingAuditSink:
    """One JSON line per event on the ``mcpcore.audit`` logger, at INFO.

    When that logger sends its records nowhere but to one handler that writes lines
    as they are (``AuditLineWriter``: what ``configure_logging(audit=...)`` installs),
    with no filter on either, the line goes straight to that handler: the same bytes,
    written and flushed per event, without a ``LogRecord`` (its creation and the
    caller lookup cost more than encoding the event). Any other set-up — handlers of
    your own, filters, propagation to the root logger (``caplog``) — gets the record
    as before."""

    def __init__(self, logger: logging.Logger = audit_log) -> None:
        self.logger = logger

    def emit(self, event: AuditEvent) -> None:
        logger = self.logger
        if not logger.isEnabledFor(logging.INFO):
            return
        line = event.to_json()
        writer = _line_writer(logger)
        if writer is None:
            logger.info("%s", line)
        else:
            writer.write_line(line)


def _line_writer(logger: logging.Logger) -> AuditLineWriter | None:
    """``logger``'s only destination, if it is an ``AuditLineWriter`` that would take an
    INFO record unfiltered; else None (the record goes through logging)."""
    if logger.propagate or logger.filters or len(logger.handlers) != 1:
        return None
    handler = logger.handlers[0]
    if (handler.filters or handler.level > logging.INFO
            or not callable(getattr(handler, "write_line", None))):
        return None
    return handler  # type: ignore[return-value]


class MemoryAuditSink:
    """Keeps events in a list (tests, debugging)."""

    def __init__(self) -> None:
        self.events: list[AuditEvent] = []

    def emit(self, event: AuditEvent) -> None:
        self.events.append(event)


def args_digest(arguments: Mapping[str, Any]) -> str:
    """SHA-256 over the canonical JSON of the arguments (keys sorted)."""
    try:
        raw = msgspec.json.encode(arguments, order="sorted")
    except (TypeError, msgspec.EncodeError):
        raw = repr(sorted(arguments.items())).encode()
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def sha256_hex(value: str | None) -> str | None:
    """The SHA-256 of ``value`` in hex. A token's id is digested for each of its calls:
    the last ``_DIGESTS_KEPT`` digests are kept (a pure function of the id: nothing is
    trusted from the cache that the id would not give again)."""
    if value is None:
        return None
    digest = _digests.get(value)
    if digest is None:
        if len(_digests) >= _DIGESTS_KEPT:
            _digests.clear()
        digest = _digests[value] = hashlib.sha256(value.encode()).hexdigest()
    return digest


_DIGESTS_KEPT = 4096
_digests: dict[str, str] = {}



__all__ = ["AuditEvent", "AuditLineWriter", "AuditSink", "LoggingAuditSink",
           "MemoryAuditSink", "args_digest", "audit_log", "sha256_hex"]
