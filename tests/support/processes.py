"""Real processes for the tests, started on loopback and always stopped: free ports,
``redis-server``, ``python -m examples.everything --stdio``.

A missing tool skips its tests loudly outside CI and fails them in CI (``CI`` set), so CI
can never go green by silently skipping (``require_tool``).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]


def require_tool(available: bool, what: str) -> None:
    if available:
        return
    message = f"{what} is not available on this machine"
    if os.environ.get("CI"):
        pytest.fail(f"{message}, but CI must provide it (.ci/run installs it)")
    pytest.skip(f"SKIPPED LOUDLY: {message}; run `make test` to install it")


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port} within {timeout}s")


def stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Terminate a process we started, kill it if it lingers, close its pipes."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for stream in (proc.stdout, proc.stderr, proc.stdin):
        if stream is not None:
            stream.close()


# -- Redis -----------------------------------------------------------------------------
class RedisServer(NamedTuple):
    """A throwaway ``redis-server`` (no persistence) on a free loopback port."""

    url: str
    port: int


def answers_ping(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2) as s:
        s.sendall(b"PING\r\n")
        return s.recv(16).startswith(b"+PONG")
    return False


def launch_redis(port: int, *args: str, config: Path | None = None,
                 log: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``redis-server`` on 127.0.0.1:``port`` (a ``config`` file first, if given,
    then ``args``); return once it answers PING. The one launcher: the caller stops it
    (``stop``). ``log``: where it writes its log, quoted if it exits early."""
    binary = shutil.which("redis-server")
    require_tool(binary is not None, "redis-server")
    assert binary is not None
    argv = [binary, *([str(config)] if config is not None else []),
            "--port", str(port), "--bind", "127.0.0.1", *args]
    if log is not None:
        argv += ["--logfile", str(log)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10.0
    while not answers_ping(port):
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            if log is not None and log.exists():
                err += log.read_text(errors="replace")[-2000:]
            stop(proc)
            pytest.fail(f"redis-server on port {port} exited with {proc.returncode}: {err}",
                        pytrace=False)
        if time.monotonic() > deadline:
            stop(proc)
            pytest.fail(f"redis-server did not answer PING on port {port}", pytrace=False)
        time.sleep(0.02)
    return proc


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A throwaway ``redis-server`` (no persistence) on a free port; stopped on exit."""
    port = free_port()
    proc = launch_redis(port, "--save", "", "--appendonly", "no")
    try:
        yield RedisServer(f"redis://127.0.0.1:{port}/0", port)
    finally:
        stop(proc)


# -- stdio -----------------------------------------------------------------------------
def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


class StdioProcess:
    """``python -m examples.everything --stdio`` with a thread reading its stdout.

    Every stdout line is kept in ``lines``; one that is not a JSON object is recorded in
    ``garbage`` (stdio.mdx: nothing but MCP messages on stdout). Loop-agnostic: the async
    side polls, so one process can serve tests running on different event loops.
    """

    def __init__(self, module: str = "examples.everything") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "--stdio"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=ROOT, env=subprocess_env(),
        )
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.lines: list[bytes] = []
        self.garbage: list[bytes] = []
        self.stderr = bytearray()
        self._lock = threading.Lock()
        self._ids = 0
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()

    def next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                self.garbage.append(line)
                continue
            if not isinstance(message, dict) or not line.endswith(b"\n"):
                self.garbage.append(line)
                continue
            self.inbox.put(message)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.extend(line)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def drain(self) -> list[dict[str, Any]]:
        out = []
        while True:
            try:
                out.append(self.inbox.get_nowait())
            except queue.Empty:
                return out

    def close(self, timeout: float = 5.0) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(timeout)
        self._out.join(timeout)
        self._err.join(timeout)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


__all__ = ["ROOT", "RedisServer", "StdioProcess", "answers_ping", "free_port", "redis_server",
           "require_tool", "stop", "subprocess_env", "wait_for_port"]
