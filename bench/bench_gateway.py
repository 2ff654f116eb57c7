"""What the gateway costs per proxied ``tools/call``, next to the same call made directly.

    python bench/bench_gateway.py [--n 1000] [--rounds 3]

Real sockets on loopback: ``examples.quickstart`` under uvicorn, and two gateways in
front of it (one reaching it on the 2026-07-28 wire, one on the 2025 session wire),
each in a process of its own. Our ``Client`` calls ``echo`` ``--n`` times in a row
(c=1) directly, then through each gateway, alternating in rounds so a busy machine
slows all alike; the best round of each is kept. Prints calls/s and the median latency,
and the gateway's added latency per call.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def process(argv: list[str], port: int) -> Iterator[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"{argv} did not listen on {port}")
            time.sleep(0.05)
        if "--serve-gateway" in argv:  # serving once its catalog is built
            import httpx

            while httpx.get(f"http://127.0.0.1:{port}/readyz").status_code != 200:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the gateway on {port} did not get ready")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def serve_gateway(upstream: str, era: str, port: int) -> None:
    """The gateway process: one upstream, prefixing off."""
    from mcpcore.gateway.app import Gateway
    from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
    from mcpcore.gateway.serve import build
    from mcpcore.serving import run
    from mcpcore.transports.http import LOCAL_HOSTS

    config = GatewayConfig(upstreams=(UpstreamConfig("quick", url=upstream, era=era),),
                           prefixing=False)  # type: ignore[arg-type]
    run(build(Gateway(config), allowed_hosts=LOCAL_HOSTS), port=port, name="gateway")


async def measure(url: str, n: int) -> list[float]:
    from mcpcore.client import Client

    async with Client.http(url, mode="2026-07-28") as client:
        for _ in range(50):  # warm up: connections, the tool list
            await client.call_tool("echo", {"text": "hi"})
        times = []
        for _ in range(n):
            start = time.perf_counter()
            await client.call_tool("echo", {"text": "hi"})
            times.append(time.perf_counter() - start)
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve-gateway", nargs=3, metavar=("UPSTREAM", "ERA", "PORT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_gateway:
        upstream, era, port = args.serve_gateway
        serve_gateway(upstream, era, int(port))
        return
    ports = [free_port() for _ in range(3)]
    me = [sys.executable, __file__, "--serve-gateway"]
    with process([sys.executable, "-m", "examples.quickstart", "--port", str(ports[0])],
                 ports[0]) as direct, \
            process([*me, direct, "2026-07-28", str(ports[1])], ports[1]) as modern, \
            process([*me, direct, "legacy", str(ports[2])], ports[2]) as legacy:
        targets = {"direct": direct, "gateway, modern upstream": modern,
                   "gateway, 2025 upstream": legacy}
        best: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for name, url in targets.items():
                times = asyncio.run(measure(url, args.n))
                if name not in best or sum(times) < sum(best[name]):
                    best[name] = times
    base = statistics.median(best["direct"])
    for name, times in best.items():
        median = statistics.median(times)
        extra = "" if name == "direct" else f"  (+{(median - base) * 1e6:.0f} µs per call)"
        print(f"{name:<26} {len(times) / sum(times):7.0f} calls/s  "
              f"p50 {median * 1e6:6.0f} µs{extra}")


if __name__ == "__main__":
    main()
