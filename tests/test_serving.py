"""``mcpcore.serving`` under a real uvicorn: idle and slow-header connections are closed,
and SIGTERM drains (listen streams end with their result after an SSE ``retry`` hint,
requests in flight finish, the process exits 0)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from mcpcore.serving import YOUNG_THRESHOLD, _close_idle, find_drain

ROOT = Path(__file__).resolve().parents[1]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


@contextlib.contextmanager
def served(*flags: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fault_app", "--port", "0", *flags], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("mcpcore: serving "), line
        port = urlsplit(line.rsplit(" ", 1)[1].strip()).port
        assert port is not None
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def post(port: int, method: str, params: dict[str, Any], request_id: Any = 1,
         name: str | None = None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": {**params, "_meta": META}}).encode()
    head = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}",
            "Content-Type: application/json", "Accept: application/json, text/event-stream",
            "MCP-Protocol-Version: 2026-07-28", f"Mcp-Method: {method}",
            f"Content-Length: {len(body)}"]
    if name:
        head.append(f"Mcp-Name: {name}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def test_silent_and_slow_header_connections_are_closed() -> None:
    with served("--header-timeout", "1") as (_, port):
        silent = socket.create_connection(("127.0.0.1", port))
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        started = time.monotonic()
        assert closed_by_server(silent, 5.0)
        assert closed_by_server(slow, 5.0)
        assert time.monotonic() - started < 4.0
        # A connection that asks something in time is served.
        with socket.create_connection(("127.0.0.1", port)) as quick:
            quick.sendall(post(port, "tools/call", {"name": "test_simple_text",
                                                    "arguments": {}}, name="test_simple_text"))
            quick.settimeout(5)
            assert quick.recv(65536).startswith(b"HTTP/1.1 200")
        silent.close()
        slow.close()


def test_a_started_server_has_its_heap_frozen_and_young_collections_spaced() -> None:
    # serving.settle_heap, once the app has started: a collection of the youngest
    # generation walks the requests in flight, so at Python's default threshold (700)
    # a busy server walked them over and over (docs/performance.md).
    with served() as (_, port), socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /debug HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        sock.settimeout(10)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    report = json.loads(data.partition(b"\r\n\r\n")[2])
    assert report["gc"]["young_threshold"] == YOUNG_THRESHOLD
    assert report["gc"]["frozen"] > 10_000  # the modules and the app, left alone


def test_sigterm_ends_listen_streams_with_a_retry_hint_and_lets_requests_finish() -> None:
    with served("--graceful-timeout", "10") as (proc, port):
        listener = socket.create_connection(("127.0.0.1", port))
        listener.sendall(post(port, "subscriptions/listen",
                              {"notifications": {"toolsListChanged": True}}, "L"))
        listener.settimeout(5)
        received = b""
        while b"acknowledged" not in received:
            received += listener.recv(65536)
        slow_call = socket.create_connection(("127.0.0.1", port))
        slow_call.sendall(post(port, "tools/call", {"name": "test_slow",
                                                    "arguments": {"seconds": 1.5}},
                               name="test_slow"))
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        while True:
            chunk = listener.recv(65536)
            if not chunk:
                break
            received += chunk
        assert b"retry: 1000\n" in received
        final = received[received.rindex(b"data: ") + 6:].split(b"\n", 1)[0]
        assert json.loads(final)["result"]["resultType"] == "complete"
        slow_call.settimeout(10)
        answered = b""
        while chunk := slow_call.recv(65536):
            answered += chunk
        assert answered.startswith(b"HTTP/1.1 200") and b"Answered after 1.5 s" in answered
        # uvicorn re-raises the signal it caught once it is done: SIGTERM is the status.
        assert proc.wait(timeout=10) in (0, -signal.SIGTERM)
        assert 1.0 < time.monotonic() - signalled < 8.0  # it waited for the slow call
        listener.close()
        slow_call.close()
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            raise AssertionError("still accepting connections after shutting down")


async def test_close_idle_spares_busy_and_fresh_connections() -> None:
    class Transport:
        closed = False

        def is_closing(self) -> bool:
            return self.closed

        def close(self) -> None:
            self.closed = True

    now = asyncio.get_running_loop().time()

    def conn(idle_for: float, busy: bool | None) -> SimpleNamespace:
        cycle = None if busy is None else SimpleNamespace(response_complete=not busy)
        return SimpleNamespace(cycle=cycle, idle_since=now - idle_for, transport=Transport())

    silent, slow, busy, fresh = conn(5, None), conn(5, False), conn(5, True), conn(0.1, None)
    _close_idle([silent, slow, busy, fresh], header_timeout=1.0)
    assert silent.transport.closed and slow.transport.closed
    assert not busy.transport.closed and not fresh.transport.closed


def test_find_drain_looks_through_middleware() -> None:
    async def drain() -> None:
        return None

    inner = SimpleNamespace(drain=drain)
    assert find_drain(SimpleNamespace(app=SimpleNamespace(app=inner))) is drain
    assert find_drain(SimpleNamespace(app=None)) is None


def http_get(port: int, path: str) -> bytes:
    """One ``GET`` on a new connection (``Connection: close``); the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "\r\n".encode())
        sock.settimeout(5)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_sigterm_says_draining_while_it_serves_then_stops_accepting() -> None:
    """On SIGTERM the instance answers ``/readyz`` 503 ``draining`` at once (a probing
    balancer takes it out) and still accepts and serves new connections for
    ``--drain-seconds``, each answer closing its connection; then it refuses
    connections while the call in flight finishes; then it exits."""
    import os

    env = {**os.environ, "FAULTS_OPERATIONS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fault_app", "--port", "0",
         "--drain-seconds", "3", "--graceful-timeout", "20"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    slow_call = None
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = urlsplit(line.rsplit(" ", 1)[1].strip()).port
        assert port is not None
        assert http_get(port, "/readyz").startswith(b"HTTP/1.1 200")
        slow_call = socket.create_connection(("127.0.0.1", port))
        slow_call.sendall(post(port, "tools/call", {"name": "test_slow",
                                                    "arguments": {"seconds": 6}},
                               name="test_slow"))
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        seen: list[bytes] = []
        while not (seen and seen[-1].startswith(b"HTTP/1.1 503")):
            seen.append(http_get(port, "/readyz"))
            assert time.monotonic() - signalled < 2.5, seen  # well inside the drain
            time.sleep(0.05)
        assert seen[-1].split(b"\r\n\r\n", 1)[1] == b"draining\n"
        # Still serving, on new connections, during the drain; each one closed after.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as during:
            during.sendall(post(port, "tools/call", {"name": "test_simple_text",
                                                     "arguments": {}},
                                name="test_simple_text"))
            during.settimeout(5)
            answered = b""
            while chunk := during.recv(65536):
                answered += chunk
        head = answered.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 200") and b"connection: close" in head, answered
        assert time.monotonic() - signalled < 3.0  # (else the check above proved less)
        # Then new connections are refused, while the slow call goes on.
        refused_at = None
        while refused_at is None:
            try:
                http_get(port, "/healthz")
            except ConnectionRefusedError:
                refused_at = time.monotonic() - signalled
            else:
                assert time.monotonic() - signalled < 15, "still accepting after the drain"
                time.sleep(0.05)
        assert refused_at > 2.5, refused_at  # not before --drain-seconds
        slow_call.settimeout(20)
        answered = b""
        while chunk := slow_call.recv(65536):
            answered += chunk
        assert answered.startswith(b"HTTP/1.1 200") and b"Answered after 6" in answered
        assert proc.wait(timeout=20) in (0, -signal.SIGTERM)
    finally:
        if slow_call is not None:
            slow_call.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


async def test_connections_queued_when_the_listener_closes_get_a_typed_503() -> None:
    """At the end of the drain, connections the kernel completed but the event loop
    has not accepted yet would be reset, their requests unanswered, when the listening
    socket closes: ``run`` accepts them first and answers each request 503
    ``shutting_down`` with ``Retry-After`` and ``Connection: close``."""
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol
    from uvicorn.server import ServerState

    from mcpcore.serving import _accept_waiting, _answer_late, _refuse, listen

    listener = listen("127.0.0.1", 0)
    listener.listen(16)
    port = listener.getsockname()[1]
    loop = asyncio.get_running_loop()
    clients = []
    for n in range(3):  # queued: nothing accepts on the listener
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(post(port, "tools/call", {"name": "test_simple_text",
                                                 "arguments": {}}, n, "test_simple_text"))
        clients.append(client)
    late = _accept_waiting(listener)
    listener.close()
    assert len(late) == 3, late
    config = uvicorn.Config(_refuse, http=AutoHTTPProtocol, lifespan="off",
                            log_level="warning")
    config.load()
    config.loaded_app = _refuse
    state = ServerState()
    await _answer_late(late, config, state, {}, header_timeout=5)

    def read_all(sock: socket.socket) -> bytes:
        sock.settimeout(5)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer

    for client in clients:
        answer = await loop.run_in_executor(None, read_all, client)
        client.close()
        head, body = answer.split(b"\r\n\r\n", 1)
        head = head.lower()
        assert head.startswith(b"http/1.1 503"), answer
        assert b"retry-after: 1" in head and b"connection: close" in head
        error = json.loads(body)["error"]
        assert error["data"] == {"reason": "shutting_down", "retryAfter": 1}
    deadline = loop.time() + 5
    while state.connections and loop.time() < deadline:
        await asyncio.sleep(0.02)
    assert not state.connections


async def test_a_connection_whose_request_is_on_its_way_is_not_cut() -> None:
    """A connection the balancer opened in the last moments of the drain has not
    started its request yet when the instance stops accepting: uvicorn's shutdown
    would close it as idle (and nginx answer 502 for a POST it cannot retry). The stop
    waits until it has started its request (then it is served); a connection that has
    answered before (kept alive, idle) is not waited for."""
    from mcpcore.serving import _answer_late

    class Transport:
        def is_closing(self) -> bool:
            return False

    arriving = SimpleNamespace(cycle=None, transport=Transport())
    kept = SimpleNamespace(cycle=SimpleNamespace(response_complete=True),
                           transport=Transport())
    state = SimpleNamespace(connections=[arriving, kept])
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, setattr, arriving, "cycle",
                    SimpleNamespace(response_complete=False))
    started = loop.time()
    await _answer_late([], None, state, {}, header_timeout=10)
    assert arriving.cycle is not None and loop.time() - started >= 0.25
    # Nothing on its way: no wait.
    started = loop.time()
    await _answer_late([], None, SimpleNamespace(connections=[kept]), {}, header_timeout=10)
    assert loop.time() - started < 0.2
