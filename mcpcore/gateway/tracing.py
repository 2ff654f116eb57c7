"""A CLIENT span per call the gateway routes to an upstream, its trace context sent on
(docs/gateway.md, "Observability").

What lives here: ``GatewayTracing``, a watcher of every upstream call
(``mcpcore.gateway.watch``). Each routed call (``tools/call``, ``resources/read``,
``prompts/get``, ``completion/complete``; not the catalog's ``listing``) gets one span,
``"{method} {target}"`` of kind CLIENT, a child of the downstream request's SERVER span
(``mcpcore.tracing.Tracing`` on the gateway's server), current while the upstream is
called, so the request carries it: the W3C ``traceparent``/``tracestate`` in the
request's ``_meta`` (SEP-414: through any transport, stdio included) and, to an HTTP
upstream, as headers too (the client's ``trace_context.propagate``). Imported only when
tracing is on (``[gateway] tracing = true``; ``pip install 'mcpcore[tracing-sdk]'``).

Attributes: ``mcp.method.name``, ``mcpcore.upstream``, ``gen_ai.tool.name``
(``tools/call``), ``mcpcore.outcome`` (``ok``, ``rejected``, ``error``,
``cancelled``), ``error.type`` and ``mcpcore.upstream.error`` (``watch.error_kind``)
on failures, ``rpc.jsonrpc.error_code`` for a relayed error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from mcpcore import observe
from mcpcore.gateway.errors import UpstreamRejected
from mcpcore.gateway.watch import error_kind, method_label, outcome_of

if TYPE_CHECKING:
    from mcpcore.gateway.app import Gateway


class GatewayTracing:
    """Trace every routed call of ``gateway`` to its upstreams (module docstring).

    >>> Tracing(gateway.server)           # the downstream request's span  # doctest: +SKIP
    >>> GatewayTracing(gateway)                      # doctest: +SKIP

    ``tracer_provider``: default the global one. The trace context goes upstream with
    every request (``observe.set_propagator``), as ``Tracing``'s does.
    """

    def __init__(self, gateway: Gateway, *,
                 tracer_provider: trace.TracerProvider | None = None) -> None:
        from mcpcore import __version__

        self.tracer = trace.get_tracer("mcpcore.gateway", __version__,
                                       tracer_provider=tracer_provider)
        observe.set_propagator(propagate.inject)
        for upstream in gateway.upstreams.values():
            upstream.watchers.append(self)

    def begin(self, upstream: str, method: str, target: str) -> _Span | _Nothing:
        method = method_label(method)
        if method in ("listing", "other"):
            return _NOTHING
        return _Span(self, upstream, method, target)


class _Nothing:
    __slots__ = ()

    def finished(self, error: BaseException | None) -> None:
        return None


_NOTHING = _Nothing()


class _Span:
    """One upstream call's span, current from ``begin`` to ``finished``."""

    __slots__ = ("_attributes", "_span", "_token")

    def __init__(self, tracing: GatewayTracing, upstream: str, method: str, target: str
                 ) -> None:
        name = f"{method} {target}" if target else method
        self._attributes: dict[str, Any] = {"mcp.method.name": method,
                                            "mcpcore.upstream": upstream}
        if method == "tools/call" and target:
            self._attributes["gen_ai.tool.name"] = target
        self._span = tracing.tracer.start_span(name, kind=SpanKind.CLIENT)
        self._token = otel_context.attach(trace.set_span_in_context(self._span))

    def finished(self, error: BaseException | None) -> None:
        otel_context.detach(self._token)
        attributes, span = self._attributes, self._span
        attributes["mcpcore.outcome"] = outcome_of(error)
        if error is not None:
            kind = error_kind(error)
            if kind is not None:
                attributes["mcpcore.upstream.error"] = kind
            if isinstance(error, UpstreamRejected):
                attributes["rpc.jsonrpc.error_code"] = int(error.code)
            attributes["error.type"] = type(error).__name__
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        span.set_attributes(attributes)
        span.end()


__all__ = ["GatewayTracing"]
