"""Benchmark the client side: ``tools/call echo`` through our ``Client`` and through the
official SDK's ``Client`` (``mcp`` 2.3.0), against the same ``examples.quickstart``
server, in one run.

    python bench/bench_client.py [--duration 5] [--concurrency 1,16] [--rounds 1]
    python bench/bench_client.py --profile ours --concurrency 16     # cProfile one client

The server runs as one uvicorn process (uvloop + httptools) pinned to core 1; each
client runs in a fresh interpreter pinned to core 0, so imports and garbage of one never
weigh on the other. For each (client, concurrency): warm up, then ``concurrency`` tasks
call ``echo`` back to back for ``--duration`` seconds. Reported: calls/s, p50/p99
latency, and the client process's CPU per call (user + system time over the window /
calls), which survives a noisy machine better than calls/s. Ratios are ours / SDK.
Both clients negotiate the era as they would by default (``mode="auto"``: one probe,
then 2026-07-28); the warm-up absorbs it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from run import free_port  # bench/ is not a package: its sibling, run as a script

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
HOST = "127.0.0.1"
SERVER_CORE, CLIENT_CORE = 1, 0


# -- the worker: one client, one concurrency ---------------------------------------------


async def ours(url: str, concurrency: int, duration: float, warmup: float) -> dict[str, Any]:
    from mcpcore.client import Client

    async with Client.http(url, max_concurrency=concurrency, era_cache=None) as client:
        async def call() -> None:
            await client.call_tool("echo", {"text": "hi"})

        return await drive(call, concurrency, duration, warmup)


async def sdk(url: str, concurrency: int, duration: float, warmup: float) -> dict[str, Any]:
    from mcp import Client

    async with Client(url) as client:
        async def call() -> None:
            await client.call_tool("echo", {"text": "hi"})

        return await drive(call, concurrency, duration, warmup)


async def drive(call: Any, concurrency: int, duration: float, warmup: float
                ) -> dict[str, Any]:
    loop = asyncio.get_running_loop()

    async def worker(until: float, latencies: list[float] | None) -> int:
        done = 0
        while loop.time() < until:
            start = time.perf_counter()
            await call()
            if latencies is not None:
                latencies.append(time.perf_counter() - start)
            done += 1
        return done

    await asyncio.gather(*(worker(loop.time() + warmup, None) for _ in range(concurrency)))
    latencies: list[float] = []
    cpu0, wall0 = os.times(), time.perf_counter()
    counts = await asyncio.gather(*(worker(loop.time() + duration, latencies)
                                    for _ in range(concurrency)))
    cpu1, wall1 = os.times(), time.perf_counter()
    calls = sum(counts)
    latencies.sort()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    return {
        "calls": calls,
        "calls_per_s": calls / (wall1 - wall0),
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "client_cpu_us_per_call": cpu / calls * 1e6,
    }


def worker_main(args: argparse.Namespace) -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, {CLIENT_CORE})
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    run = {"ours": ours, "sdk": sdk}[args.worker]
    concurrency = int(args.concurrency)
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        result = asyncio.run(run(args.url, concurrency, args.duration, args.warmup))
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    else:
        result = asyncio.run(run(args.url, concurrency, args.duration, args.warmup))
    print(json.dumps(result))


# -- the driver ---------------------------------------------------------------------------




@contextlib.contextmanager
def quickstart_server(pin: bool) -> Any:
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "examples.quickstart:app", "--host", HOST,
           "--port", str(port), "--workers", "1", "--loop", "uvloop", "--http", "httptools",
           "--log-level", "warning", "--no-access-log"]
    if pin:
        cmd = ["taskset", "-c", str(SERVER_CORE), *cmd]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("examples.quickstart did not start")
            time.sleep(0.1)
        yield f"http://{HOST}:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def measure(worker: str, url: str, concurrency: int, args: argparse.Namespace
            ) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", worker, "--url", url,
           "--concurrency", str(concurrency), "--duration", str(args.duration),
           "--warmup", str(args.warmup)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=args.duration + args.warmup + 120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def import_cost(statement: str) -> float:
    """Median wall time, in ms, of a fresh interpreter running ``statement`` minus one
    running nothing."""
    def once(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
        return time.perf_counter() - start
    base = sorted(once("pass") for _ in range(5))[2]
    return (sorted(once(statement) for _ in range(5))[2] - base) * 1000


def driver_main(args: argparse.Namespace) -> None:
    pin = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
    levels = [int(c) for c in str(args.concurrency).split(",")]
    results: dict[str, Any] = {"rounds": []}
    with quickstart_server(pin) as url:
        for _ in range(args.rounds):
            for concurrency in levels:
                row = {"concurrency": concurrency}
                for worker in ("ours", "sdk"):
                    row[worker] = measure(worker, url, concurrency, args)
                results["rounds"].append(row)
    print(f"{'c':>3} {'client':>6} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'CPU µs/call':>12}")
    for row in results["rounds"]:
        for worker in ("ours", "sdk"):
            r = row[worker]
            print(f"{row['concurrency']:>3} {worker:>6} {r['calls_per_s']:>9.0f} "
                  f"{r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['client_cpu_us_per_call']:>12.0f}")
        ours_r, sdk_r = row["ours"], row["sdk"]
        print(f"    c={row['concurrency']}: ours/SDK calls/s "
              f"{ours_r['calls_per_s'] / sdk_r['calls_per_s']:.2f}x, SDK/ours CPU per call "
              f"{sdk_r['client_cpu_us_per_call'] / ours_r['client_cpu_us_per_call']:.2f}x")
    ours_ms = import_cost("from mcpcore.client import Client")
    sdk_ms = import_cost("from mcp import Client")
    print(f"import: from mcpcore.client import Client {ours_ms:.0f} ms, "
          f"from mcp import Client {sdk_ms:.0f} ms")
    results["import_ms"] = {"ours": ours_ms, "sdk": sdk_ms}
    out = BENCH_DIR / "results" / "client.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--concurrency", default="1,16")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--worker", choices=("ours", "sdk"))
    parser.add_argument("--url")
    parser.add_argument("--profile", choices=("ours", "sdk"),
                        help="run one worker under cProfile against a fresh server")
    args = parser.parse_args()
    if args.profile and not args.worker:
        with quickstart_server(pin=False) as url:
            args.worker, args.url = args.profile, url
            worker_main(args)
        return
    if args.worker:
        worker_main(args)
    else:
        driver_main(args)


if __name__ == "__main__":
    main()
