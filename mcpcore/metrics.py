"""Prometheus metrics for a server: what an operator graphs and alerts on.

What lives here: ``Metrics``, an observer of the engine (``mcpcore.observe``) and an audit
sink of the policy. Off by default: nothing imports this module (or prometheus_client)
unless metrics are turned on (``pip install 'mcpcore[metrics]'``).

Series (``docs/operating.md`` has their meaning and the alert rules):

    mcpcore_requests_total{method,tool,outcome}           counter
    mcpcore_request_duration_seconds{method,outcome}      histogram
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
    mcpcore_legacy_session_streams                        gauge
    mcpcore_legacy_sessions_created_total                 counter
    mcpcore_ready                                         gauge (the last /readyz answer)

How: a request adds to plain dictionaries (no lock, no allocation once a label set has
been seen: the event loop is the only writer), and a collector turns them into metric
families when ``/metrics`` is scraped, in a thread (``render``), so a scrape never
blocks requests. ``prometheus_client`` does the registry and the exposition format.
Counting per series with its ``Counter`` objects costs a lock per increment, which is
most of the budget a request can spare (``bench/bench_observe.py``).

Labels are bounded: ``method`` is one of the server's routes (else ``other``), ``tool``
a registered tool name (else ``_unknown``, and ``""`` for other methods), ``rule`` one of
the rule ids seen, capped at ``max_rules`` (then ``_other``); no subject, URI or
argument ever is one.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
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

Labels = tuple[str, ...]


class _Counter:
    """Counts per label set, in a dict; read by the collector."""

    __slots__ = ("help", "labels", "name", "values")

    def __init__(self, name: str, help: str, labels: Labels = ()) -> None:
        self.name, self.help, self.labels = name, help, labels
        self.values: dict[Labels, float] = {}

    def inc(self, key: Labels = (), amount: float = 1.0) -> None:
        values = self.values
        values[key] = values.get(key, 0.0) + amount

    def get(self, key: Labels = ()) -> float:
        return self.values.get(key, 0.0)

    def family(self) -> Metric:
        family = CounterMetricFamily(self.name, self.help, labels=list(self.labels))
        for key, value in self.values.copy().items():
            family.add_metric(list(key), value)
        return family


class _Calls:
    """``requests_total`` and the duration histogram from one row per (method, tool,
    outcome): a request is one dict lookup and two additions."""

    __slots__ = ("duration", "requests", "rows")

    def __init__(self, requests: tuple[str, str], duration: tuple[str, str]) -> None:
        self.requests, self.duration = requests, duration
        #: Per (method, tool, outcome): [count in bucket 0, ..., in +Inf, sum of seconds].
        self.rows: dict[Labels, list[float]] = {}

    def add(self, key: Labels, seconds: float) -> None:
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [0.0] * (len(BUCKETS) + 2)
        row[bisect.bisect_left(BUCKETS, seconds)] += 1
        row[-1] += seconds

    def count(self, method: str, tool: str, outcome: str) -> float:
        row = self.rows.get((method, tool, outcome))
        return sum(row[:-1]) if row is not None else 0.0

    def families(self) -> Iterator[Metric]:
        rows = {key: list(row) for key, row in self.rows.copy().items()}
        requests = CounterMetricFamily(*self.requests, labels=["method", "tool", "outcome"])
        merged: dict[Labels, list[float]] = {}
        for (method, tool, outcome), row in rows.items():
            requests.add_metric([method, tool, outcome], sum(row[:-1]))
            into = merged.setdefault((method, outcome), [0.0] * len(row))
            for i, value in enumerate(row):
                into[i] += value
        yield requests
        duration = HistogramMetricFamily(*self.duration, labels=["method", "outcome"])
        for key, row in merged.items():
            duration.add_metric(list(key), cumulative(row), row[-1])
        yield duration


def cumulative(row: list[float]) -> list[tuple[str, float]]:
    """A histogram row (count per bucket of ``BUCKETS``, then +Inf, then the sum) as
    Prometheus's cumulative ``(le, count)`` buckets."""
    running, buckets = 0.0, []
    for bound, count in zip((*map(str, BUCKETS), "+Inf"), row[:-1], strict=True):
        running += count
        buckets.append((bound, running))
    return buckets


class _Gauge:
    __slots__ = ("help", "name", "read")

    def __init__(self, name: str, help: str, read: Callable[[], float]) -> None:
        self.name, self.help, self.read = name, help, read

    def family(self) -> Metric:
        return GaugeMetricFamily(self.name, self.help, value=float(self.read()))


class Metrics:
    """The series of one server, in one registry.

    >>> metrics = Metrics(server)        # observes server, and its policy if it has one
    >>> app = Operations(StreamableHTTP(server), metrics=metrics)     # GET /metrics
    ... # doctest: +SKIP

    ``registry``: where the series are registered (default: a registry of their own, so
    two servers in one process never collide; pass ``prometheus_client.REGISTRY`` to
    add them to the process-wide one). ``namespace`` prefixes every name.
    """

    def __init__(self, server: Server | None = None, *,
                 registry: CollectorRegistry | None = None, namespace: str = "mcpcore",
                 max_rules: int = 200) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.max_rules = max_rules
        self._methods: frozenset[str] = frozenset()
        self._tools: Any = None
        self._listen: Callable[[], float] = lambda: 0.0
        self._in_flight = 0
        self._tool_labels: dict[str, str] = {}
        self._legacy_streams = 0
        self._ready = 0.0
        ns = namespace
        self.calls = _Calls((f"{ns}_requests", "Requests served, by method, tool and "
                             "outcome"), (f"{ns}_request_duration_seconds",
                                          "Time to the final answer of a request"))
        self.errors = _Counter(f"{ns}_errors", "JSON-RPC errors answered, by code",
                               ("method", "code"))
        self.mrtr_rounds = _Counter(f"{ns}_mrtr_rounds", "Answers that asked the client "
                                    "for input (resultType input_required)", ("method",))
        self.mrtr_rejected = _Counter(f"{ns}_mrtr_state_rejected", "requestState that "
                                      "could not be opened (tampered, expired, replayed, "
                                      "another principal's)")
        self.decisions = _Counter(f"{ns}_policy_decisions", "Policy decisions, by "
                                  "decision, rule and reason", ("decision", "rule",
                                                                "reason"))
        self.rate_limited = _Counter(f"{ns}_rate_limited", "Calls refused by a rate limit",
                                     ("tool",))
        self.downstream_refused = _Counter(f"{ns}_downstream_refused", "Token exchanges "
                                           "a tool asked for and was refused", ("tool",))
        self.timeouts = _Counter(f"{ns}_tool_timeouts", "Tool handlers cancelled at their "
                                 "timeout", ("tool",))
        self.store_errors = _Counter(f"{ns}_store_errors", "Store failures met while "
                                     "serving (kind: the error's class)", ("kind",))
        self.auth_failures = _Counter(f"{ns}_auth_failures", "Requests refused by "
                                      "authentication or authorization (401/403), by "
                                      "reason", ("reason",))
        self.http_responses = _Counter(f"{ns}_http_responses", "HTTP responses, by status",
                                       ("status",))
        self.legacy_created = _Counter(f"{ns}_legacy_sessions_created", "2025-era sessions "
                                       "created (initialize) on this instance")
        self._families: tuple[Any, ...] = (
            self.errors, self.mrtr_rounds, self.mrtr_rejected,
            self.decisions, self.rate_limited, self.downstream_refused, self.timeouts,
            self.store_errors, self.auth_failures, self.http_responses, self.legacy_created,
            _Gauge(f"{ns}_requests_in_flight", "Requests being served",
                   lambda: self._in_flight),
            _Gauge(f"{ns}_listen_streams", "Open subscriptions/listen streams",
                   lambda: self._listen()),
            _Gauge(f"{ns}_legacy_session_streams", "Open 2025-era session GET streams on "
                   "this instance", lambda: self._legacy_streams),
            _Gauge(f"{ns}_ready", "1 if the last readiness check passed",
                   lambda: self._ready),
        )
        self._rules: set[str] = set()
        self.registry.register(self)
        if server is not None:
            self.watch(server)

    # -- prometheus_client's collector protocol ------------------------------------------
    def collect(self) -> Iterator[Metric]:
        yield from self.calls.families()
        for family in self._families:
            yield family.family()

    async def render(self) -> bytes:
        """The exposition text, made off the event loop (a scrape never blocks requests)."""
        return await asyncio.to_thread(generate_latest, self.registry)

    # -- wiring --------------------------------------------------------------------------
    def watch(self, server: Server) -> None:
        """Observe every request of ``server``, and its policy's decisions."""
        self._methods = server.methods
        self._tools = server.tools
        observe.attach(server, self)
        if server.policy is not None and self not in server.policy.sinks:
            server.policy.sinks.append(self)
        hub = server.subscriptions
        self._listen = lambda: hub.active

    def method_label(self, method: str) -> str:
        return method if method in self._methods else "other"

    def tool_label(self, name: str | None) -> str:
        if name is None:
            return ""
        label = self._tool_labels.get(name)
        if label is None:
            tools = self._tools
            if tools is None or name not in tools:
                return "_unknown"
            # Registered once: a name stays a label (a bounded set, the names ever
            # registered), so the registry is asked once per tool, not per call.
            label = self._tool_labels[name] = name
        return label

    # -- the engine's observer -------------------------------------------------------------
    def begin(self, method: str, headers: Mapping[str, str] | None) -> _Request:
        return _Request(self, method if method in self._methods else "other")

    # -- the policy's audit sink -----------------------------------------------------------
    def emit(self, event: AuditEvent) -> None:
        rule = event.rule_id or ""
        if rule not in self._rules:
            if len(self._rules) >= self.max_rules:
                rule = "_other"
            else:
                self._rules.add(rule)
        self.decisions.inc((event.decision or "", rule, event.reason_code or ""))
        if event.reason_code == "rate_limited":
            self.rate_limited.inc((self.tool_label(event.tool),))
        for exchange in event.downstream:
            if exchange.get("result") == "refused":
                self.downstream_refused.inc((self.tool_label(event.tool),))

    # -- from the HTTP layer (``mcpcore.health.Operations``) -------------------------------
    def http_response(self, status: int, www_authenticate: str | None = None) -> None:
        self.http_responses.inc(_STATUS.get(status) or (str(status),))
        if status == 401 or (status == 403 and www_authenticate is not None):
            self.auth_failures.inc((_auth_reason(status, www_authenticate),))
        elif status == 403:
            self.auth_failures.inc(("forbidden_origin",))

    def legacy_stream(self, opened: bool) -> None:
        self._legacy_streams += 1 if opened else -1

    def store_error(self, exc: BaseException) -> None:
        self.store_errors.inc((type(exc).__name__,))

    def set_ready(self, ready: bool) -> None:
        self._ready = 1.0 if ready else 0.0


_STATUS = {code: (str(code),) for code in (200, 202, 204, 400, 401, 403, 404, 405, 406,
                                          413, 415, 429, 500, 503)}
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
        metrics._in_flight += 1

    def started(self, ctx: Context) -> None:
        self._ctx = ctx

    def timed_out(self, tool: str, seconds: float) -> None:
        m = self._metrics
        m.timeouts.inc((m.tool_label(tool),))

    def finished(self, result: Mapping[str, Any] | None, error: BaseException | None
                 ) -> None:
        m, method = self._metrics, self._method
        m._in_flight -= 1
        if error is not None:
            if isinstance(error, McpError):
                outcome = "error"
                m.errors.inc((method, str(int(error.code))))
                if isinstance(error, InvalidRequestState):
                    m.mrtr_rejected.inc()
            elif isinstance(error, Exception):
                outcome = "error"
                m.errors.inc((method, "-32603"))
                if _store_error(error):
                    m.store_error(error)
            else:
                outcome = "cancelled"
        elif result is not None and result.get("resultType") == "input_required":
            outcome = "input_required"
            m.mrtr_rounds.inc((method,))
        elif result is not None and result.get("isError") is True:
            outcome = "tool_error"
        else:
            outcome = "ok"
        if method == "tools/call":
            ctx = self._ctx
            tool = m.tool_label(ctx.target) if ctx is not None else "_unknown"
        else:
            tool = ""
        m.calls.add((method, tool, outcome), time.perf_counter() - self._started)


__all__ = ["BUCKETS", "CONTENT_TYPE", "Metrics"]
