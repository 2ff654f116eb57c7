"""Fixtures that start real processes: our servers under uvicorn, the official suite.

Each tool we need is looked up once. Outside CI a missing tool skips its tests with a
loud reason; in CI (``CI`` set) it fails them, because CI must install everything.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("MCPCORE_SHARED_DIR", REPO.parent / "shared"))
OFFICIAL_SUITE = SHARED / "tools" / "official-conformance.sh"
#: A fixed test key ring so every process of a run can open each other's state.
TEST_STATE_KEYS = "test1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"


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


@contextlib.contextmanager
def running_example(module: str, *, env: dict[str, str] | None = None,
                    port: int | None = None) -> Iterator[str]:
    """Serve ``examples.<module>`` over HTTP on a free loopback port; yield its URL."""
    port = port or free_port()
    full_env = {**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS, **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", f"examples.{module}", "--host", "127.0.0.1",
         "--port", str(port)],
        cwd=REPO, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture(scope="session")
def official_suite() -> Path:
    require_tool(OFFICIAL_SUITE.exists() and shutil.which("npm") is not None,
                 f"the official conformance suite ({OFFICIAL_SUITE}) with npm")
    return OFFICIAL_SUITE
