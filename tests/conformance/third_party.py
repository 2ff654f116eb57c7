"""Third-party MCP servers for the suite's outside-judge runs, installed once and cached.

``start(name)`` serves one on a free loopback port and yields its MCP URL:

* ``server-everything`` — ``@modelcontextprotocol/server-everything`` (npm), 2025 era;
* ``ts-sdk-v2`` — our small server on ``@modelcontextprotocol/server`` 2.x (npm);
* ``python-sdk`` — our small server on ``mcp==2.3.0`` (a dev dependency already);
* ``fastmcp`` — our small server on FastMCP 4.x (its own virtualenv).

Installs go to ``$MCPCORE_THIRD_PARTY_CACHE`` (default ``~/.cache/mcpcore/third-party``)
under ``conformance/``, built aside and renamed into place, then reused offline. Node
servers run under ``servers/loopback.cjs``, which pins every listen to 127.0.0.1.

The install step is the one thing to swap for ``scripts/third-party.sh command NAME``
(the client side's shared installer) once it is on main: ``_prefix`` is the only caller.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.conftest import free_port, stop, wait_for_port

HERE = Path(__file__).resolve().parent
SERVERS_DIR = HERE / "servers"
CACHE = Path(os.environ.get("MCPCORE_THIRD_PARTY_CACHE")
             or Path.home() / ".cache" / "mcpcore" / "third-party") / "conformance"


@dataclass(frozen=True)
class Server:
    kind: str                               #: "npm", "venv" or "python" (ours)
    packages: tuple[str, ...] = ()
    script: str = ""                        #: ours, under servers/
    bin: str = ""                           #: an npm package's own entry point
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    era: str = "both"


SERVERS: dict[str, Server] = {
    "server-everything": Server(
        "npm", ("@modelcontextprotocol/server-everything@2026.8.31",),
        bin="@modelcontextprotocol/server-everything/dist/index.js",
        args=("streamableHttp",), era="2025-11-25"),
    "ts-sdk-v2": Server("npm", ("@modelcontextprotocol/server@2.4.0",), script="ts_sdk_v2.mjs"),
    "python-sdk": Server("python", script="python_sdk.py"),
    "fastmcp": Server("venv", ("fastmcp==4.1.6", "mcp==2.3.0"), script="fastmcp_server.py"),
}


class InstallError(RuntimeError):
    pass


def node() -> str | None:
    """A Node 18+ (the system's, or the one the official suite's installer brought)."""
    candidates = [shutil.which("node")]
    suite = Path.home() / ".cache" / "mcpcore" / "official-suite"
    candidates += [str(p) for p in suite.glob("*/node_modules/.bin/node")]
    for candidate in candidates:
        if not candidate:
            continue
        with contextlib.suppress(OSError, ValueError, subprocess.SubprocessError):
            major = subprocess.run([candidate, "-p", "process.versions.node.split('.')[0]"],
                                   capture_output=True, text=True, timeout=20).stdout
            if int(major.strip()) >= 18:
                return candidate
    return None


def available(name: str) -> str | None:
    """``None`` when ``name`` can run here, else what is missing."""
    server = SERVERS[name]
    if server.kind == "npm" and (node() is None or shutil.which("npm") is None):
        return "Node 18+ and npm"
    return None


def _prefix(name: str) -> Path:
    """The install folder of ``name`` (installed on first use)."""
    server = SERVERS[name]
    slug = "_".join(p.replace("/", "_").replace("@", "") for p in server.packages)
    prefix = CACHE / server.kind / slug
    if (prefix / ".complete").exists():
        return prefix
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".install-", dir=CACHE))
    try:
        if server.kind == "npm":
            (work / "package.json").write_text('{"name": "conformance-third-party", '
                                               '"private": true}\n')
            command = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                       "--save-exact", *server.packages]
        else:
            subprocess.run([sys.executable, "-m", "venv", str(work)], check=True,
                           capture_output=True, timeout=300)
            command = [str(work / "bin" / "python"), "-m", "pip", "install", "--quiet",
                       "--disable-pip-version-check", *server.packages]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=900,
                              check=False)
        if done.returncode != 0:
            raise InstallError(f"installing {server.packages} failed:\n{done.stderr[-3000:]}")
        (work / ".complete").touch()
        prefix.parent.mkdir(parents=True, exist_ok=True)
        if not (prefix / ".complete").exists():
            shutil.rmtree(prefix, ignore_errors=True)
            work.rename(prefix)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return prefix


def argv(name: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The command that serves ``name`` on ``port``, and its extra environment."""
    server = SERVERS[name]
    if server.kind == "python":
        return [sys.executable, str(SERVERS_DIR / server.script), str(port)], {}
    prefix = _prefix(name)
    if server.kind == "venv":
        return [str(prefix / "bin" / "python"), str(SERVERS_DIR / server.script),
                str(port)], {}
    runtime = node()
    assert runtime is not None
    loopback = ["--require", str(SERVERS_DIR / "loopback.cjs")]
    if server.bin:
        return [runtime, *loopback, str(prefix / "node_modules" / server.bin),
                *server.args], {"PORT": str(port)}
    # ESM resolves packages from the script's folder: run a copy beside node_modules.
    script = prefix / server.script
    shutil.copyfile(SERVERS_DIR / server.script, script)
    return [runtime, *loopback, str(script), str(port)], {}


@contextlib.contextmanager
def start(name: str) -> Iterator[str]:
    """Serve ``name`` on a free loopback port; yield ``http://127.0.0.1:PORT/mcp``."""
    port = free_port()
    command, extra = argv(name, port)
    proc = subprocess.Popen(command, env={**os.environ, **extra}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=HERE)
    try:
        wait_for_port(port, proc, timeout=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


if __name__ == "__main__":   # python -m tests.conformance.third_party install
    for each in SERVERS:
        if available(each) is None and SERVERS[each].kind != "python":
            print(each, _prefix(each))
