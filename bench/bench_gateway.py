"""What the gateway costs per proxied ``tools/call``, next to the same call made directly.

    python bench/bench_gateway.py [--duration 5] [--warmup 1] [--rounds 2]
                                  [--concurrency 1,32] [--only direct,bare-modern,...]

Real sockets on loopback, all in one run (the machine is shared: compare ratios
within a run, and CPU per call rather than throughput):

- ``direct``: ``examples.quickstart`` under uvicorn (one worker, uvloop + httptools),
  as ``run.py`` serves it; its ``echo`` is the call every other target forwards;
- ``bare-modern``, ``bare-2025``: the gateway (``gateway_apps.py``: one worker, one
  upstream, prefixing off) reaching that upstream on the 2026-07-28 wire, or on the
  2025 wire (one session shared by every call);
- ``full-modern``, ``full-2025``: the same with inbound JWT auth, a ``token_exchange``
  credential for the upstream, a policy of 50 rules, an audit line per call and the
  metrics on (``gateway_apps.py``); the caller's bearer token is minted by a
  ``LocalAuthorizationServer`` this process runs on loopback, where the gateway also
  exchanges it (once: the exchanged token is cached for the principal).

The load generator is ``loadgen.py`` (pre-built requests on keep-alive connections, each
reply checked), run at each ``--concurrency`` (c=1: latency; c=32: throughput). Every
target is measured in every round, alternating, and the best round (by CPU per call) is
kept. Placement with ``taskset`` on two cores: the upstream alone on core 1; the load
generator and the gateway on core 0 (so at c=32 the gateway shares its core with the
load generator, and throughput ratios are a lower bound). CPU per call is each
process's utime + stime over the measured window (``/proc``), divided by the calls.

Prints two tables and each target of issue 27 (met or missed); writes
``bench/results/gateway.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for _path in (str(ROOT), str(BENCH_DIR)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import bench_auth  # noqa: E402  (bench/ is not a package; this file runs as a script)
import gateway_apps  # noqa: E402
import loadgen  # noqa: E402
import run  # noqa: E402

RESULTS = BENCH_DIR / "results" / "gateway.json"
UPSTREAM_CORE = 1
GATEWAY_CORE = 0
LOADGEN_CORE = 0
TARGETS = ("direct", "bare-modern", "bare-2025", "full-modern", "full-2025")
ERA_OF = {"modern": "2026-07-28", "2025": "legacy"}
READY_TIMEOUT = 60.0


class Proc:
    """A server process pinned to a core, stopped on exit."""

    def __init__(self, argv: list[str], port: int, core: int | None, log: Path) -> None:
        self.port = port
        self._log = log.open("wb")
        if core is not None:
            argv = ["taskset", "-c", str(core), *argv]
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.log = log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, request: bytes, check: Any) -> None:
        """Until the exact benchmark request is answered correctly."""
        deadline = time.monotonic() + READY_TIMEOUT
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.proc.args} exited: {self.log.read_text()[-2000:]}")
            try:
                status, ctype, body = send_once(self.port, request)
                if check(status, ctype, body):
                    return
                last = f"HTTP {status} {body[:300]!r}"
            except OSError as exc:
                last = repr(exc)
            time.sleep(0.1)
        raise SystemExit(f"{self.proc.args} not ready: {last}\n"
                         f"{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)
        self._log.close()


def send_once(port: int, request: bytes) -> tuple[int, str, bytes]:
    """One pre-built request on a fresh connection: (status, content type, body)."""
    import socket

    with socket.create_connection((run.HOST, port), 10) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in
                  (line.partition(":") for line in lines[1:])}
        length = int(fields.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, fields.get("content-type", ""), body


@contextlib.contextmanager
def servers(names: list[str], log_dir: Path, pin: bool
            ) -> Iterator[tuple[dict[str, Proc], dict[str, dict[str, str]]]]:
    """The upstream, the authorization server (in this process) and each gateway."""
    as_server, as_thread, issuer_app = bench_auth.serve_in_thread(
        gateway_apps.authorization_server)
    token = gateway_apps.caller_token(issuer_app)
    issuer = issuer_app.issuer  # type: ignore[attr-defined]
    procs: dict[str, Proc] = {}
    headers: dict[str, dict[str, str]] = {}
    try:
        port = run.free_port()
        procs["direct"] = Proc([sys.executable, "-m", "uvicorn", "examples.quickstart:app",
                                "--host", run.HOST, "--port", str(port), "--workers", "1",
                                "--loop", "uvloop", "--http", "httptools", "--log-level",
                                "warning", "--no-access-log",
                                # Longer than the gateway pool's keep-alive (5 s), as a
                                # proxy's upstream should be (docs/deploying.md).
                                "--timeout-keep-alive", "75"], port,
                               UPSTREAM_CORE if pin else None, log_dir / "direct.log")
        headers["direct"] = {}
        upstream = f"http://{run.HOST}:{port}/mcp"
        procs["direct"].wait_ready(loadgen.build_request(run.HOST, port), check_echo)
        for name in names:
            if name == "direct":
                continue
            kind, era = name.split("-")
            gport = run.free_port()
            argv = [sys.executable, str(BENCH_DIR / "gateway_apps.py"), kind, ERA_OF[era],
                    upstream, str(gport)]
            headers[name] = {}
            if kind == "full":
                argv += ["--issuer", issuer, "--audit", str(log_dir / f"{name}.audit")]
                headers[name] = {"Authorization": f"Bearer {token}"}
            procs[name] = Proc(argv, gport, GATEWAY_CORE if pin else None,
                               log_dir / f"{name}.log")
        for name, proc in procs.items():
            proc.wait_ready(loadgen.build_request(run.HOST, proc.port,
                                                  extra_headers=headers[name]), check_echo)
        yield procs, headers
    finally:
        for proc in procs.values():
            proc.stop()
        as_server.should_exit = True
        as_thread.join(10)


def check_echo(status: int, ctype: str, body: bytes) -> bool:
    return loadgen.check_reply(status, ctype, body)


def measure(procs: dict[str, Proc], name: str, headers: dict[str, str], concurrency: int,
            args: argparse.Namespace) -> dict[str, Any]:
    proc = procs[name]
    watched = {"gateway": proc.pid} if name != "direct" else {}
    watched["upstream"] = procs["direct"].pid
    edges: dict[str, dict[str, float]] = {"start": {}, "end": {}}

    def mark(edge: str) -> None:
        for role, pid in watched.items():
            edges[edge][role] = run.cpu_seconds(pid)

    loop = loadgen.new_event_loop()
    try:
        stats = loop.run_until_complete(loadgen.run_load(
            run.HOST, proc.port, concurrency=concurrency, duration=args.duration,
            warmup=args.warmup,
            request=loadgen.build_request(run.HOST, proc.port, extra_headers=headers),
            on_measure_start=lambda: mark("start"), on_measure_end=lambda: mark("end")))
    finally:
        loop.close()
    summary = stats.summary()
    n = summary["requests"]
    for role in watched:
        used = edges["end"][role] - edges["start"][role]
        summary[f"{role}_cpu_us"] = used / n * 1e6 if n else float("nan")
    summary["target"] = name
    summary["concurrency"] = concurrency
    return summary


def report(best: dict[tuple[str, int], dict[str, Any]], names: list[str],
           levels: list[int]) -> dict[str, Any]:
    """The tables and the targets; returns the ratios."""
    ratios: dict[str, Any] = {}
    for c in levels:
        base = best.get(("direct", c))
        print(f"\nc={c}")
        print(f"{'target':<12} {'req/s':>7} {'x direct':>8} {'p50 µs':>7} {'p99 µs':>7} "
              f"{'+p50 µs':>8} {'+p99 µs':>8} {'gw CPU µs':>9} {'up CPU µs':>9} "
              f"{'gw/up':>6} {'errors':>6}")
        for name in names:
            r = best.get((name, c))
            if r is None:
                continue
            gw = r.get("gateway_cpu_us", float("nan"))
            up = r["upstream_cpu_us"]
            rel = r["rps"] / base["rps"] if base else float("nan")
            d50 = (r["p50_ms"] - base["p50_ms"]) * 1e3 if base else float("nan")
            d99 = (r["p99_ms"] - base["p99_ms"]) * 1e3 if base else float("nan")
            print(f"{name:<12} {r['rps']:>7.0f} {rel:>8.2f} {r['p50_ms'] * 1e3:>7.0f} "
                  f"{r['p99_ms'] * 1e3:>7.0f} {d50 if name != 'direct' else 0:>8.0f} "
                  f"{d99 if name != 'direct' else 0:>8.0f} {gw:>9.0f} {up:>9.0f} "
                  f"{gw / up if name != 'direct' else float('nan'):>6.2f} {r['errors']:>6}")
            ratios[f"{name}@c{c}"] = {"throughput_x_direct": rel, "added_p50_us": d50,
                                      "added_p99_us": d99, "gateway_cpu_us": gw,
                                      "upstream_cpu_us": up, "gateway_over_upstream_cpu":
                                      gw / up if name != "direct" else None}
    print()
    checks: list[tuple[str, float, str, float]] = []

    def get(name: str, c: int, key: str) -> float | None:
        entry = ratios.get(f"{name}@c{c}")
        return None if entry is None else entry[key]

    for name in ("bare-modern", "full-modern"):
        for what, c, key, op, bound in (
                ("hop adds p50 (µs)", 1, "added_p50_us", "<=", 300.0),
                ("hop adds p99 (µs)", 1, "added_p99_us", "<=", 1000.0),
                ("throughput x direct", 32, "throughput_x_direct", ">=", 0.5),
                ("gateway CPU / upstream CPU", 32, "gateway_over_upstream_cpu", "<=", 2.5)):
            value = get(name, c, key)
            if value is not None:
                checks.append((f"{name}, c={c}: {what}", value, op, bound))
    for name in ("bare-2025", "full-2025"):
        value = get(name, 32, "throughput_x_direct")
        if value is not None:
            checks.append((f"{name}, c=32: throughput x direct", value, ">=", 0.4))
    for era in ("modern", "2025"):
        for c in levels:
            full, bare = get(f"full-{era}", c, "gateway_cpu_us"), get(f"bare-{era}", c,
                                                                      "gateway_cpu_us")
            if full is not None and bare is not None:
                ratios[f"full_over_bare_cpu_{era}@c{c}"] = full / bare
                checks.append((f"full / bare gateway CPU, {era}, c={c}", full / bare,
                               "<=", 1.2))
    for label, value, op, bound in checks:
        met = value <= bound if op == "<=" else value >= bound
        print(f"{label}: {value:.2f} (target {op} {bound:g}: {'met' if met else 'MISSED'})")
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", default="1,32",
                        help="comma-separated connection counts (default 1,32)")
    parser.add_argument("--only", default=",".join(TARGETS),
                        help=f"comma-separated targets among {', '.join(TARGETS)}")
    parser.add_argument("--no-pin", action="store_true", help="do not use taskset")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = sorted(set(names) - set(TARGETS))
    if unknown:
        parser.error(f"unknown targets {unknown}; choose among {', '.join(TARGETS)}")
    if "direct" not in names:
        names.insert(0, "direct")
    try:
        levels = [int(c) for c in args.concurrency.split(",")]
    except ValueError:
        parser.error("--concurrency takes comma-separated integers, e.g. 1,32")
    if not levels or any(not 1 <= c <= 256 for c in levels):
        parser.error("--concurrency values must be in [1, 256]")
    if not 1 <= args.rounds <= 20 or not 0.5 <= args.duration <= 120:
        parser.error("--rounds must be in [1, 20] and --duration in [0.5, 120]")
    pin = not args.no_pin and run.pin_client() if hasattr(run, "pin_client") else False
    rounds: dict[tuple[str, int], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="mcpcore-bench-gateway-") as tmp, \
            servers(names, Path(tmp), pin) as (procs, headers):
        for number in range(1, args.rounds + 1):
            for c in levels:
                for name in names:
                    result = measure(procs, name, headers[name], c, args)
                    rounds.setdefault((name, c), []).append(result)
                    print(f"round {number} c={c} {name}: {result['rps']:.0f} req/s, p50 "
                          f"{result['p50_ms'] * 1e3:.0f} µs, gateway "
                          f"{result.get('gateway_cpu_us', 0):.0f} µs CPU, upstream "
                          f"{result['upstream_cpu_us']:.0f} µs CPU, {result['errors']} "
                          f"errors", flush=True)
    best = {key: min(v, key=lambda r: r.get("gateway_cpu_us", r["upstream_cpu_us"]))
            for key, v in rounds.items()}
    # Latency at c=1: the best round by p50 (the CPU figure at c=1 is the least useful).
    for (name, c), v in rounds.items():
        if c == 1:
            best[(name, c)] = min(v, key=lambda r: r["p50_ms"])
    ratios = report(best, names, levels)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({
        "settings": vars(args), "pinned": pin, "policy_rules":
        gateway_apps.rule_count(gateway_apps.policy_toml()),
        "best": {f"{k[0]}@c{k[1]}": v for k, v in best.items()}, "ratios": ratios,
        "rounds": {f"{k[0]}@c{k[1]}": v for k, v in rounds.items()},
        "median_p50_ms": {f"{k[0]}@c{k[1]}": statistics.median(r["p50_ms"] for r in v)
                          for k, v in rounds.items()}}, indent=2, default=str))
    errors = sum(r["errors"] for v in rounds.values() for r in v)
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
