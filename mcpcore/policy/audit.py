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
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)


class AuditSink(Protocol):
    def emit(self, event: AuditEvent) -> None: ...


class LoggingAuditSink:
    """One JSON line per event on the ``mcpcore.audit`` logger, at INFO."""

    def __init__(self, logger: logging.Logger = audit_log) -> None:
        self.logger = logger

    def emit(self, event: AuditEvent) -> None:
        self.logger.info("%s", event.to_json())


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
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()



__all__ = ["AuditEvent", "AuditSink", "LoggingAuditSink", "MemoryAuditSink", "args_digest",
           "audit_log", "sha256_hex"]
