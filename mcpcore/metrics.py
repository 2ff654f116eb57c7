"""Prometheus metrics for a server: what an operator graphs and alerts on.

What lives here: ``Metrics``, an observer of the engine (``mcpcore.observe``) and an audit
sink of the policy, holding its series in its own ``prometheus_client`` registry; and
``render``, the exposition text for ``/metrics`` (``mcpcore.health.Operations`` serves
it). Off by default: nothing imports this module (or prometheus_client) unless metrics
are turned on (``pip install 'mcpcore[metrics]'``).

Series (``docs/operating.md`` has their meaning and the alert rules):

    mcpcore_requests_total{method,tool,outcome}          counter
    mcpcore_request_duration_seconds{method,outcome}     histogram
    mcpcore_requests_in_flight                            gauge
    mcpcore_errors_total{method,code}                     counter (JSON-RPC error codes)
    mcpcore_mrtr_rounds_total{method}                     counter (input_required answers)
    mcpcore_mrtr_state_rejected_total                     counter (requestState refused)
    mcpcore_policy_decisions_total{decision,rule,reason}  counter
    mcpcore_rate_limited_total{tool}                      counter
    mcpcore_downstream_refused_total{tool}                counter
    mcpcore_tool_timeouts_total{tool}                     counter
    mcpcore_store_errors_total{kind}                      counter
    mcpcore_auth_failures_total{reason}                   counter (401/403 answers)
    mcpcore_http_responses_total{status}                  counter
    mcpcore_listen_streams                                gauge
    mcpcore_legacy_sessions{state}                        gauge / counter pair
    mcpcore_ready                                         gauge (last /readyz answer)

Labels are bounded: ``method`` is one of the server's routes (else ``other``), ``tool``
a registered tool name (else ``_unknown``, and ``""`` for other methods), ``rule`` one of
the current rule set's ids or the engine's own (``default``, ``scope``, ...), capped at
``max_rules`` distinct values (then ``_other``); no subject, URI or argument ever is one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from mcpcore import observe
from mcpcore.errors import InvalidRequestState, McpError

if TYPE_CHECKING:
    from mcpcore.context import Context
    from mcpcore.policy.audit import AuditEvent
    from mcpcore.server import Server

#: Seconds; from a cached read to a tool that waits on a person.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
           30.0, 60.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The series of one server, in one registry.

    >>> metrics = Metrics(server)        # observes server, and its policy if it has one
    >>> app = Operations(StreamableHTTP(server), metrics=metrics)     # GET /metrics
    ... # doctest: +SKIP

    ``registry``: where the series live (default: a registry of their own, so two
    servers in one process never collide; pass ``prometheus_client.REGISTRY`` to add
    them to the process-wide one). ``namespace`` prefixes every name.
    """

    def __init__(self, server: Server | None = None, *,
                 registry: CollectorRegistry | None = None, namespace: str = "mcpcore",
                 max_rules: int = 200) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.max_rules = max_rules
        self._methods: frozenset[str] = frozenset()
        self._tools: Any = None
        r, ns = self.registry, namespace
        self.requests = Counter(f"{ns}_requests_total", "Requests served, by method, tool "
                                "and outcome", ["method", "tool", "outcome"], registry=r)
        self.duration = Histogram(f"{ns}_request_duration_seconds", "Time to the final "
                                  "answer of a request", ["method", "outcome"],
                                  buckets=BUCKETS, registry=r)
        self.in_flight = Gauge(f"{ns}_requests_in_flight", "Requests being served",
                               registry=r)
        self.errors = Counter(f"{ns}_errors_total", "JSON-RPC errors answered, by code",
                              ["method", "code"], registry=r)
        self.mrtr_rounds = Counter(f"{ns}_mrtr_rounds_total", "Answers that asked the "
                                   "client for input (resultType input_required)",
                                   ["method"], registry=r)
        self.mrtr_rejected = Counter(f"{ns}_mrtr_state_rejected_total", "requestState "
                                     "that could not be opened (tampered, expired, "
                                     "replayed, another principal's)", registry=r)
        self.decisions = Counter(f"{ns}_policy_decisions_total", "Policy decisions, by "
                                 "decision, rule and reason", ["decision", "rule",
                                                               "reason"], registry=r)
        self.rate_limited = Counter(f"{ns}_rate_limited_total", "Calls refused by a rate "
                                    "limit", ["tool"], registry=r)
        self.downstream_refused = Counter(f"{ns}_downstream_refused_total", "Token "
                                          "exchanges a tool asked for and was refused",
                                          ["tool"], registry=r)
        self.timeouts = Counter(f"{ns}_tool_timeouts_total", "Tool handlers cancelled at "
                                "their timeout", ["tool"], registry=r)
        self.store_errors = Counter(f"{ns}_store_errors_total", "Store failures met while "
                                    "serving (kind: the error's class)", ["kind"],
                                    registry=r)
        self.auth_failures = Counter(f"{ns}_auth_failures_total", "Requests refused by "
                                     "authentication or authorization (401/403), by "
                                     "reason", ["reason"], registry=r)
        self.http_responses = Counter(f"{ns}_http_responses_total", "HTTP responses, by "
                                      "status", ["status"], registry=r)
        self.listen_streams = Gauge(f"{ns}_listen_streams", "Open subscriptions/listen "
                                    "streams", registry=r)
        self.legacy_streams = Gauge(f"{ns}_legacy_session_streams", "Open 2025-era "
                                    "session GET streams on this instance", registry=r)
        self.legacy_created = Counter(f"{ns}_legacy_sessions_created_total", "2025-era "
                                      "sessions created (initialize) on this instance",
                                      registry=r)
        self.ready = Gauge(f"{ns}_ready", "1 if the last readiness check passed",
                           registry=r)
        self._children: dict[tuple[Any, ...], Any] = {}
        self._rules: set[str] = set()
        if server is not None:
            self.watch(server)

    # -- wiring --------------------------------------------------------------------------
    def watch(self, server: Server) -> None:
        """Observe every request of ``server``, and its policy's decisions."""
        self._methods = frozenset(server._routes)
        self._tools = server.tools
        observe.attach(server, self)
        if server.policy is not None and self not in server.policy.sinks:
            server.policy.sinks.append(self)
        hub = server.subscriptions
        self.listen_streams.set_function(lambda: hub.active)

    def method_label(self, method: str) -> str:
        return method if method in self._methods else "other"

    def tool_label(self, name: str | None) -> str:
        if name is None:
            return ""
        tools = self._tools
        return name if tools is not None and name in tools else "_unknown"

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    # -- the engine's observer -------------------------------------------------------------
    def begin(self, method: str, headers: Mapping[str, str] | None) -> _Request:
        return _Request(self, self.method_label(method))

    # -- the policy's audit sink -----------------------------------------------------------
    def emit(self, event: AuditEvent) -> None:
        rule = event.rule_id or ""
        if rule not in self._rules:
            if len(self._rules) >= self.max_rules:
                rule = "_other"
            else:
                self._rules.add(rule)
        self._child(self.decisions, event.decision or "", rule,
                    event.reason_code or "").inc()
        tool = self.tool_label(event.tool)
        if event.reason_code == "rate_limited":
            self._child(self.rate_limited, tool).inc()
        for exchange in event.downstream:
            if exchange.get("result") == "refused":
                self._child(self.downstream_refused, tool).inc()

    # -- from the HTTP layer (``mcpcore.health.Operations``) -------------------------------
    def http_response(self, status: int, www_authenticate: str | None) -> None:
        self._child(self.http_responses, str(status)).inc()
        if status == 401 or (status == 403 and www_authenticate is not None):
            self._child(self.auth_failures, _auth_reason(status, www_authenticate)).inc()
        elif status == 403:
            self._child(self.auth_failures, "forbidden_origin").inc()

    def store_error(self, exc: BaseException) -> None:
        self._child(self.store_errors, type(exc).__name__).inc()

    async def render(self) -> bytes:
        """The exposition text, made off the event loop (a scrape never blocks requests)."""
        return await asyncio.to_thread(generate_latest, self.registry)


_AUTH_REASONS = frozenset({"invalid_request", "invalid_token", "insufficient_scope",
                           "invalid_dpop_proof", "use_dpop_nonce"})


def _auth_reason(status: int, challenge: str | None) -> str:
    """A bounded reason from a ``WWW-Authenticate`` challenge (RFC 6750 §3.1)."""
    if challenge:
        start = challenge.find('error="')
        if start != -1:
            code = challenge[start + 7:challenge.find('"', start + 7)]
            return code if code in _AUTH_REASONS else "other"
    return "missing_credentials" if status == 401 else "forbidden"


def _store_error(exc: BaseException) -> bool:
    from mcpcore.stores.base import StoreError

    return isinstance(exc, StoreError)


class _Request:
    """One request's measurements."""

    __slots__ = ("_ctx", "_method", "_metrics", "_started")

    def __init__(self, metrics: Metrics, method: str) -> None:
        self._metrics = metrics
        self._method = method
        self._ctx: Context | None = None
        self._started = time.perf_counter()
        metrics.in_flight.inc()

    def started(self, ctx: Context) -> None:
        self._ctx = ctx

    def timed_out(self, tool: str, seconds: float) -> None:
        m = self._metrics
        m._child(m.timeouts, m.tool_label(tool)).inc()

    def finished(self, result: Mapping[str, Any] | None, error: BaseException | None
                 ) -> None:
        m, method = self._metrics, self._method
        m.in_flight.dec()
        if error is not None:
            if isinstance(error, McpError):
                outcome = "error"
                m._child(m.errors, method, str(int(error.code))).inc()
                if isinstance(error, InvalidRequestState):
                    m.mrtr_rejected.inc()
            elif isinstance(error, Exception):
                outcome = "error"
                m._child(m.errors, method, "-32603").inc()
                if _store_error(error):
                    m.store_error(error)
            else:
                outcome = "cancelled"
        elif result is not None and result.get("resultType") == "input_required":
            outcome = "input_required"
            m._child(m.mrtr_rounds, method).inc()
        elif result is not None and result.get("isError") is True:
            outcome = "tool_error"
        else:
            outcome = "ok"
        ctx = self._ctx
        tool = m.tool_label(ctx.target) if method == "tools/call" and ctx is not None else (
            "_unknown" if method == "tools/call" else "")
        m._child(m.requests, method, tool, outcome).inc()
        m._child(m.duration, method, outcome).observe(time.perf_counter() - self._started)


__all__ = ["BUCKETS", "CONTENT_TYPE", "Metrics"]
