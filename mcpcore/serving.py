"""Serving an ASGI app with uvicorn, for a fleet: socket-level limits and a graceful stop.

``mcpcore serve`` and ``mcpcore.cli.serve`` run apps through ``run``. On top of uvicorn:

- **Idle and slow connections.** A connection must deliver a whole request head within
  ``header_timeout`` seconds of opening, or of its previous response; else it is closed.
  (uvicorn's own keep-alive timeout only starts after a first response, and stops at the
  first byte of the next request, so a client that connects and sends nothing, or sends
  its headers a byte at a time, would hold its socket forever.) The check runs once a
  second over all connections, on uvicorn's own tick: no timer per request.
  ``max_connections`` is uvicorn's ``limit_concurrency`` (beyond it: HTTP 503).
- **Graceful shutdown**, in three steps, so a balancer of either kind takes the instance
  out before it stops taking work:

  1. On SIGTERM (or SIGINT) the app drains (``drain()``, found through middleware:
     ``health.Operations`` answers ``/readyz`` 503 ``draining`` from then on;
     ``StreamableHTTP`` ends its listen streams with their result and its legacy GET
     streams, each with an SSE ``retry`` hint, takes no new streams, and answers every
     request with ``Connection: close``). For ``drain_seconds`` the instance still
     accepts connections and serves them: a balancer that probes ``/readyz`` (a
     kubelet, an active health check) sees 503 and stops sending, and one that only
     sees connections (nginx) is served meanwhile, each connection closed after its
     response, so none of its kept-alive connections is left idle to be cut.
  2. Then it stops accepting connections (a balancer's next connection is refused:
     nginx sends that request to another instance, as nothing reached this one).
     Connections already waiting in the socket's queue at that moment are accepted and
     answered 503 ``shutting_down`` with ``Retry-After`` (a typed, retryable error:
     nothing ran) instead of being reset unanswered. A connection accepted during the
     drain whose request has not started yet (it is on its way) is given up to 2 s to
     start it, and is served. Idle connections are closed then.
  3. Requests in flight, and what the app's ``settle()`` waits for (the gateway: its
     parked calls), get up to ``graceful_timeout`` seconds to finish (uvicorn's
     ``timeout_graceful_shutdown``); what is left after that is cancelled, and the
     app's lifespan ends.

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
import contextlib
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


def find_hook(app: Any, name: str) -> Callable[[], Awaitable[None]] | None:
    """The coroutine function ``name`` of ``app``, or of the app it wraps (middleware
    that keeps the wrapped app as ``.app``), or None."""
    for _ in range(_MAX_WRAPPERS):
        hook = getattr(app, name, None)
        if callable(hook):
            return hook  # type: ignore[no-any-return]
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


def find_drain(app: Any) -> Callable[[], Awaitable[None]] | None:
    """The ``drain`` coroutine function of ``app``, or of the app it wraps, or None."""
    return find_hook(app, "drain")


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
    settle = find_hook(app, "settle")

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
            if drain is not None:
                try:
                    await drain()
                except Exception:
                    log.exception("draining the app failed; shutting down anyway")
            # 1. Still accepting and serving, each response closing its connection,
            # while the balancer takes us out (module docstring).
            loop = asyncio.get_running_loop()
            until = loop.time() + drain_seconds
            while loop.time() < until and not self.force_exit:
                await asyncio.sleep(min(0.05, max(0.0, until - loop.time())))
            # 2. No new work: what comes now is answered 503 shutting_down.
            self.config.loaded_app = _refuse
            late: list[socket.socket] = []
            for sock in sockets or ():
                late += _accept_waiting(sock)
            for server in self.servers:
                server.close()
            for sock in sockets or ():
                sock.close()
            await _answer_late(late, self.config, self.server_state, self.lifespan.state,
                               header_timeout)
            # 3. uvicorn's: idle connections closed, requests in flight (and ``settle``)
            # waited for up to the graceful timeout, then the lifespan's end.
            await super().shutdown(sockets)

        async def _wait_tasks_to_complete(self) -> None:
            # Within uvicorn's timeout_graceful_shutdown, as requests in flight are.
            await super()._wait_tasks_to_complete()
            if settle is not None and not self.force_exit:
                try:
                    await settle()
                except Exception:
                    log.exception("settling the app failed; shutting down anyway")

    # loop/http "auto": uvloop and httptools when the `fast` extra is installed.
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on",
                            http=protocol, timeout_keep_alive=keep_alive,
                            timeout_graceful_shutdown=_whole(graceful_timeout),
                            limit_concurrency=max_connections)
    _Server(config).run(sockets=[sock])


async def _refuse(scope: Any, receive: Any, send: Any) -> None:
    """What a stopping instance answers once it has drained: 503 ``shutting_down`` with
    ``Retry-After`` (nothing ran; retry on another instance), the connection closed."""
    from mcpcore.errors import ShuttingDown
    from mcpcore.transports.asgi import send_json
    from mcpcore.transports.error_reply import error_reply

    if scope["type"] != "http":
        return  # a websocket the app does not accept: uvicorn refuses it
    more = True
    with contextlib.suppress(TimeoutError, OSError):
        async with asyncio.timeout(_LATE_BODY_SECONDS):  # read it: an unread body resets
            while more:
                message = await receive()
                more = message["type"] == "http.request" and message.get("more_body", False)
    status, payload, extra = error_reply(ShuttingDown(), None)
    await send_json(send, status, payload, [*extra, (b"connection", b"close")])


#: How long a request that comes after the drain may take to send its body before its
#: 503 (through a balancer the body is there at once).
_LATE_BODY_SECONDS = 2.0


def _accept_waiting(sock: socket.socket) -> list[socket.socket]:
    """The connections the kernel completed on ``sock`` that the event loop has not
    accepted yet (bounded by the socket's backlog); closing the listening socket would
    reset them with their requests unanswered."""
    accepted: list[socket.socket] = []
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        while len(accepted) < _MAX_LATE:
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                break
            accepted.append(conn)
    return accepted


#: Connections accepted from the queue at the end of a drain, at most.
_MAX_LATE = 4096


async def _answer_late(late: list[socket.socket], config: Any, state: Any, app_state: Any,
                       header_timeout: float) -> None:
    """Serve the connections ``_accept_waiting`` took (with the 503 app, now the
    config's), then wait until every connection that has not started a request yet
    (these, and those accepted in the last moments of the drain, whose request is on
    its way) has started one, or closed, or ``header_timeout`` (at most 2 s) passed:
    uvicorn's shutdown closes the connections that are idle, and closing one whose
    request is arriving would reset it unanswered."""
    loop = asyncio.get_running_loop()
    for conn in late:
        try:
            await loop.connect_accepted_socket(
                lambda: config.http_protocol_class(config=config, server_state=state,
                                                   app_state=app_state), conn)
        except OSError:
            conn.close()
    until = loop.time() + min(header_timeout, _LATE_BODY_SECONDS)
    while loop.time() < until and any(_waiting(c) for c in list(state.connections)):
        await asyncio.sleep(0.01)


def _waiting(protocol: Any) -> bool:
    """Whether a connection has not started a request yet, nor closed."""
    transport = getattr(protocol, "transport", None)
    return getattr(protocol, "cycle", None) is None and transport is not None and \
        not transport.is_closing()


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


__all__ = ["PORTS", "YOUNG_THRESHOLD", "ListenError", "find_drain", "find_hook", "listen",
           "run", "settle_heap"]
