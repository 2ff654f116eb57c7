"""Fixtures that start real processes: our servers under uvicorn, the official suite.

Each tool we need is looked up once. Outside CI a missing tool skips its tests with a
loud reason; in CI (``CI`` set) it fails them, because CI must install everything.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
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
#: The page whose nginx block (and self-signed certificate recipe) the fleets run.
DEPLOYING = REPO / "docs" / "deploying.md"
#: What the tests wrap around the documented block: their own files and log format.
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
{documented}
}}
"""
#: Added to the documented ``location /mcp``: which instance answered, for the tests.
UPSTREAM_HEADER = "add_header X-Upstream $upstream_addr always;"
_DOC_UPSTREAM = re.compile(r"^(\s*)server 127\.0\.0\.1:800\d( [^;]*)?;[^\n]*\n", re.M)


def documented_block(lang: str, after: str) -> str:
    """The first ``lang`` fenced block of docs/deploying.md after the line ``after``."""
    text = DEPLOYING.read_text(encoding="utf-8")
    found = re.search(rf"```{lang}\n(.*?)```", text[text.index(after):], re.S)
    assert found, f"docs/deploying.md has no {lang} block after {after!r}"
    return found.group(1)


def documented_nginx(ports: list[int], front: int, tls: Path | None) -> str:
    """The nginx block of docs/deploying.md ("A fleet") with this fleet's ports: the
    instances for the three documented ones, ``127.0.0.1:front`` for ``443``, and the
    certificate pair in ``tls`` (or plain HTTP, without the ``ssl_`` lines)."""
    block = documented_block("nginx", "## A fleet")
    servers = _DOC_UPSTREAM.findall(block)
    assert len(servers) == 3, "the documented upstream lists three instances"
    indent, params = servers[0]
    ours = "".join(f"{indent}server 127.0.0.1:{port}{params};\n" for port in ports)
    block = _DOC_UPSTREAM.sub("", block, count=2)
    block = _DOC_UPSTREAM.sub(lambda _: ours, block, count=1)
    assert "listen 443 ssl;" in block and "proxy_pass http://mcp;" in block
    if tls is None:
        block = block.replace("listen 443 ssl;", f"listen 127.0.0.1:{front};")
        block = re.sub(r"^\s*ssl_certificate(_key)? [^\n]*\n", "", block, flags=re.M)
    else:
        block = block.replace("listen 443 ssl;", f"listen 127.0.0.1:{front} ssl;")
        assert block.count("/etc/nginx/tls/") == 2
        block = block.replace("/etc/nginx/tls/", f"{tls}/")
    block = block.replace("proxy_pass http://mcp;",
                          f"proxy_pass http://mcp;\n        {UPSTREAM_HEADER}")
    return "".join(f"    {line}\n" if line else "\n" for line in block.splitlines())


def check_nginx(nginx: str, prefix: Path, tls: Path | None) -> None:
    """``nginx -t`` on the written configuration. With ``tls``, through the page's own
    recipe for a self-signed pair (its directory and ``nginx -t`` made this fleet's)."""
    test = f"{nginx} -t -q -p {prefix} -c {prefix / 'nginx.conf'}"
    if tls is None:
        script = test
    else:
        script = documented_block("bash", "make a self-signed pair")
        assert script.count("/etc/nginx/tls") == 2 and script.rstrip().endswith("nginx -t")
        script = script.replace("/etc/nginx/tls", str(tls)).rstrip()[: -len("nginx -t")] + test
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{script}\n{done.stdout}{done.stderr}"


def nginx_binary() -> str | None:
    return shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


class Fleet(NamedTuple):
    """Instances of an example server (examples/everything unless told) behind nginx
    round-robin, configured by the block of docs/deploying.md."""

    url: str                              #: the nginx front, ``http(s)://127.0.0.1:N/mcp``
    procs: list[subprocess.Popen[bytes]]
    ports: list[int]                      #: each instance's own port (bypassing nginx)
    access_log: Path                      #: ``METHOD STATUS UPSTREAM SESSION`` per line
    certificate: Path | None = None       #: the front's self-signed certificate (TLS)

    def instance_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}/mcp"


@contextlib.contextmanager
def fleet(tmp_path: Path, size: int = 3, *, env: Mapping[str, str] | None = None,
          module: str = "everything", tls: bool = False,
          command: Callable[[int], list[str]] | None = None) -> Iterator[Fleet]:
    """Start ``size`` uvicorn instances of ``examples.<module>`` and nginx in front,
    configured by docs/deploying.md's block (``documented_nginx``); ``env`` is added to
    each instance's environment (e.g. ``MCPCORE_REDIS_URL`` to share a Redis). ``tls``:
    the front speaks HTTPS with a certificate made by the page's recipe. ``command``:
    the argv of an instance on a port, instead of the example (e.g. ``mcpcore gateway
    serve``)."""
    nginx = nginx_binary()
    require_tool(nginx is not None, "nginx")
    assert nginx is not None
    ports = [free_port() for _ in range(size)]
    full_env = {**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS, **(env or {})}
    if command is None:
        def command(port: int) -> list[str]:
            return [sys.executable, "-m", f"examples.{module}", "--host", "127.0.0.1",
                    "--port", str(port)]
    procs = [
        subprocess.Popen(command(p), cwd=REPO, env=full_env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for p in ports
    ]
    front = free_port()
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    certificates = prefix / "tls" if tls else None
    (prefix / "nginx.conf").write_text(NGINX_CONF.format(
        prefix=prefix, documented=documented_nginx(ports, front, certificates)))
    proxy = None
    try:
        check_nginx(nginx, prefix, certificates)
        for port, proc in zip(ports, procs, strict=True):
            wait_for_port(port, proc)
        user = ["-g", "daemon off; user root;"] if os.geteuid() == 0 else ["-g", "daemon off;"]
        proxy = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
                                  *user], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(front, proxy)
        scheme = "https" if tls else "http"
        yield Fleet(f"{scheme}://127.0.0.1:{front}/mcp", procs, ports, prefix / "access.log",
                    certificates / "mcp.crt" if certificates else None)
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
