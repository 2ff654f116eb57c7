"""The gateway's own CPU per proxied ``tools/call``, in process, and its profile.

    python bench/profile_gateway.py [--era 2026-07-28|legacy] [--kind bare|full]
                                    [--n 3000] [--concurrency 32] [--repeat 3]
                                    [--profile] [--sort tottime]

The upstream is ``examples.quickstart`` under uvicorn in a process of its own (on core
1 with ``taskset`` when there are two cores); the gateway (``gateway_apps.py``'s
config) runs in this process, its ASGI app called directly as ``profile_ours.py``
calls one (no downstream sockets, no uvicorn on the gateway's side), ``--concurrency``
calls at a time, while its client reaches the upstream over real loopback sockets.
Prints this process's CPU µs per call (``time.process_time``: robust to other load on
the machine), best of ``--repeat``; ``--profile`` runs cProfile (on CPU time) over one
more pass and prints the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import os
import pstats
import shutil
import socket
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

import bench_auth  # noqa: E402  (bench/ is not a package)
import gateway_apps  # noqa: E402
import loadgen  # noqa: E402
import profile_ours  # noqa: E402

HOST = "127.0.0.1"


@contextlib.contextmanager
def upstream() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port = int(sock.getsockname()[1])
    argv = [sys.executable, "-m", "uvicorn", "examples.quickstart:app", "--host", HOST,
            "--port", str(port), "--loop", "uvloop", "--http", "httptools",
            "--log-level", "warning", "--no-access-log", "--timeout-keep-alive", "75"]
    if (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        argv = ["taskset", "-c", "1", *argv]
    proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.2):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the upstream did not start")
            time.sleep(0.05)
        yield f"http://{HOST}:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def build_app(kind: str, era: str, url: str, issuer: str | None, work: Path
              ) -> tuple[Any, Any]:
    """(the gateway, its ASGI app) as ``gateway_apps.serve`` builds them, unserved."""
    from mcpcore.auth import IssuerConfig, NetworkPolicy, ResourceServerConfig
    from mcpcore.gateway.app import Gateway
    from mcpcore.gateway.serve import build, observe
    from mcpcore.logs import configure_logging
    from mcpcore.transports.http import LOCAL_HOSTS

    config = gateway_apps.gateway_config(kind, era, url, issuer, work)
    gateway = Gateway(config, environ={**os.environ,  # type: ignore[arg-type]
                                       gateway_apps.SECRET_ENV: gateway_apps.CLIENT_SECRET})
    auth = metrics = None
    if kind == "full":
        assert issuer is not None
        configure_logging(level="WARNING", audit=str(work / "audit.jsonl"))
        auth = ResourceServerConfig(
            resource=gateway_apps.GATEWAY_RESOURCE,
            authorization_servers=(IssuerConfig(issuer, jwks_uri=issuer + "/jwks"),),
            network=NetworkPolicy(allow_loopback=True))
        metrics = observe(gateway)
    return gateway, build(gateway, allowed_hosts=LOCAL_HOSTS, auth=auth, metrics=metrics)


async def drive(app: Any, scope: dict[str, Any], n: int, concurrency: int) -> float:
    """``n`` calls, ``concurrency`` at a time; CPU seconds per call. Each reply checked."""
    left = n

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            exchange = profile_ours.Exchange()
            await app(dict(scope), exchange.receive, exchange.send)
            if not loadgen.check_reply(200, "application/json", exchange.body):
                raise SystemExit(f"wrong answer: {exchange.body[:300]!r}")

    start = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return (time.process_time() - start) / n


async def main_async(args: argparse.Namespace, url: str, issuer: str | None,
                     token: str | None, work: Path) -> None:
    gateway, app = build_app(args.kind, args.era, url, issuer, work)
    scope = profile_ours.make_scope()
    if token is not None:
        scope["headers"] = [*scope["headers"], (b"authorization", f"Bearer {token}".encode())]
    await gateway.start()
    try:
        await drive(app, scope, min(500, args.n), args.concurrency)  # warm up
        best = min([await drive(app, scope, args.n, args.concurrency)
                    for _ in range(args.repeat)])
        print(f"gateway {args.kind} {args.era}, c={args.concurrency}: "
              f"{best * 1e6:.0f} µs CPU per proxied call (best of {args.repeat}, "
              f"n={args.n}, in process)", flush=True)
        if args.profile:
            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
            await drive(app, scope, args.n, args.concurrency)
            profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats(args.sort).print_stats(args.top)
            print(out.getvalue())
            if args.profile_out:
                stats.dump_stats(args.profile_out)
    finally:
        await gateway.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--era", default="2026-07-28", choices=gateway_apps.ERAS)
    parser.add_argument("--kind", default="bare", choices=gateway_apps.KINDS)
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--profile-out", metavar="FILE")
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    if not 1 <= args.n <= 1_000_000 or not 1 <= args.concurrency <= 256:
        parser.error("--n must be in [1, 1000000] and --concurrency in [1, 256]")
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {0})
    issuer = token = None
    as_server = as_thread = None
    if args.kind == "full":
        as_server, as_thread, issuer_app = bench_auth.serve_in_thread(
            gateway_apps.authorization_server)
        issuer = issuer_app.issuer
        token = gateway_apps.caller_token(issuer_app)
    try:
        with upstream() as url, tempfile.TemporaryDirectory() as tmp:
            loop = loadgen.new_event_loop()
            try:
                loop.run_until_complete(main_async(args, url, issuer, token, Path(tmp)))
            finally:
                loadgen.close_event_loop(loop)
    finally:
        if as_server is not None:
            as_server.should_exit = True
            as_thread.join(10)  # type: ignore[union-attr]


if __name__ == "__main__":
    main()
