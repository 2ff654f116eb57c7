"""The apps ``bench_observe.py`` compares: the same echo server three ways.

- ``plain``: ``StreamableHTTP`` alone (examples/quickstart as it is);
- ``observed``: ``Metrics`` + ``Tracing`` through the OpenTelemetry API with no SDK (the
  API's no-op tracer: what "tracing on, nothing configured" costs), behind
  ``Operations`` (which counts every HTTP response);
- ``recorded``: the same with the SDK's ``TracerProvider`` and no exporter (spans are
  built, sampled, ended and dropped).
"""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider

from mcpcore import Server, StreamableHTTP
from mcpcore.health import Operations
from mcpcore.metrics import Metrics
from mcpcore.tracing import Tracing


def _server() -> Server:
    server = Server("bench-observe", "1.0.0")

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return server


plain = StreamableHTTP(_server())

_observed = _server()
_observed_metrics = Metrics(_observed)
Tracing(_observed, propagate_downstream=False)
observed = Operations(StreamableHTTP(_observed), metrics=_observed_metrics)

_recorded = _server()
_recorded_metrics = Metrics(_recorded)
Tracing(_recorded, tracer_provider=TracerProvider(), propagate_downstream=False)
recorded = Operations(StreamableHTTP(_recorded), metrics=_recorded_metrics)
