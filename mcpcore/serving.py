"""Serving an ASGI app with uvicorn, for a fleet: socket-level limits and a graceful stop.

``mcpcore serve`` and ``mcpcore.cli.serve`` run apps through ``run``. On top of uvicorn:

- **Idle and slow connections.** A connection must deliver a whole request head within
  ``header_timeout`` seconds of opening, or of its previous response; else it is closed.
  (uvicorn's own keep-alive timeout only starts after a first response, and stops at the
  first byte of the next request, so a client that connects and sends nothing, or sends
  its headers a byte at a time, would hold its socket forever.) The check runs once a
  second over all connections, on uvicorn's own tick: no timer per request.
  ``max_connections`` is uvicorn's ``limit_concurrency`` (beyond it: HTTP 503).
- **Graceful shutdown.** On SIGTERM (or SIGINT) the instance stops accepting connections,
  then drains the app (``drain()``: ``StreamableHTTP`` ends its listen streams with their
  result and its legacy GET streams, each with an SSE ``retry`` hint, takes no new
  streams, and answers every request with ``Connection: close``). For up to
  ``drain_seconds`` it keeps its open connections: a balancer may still send requests
  on connections it keeps alive to us, and each is served and then closed, while new
  connections are refused, so the balancer marks the instance down and goes elsewhere.
  (Closing idle keep-alive connections at once instead races with a request the
  balancer is sending on one, which then fails.) Then requests in flight may finish for
  up to ``graceful_timeout`` seconds (uvicorn's ``timeout_graceful_shutdown``); what is
  left after that is cancelled.

- **The cyclic garbage collector, settled once started** (``settle_heap``). Once the app
  has started, what the process built to get there (modules, the app, its registries)
  is collected once and frozen (``gc.freeze``: left out of every later collection), and
  the youngest generation's threshold is raised to ``YOUNG_THRESHOLD`` allocations. A
  collection of the youngest generation walks the objects alive in it — the requests in
  flight — however many allocations came before, so at Python's default of 700 a busy
  server walked the same in-flight requests over and over: 10 to 25 % of a proxied call's
  CPU in a gateway (docs/performance.md). A request that leaves no reference cycle
  leaves nothing for the collector; one that does is collected a few thousand
  allocations later.

Request-level limits (concurrent requests and streams, body timeouts) are the app's:
``mcpcore.transports.admission``.

``run`` binds its socket itself before uvicorn starts, so a port out of range, a port in
use or a host that is not this machine's is a ``ListenError`` whose message says what to
change (uvicorn would take port 70000 modulo 65536, or log a bare socket error).
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import socket
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from mcpcore.stdout import stdout_to_devnull

log = logging.getLogger("mcpcore.serving")

#: How many ``.app`` links ``run`` follows through middleware to find ``drain()``.
_MAX_WRAPPERS = 8
#: The youngest generation's collection threshold in a served process (module
#: docstring; Python's default is 700).
YOUNG_THRESHOLD = 10_000


def settle_heap() -> None:
    """Collect, freeze what is left (``gc.freeze``), and raise the youngest
    generation's threshold to ``YOUNG_THRESHOLD`` (module docstring). ``run`` calls it
    once the app has started."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def find_drain(app: Any) -> Callable[[], Awaitable[None]] | None:
    """The ``drain`` coroutine function of ``app``, or of the app it wraps (middleware
    that keeps the wrapped app as ``.app``), or None."""
    for _ in range(_MAX_WRAPPERS):
        drain = getattr(app, "drain", None)
        if callable(drain):
            return drain  # type: ignore[no-any-return]
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


class ListenError(OSError):
    """``run`` cannot listen on ``host:port``; the message says why and what to change."""


#: The TCP ports ``run`` can listen on (0: the system picks a free one).
PORTS = range(0, 65536)


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (as uvicorn binds one), or ``ListenError``."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if port not in PORTS:
        raise ListenError(f"cannot listen on {where}: {port} is not a TCP port; use a port "
                          "from 1 to 65535 (0 picks a free one)")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                         socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {where}: {_why_not(exc, host)}") from None
    sock.set_inheritable(True)
    return sock


def _why_not(exc: OSError, host: str) -> str:
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return (f"{host!r} is not an address of this machine ({exc.strerror}); use "
                "127.0.0.1 (this machine only), 0.0.0.0 (every interface) or one of its "
                "addresses")
    if exc.errno == errno.EADDRINUSE:
        return ("the port is in use; stop what holds it, or pick another port "
                "(0 picks a free one)")
    if exc.errno == errno.EACCES:
        return ("permission denied (ports below 1024 need privileges); pick a port "
                "above 1023")
    return exc.strerror or str(exc)


def run(app: Any, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
        name: str = "app", path: str = "", header_timeout: float = 10.0,
        keep_alive: int = 5, graceful_timeout: float = 30.0, drain_seconds: float = 1.0,
        max_connections: int | None = None) -> None:
    """Serve ``app`` on ``host:port`` until SIGTERM/SIGINT, then stop gracefully (module
    docstring). Prints ``mcpcore: serving NAME on http://HOST:PORT/PATH`` to stdout once
    the socket listens. ``ListenError`` if it cannot listen there."""
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    sock = listen(host, port)

    protocol = _timed_heads(AutoHTTPProtocol)
    drain = find_drain(app)

    class _Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.should_exit:
                return
            settle_heap()
            bound = [s.getsockname() for server in self.servers for s in server.sockets]
            where = bound[0] if bound else (host, port)
            shown = f"[{where[0]}]" if ":" in str(where[0]) else where[0]
            try:
                print(f"mcpcore: serving {name} on http://{shown}:{where[1]}{path}",
                      flush=True)
            except BrokenPipeError:  # nobody reads our stdout (`| head` ended): serve on
                stdout_to_devnull()

        async def on_tick(self, counter: int) -> bool:
            if counter % 10 == 0:
                _close_idle(self.server_state.connections, header_timeout)
            return await super().on_tick(counter)

        async def shutdown(self, sockets: Any = None) -> None:
            for server in self.servers:
                server.close()  # stop accepting first: the balancer moves on
            if drain is not None:
                try:
                    await drain()
                except Exception:
                    log.exception("draining the app failed; shutting down anyway")
            # Keep-alive connections carry their last requests (each then closed) until
            # the balancer has moved on, or none is left.
            loop = asyncio.get_running_loop()
            until = loop.time() + drain_seconds
            while self.server_state.connections and loop.time() < until:
                await asyncio.sleep(0.05)
            await super().shutdown(sockets)

    # loop/http "auto": uvloop and httptools when the `fast` extra is installed.
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on",
                            http=protocol, timeout_keep_alive=keep_alive,
                            timeout_graceful_shutdown=_whole(graceful_timeout),
                            limit_concurrency=max_connections)
    _Server(config).run(sockets=[sock])


def _whole(seconds: float) -> int:
    # uvicorn takes whole seconds; never round a grace period down to nothing.
    return max(1, round(seconds))


def _timed_heads(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """``base`` (uvicorn's HTTP protocol), remembering since when each connection has
    had no request in progress: since it opened, or since its last response."""

    class TimedHeads(base):  # type: ignore[valid-type, misc]
        idle_since = 0.0

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.idle_since = self.loop.time()
            super().connection_made(transport)

        def on_response_complete(self) -> None:
            self.idle_since = self.loop.time()
            super().on_response_complete()

    TimedHeads.__name__ = TimedHeads.__qualname__ = f"TimedHeads{base.__name__}"
    return TimedHeads


def _close_idle(connections: Collection[Any], header_timeout: float) -> None:
    """Close connections that have had no request in progress for ``header_timeout``."""
    if not connections:
        return
    now = asyncio.get_running_loop().time()
    for connection in list(connections):
        cycle = getattr(connection, "cycle", None)
        busy = cycle is not None and not cycle.response_complete
        since = getattr(connection, "idle_since", None)
        if busy or since is None or now - since < header_timeout:
            continue
        transport = getattr(connection, "transport", None)
        if transport is not None and not transport.is_closing():
            transport.close()


__all__ = ["PORTS", "YOUNG_THRESHOLD", "ListenError", "find_drain", "listen", "run",
           "settle_heap"]
