"""Gateways side by side: what one proxied ``tools/call echo`` costs through mcpcore's
gateway, FastMCP's proxy and IBM ContextForge, next to calling the upstream directly.

    make bench-gateway                                             # the whole run
    .venv/bin/python bench/bench_gateway_side_by_side.py [--duration 20] [--warmup 2]
        [--concurrency 1,32] [--bridged-concurrency 1,8,32] [--only direct,ours,...]
    .venv/bin/python bench/bench_gateway_side_by_side.py --duration 3 --warmup 1  # quick

One upstream for all: ``examples.quickstart`` (its ``echo`` tool) under uvicorn, one
worker, uvloop + httptools. In front of it, one after another, each in a process of its
own with one worker: ``mcpcore gateway serve`` (prefixing off), FastMCP's
``create_proxy`` (``bench/fastmcp_proxy.py``) and ContextForge (``uvicorn
mcpgateway.main:app``, SQLite; the upstream and a virtual server are registered through
its REST API, and it is called at ``/servers/{id}/mcp``). The upstream and the gateway
are pinned to core 1 with ``taskset``, and this process, the load generator
(``bench/loadgen.py``: keep-alive connections, pre-built requests, a strict reply
check), to core 0.

Each row is a closed loop at each concurrency for ``--duration`` seconds after a
``--warmup``: req/s, p50/p99, and the CPU (utime + stime from ``/proc/<pid>/stat``, the
process and its children) of the gateway and of the upstream over the window, per
answered call. A 2026-07-28 client sends the stateless request; a 2025-11-25 client
opens one session (``initialize``) and sends every call on it from all connections.

The third-party gateways are never dependencies of mcpcore: each is installed on first
use, pinned, from PyPI, into a venv of its own under ``~/.cache/mcpcore/bench-venvs/``
(``MCPCORE_BENCH_VENVS`` moves it). One that cannot be installed, started or called
gets a row saying why, and the run goes on; no number is ever made up.

The bridged flow: a 2026-07-28 client calls ``ask`` (``bench/elicit_server.py``, which
elicits a name), gets ``input_required``, retries with the answer and gets the
greeting: the whole two-round flow, directly against the upstream on the 2026-07-28
wire, and through our gateway reaching the same upstream on the 2025 wire (the
upstream's ``elicitation/create`` parks the call until the retry answers it).
Concurrency there defaults to 1, 8 and 32. A gateway holds at most 8 parked calls per
principal (a bound against one caller filling it), so the gateway of the bridged rows
takes bearer tokens (``[gateway] auth``, trusting a ``LocalAuthorizationServer`` this
process runs on loopback) and each connection of the load calls as a principal of its
own (a token per connection, subject ``bench-N``): 32 callers, not one caller 32 times.

Prints the table and the issue's targets (met or not, with the numbers); writes every
figure to ``bench/results/gateway-side-by-side.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime as dt
import http.client
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import loadgen  # noqa: E402  (bench/ is not a package; this file runs as a script)
import msgspec  # noqa: E402

HOST = "127.0.0.1"
SERVER_CORE = 1
CLIENT_CORE = 0
CLK_TCK = os.sysconf("SC_CLK_TCK")
RESULTS = BENCH_DIR / "results" / "gateway-side-by-side.json"
MODERN, LEGACY = "2026-07-28", "2025-11-25"
TEXT = loadgen.TEXT

#: The third-party gateways, pinned. uvloop and httptools for FastMCP so that every
#: server of the bench runs the same uvicorn stack (ContextForge's requirements bring
#: them already, through uvicorn[standard]).
PINS: dict[str, tuple[str, ...]] = {
    "fastmcp": ("fastmcp==4.2.3", "uvloop==0.23.0", "httptools==0.9.0"),
    "contextforge": ("mcp-contextforge-gateway==1.0.7",),
}
#: Both need Python 3.11 or newer; ContextForge 1.0.7 refuses 3.14.
PYTHONS = ("python3.11", "python3.12", "python3.13")
INSTALL_TIMEOUT_S = 1500
START_TIMEOUT_S = {"contextforge": 240.0}
DEFAULT_START_TIMEOUT_S = 60.0
FLOW_TIMEOUT_S = 60.0
MAX_RECONNECTS = 50
SETTLE_TIMEOUT_S = 30.0


# -- processes -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process, in seconds (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()  # the name may contain spaces
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)


def descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(parents.get(current, ()))
    return out


def tree_cpu(pid: int) -> float:
    return sum(cpu_seconds(p) for p in descendants(pid))


class Service:
    """One server process (its own process group, pinned to the server core); always
    stopped on exit, with everything it started."""

    def __init__(self, name: str, argv: list[str], log_dir: Path, *, pin: bool,
                 env: dict[str, str] | None = None, cwd: Path = ROOT) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("wb")
        if pin:
            argv = ["taskset", "-c", str(SERVER_CORE), *argv]  # taskset execs: same pid
        self.argv = argv
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env or dict(os.environ),
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu(self) -> float:
        return tree_cpu(self.pid)

    def wait_http(self, port: int, path: str, timeout: float,
                  ok: Callable[[int, bytes], bool] = lambda status, body: status == 200
                  ) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: "
                                   f"{self.log_tail()}")
            try:
                status, _, body = get(port, path)
                if ok(status, body):
                    return
                last = f"HTTP {status}: {body[:200]!r}"
            except OSError as exc:
                last = repr(exc)
            time.sleep(0.25)
        raise RuntimeError(f"{self.name} not ready on :{port}{path} after {timeout:.0f} s "
                           f"({last}); log: {self.log_tail()}")

    def log_tail(self, size: int = 600) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace").strip()
        return " | ".join(text[-size:].splitlines()[-6:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(15)
        else:  # its children may outlive it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


@contextlib.contextmanager
def running(service: Service) -> Iterator[Service]:
    try:
        yield service
    finally:
        service.stop()


# -- third-party venvs -----------------------------------------------------------------


def venv_root() -> Path:
    default = Path.home() / ".cache" / "mcpcore" / "bench-venvs"
    return Path(os.environ.get("MCPCORE_BENCH_VENVS", default))


def base_python() -> str | None:
    """An interpreter the third-party gateways accept (3.11 to 3.13)."""
    if (3, 11) <= sys.version_info[:2] <= (3, 13):
        return sys.executable
    for name in PYTHONS:
        found = shutil.which(name)
        if found:
            return found
    return None


def ensure_venv(key: str) -> tuple[Path | None, str]:
    """The venv's python for ``PINS[key]``, installing it once; (None, why) if not."""
    pins = PINS[key]
    slug = "_".join(pins).replace("==", "-").replace("/", "_")
    home = venv_root() / slug
    python = home / "bin" / "python"
    if (home / ".complete").exists() and python.exists():
        return python, "cached"
    base = base_python()
    if base is None:
        return None, f"no Python 3.11-3.13 to build its venv ({', '.join(PYTHONS)} not found)"
    if home.exists():
        shutil.rmtree(home)  # a build that did not finish
    home.parent.mkdir(parents=True, exist_ok=True)
    log = home.parent / f"{slug}.install.log"
    print(f"[{key}] installing {' '.join(pins)} (once) into {home}; log: {log}", flush=True)
    try:
        with log.open("wb") as out:
            subprocess.run([base, "-m", "venv", str(home)], check=True, stdout=out,
                           stderr=subprocess.STDOUT, timeout=300)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                            "--disable-pip-version-check", *pins], check=True, stdout=out,
                           stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT_S)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
        return None, f"pip install {' '.join(pins)} failed ({exc}): {' | '.join(tail)}"
    (home / ".complete").write_text(" ".join(pins) + "\n")
    return python, "installed"


def venv_version(python: Path, package: str) -> str | None:
    done = subprocess.run([str(python), "-c", "import importlib.metadata as m, sys; "
                           f"print(m.version({package!r})); print(sys.version.split()[0])"],
                          capture_output=True, text=True, timeout=60)
    return " on Python ".join(done.stdout.split()) if done.returncode == 0 else None


# -- HTTP helpers ----------------------------------------------------------------------


def exchange(port: int, raw: bytes, timeout: float = 30.0) -> tuple[int, str, bytes,
                                                                     dict[str, str]]:
    """Send one raw HTTP/1.1 request; (status, content type, body, headers)."""
    with socket.create_connection((HOST, port), timeout) as sock:
        sock.sendall(raw)
        buf = bytearray()
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("connection closed before the response head")
            buf += chunk
        end = buf.index(b"\r\n\r\n")
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        while True:
            if "content-length" in headers:
                if len(buf) >= end + 4 + int(headers["content-length"]):
                    body = bytes(buf[end + 4:end + 4 + int(headers["content-length"])])
                    break
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                parsed = loadgen._parse_chunked(buf, end + 4)
                if parsed is not None:
                    body = parsed[0]
                    break
            chunk = sock.recv(65536)
            if not chunk:
                body = bytes(buf[end + 4:])
                break
            buf += chunk
            if len(buf) > loadgen.MAX_RESPONSE_BYTES:
                raise OSError("response too large")
        return status, headers.get("content-type", "").lower(), body, headers


def get(port: int, path: str) -> tuple[int, str, bytes]:
    raw = f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n"
    status, ctype, body, _ = exchange(port, raw.encode(), timeout=5)
    return status, ctype, body


def rest(port: int, method: str, path: str, payload: Any = None,
         token: str | None = None) -> Any:
    """A JSON call to ContextForge's REST API."""
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        body = None if payload is None else json.dumps(payload)
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {resp.status}: {text[:300]}")
        return json.loads(text) if text else None
    finally:
        conn.close()


def json_of(ctype: str, body: bytes) -> Any:
    """The JSON-RPC message of a JSON or event-stream body (its last ``data:`` line)."""
    if ctype.startswith("text/event-stream"):
        data = [line[5:].strip() for line in body.split(b"\n") if line.startswith(b"data:")]
        body = data[-1] if data else b""
    return msgspec.json.decode(body)


# -- the requests ----------------------------------------------------------------------


@dataclass(frozen=True)
class Wire:
    """How to call ``echo`` at one endpoint."""

    era: str
    path: str = "/mcp"
    tool: str = "echo"
    session: str | None = None


def call_body(tool: str, era: str, arguments: dict[str, Any], request_id: int = 1,
              capabilities: dict[str, Any] | None = None, **more: Any) -> bytes:
    params: dict[str, Any] = {"name": tool, "arguments": arguments, **more}
    if era == MODERN:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": capabilities or {},
                           "io.modelcontextprotocol/clientInfo": {"name": "bench",
                                                                  "version": "1"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": params}, separators=(",", ":")).encode()


def post(port: int, path: str, body: bytes, era: str, session: str | None = None,
         method: str = "tools/call", name: str | None = None,
         token: str | None = None) -> bytes:
    """The raw bytes of one POST on either wire (``token``: a bearer token)."""
    headers = {"Host": f"{HOST}:{port}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": era}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if era == MODERN:  # the 2026-07-28 routing headers
        headers["Mcp-Method"] = method
        if name is not None:
            headers["Mcp-Name"] = name
    if session is not None:
        headers["Mcp-Session-Id"] = session
    headers["Content-Length"] = str(len(body))
    head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return head.encode("latin-1") + b"\r\n" + body


def echo_request(port: int, wire: Wire) -> bytes:
    return post(port, wire.path, call_body(wire.tool, wire.era, {"text": TEXT}), wire.era,
                wire.session, name=wire.tool)


def open_session(port: int, path: str) -> str | None:
    """``initialize`` + ``notifications/initialized`` on the 2025-11-25 wire: the
    session id (None for a server that keeps none)."""
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}).encode()
    status, ctype, body, headers = exchange(port, post(port, path, init, LEGACY))
    if status != 200:
        raise RuntimeError(f"initialize: HTTP {status}: {body[:300]!r}")
    reply = json_of(ctype, body)
    if "result" not in reply:
        raise RuntimeError(f"initialize refused: {body[:300]!r}")
    session = headers.get("mcp-session-id")
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    status, _, body, _ = exchange(port, post(port, path, note, LEGACY, session))
    if status not in (200, 202):
        raise RuntimeError(f"notifications/initialized: HTTP {status}: {body[:300]!r}")
    return session


def connect(port: int, wire: Wire) -> tuple[Wire, bytes]:
    """The wire with its session (2025) and the exact request, checked once."""
    if wire.era == LEGACY:
        wire = Wire(wire.era, wire.path, wire.tool, open_session(port, wire.path))
    request = echo_request(port, wire)
    status, ctype, body, _ = exchange(port, request)
    if not loadgen.check_reply(status, ctype, body, TEXT):
        raise RuntimeError(f"the {wire.era} call is not answered correctly: HTTP {status} "
                           f"{ctype}: {body[:300]!r}")
    return wire, request


# -- measuring -------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table."""

    key: str
    label: str
    wire: str
    concurrency: int
    result: dict[str, Any] | None = None
    why: str | None = None  # why there is no result
    extra: dict[str, Any] = field(default_factory=dict)


def measure_echo(port: int, request: bytes, concurrency: int, args: argparse.Namespace,
                 gateway: Service | None, upstream: Service) -> dict[str, Any]:
    edges: dict[str, float] = {}

    def edge(tag: str) -> None:
        edges[f"upstream{tag}"] = upstream.cpu()
        if gateway is not None:
            edges[f"gateway{tag}"] = gateway.cpu()
        edges[f"client{tag}"] = time.process_time()

    load = os.getloadavg()
    loop = loadgen.new_event_loop()
    try:
        stats = loop.run_until_complete(loadgen.run_load(
            HOST, port, concurrency=concurrency, duration=args.duration,
            warmup=args.warmup, request=request, on_measure_start=lambda: edge("0"),
            on_measure_end=lambda: edge("1")))
    finally:
        loadgen.close_event_loop(loop)
    settle([upstream] if gateway is None else [gateway, upstream])
    return summarize(stats.summary(), edges, stats.duration_s, gateway is not None, load)


def summarize(summary: dict[str, Any], edges: dict[str, float], seconds: float,
              has_gateway: bool, load: tuple[float, float, float]) -> dict[str, Any]:
    n = summary["requests"]
    for who in ("upstream", "gateway", "client"):
        if who == "gateway" and not has_gateway:
            continue
        used = edges[f"{who}1"] - edges[f"{who}0"]
        summary[f"{who}_cpu_us_per_call"] = used / n * 1e6 if n else float("nan")
        summary[f"{who}_cpu_util"] = used / seconds if seconds else 0.0
    summary["loadavg_before"] = load
    return summary


def settle(services: list[Service], limit: float = SETTLE_TIMEOUT_S) -> None:
    """Wait until the servers are idle (under 10% of a core for half a second, at most
    ``limit`` seconds): a slow gateway still working on the calls a window left in
    flight would otherwise be measured in the next one."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = sum(s.cpu() for s in services)
        time.sleep(0.5)
        if sum(s.cpu() for s in services) - before < 0.05:
            return


def print_row(row: Row) -> None:
    r = row.result
    head = f"[{row.key}] {row.wire} c={row.concurrency}: "
    if r is None:
        print(head + f"NOT MEASURED: {row.why}", flush=True)
        return
    gw = (f", gateway {r['gateway_cpu_us_per_call']:.0f} µs CPU/call"
          if "gateway_cpu_us_per_call" in r else "")
    print(head + f"{r['rps']:.1f} req/s, p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms"
          f"{gw}, upstream {r['upstream_cpu_us_per_call']:.0f} µs CPU/call, "
          f"{r['errors']} errors" + (f" (first: {r['first_error']})"
                                     if r["first_error"] else ""), flush=True)


def echo_rows(key: str, label: str, port: int, wires: list[Wire], args: argparse.Namespace,
              gateway: Service | None, upstream: Service, rows: list[Row]) -> None:
    for wire in wires:
        try:
            ready, request = connect(port, wire)
        except (RuntimeError, OSError, msgspec.DecodeError) as exc:
            for c in args.concurrency:
                rows.append(Row(key, label, wire.era, c, why=f"not callable: {exc}"))
                print_row(rows[-1])
            continue
        for c in args.concurrency:
            if gateway is not None and gateway.proc.poll() is not None:
                rows.append(Row(key, label, wire.era, c,
                                why=f"the gateway exited: {gateway.log_tail()}"))
            else:
                rows.append(Row(key, label, wire.era, c,
                                measure_echo(port, request, c, args, gateway, upstream),
                                extra={"session": ready.session is not None}))
            print_row(rows[-1])


# -- the bridged flow ------------------------------------------------------------------


class FlowRun(loadgen._Run):
    """The load generator's phases and recording, for whole flows (no one request)."""

    def __init__(self) -> None:
        super().__init__(b"")


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, str, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head[:-4].decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        parts = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts += (await reader.readexactly(size + 2))[:-2]
            if len(parts) > loadgen.MAX_RESPONSE_BYTES:
                raise OSError("response too large")
        body = bytes(parts)
    else:
        raise OSError("response without length")
    return status, headers.get("content-type", "").lower(), body


async def one_flow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   port: int, first: bytes, token: str | None = None) -> None:
    """Round 1 (``input_required``), the retry with the answers, the greeting."""
    writer.write(first)
    status, ctype, body = await _read_response(reader)
    reply = json_of(ctype, body) if status == 200 else {}
    result = reply.get("result") or {}
    if result.get("resultType") != "input_required":
        raise ValueError(f"round 1: HTTP {status}: {body[:300]!r}")
    answers = {key: {"action": "accept", "content": {"name": "Ada"}}
               for key in result["inputRequests"]}
    retry = call_body("ask", MODERN, {}, 2, {"elicitation": {}}, inputResponses=answers,
                      requestState=result["requestState"])
    writer.write(post(port, "/mcp", retry, MODERN, name="ask", token=token))
    status, ctype, body = await _read_response(reader)
    reply = json_of(ctype, body) if status == 200 else {}
    result = reply.get("result") or {}
    content = result.get("content") or [{}]
    if result.get("resultType", "complete") != "complete" or \
            content[0].get("text") != "Hello, Ada!":
        raise ValueError(f"round 2: HTTP {status}: {body[:300]!r}")


async def _flow_worker(run: FlowRun, port: int, token: str | None) -> None:
    first = post(port, "/mcp", call_body("ask", MODERN, {}, 1, {"elicitation": {}}), MODERN,
                 name="ask", token=token)
    for _ in range(MAX_RECONNECTS):
        if run.phase == FlowRun.DRAIN:
            return
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
        except OSError as exc:
            run.stats.connection_failures += 1
            run.stats.first_error = run.stats.first_error or f"connect failed: {exc!r}"
            await asyncio.sleep(0.05)
            continue
        try:
            while run.phase != FlowRun.DRAIN:
                started = time.perf_counter_ns()
                try:
                    await asyncio.wait_for(one_flow(reader, writer, port, first, token),
                                           FLOW_TIMEOUT_S)
                    ok, why = True, ""
                except (TimeoutError, ValueError, KeyError, TypeError, AttributeError,
                        IndexError, OSError, asyncio.IncompleteReadError,
                        msgspec.DecodeError) as exc:
                    ok, why = False, repr(exc)[:400]
                run.record(started, ok, why)
                if not ok:
                    break  # a fresh connection after an error
        finally:
            writer.close()
            with contextlib.suppress(OSError, TimeoutError):
                await asyncio.wait_for(writer.wait_closed(), 2)


async def flow_load(port: int, concurrency: int, duration: float, warmup: float,
                    on_start: Callable[[], None], on_end: Callable[[], None],
                    tokens: list[str] | None = None) -> loadgen.Stats:
    """``concurrency`` connections making flows; with ``tokens``, connection N calls
    with ``tokens[N]`` (a principal of its own)."""
    run = FlowRun()
    tasks = [asyncio.ensure_future(_flow_worker(run, port, tokens[i] if tokens else None))
             for i in range(concurrency)]
    try:
        await asyncio.sleep(warmup)
        on_start()
        run.phase = FlowRun.MEASURE
        t0 = time.perf_counter()
        await asyncio.sleep(duration)
        run.phase = FlowRun.DRAIN
        run.stats.duration_s = time.perf_counter() - t0
        on_end()
        await asyncio.wait(tasks, timeout=loadgen.DRAIN_TIMEOUT_S)
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
    return run.stats


def measure_flow(port: int, concurrency: int, args: argparse.Namespace,
                 gateway: Service | None, upstream: Service,
                 tokens: list[str] | None = None) -> dict[str, Any]:
    edges: dict[str, float] = {}

    def edge(tag: str) -> None:
        edges[f"upstream{tag}"] = upstream.cpu()
        if gateway is not None:
            edges[f"gateway{tag}"] = gateway.cpu()
        edges[f"client{tag}"] = time.process_time()

    load = os.getloadavg()
    loop = loadgen.new_event_loop()
    try:
        stats = loop.run_until_complete(flow_load(
            port, concurrency, args.duration, args.warmup, lambda: edge("0"),
            lambda: edge("1"), tokens))
    finally:
        loadgen.close_event_loop(loop)
    settle([upstream] if gateway is None else [gateway, upstream])
    return summarize(stats.summary(), edges, stats.duration_s, gateway is not None, load)


# -- the gateways ----------------------------------------------------------------------


def gateway_file(folder: Path, name: str, upstream: str, era: str,
                 issuer: str | None = None) -> Path:
    """The gateway's config; with ``issuer``, ``/mcp`` takes bearer tokens it issues
    (for ``gateway_apps.GATEWAY_RESOURCE``)."""
    path = folder / f"{name}.toml"
    auth = ""
    if issuer is not None:
        import gateway_apps

        (folder / f"{name}-auth.toml").write_text(
            f'resource = "{gateway_apps.GATEWAY_RESOURCE}"\n[network]\n'
            f'allow_loopback = true\n[[authorization_servers]]\nissuer = "{issuer}"\n'
            f'jwks_uri = "{issuer}/jwks"\n')
        auth = f'auth = "{name}-auth.toml"\n'
    path.write_text(f'[gateway]\nname = "{name}"\nprefixing = false\n{auth}\n'
                    f'[[upstream]]\nname = "up"\nurl = "{upstream}"\nera = "{era}"\n')
    return path


def start_ours(name: str, config: Path, port: int, log_dir: Path, pin: bool,
               env: dict[str, str]) -> Service:
    service = Service(name, [sys.executable, "-m", "mcpcore", "gateway", "serve",
                             str(config), "--host", HOST, "--port", str(port),
                             "--log-level", "warning"], log_dir, pin=pin, env=env)
    try:
        service.wait_http(port, "/readyz", DEFAULT_START_TIMEOUT_S)
    except RuntimeError:
        service.stop()
        raise
    return service


def start_contextforge(python: Path, upstream: str, port: int, folder: Path, log_dir: Path,
                       pin: bool) -> tuple[Service, Wire]:
    """Start ContextForge (SQLite, auth and rate limits off), register the upstream and
    a virtual server with its one tool through the REST API; the 2025-11-25 wire at
    ``/servers/{id}/mcp``."""
    home = folder / "contextforge"
    home.mkdir()
    secret = secrets.token_urlsafe(48)
    env = {**os.environ,
           "DATABASE_URL": f"sqlite:///{home / 'mcp.db'}",
           "AUTH_REQUIRED": "false", "MCP_REQUIRE_AUTH": "false",
           "RATE_LIMITING_ENABLED": "false", "SSRF_ALLOW_LOCALHOST": "true",
           "JWT_SECRET_KEY": secret, "AUTH_ENCRYPTION_SECRET": secrets.token_urlsafe(48),
           "PLATFORM_ADMIN_PASSWORD": secrets.token_urlsafe(24),
           "BASIC_AUTH_PASSWORD": secrets.token_urlsafe(24),
           "HOST": HOST, "PORT": str(port), "LOG_LEVEL": "WARNING"}
    service = Service("contextforge", [str(python), "-m", "uvicorn", "mcpgateway.main:app",
                                       "--host", HOST, "--port", str(port), "--workers", "1",
                                       "--loop", "uvloop", "--http", "httptools",
                                       "--log-level", "warning", "--no-access-log"],
                      log_dir, pin=pin, env=env, cwd=home)
    try:
        service.wait_http(port, "/health", START_TIMEOUT_S["contextforge"])
        # The REST API wants a token even with AUTH_REQUIRED=false: one of its own, made
        # with its own tool and the secret we gave it.
        done = subprocess.run([str(python), "-m", "mcpgateway.utils.create_jwt_token",
                               "--username", "admin@example.com", "--exp", "120",
                               "--secret", secret], capture_output=True, text=True,
                              env=env, cwd=home, timeout=120)
        token = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if done.returncode != 0 or token.count(".") != 2:
            raise RuntimeError(f"create_jwt_token failed: {done.stderr[-300:]}")
        gateway = rest(port, "POST", "/gateways", {"name": "quick", "url": upstream,
                                                   "transport": "STREAMABLEHTTP"}, token)
        tools = [t for t in rest(port, "GET", "/tools", token=token)
                 if t.get("gatewayId") == gateway["id"] and t.get("originalName") == "echo"]
        if not tools:
            raise RuntimeError("the upstream's echo tool was not registered")
        server = rest(port, "POST", "/servers",
                      {"server": {"name": "bench", "associated_tools": [tools[0]["id"]]}},
                      token)
    except (RuntimeError, OSError, KeyError, TypeError, ValueError,
            subprocess.TimeoutExpired) as exc:
        tail = service.log_tail()
        service.stop()
        raise RuntimeError(f"{exc}; log: {tail}") from None
    return service, Wire(LEGACY, f"/servers/{server['id']}/mcp", tools[0]["name"])


# -- the targets -----------------------------------------------------------------------


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "mcpcore"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + (" (mcpcore/ modified)" if dirty else "")


def server_env() -> dict[str, str]:
    keys = "bench:" + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    return {**os.environ, "PYTHONPATH": str(ROOT), "MCPCORE_STATE_KEYS": keys}


def uvicorn_argv(app: str, port: int) -> list[str]:
    return [sys.executable, "-m", "uvicorn", app, "--host", HOST, "--port", str(port),
            "--workers", "1", "--loop", "uvloop", "--http", "httptools",
            "--log-level", "warning", "--no-access-log"]


def run_all(args: argparse.Namespace, pin: bool, folder: Path,
            versions: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    env = server_env()
    both = [Wire(MODERN), Wire(LEGACY)]
    up_port = free_port()
    upstream_url = f"http://{HOST}:{up_port}/mcp"
    with running(Service("upstream", uvicorn_argv("examples.quickstart:app", up_port),
                         folder, pin=pin, env=env)) as upstream:
        upstream.wait_http(up_port, "/mcp", DEFAULT_START_TIMEOUT_S,
                           ok=lambda status, body: status in (200, 400, 405, 406))
        for round_no in range(1, args.rounds + 1):  # ours and direct, alternated
            if args.rounds > 1:
                print(f"-- round {round_no} of {args.rounds}", flush=True)
            if "direct" in args.only:
                echo_rows("direct", "upstream, direct", up_port, both, args, None, upstream,
                          rows)
            if "ours" in args.only:
                port = free_port()
                config = gateway_file(folder, "ours", upstream_url, MODERN)
                try:
                    gateway = start_ours("ours", config, port, folder, pin, env)
                except RuntimeError as exc:
                    for wire in both:
                        for c in args.concurrency:
                            rows.append(Row("ours", "mcpcore gateway", wire.era, c,
                                            why=f"did not start: {exc}"))
                else:
                    with running(gateway):
                        echo_rows("ours", "mcpcore gateway", port, both, args, gateway,
                                  upstream, rows)
            if "ours-legacy-upstream" in args.only:
                port = free_port()
                config = gateway_file(folder, "ours-legacy", upstream_url, "legacy")
                label = "mcpcore gateway, 2025 upstream wire"
                try:
                    gateway = start_ours("ours-legacy", config, port, folder, pin, env)
                except RuntimeError as exc:
                    for c in args.concurrency:
                        rows.append(Row("ours-legacy-upstream", label, MODERN, c,
                                        why=f"did not start: {exc}"))
                else:
                    with running(gateway):
                        echo_rows("ours-legacy-upstream", label, port, [Wire(MODERN)], args,
                                  gateway, upstream, rows)
        if "fastmcp" in args.only:
            fastmcp_rows(args, pin, folder, upstream, upstream_url, versions, rows)
        if "contextforge" in args.only:
            contextforge_rows(args, pin, folder, upstream, upstream_url, versions, rows)
    if "bridged" in args.only:
        bridged_rows(args, pin, folder, env, rows)
    return best_rounds(rows)


def best_rounds(rows: list[Row]) -> list[Row]:
    """With ``--rounds``, each (target, client, c) once: its best round by req/s (load
    from elsewhere on the machine only ever slows a server down), in first-seen order."""
    best: dict[tuple[str, str, int], Row] = {}
    for row in rows:
        key = (row.key, row.wire, row.concurrency)
        kept = best.get(key)
        if kept is None or (row.result is not None and (
                kept.result is None or row.result["rps"] > kept.result["rps"])):
            best[key] = row
    return list(best.values())


def third_party_failed(key: str, label: str, wires: list[str], why: str,
                       args: argparse.Namespace, rows: list[Row]) -> None:
    for era in wires:
        for c in args.concurrency:
            rows.append(Row(key, label, era, c, why=why))
            print_row(rows[-1])


def fastmcp_rows(args: argparse.Namespace, pin: bool, folder: Path, upstream: Service,
                 upstream_url: str, versions: dict[str, Any], rows: list[Row]) -> None:
    label = "FastMCP create_proxy"
    python, how = ensure_venv("fastmcp")
    if python is None:
        third_party_failed("fastmcp", label, [MODERN, LEGACY], how, args, rows)
        return
    versions["fastmcp"] = venv_version(python, "fastmcp")
    port = free_port()
    service = Service("fastmcp", [str(python), str(BENCH_DIR / "fastmcp_proxy.py"),
                                  upstream_url, str(port)], folder, pin=pin)
    with running(service):
        try:
            service.wait_http(port, "/mcp", DEFAULT_START_TIMEOUT_S,
                              ok=lambda status, body: status < 500)
        except RuntimeError as exc:
            third_party_failed("fastmcp", label, [MODERN, LEGACY], f"did not start: {exc}",
                               args, rows)
            return
        echo_rows("fastmcp", label, port, [Wire(MODERN), Wire(LEGACY)], args, service,
                  upstream, rows)


def contextforge_rows(args: argparse.Namespace, pin: bool, folder: Path, upstream: Service,
                      upstream_url: str, versions: dict[str, Any], rows: list[Row]) -> None:
    label = "ContextForge"
    python, how = ensure_venv("contextforge")
    if python is None:
        third_party_failed("contextforge", label, [LEGACY], how, args, rows)
        return
    versions["mcp-contextforge-gateway"] = venv_version(python, "mcp-contextforge-gateway")
    try:
        service, wire = start_contextforge(python, upstream_url, free_port(), folder,
                                           folder, pin)
    except RuntimeError as exc:
        third_party_failed("contextforge", label, [LEGACY], f"did not start: {exc}", args,
                           rows)
        return
    with running(service):
        port = int(service.argv[service.argv.index("--port") + 1])
        echo_rows("contextforge", label, port, [wire], args, service, upstream, rows)


def bridged_rows(args: argparse.Namespace, pin: bool, folder: Path, env: dict[str, str],
                 rows: list[Row]) -> None:
    up_port = free_port()
    with running(Service("asker", uvicorn_argv("bench.elicit_server:app", up_port), folder,
                         pin=pin, env=env)) as asker:
        asker.wait_http(up_port, "/mcp", DEFAULT_START_TIMEOUT_S,
                        ok=lambda status, body: status in (200, 400, 405, 406))
        for c in args.bridged_concurrency:
            rows.append(Row("bridged-direct", "ask: 2 rounds, direct (2026-07-28 upstream)",
                            MODERN, c, measure_flow(up_port, c, args, None, asker)))
            print_row(rows[-1])
        port = free_port()
        # One principal per connection (module docstring): bearer tokens from an issuer
        # this process runs.
        import bench_auth
        import gateway_apps

        as_server, as_thread, issuer = bench_auth.serve_in_thread(
            gateway_apps.authorization_server)
        try:
            tokens = [issuer.mint(sub=f"bench-{i}",  # type: ignore[attr-defined]
                                  aud=gateway_apps.GATEWAY_RESOURCE, scope="mcp")
                      for i in range(max(args.bridged_concurrency))]
            config = gateway_file(folder, "bridge", f"http://{HOST}:{up_port}/mcp",
                                  "legacy", issuer.issuer)  # type: ignore[attr-defined]
            try:
                gateway = start_ours("bridge", config, port, folder, pin, env)
            except RuntimeError as exc:
                for c in args.bridged_concurrency:
                    rows.append(Row("bridged-ours",
                                    "ask: 2 rounds, our gateway, 2025 upstream",
                                    MODERN, c, why=f"did not start: {exc}"))
                return
            with running(gateway):
                for c in args.bridged_concurrency:
                    rows.append(Row("bridged-ours",
                                    "ask: 2 rounds, our gateway, 2025 upstream", MODERN, c,
                                    measure_flow(port, c, args, gateway, asker, tokens)))
                    print_row(rows[-1])
        finally:
            as_server.should_exit = True
            as_thread.join(10)


# -- the report ------------------------------------------------------------------------


def cell(value: float, fmt: str) -> str:
    return "-" if value != value else format(value, fmt)  # NaN: nothing to show


def print_table(rows: list[Row]) -> None:
    head = (f"{'target':<44}{'client':>11}{'c':>4}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}"
            f"{'gw µs/call':>11}{'up µs/call':>11}{'errors':>8}")
    print()
    print(head)
    print("-" * len(head))
    for row in rows:
        r = row.result
        start = f"{row.label:<44}{row.wire:>11}{row.concurrency:>4}"
        if r is None:
            print(f"{start}   not measured: {row.why}")
            continue
        gw = r.get("gateway_cpu_us_per_call", float("nan"))
        print(f"{start}{r['rps']:>10.1f}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}"
              f"{cell(gw, '.0f'):>11}{cell(r['upstream_cpu_us_per_call'], '.0f'):>11}"
              f"{r['errors']:>8d}")


def find(rows: list[Row], key: str, wire: str, c: int) -> dict[str, Any] | None:
    for row in rows:
        if (row.key, row.wire, row.concurrency) == (key, wire, c) and row.result and \
                row.result["requests"]:
            return row.result
    return None


def verdicts(rows: list[Row], high: int) -> list[dict[str, Any]]:
    """Issue 27's targets, each met or not, with the numbers (None: not measured)."""
    out: list[dict[str, Any]] = []

    def add(name: str, value: float | None, op: str, bound: float, unit: str) -> None:
        met = None if value is None else (value >= bound if op == ">=" else value <= bound)
        out.append({"target": name, "value": value, "op": op, "bound": bound, "unit": unit,
                    "met": met})

    direct32 = find(rows, "direct", MODERN, high)
    ours32 = find(rows, "ours", MODERN, high)
    add(f"ours / direct throughput, 2026-07-28, c={high}",
        ours32["rps"] / direct32["rps"] if ours32 and direct32 else None, ">=", 0.5, "x")
    if ours32:
        add(f"our gateway CPU / upstream CPU per call, 2026-07-28, c={high}",
            ours32["gateway_cpu_us_per_call"] / ours32["upstream_cpu_us_per_call"],
            "<=", 2.5, "x")
    direct1 = find(rows, "direct", MODERN, 1)
    ours1 = find(rows, "ours", MODERN, 1)
    for pct, bound in (("p50", 0.3), ("p99", 1.0)):
        add(f"added {pct} at c=1, 2026-07-28",
            ours1[f"{pct}_ms"] - direct1[f"{pct}_ms"] if ours1 and direct1 else None,
            "<=", bound, "ms")
    legacy_up = find(rows, "ours-legacy-upstream", MODERN, high)
    if legacy_up or any(r.key == "ours-legacy-upstream" for r in rows):
        add(f"ours via a 2025 upstream / direct throughput, c={high}",
            legacy_up["rps"] / direct32["rps"] if legacy_up and direct32 else None,
            ">=", 0.4, "x")
    for other in ("fastmcp", "contextforge"):
        for era in (MODERN, LEGACY):
            theirs = find(rows, other, era, high)
            if not any(r.key == other and r.wire == era for r in rows):
                continue
            ours = find(rows, "ours", era, high)
            add(f"ours / {other} throughput, {era} client, c={high}",
                ours["rps"] / theirs["rps"] if ours and theirs else None, ">=", 100.0, "x")
            if ours and theirs:  # no target: the figure that moves least with the load
                out.append({"target": f"{other} / ours gateway CPU per call, {era}, c={high}",
                            "value": theirs["gateway_cpu_us_per_call"]
                            / ours["gateway_cpu_us_per_call"], "op": None, "bound": None,
                            "unit": "x", "met": None})
    return out


def print_verdicts(found: list[dict[str, Any]]) -> None:
    print()
    for v in found:
        if v["value"] is None:
            print(f"{v['target']:<62} not measured")
            continue
        if v["op"] is None:
            print(f"{v['target']:<62} {v['value']:9.2f} {v['unit']:<3} (no target)")
            continue
        word = "MET" if v["met"] else "NOT MET"
        print(f"{v['target']:<62} {v['value']:9.2f} {v['unit']:<3} "
              f"(target {v['op']} {v['bound']}) {word}")


def parse_levels(text: str) -> list[int]:
    levels = [int(part) for part in text.split(",") if part.strip()]
    if not levels or any(not 1 <= c <= 256 for c in levels):
        raise argparse.ArgumentTypeError("a comma-separated list of 1 to 256")
    return levels


ALL = ("direct", "ours", "ours-legacy-upstream", "fastmcp", "contextforge", "bridged")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=20.0,
                        help="measured seconds per row and concurrency (default 20: the "
                             "slow gateways' requests finish inside the window)")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds")
    parser.add_argument("--concurrency", type=parse_levels, default=[1, 32],
                        help="connections, comma-separated (default 1,32)")
    parser.add_argument("--bridged-concurrency", type=parse_levels, default=[1, 8, 32],
                        help="concurrent bridged flows (default 1,8,32)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat the direct and mcpcore rows, alternated, and keep "
                             "each one's best round (default 1)")
    parser.add_argument("--only", default=",".join(ALL),
                        help=f"comma-separated subset of: {', '.join(ALL)}")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    if not 0 < args.duration <= 120 or not 0 <= args.warmup <= 30:
        parser.error("keep --duration in (0, 120] and --warmup in [0, 30]")
    if not 1 <= args.rounds <= 5:
        parser.error("--rounds must be in [1, 5]")
    args.only = [k.strip() for k in args.only.split(",") if k.strip()]
    if not args.only or set(args.only) - set(ALL):
        parser.error(f"--only takes a subset of: {', '.join(ALL)}")

    pin = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
    if pin:
        os.sched_setaffinity(0, {CLIENT_CORE})
    else:
        print("warning: fewer than 2 cores or no taskset: not pinning (numbers are noisy)")
    uptime_before = Path("/proc/loadavg").read_text().split()[:3]
    started = dt.datetime.now(dt.UTC)
    print(f"duration={args.duration}s warmup={args.warmup}s rounds={args.rounds} "
          f"concurrency={args.concurrency} "
          f"bridged={args.bridged_concurrency} cores={os.cpu_count()} "
          f"pinned={'servers:1 load generator:0' if pin else 'no'} "
          f"load average {' '.join(uptime_before)}", flush=True)
    versions: dict[str, Any] = {"mcpcore": git_commit(),
                                "python": platform.python_version()}
    from importlib import metadata

    for name in ("uvicorn", "uvloop", "httptools"):
        versions[name] = metadata.version(name)
    with tempfile.TemporaryDirectory(prefix="mcpcore-bench-gw-") as tmp:
        rows = run_all(args, pin, Path(tmp), versions)
    uptime_after = Path("/proc/loadavg").read_text().split()[:3]

    print_table(rows)
    high = max(args.concurrency)
    found = verdicts(rows, high)
    print_verdicts(found)
    print(f"\nload average before {' '.join(uptime_before)}, after {' '.join(uptime_after)}; "
          f"versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    report = {
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(),
                    "pinned": pin, "loadavg_before": uptime_before,
                    "loadavg_after": uptime_after},
        "settings": {"duration_s": args.duration, "warmup_s": args.warmup,
                     "rounds": args.rounds,
                     "concurrency": args.concurrency,
                     "bridged_concurrency": args.bridged_concurrency},
        "versions": versions,
        "rows": [row.__dict__ for row in rows],
        "targets": found,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"wrote {args.output}")
    ours_missing = [r for r in rows if r.result is None and not r.key.startswith(
        ("fastmcp", "contextforge"))]
    return 1 if ours_missing else 0


if __name__ == "__main__":
    sys.exit(main())
