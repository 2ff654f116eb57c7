"""Fixtures that start real processes: our servers under uvicorn, the official suite.

Each tool we need is looked up once. Outside CI a missing tool skips its tests with a
loud reason; in CI (``CI`` set) it fails them, because CI must install everything.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.support.processes import RedisServer, free_port, require_tool, stop, wait_for_port
from tests.support.processes import redis_server as start_redis

REPO = Path(__file__).resolve().parents[2]
#: The project's own runner for the official suite (installs Node and the suite once).
OFFICIAL_SUITE = REPO / "scripts" / "official-suite.sh"
#: A fixed test key ring so every process of a run can open each other's state.
TEST_STATE_KEYS = "test1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"

#: Re-exported for the integration tests (their processes come from tests.support).
__all__ = ["REPO", "TEST_STATE_KEYS", "Fleet", "RedisServer", "fleet", "free_port",
           "require_tool", "running_example", "stop", "wait_for_port"]


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
        stop(proc)


@pytest.fixture(scope="session")
def official_suite() -> Path:
    require_tool(OFFICIAL_SUITE.exists() and shutil.which("npm") is not None,
                 f"the official conformance suite ({OFFICIAL_SUITE}) with npm")
    return OFFICIAL_SUITE


# -- Redis ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A fresh ``redis-server`` per test module, so key counts start from zero."""
    with start_redis() as redis:
        yield redis


# -- the nginx fleet -----------------------------------------------------------------------
NGINX_CONF = """
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format upstream '$request_method $status $upstream_addr $http_mcp_session_id';
    access_log {prefix}/access.log upstream;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream mcp {{
{servers}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            # A refused connection never reached the app, so retrying is safe; the MRTR
            # rounds in this test have no side effects either.
            proxy_next_upstream error timeout non_idempotent;
            proxy_connect_timeout 1s;
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""


def nginx_binary() -> str | None:
    return shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


class Fleet(NamedTuple):
    """Instances of an example server (examples/everything unless told) behind nginx
    round-robin."""

    url: str                              #: the nginx front, ``http://127.0.0.1:N/mcp``
    procs: list[subprocess.Popen[bytes]]
    ports: list[int]                      #: each instance's own port (bypassing nginx)
    access_log: Path                      #: ``METHOD STATUS UPSTREAM SESSION`` per line

    def instance_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}/mcp"


@contextlib.contextmanager
def fleet(tmp_path: Path, size: int = 3, *,
          env: Mapping[str, str] | None = None, module: str = "everything") -> Iterator[Fleet]:
    """Start ``size`` uvicorn instances of ``examples.<module>`` and nginx in front; ``env``
    is added to each instance's environment (e.g. ``MCPCORE_REDIS_URL`` to share a
    Redis)."""
    nginx = nginx_binary()
    require_tool(nginx is not None, "nginx")
    assert nginx is not None
    ports = [free_port() for _ in range(size)]
    full_env = {**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS, **(env or {})}
    procs = [
        subprocess.Popen([sys.executable, "-m", f"examples.{module}", "--host", "127.0.0.1",
                          "--port", str(p)], cwd=REPO, env=full_env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for p in ports
    ]
    front = free_port()
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=30s;"
                        for p in ports)
    (prefix / "nginx.conf").write_text(NGINX_CONF.format(prefix=prefix, servers=servers,
                                                         port=front))
    proxy = None
    try:
        for port, proc in zip(ports, procs, strict=True):
            wait_for_port(port, proc)
        user = ["-g", "daemon off; user root;"] if os.geteuid() == 0 else ["-g", "daemon off;"]
        proxy = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
                                  *user], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(front, proxy)
        yield Fleet(f"http://127.0.0.1:{front}/mcp", procs, ports, prefix / "access.log")
    finally:
        if proxy is not None:
            proxy.send_signal(signal.SIGQUIT)
            try:
                proxy.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proxy.kill()
            if proxy.stderr:
                proxy.stderr.close()
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
