"""The hook that adds the current trace context to outbound requests: both sides use it
(the client's requests, the server's token exchange), so it lives in a room of its own
that imports nothing.

``set_propagator(inject)`` is called by ``mcpcore.tracing`` when tracing is on (with
OpenTelemetry's ``propagate.inject``: W3C ``traceparent``/``tracestate``);
``propagate(carrier)`` writes the current context into a carrier (HTTP headers, a
request's ``_meta``) and is a no-op otherwise. ``mcpcore.observe`` re-exports both.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping

#: Set when tracing is on: writes the current trace context into a carrier.
_inject: Callable[[MutableMapping[str, str]], None] | None = None


def propagate(carrier: MutableMapping[str, str]) -> None:
    """Add the current trace context to outbound ``carrier`` (a no-op unless tracing is
    on): token exchange, an upstream call and other downstream calls continue the
    trace."""
    if _inject is not None:
        _inject(carrier)


def set_propagator(inject: Callable[[MutableMapping[str, str]], None] | None) -> None:
    global _inject
    _inject = inject


__all__ = ["propagate", "set_propagator"]
