"""Starting the servers of the interoperability matrix (``test_third_party.py``).

Third-party servers come from ``scripts/third-party.sh`` (pinned, cached, offline after
the first install); our own from the checkout. Every server listens on 127.0.0.1 only
and runs in its own process group, stopped (and reaped) when the test is done. Outside
CI a missing installer prerequisite (npm) skips loudly; in CI it fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "third-party.sh"
SERVERS = Path(__file__).resolve().parent / "servers"
_commands: dict[str, list[str]] = {}


def third_party(name: str) -> list[str]:
    """The argv prefix that starts a third-party server (installing it once)."""
    if name not in _commands:
        if shutil.which("npm") is None and not os.environ.get("MCPCORE_THIRD_PARTY_CACHE"):
            cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
            if not (cache / "mcpcore" / "third-party").exists():
                if os.environ.get("CI"):
                    pytest.fail("npm is missing, but CI needs it for the third-party servers")
                pytest.skip("SKIPPED LOUDLY: npm is missing; `make test` installs it")
        done = subprocess.run([str(SCRIPT), "command", name], capture_output=True, text=True,
                              timeout=600, env={**os.environ, "MCPCORE_THIRD_PARTY_QUIET": "1"})
        if done.returncode != 0:
            pytest.fail(f"scripts/third-party.sh command {name} failed:\n{done.stderr[-3000:]}")
        _commands[name] = [line for line in done.stdout.splitlines() if line]
    return list(_commands[name])


@dataclass(frozen=True)
class Launch:
    """How to start one server over stdio, and over HTTP on a given port."""

    stdio: list[str]
    http: list[str]  # "{port}" is replaced
    path: str = "/mcp"
    env: tuple[tuple[str, str], ...] = ()


def launch(server: str, state_keys: str) -> Launch:
    if server == "server-everything":
        node = third_party("server-everything")
        return Launch([*node, "stdio"], [*node, "streamableHttp"],
                      env=(("PORT", "{port}"),))
    if server == "sdk":
        script = str(SERVERS / "sdk_server.py")
        return Launch([sys.executable, script, "stdio"], [sys.executable, script, "http", "{port}"])
    if server == "fastmcp":
        python = third_party("fastmcp")[0]
        script = str(SERVERS / "fastmcp_server.py")
        return Launch([python, script, "stdio"], [python, script, "http", "{port}"])
    if server == "mcpcore":
        base = [sys.executable, "-m", "examples.everything"]
        return Launch([*base, "--stdio"], [*base, "--host", "127.0.0.1", "--port", "{port}"],
                      env=(("MCPCORE_STATE_KEYS", state_keys),))
    raise ValueError(server)


def environment(spec: Launch, port: int | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key, value in spec.env:
        env[key] = value.replace("{port}", str(port))
    return env


@contextlib.contextmanager
def http_server(spec: Launch, timeout: float = 60.0) -> Iterator[str]:
    """Start the server on a free loopback port; yield its MCP URL; stop it."""
    port = free_port()
    argv = [arg.replace("{port}", str(port)) for arg in spec.http]
    process = subprocess.Popen(argv, cwd=ROOT, env=environment(spec, port),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                pytest.fail(f"{argv[0]} exited with {process.returncode}:\n{err[-3000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"{argv} did not listen on port {port} within {timeout} s")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}{spec.path}"
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server and everything it started (its process group), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.stderr is not None:
        process.stderr.close()
