"""The engine's one seam for watching requests: metrics, traces and request logs plug in
here, and nothing is spent when none does.

What lives here: the ``Observer`` protocol (``begin`` one ``Observation`` per request),
the fan-out when several are attached, the note a timed-out tool leaves for them, and the
hook that adds trace headers to outbound requests (``propagate``). What must not: any
third-party import. ``mcpcore.metrics`` (prometheus_client) and ``mcpcore.tracing``
(OpenTelemetry) are imported only by whoever turns them on.

A ``Server`` with no observer runs exactly as before: one ``if`` per request. With one,
``Server.handle``/``dispatch`` call::

    seen = observer.begin(method, headers)   # before any check
    seen.started(ctx)                        # the request's _meta is known (trace parent)
    seen.timed_out(tool, seconds)            # a tool handler overran its budget
    seen.finished(result, error)             # exactly once: the result or the exception
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from mcpcore.trace_context import propagate, set_propagator

if TYPE_CHECKING:
    from mcpcore.context import Context

Headers = Mapping[str, str]


class Observation(Protocol):
    """One request, as one observer sees it."""

    def started(self, ctx: Context) -> None: ...

    def timed_out(self, tool: str, seconds: float) -> None: ...

    def finished(self, result: Mapping[str, Any] | None, error: BaseException | None
                 ) -> None:
        """``result``: the result object (``resultType`` set, ``isError`` for tool
        errors), or None when ``error`` was raised."""
        ...


class Observer(Protocol):
    """Something that watches every request of a server (``attach`` it)."""

    def begin(self, method: str, headers: Headers | None) -> Observation: ...


class _Both:
    """Several observations as one."""

    __slots__ = ("_parts",)

    def __init__(self, parts: list[Observation]) -> None:
        self._parts = parts

    def started(self, ctx: Context) -> None:
        for part in self._parts:
            part.started(ctx)

    def timed_out(self, tool: str, seconds: float) -> None:
        for part in self._parts:
            part.timed_out(tool, seconds)

    def finished(self, result: Mapping[str, Any] | None, error: BaseException | None
                 ) -> None:
        # Last begun, first finished: a trace span opened first closes last.
        parts = self._parts
        for i in range(len(parts) - 1, -1, -1):
            parts[i].finished(result, error)


class Observers:
    """Fan one request out to several observers, in the order attached."""

    def __init__(self, *observers: Observer) -> None:
        self.observers: tuple[Observer, ...] = observers

    def begin(self, method: str, headers: Headers | None) -> Observation:
        return _Both([o.begin(method, headers) for o in self.observers])


def attach(server: Any, observer: Observer) -> None:
    """Add ``observer`` to ``server`` (after any already attached)."""
    current = server.observer
    if current is None:
        server.observer = observer
    elif isinstance(current, Observers):
        server.observer = Observers(*current.observers, observer)
    else:
        server.observer = Observers(current, observer)


#: The observation of the request being served in this context (set by the engine).
CURRENT: ContextVar[Observation | None] = ContextVar("mcpcore.observation", default=None)


def note_timeout(tool: str, seconds: float) -> None:
    """Tell the current request's observers that ``tool`` overran ``seconds``."""
    seen = CURRENT.get()
    if seen is not None:
        seen.timed_out(tool, seconds)


# The trace context hook (``propagate``, ``set_propagator``) lives in
# ``mcpcore.trace_context``, which the client reaches too; re-exported here.
__all__ = ["CURRENT", "Observation", "Observer", "Observers", "attach", "note_timeout",
           "propagate", "set_propagator"]
