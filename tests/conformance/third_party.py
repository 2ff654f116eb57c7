"""Third-party MCP servers for the suite's outside-judge runs.

``start(name)`` serves one on a free loopback port and yields its MCP URL:

* ``server-everything`` — ``@modelcontextprotocol/server-everything`` (npm), 2025 era;
* ``ts-sdk-v2`` — our small server (servers/ts_sdk_v2.cjs) on
  ``@modelcontextprotocol/server`` 2.x;
* ``python-sdk`` — our small server on ``mcp==2.3.0`` (a dev dependency already);
* ``fastmcp`` — our small server on FastMCP 4.x.

The packages come from ``scripts/third-party.sh`` (pinned, installed once, cached, run
offline afterwards; Node servers under ``scripts/node-loopback.cjs``, which pins every
listen to 127.0.0.1), as the client's interoperability tests use them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import free_port, stop, wait_for_port

HERE = Path(__file__).resolve().parent
SERVERS_DIR = HERE / "servers"
SCRIPT = HERE.parents[1] / "scripts" / "third-party.sh"

#: name → (era it serves, how to start it on {port}: the installer's entry and our script).
SERVERS: dict[str, tuple[str, str | None, list[str]]] = {
    "server-everything": ("2025-11-25", "server-everything", ["streamableHttp"]),
    "ts-sdk-v2": ("both", "ts-sdk-v2", [str(SERVERS_DIR / "ts_sdk_v2.cjs"), "{port}"]),
    "python-sdk": ("both", None, [sys.executable, str(SERVERS_DIR / "python_sdk.py"),
                                  "{port}"]),
    "fastmcp": ("both", "fastmcp", [str(SERVERS_DIR / "fastmcp_server.py"), "{port}"]),
}


class InstallError(RuntimeError):
    pass


def available(name: str) -> str | None:
    """``None`` when ``name`` can run here, else what is missing."""
    if SERVERS[name][1] is not None and shutil.which("npm") is None:
        cache = Path(os.environ.get("MCPCORE_THIRD_PARTY_CACHE") or Path.home() / ".cache")
        if not (cache / "mcpcore" / "third-party").exists():
            return "npm (scripts/third-party.sh installs the servers with it, once)"
    return None


def argv(name: str, port: int) -> list[str]:
    """The command that serves ``name`` on ``port``."""
    _, entry, tail = SERVERS[name]
    head: list[str] = []
    if entry is not None:
        done = subprocess.run([str(SCRIPT), "command", entry], capture_output=True, text=True,
                              timeout=900, env={**os.environ, "MCPCORE_THIRD_PARTY_QUIET": "1"},
                              check=False)
        if done.returncode != 0:
            raise InstallError(f"scripts/third-party.sh command {entry}: {done.stderr[-3000:]}")
        head = [line for line in done.stdout.splitlines() if line]
    return [*head, *(part.replace("{port}", str(port)) for part in tail)]


@contextlib.contextmanager
def start(name: str) -> Iterator[str]:
    """Serve ``name`` on a free loopback port; yield ``http://127.0.0.1:PORT/mcp``."""
    port = free_port()
    proc = subprocess.Popen(argv(name, port), env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=HERE)
    try:
        wait_for_port(port, proc, timeout=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)
