"""The gateway's Prometheus series per upstream (docs/gateway.md, "Observability").

What lives here: ``GatewayMetrics``, a watcher of every upstream call
(``mcpcore.gateway.watch``) and a collector in the same registry as the server's own
``mcpcore.metrics.Metrics``, so one ``/metrics`` shows both. Imported only when metrics
are on (``[gateway] metrics = true``; ``pip install 'mcpcore[metrics]'``).

Series:

    mcpcore_gateway_upstream_calls_total{upstream,method,outcome}     counter
    mcpcore_gateway_upstream_errors_total{upstream,kind}              counter
    mcpcore_gateway_upstream_call_duration_seconds{upstream}          histogram
    mcpcore_gateway_upstream_circuit_state{upstream}                  gauge (0 closed,
                                                                      1 half-open, 2 open)
    mcpcore_gateway_upstream_up{upstream,state}                       gauge (1 for the
                                                                      state it is in)
    mcpcore_gateway_quarantined_tools{upstream}                       gauge
    mcpcore_gateway_quarantine_entries_total{upstream,reason}         counter
    mcpcore_gateway_quarantine_releases_total{upstream}               counter
    mcpcore_gateway_parked_calls{upstream}                            gauge
    mcpcore_gateway_handoffs_total{outcome}                           counter
    mcpcore_gateway_token_cache_total{upstream,outcome}               counter (the
                                                                      fleet's shared
                                                                      token cache)

Labels are bounded: ``upstream`` is a name from the configuration, never from a peer;
``method`` one of ``watch.METHODS`` (else ``other``); ``outcome`` ``ok``, ``rejected``,
``error`` or ``cancelled``; ``kind`` an ``UpstreamError`` reason, ``rejected``,
``credential_<reason>`` or ``internal`` (``watch.error_kind``); a handoff's ``outcome``
``ok``, ``error``, ``store_unavailable`` or a ``ParkedCallError`` reason (``handoff.py``);
a token-cache ``outcome`` one of ``token_cache.OUTCOMES``. Counting is the same as
the server's: plain dictionaries written on the event loop, read by the collector at
scrape time; circuit, health and quarantine are read from the gateway then.
"""

from __future__ import annotations

import bisect
import collections
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from mcpcore.gateway.watch import error_kind, method_label, outcome_of
from mcpcore.metrics import BUCKETS, cumulative

if TYPE_CHECKING:
    from mcpcore.gateway.app import Gateway

#: The circuit breaker's state as a number (``circuit_state``).
CIRCUIT_STATES: Final = {"closed": 0.0, "half-open": 1.0, "open": 2.0}
#: An upstream's health states (``Upstream.health``), one series each in ``up``.
HEALTH_STATES: Final = ("up", "down", "open-circuit")


class GatewayMetrics:
    """The series of one gateway's upstreams (module docstring).

    >>> metrics = Metrics(gateway.server)                               # doctest: +SKIP
    >>> GatewayMetrics(gateway, registry=metrics.registry)              # doctest: +SKIP

    ``registry``: where they are registered (the server's ``Metrics.registry``, so one
    scrape has both). ``namespace`` prefixes every name (``{namespace}_gateway_...``).
    """

    def __init__(self, gateway: Gateway, *, registry: CollectorRegistry | None = None,
                 namespace: str = "mcpcore") -> None:
        self.gateway = gateway
        self.registry = registry if registry is not None else CollectorRegistry()
        self.prefix = f"{namespace}_gateway"
        #: Per (upstream, method, outcome): calls.
        self.calls: dict[tuple[str, str, str], float] = {}
        #: Per (upstream, kind): failed calls.
        self.errors: dict[tuple[str, str], float] = {}
        #: Per upstream: [count in bucket 0, ..., in +Inf, sum of seconds].
        self.durations: dict[str, list[float]] = {}
        for upstream in gateway.upstreams.values():
            upstream.watchers.append(self)
        self.registry.register(self)

    # -- the watcher --------------------------------------------------------------------
    def begin(self, upstream: str, method: str, target: str) -> _Call:
        return _Call(self, upstream, method_label(method))

    def count(self, upstream: str, method: str, outcome: str) -> float:
        return self.calls.get((upstream, method, outcome), 0.0)

    # -- prometheus_client's collector protocol ------------------------------------------
    def collect(self) -> Iterator[Metric]:
        p = self.prefix
        calls = CounterMetricFamily(f"{p}_upstream_calls", "Calls to upstream servers, "
                                    "by upstream, method and outcome",
                                    labels=["upstream", "method", "outcome"])
        for key, value in self.calls.copy().items():
            calls.add_metric(list(key), value)
        yield calls
        errors = CounterMetricFamily(f"{p}_upstream_errors", "Failed calls to upstream "
                                     "servers, by upstream and kind (the UpstreamError "
                                     "reason, rejected, credential_<reason>)",
                                     labels=["upstream", "kind"])
        for (upstream, kind), value in self.errors.copy().items():
            errors.add_metric([upstream, kind], value)
        yield errors
        duration = HistogramMetricFamily(f"{p}_upstream_call_duration_seconds",
                                         "Time to an upstream's answer (or failure)",
                                         labels=["upstream"])
        for upstream, row in {k: list(v) for k, v in self.durations.copy().items()}.items():
            duration.add_metric([upstream], cumulative(row), row[-1])
        yield duration
        circuit = GaugeMetricFamily(f"{p}_upstream_circuit_state", "The upstream's "
                                    "circuit breaker: 0 closed, 1 half-open, 2 open",
                                    labels=["upstream"])
        up = GaugeMetricFamily(f"{p}_upstream_up", "1 for the state the upstream is in "
                               "(up, down, open-circuit), 0 for the others",
                               labels=["upstream", "state"])
        for name, each_upstream in self.gateway.upstreams.items():
            circuit.add_metric([name], CIRCUIT_STATES[each_upstream.breaker.state])
            state = each_upstream.health().state
            for each in HEALTH_STATES:
                up.add_metric([name, each], 1.0 if each == state else 0.0)
        yield circuit
        yield up
        quarantine = self.gateway.quarantine
        held = GaugeMetricFamily(f"{p}_quarantined_tools", "Tools held in quarantine now "
                                 "(pinned definitions)", labels=["upstream"])
        entries = CounterMetricFamily(f"{p}_quarantine_entries", "Tools that entered the "
                                      "quarantine, by upstream and reason",
                                      labels=["upstream", "reason"])
        releases = CounterMetricFamily(f"{p}_quarantine_releases", "Tools released from "
                                       "the quarantine (approved)", labels=["upstream"])
        if quarantine is not None:
            counts = quarantine.counts
            for name in self.gateway.upstreams:
                held.add_metric([name], float(counts.held.get(name, 0)))
            for (name, reason), value in counts.quarantined_total.copy().items():
                entries.add_metric([name, reason], float(value))
            for name, value in counts.released_total.copy().items():
                releases.add_metric([name], float(value))
        yield held
        yield entries
        yield releases
        parked = GaugeMetricFamily(f"{p}_parked_calls", "Upstream calls parked on this "
                                   "instance, waiting for their callers' answers",
                                   labels=["upstream"])
        waiting = collections.Counter(park.upstream.name
                                      for park in list(self.gateway.parking.parks.values()))
        for name in self.gateway.upstreams:
            parked.add_metric([name], float(waiting.get(name, 0)))
        yield parked
        handoffs = CounterMetricFamily(f"{p}_handoffs", "Retries of a call parked on "
                                       "another instance, handed to it through the Store, "
                                       "by outcome", labels=["outcome"])
        if self.gateway.handoff is not None:
            for outcome, value in self.gateway.handoff.outcomes.copy().items():
                handoffs.add_metric([outcome], float(value))
        yield handoffs
        cache = CounterMetricFamily(f"{p}_token_cache", "The fleet's shared cache of "
                                    "callers' upstream tokens: hit, miss, stored, "
                                    "rejected (tampered or foreign), error (Store down)",
                                    labels=["upstream", "outcome"])
        for name, credential in self.gateway.credentials.items():
            shared = getattr(credential, "shared", None)
            if shared is not None:
                for outcome, value in shared.counts.copy().items():
                    cache.add_metric([name, outcome], float(value))
        yield cache


class _Call:
    """One upstream call's measurements."""

    __slots__ = ("_method", "_metrics", "_started", "_upstream")

    def __init__(self, metrics: GatewayMetrics, upstream: str, method: str) -> None:
        self._metrics = metrics
        self._upstream = upstream
        self._method = method
        self._started = time.perf_counter()

    def finished(self, error: BaseException | None) -> None:
        m, upstream = self._metrics, self._upstream
        key = (upstream, self._method, outcome_of(error))
        m.calls[key] = m.calls.get(key, 0.0) + 1
        if error is not None:
            kind = error_kind(error)
            if kind is not None:
                m.errors[(upstream, kind)] = m.errors.get((upstream, kind), 0.0) + 1
        row = m.durations.get(upstream)
        if row is None:
            row = m.durations[upstream] = [0.0] * (len(BUCKETS) + 2)
        seconds = time.perf_counter() - self._started
        row[bisect.bisect_left(BUCKETS, seconds)] += 1
        row[-1] += seconds


__all__ = ["CIRCUIT_STATES", "HEALTH_STATES", "GatewayMetrics"]
