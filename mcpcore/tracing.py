"""OpenTelemetry traces: one span per request, continuing the caller's trace.

What lives here: ``Tracing``, an observer of the engine (``mcpcore.observe``) that starts
one SERVER span per request and makes it current while the request is served, so spans
a handler starts are its children and outbound calls carry it (the token exchange of
``mcpcore.auth.server.downstream`` adds ``traceparent`` through ``observe.propagate``). Off by
default: nothing imports this module (or OpenTelemetry) unless tracing is turned on
(``pip install 'mcpcore[tracing]'``; the SDK, to record and export spans, is yours to
configure, or ``mcpcore[tracing-sdk]``).

The parent: the request's ``_meta`` ``traceparent``/``tracestate`` (the MCP way: it
travels with the message through any transport), else the HTTP ``traceparent`` header,
else a new trace. W3C Trace Context is parsed by OpenTelemetry's propagator.

Span: ``"{method} {target}"`` (``tools/call get_weather``), kind SERVER, with

    mcp.method.name, gen_ai.tool.name (tools/call), jsonrpc.request.id,
    mcp.protocol.version, mcpcore.outcome (ok | tool_error | input_required | error |
    cancelled | timeout), rpc.jsonrpc.error_code and error.type on errors,
    mcpcore.principal (a fingerprint of issuer and subject; the subject itself only with
    ``record_subject=True``), mcpcore.tenant, mcpcore.client_id

With no SDK's provider installed, no span is made at all (the API's would record
nothing): only a caller's trace context is carried on to downstream calls. With an SDK
but no exporter, spans are recorded and dropped (``bench/bench_observe.py`` measures
both).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from mcpcore import observe
from mcpcore.errors import McpError

if TYPE_CHECKING:
    from mcpcore.context import Context
    from mcpcore.server import Server

_TRACE_HEADERS = ("traceparent", "tracestate")


class Tracing:
    """Trace every request of a server.

    >>> tracing = Tracing(server)                      # the global tracer provider
    >>> tracing = Tracing(server, tracer_provider=provider)             # doctest: +SKIP

    ``propagate_downstream`` (default on) installs OpenTelemetry's propagator as the
    one ``observe.propagate`` uses, so downstream calls continue the trace.
    """

    def __init__(self, server: Server | None = None, *,
                 tracer_provider: trace.TracerProvider | None = None,
                 record_subject: bool = False, propagate_downstream: bool = True) -> None:
        from mcpcore import __version__

        self.tracer = trace.get_tracer("mcpcore", __version__,
                                       tracer_provider=tracer_provider)
        # Decided once: asking for the global provider on every request costs more than
        # the rest of the no-SDK path (install the SDK's provider first, as
        # OpenTelemetry's setup does, or call ``refresh()`` after).
        self._given = tracer_provider is not None
        self._recording = self._given or self._sdk_installed()
        self.record_subject = record_subject
        if propagate_downstream:
            observe.set_propagator(propagate.inject)
        if server is not None:
            self.watch(server)

    def watch(self, server: Server) -> None:
        observe.attach(server, self)

    @staticmethod
    def _sdk_installed() -> bool:
        return not isinstance(trace.get_tracer_provider(),
                              (trace.ProxyTracerProvider, trace.NoOpTracerProvider))

    @property
    def recording(self) -> bool:
        """Whether spans are made: a provider was given, or an SDK's provider was
        installed globally before this ``Tracing`` (or before ``refresh``)."""
        return self._recording

    def refresh(self) -> None:
        """Look again for a global SDK provider (installed after this was made)."""
        self._recording = self._given or self._sdk_installed()

    def begin(self, method: str, headers: Mapping[str, str] | None) -> _Span | _Carry:
        if self._recording:
            return _Span(self, method, headers)
        return _Carry(headers)


def _carrier(ctx: Context | None, headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """Where the parent trace context is: ``_meta`` first, then the HTTP headers."""
    if ctx is not None and "traceparent" in ctx.meta.trace:
        return ctx.meta.trace
    if headers is not None and "traceparent" in headers:
        return {k: headers[k] for k in _TRACE_HEADERS if k in headers}
    return None


class _Carry:
    """No SDK: no span to make, but a caller's trace context still travels on to
    downstream calls (what the API's non-recording spans would do, without the cost)."""

    __slots__ = ("_headers", "_token")

    def __init__(self, headers: Mapping[str, str] | None) -> None:
        self._headers = headers
        self._token: Any = None

    def started(self, ctx: Context) -> None:
        carrier = _carrier(ctx, self._headers)
        if carrier is not None:
            self._token = otel_context.attach(propagate.extract(carrier))

    def timed_out(self, tool: str, seconds: float) -> None:
        return None

    def finished(self, result: Mapping[str, Any] | None, error: BaseException | None
                 ) -> None:
        if self._token is not None:
            otel_context.detach(self._token)


class _Span:
    """One request's span: opened when the request's ``_meta`` is known, current while
    it is served, closed with its outcome. Attributes are gathered and set once, at the
    end (each ``set_attribute`` of the SDK takes a lock)."""

    __slots__ = ("_attributes", "_ctx", "_headers", "_method", "_span", "_started",
                 "_timed_out", "_token", "_tracing")

    def __init__(self, tracing: Tracing, method: str, headers: Mapping[str, str] | None
                 ) -> None:
        self._tracing = tracing
        self._method = method
        self._headers = headers
        self._started = time.time_ns()
        self._span: Any = None
        self._token: Any = None
        self._ctx: Context | None = None
        self._timed_out = False
        self._attributes: dict[str, Any] = {"mcp.method.name": method}

    def _open(self, ctx: Context | None) -> Any:
        carrier = _carrier(ctx, self._headers)
        parent = propagate.extract(carrier) if carrier is not None else None
        span = self._tracing.tracer.start_span(
            self._method, context=parent, kind=SpanKind.SERVER, start_time=self._started)
        self._span = span
        return span

    def started(self, ctx: Context) -> None:
        self._ctx = ctx
        span = self._open(ctx)
        attributes = self._attributes
        attributes["jsonrpc.request.id"] = str(ctx.request_id)
        attributes["mcp.protocol.version"] = ctx.meta.protocol_version
        p = ctx.principal
        if not p.is_anonymous:
            attributes["mcpcore.principal"] = hashlib.sha256(p.key.encode()).hexdigest()[:16]
            if self._tracing.record_subject:
                attributes["enduser.id"] = p.subject
            if p.tenant:
                attributes["mcpcore.tenant"] = p.tenant
            if p.client_id:
                attributes["mcpcore.client_id"] = p.client_id
        self._token = otel_context.attach(trace.set_span_in_context(span))

    def timed_out(self, tool: str, seconds: float) -> None:
        self._timed_out = True
        if self._span is not None:
            self._span.add_event("tool timeout", {"gen_ai.tool.name": tool,
                                                  "mcpcore.timeout_seconds": seconds})

    def finished(self, result: Mapping[str, Any] | None, error: BaseException | None
                 ) -> None:
        span = self._span if self._span is not None else self._open(None)
        if self._token is not None:
            otel_context.detach(self._token)
        attributes = self._attributes
        target = self._ctx.target if self._ctx is not None else None
        if target:
            span.update_name(f"{self._method} {target}")
            if self._method == "tools/call":
                attributes["gen_ai.tool.name"] = target
        if error is not None:
            if isinstance(error, McpError):
                outcome = "error"
                attributes["rpc.jsonrpc.error_code"] = int(error.code)
            else:
                outcome = "error" if isinstance(error, Exception) else "cancelled"
            attributes["error.type"] = type(error).__name__
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        elif self._timed_out:
            outcome = "timeout"
            attributes["error.type"] = "timeout"
            span.set_status(Status(StatusCode.ERROR, "tool timeout"))
        elif result is not None and result.get("resultType") == "input_required":
            outcome = "input_required"
        elif result is not None and result.get("isError") is True:
            outcome = "tool_error"
            attributes["error.type"] = "tool_error"
        else:
            outcome = "ok"
        attributes["mcpcore.outcome"] = outcome
        span.set_attributes(attributes)
        span.end()


__all__ = ["Tracing"]
