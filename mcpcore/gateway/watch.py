"""What watches the gateway's upstream calls, and its quarantine's audit events
(docs/gateway.md, "Observability").

What lives here: the ``CallWatcher`` protocol (``Upstream.call`` begins one
``WatchedCall`` per call to an upstream and finishes it with the exception, if any),
the bounded labels the watchers use (``method_label``, ``error_kind``, ``outcome_of``),
and ``audit_quarantine``: each tool the quarantine holds back or releases, as one
``AuditEvent`` to the policy's sinks. What must not: any third-party import; the
watchers themselves are ``mcpcore.gateway.metrics`` (prometheus_client) and
``mcpcore.gateway.tracing`` (OpenTelemetry), imported only when turned on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Protocol

from mcpcore.gateway.errors import CredentialUnavailable, UpstreamError, UpstreamRejected

if TYPE_CHECKING:
    from mcpcore.gateway.quarantine import Quarantine, QuarantinedTool
    from mcpcore.policy import Policy

#: What a call to an upstream does (``Upstream.call``'s ``what``, its first word):
#: ``listing`` is the catalog's walk of the upstream's lists.
METHODS: Final = frozenset({"tools/call", "resources/read", "prompts/get",
                            "completion/complete", "listing", "tasks/get", "tasks/update",
                            "tasks/cancel"})
#: The ``method`` of the audit events of the quarantine (not an MCP method).
QUARANTINE_METHOD: Final = "gateway/quarantine"


class WatchedCall(Protocol):
    """One call to an upstream, as one watcher sees it."""

    def finished(self, error: BaseException | None) -> None:
        """Exactly once: ``None`` if the upstream answered a result."""
        ...


class CallWatcher(Protocol):
    """Something that watches every call to an upstream (``Upstream.watchers``)."""

    def begin(self, upstream: str, method: str, target: str) -> WatchedCall: ...


def method_label(method: str) -> str:
    """``method`` if the gateway makes such calls, else ``other`` (a bounded label)."""
    return method if method in METHODS else "other"


def outcome_of(error: BaseException | None) -> str:
    """``ok``; ``rejected`` (the upstream answered a JSON-RPC error, relayed);
    ``error`` (it did not answer usably, or no credential); ``cancelled``."""
    if error is None:
        return "ok"
    if isinstance(error, UpstreamRejected):
        return "rejected"
    return "error" if isinstance(error, Exception) else "cancelled"


def error_kind(error: BaseException) -> str | None:
    """The bounded kind of a failed call: an ``UpstreamError``'s reason (``down``,
    ``timeout``, ``circuit_open``...), ``rejected`` for a relayed JSON-RPC error,
    ``credential_<reason>`` for a credential the gateway could not obtain, ``internal``
    for anything else; ``None`` for a cancelled call."""
    if isinstance(error, UpstreamError):
        return str(error.reason)
    if isinstance(error, UpstreamRejected):
        return "rejected"
    if isinstance(error, CredentialUnavailable):
        return f"credential_{error.reason}"
    return "internal" if isinstance(error, Exception) else None


def audit_quarantine(quarantine: Quarantine, policy: Policy,
                     clock: Callable[[], float] = time.time) -> None:
    """Emit one ``AuditEvent`` to ``policy``'s sinks each time ``quarantine`` holds a
    tool back (``decision="quarantine"``, ``reason_code``: ``changed``, ``new``,
    ``invalid`` or ``duplicate``) and each time it releases one
    (``decision="release"``), with the upstream and the tool's own name; ``method`` is
    ``gateway/quarantine``. Hooks already set on the quarantine are called too."""
    from mcpcore.policy.audit import AuditEvent

    held_before, released_before = quarantine.on_quarantine, quarantine.on_release
    ruleset = policy.ruleset.hash

    def held(tool: QuarantinedTool) -> None:
        policy.emit(AuditEvent(ts=clock(), request_id="", method=QUARANTINE_METHOD,
                               tool=tool.name, upstream=tool.upstream,
                               ruleset_hash=ruleset, decision="quarantine",
                               reason_code=tool.reason, result="held"))
        if held_before is not None:
            held_before(tool)

    def released(upstream: str, name: str) -> None:
        policy.emit(AuditEvent(ts=clock(), request_id="", method=QUARANTINE_METHOD,
                               tool=name, upstream=upstream, ruleset_hash=ruleset,
                               decision="release", reason_code="approved",
                               result="admitted"))
        if released_before is not None:
            released_before(upstream, name)

    quarantine.on_quarantine = held
    quarantine.on_release = released


__all__ = ["METHODS", "QUARANTINE_METHOD", "CallWatcher", "WatchedCall",
           "audit_quarantine", "error_kind", "method_label", "outcome_of"]
