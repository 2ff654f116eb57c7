"""In-process micro-benchmark and profile of one ``tools/call echo`` through our ASGI app.

Calls the ASGI app directly, with the scope, ``receive`` and ``send`` that uvicorn's
httptools protocol would give it (no sockets, no HTTP parsing), many times in one event
loop: what is left is exactly our request path. Also times the bare Starlette baseline
and the official SDK's app the same way, for scale.

    python bench/profile_ours.py [--n 100000] [--repeat 5] [--profile] [--app MODULE:APP]
                                 [--baselines bench.bare_starlette:app,bench.sdk_server:app]
                                 [--text-bytes 204800]    # the large-body call

``--profile`` runs cProfile over the loop and prints the top functions by own time and
by cumulative time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib
import io
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Final

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for p in (str(ROOT), str(BENCH_DIR)):
    if p not in sys.path:
        sys.path.insert(0, p)

import loadgen  # noqa: E402

PORT = 8000
#: The request body of this run (``--text-bytes`` picks the echoed text's size).
BODY = loadgen.BODY
TEXT = loadgen.TEXT


def make_scope() -> dict[str, Any]:
    raw = loadgen.build_request("127.0.0.1", PORT, body=BODY)
    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    headers = [(name.strip().lower(), value.strip())
               for name, _, value in (line.partition(b":") for line in head[1:])]
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "server": ("127.0.0.1", PORT), "client": ("127.0.0.1", 50000),
        "scheme": "http", "method": "POST", "root_path": "", "path": "/mcp",
        "raw_path": b"/mcp", "query_string": b"", "headers": headers, "state": {},
    }


def load_app(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


class Exchange:
    """One request's ``receive``/``send``, as uvicorn's httptools protocol behaves: the
    body first, then ``receive()`` waits until the response is complete (or the client
    goes away) and says ``http.disconnect``."""

    __slots__ = ("body", "complete", "request", "sent")
    DISCONNECT: Final = {"type": "http.disconnect"}

    def __init__(self) -> None:
        self.sent = False
        self.complete = asyncio.Event()
        self.body = b""
        self.request = {"type": "http.request", "body": BODY, "more_body": False}

    async def receive(self) -> dict[str, Any]:
        if not self.sent:
            self.sent = True
            return self.request
        await self.complete.wait()
        return self.DISCONNECT

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body"):
            self.body = message.get("body", b"")
            self.complete.set()


async def drive(app: Any, n: int) -> tuple[float, bytes]:
    """Call the app ``n`` times; CPU seconds per call and the last response body."""
    scope = make_scope()
    exchange = Exchange()
    start = time.process_time()  # CPU time: robust to other load on the machine
    for _ in range(n):
        exchange = Exchange()
        await app(dict(scope), exchange.receive, exchange.send)
        # Let the loop run what the request scheduled (as it would between requests in
        # a server), e.g. finishing cancelled tasks; otherwise those pile up unrun.
        await asyncio.sleep(0)
    return (time.process_time() - start) / n, exchange.body


def new_loop() -> asyncio.AbstractEventLoop:
    return loadgen.new_event_loop()


async def with_lifespan(app: Any, work: Any) -> Any:
    """Run ``work`` inside the app's ASGI lifespan (the SDK's app needs its startup)."""
    started = asyncio.Event()
    stop = asyncio.Event()
    queue = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, Any]:
        if queue:
            return queue.pop()
        await stop.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    task = asyncio.ensure_future(app({"type": "lifespan", "asgi": {"version": "3.0"},
                                      "state": {}}, receive, send))
    await asyncio.wait_for(started.wait(), 10)
    try:
        return await work
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def warm_then_drive(app: Any, n: int, repeat: int) -> tuple[list[float], bytes]:
    await drive(app, min(n, 2000))
    gc.collect()  # start every app from the same clean heap
    times: list[float] = []
    body = b""
    for _ in range(repeat):
        per_call, body = await drive(app, max(1, n // repeat))
        times.append(per_call)
    return times, body


def bench(spec: str, n: int, repeat: int) -> float:
    """Best (least disturbed) of ``repeat`` blocks, as timeit does; the median is shown too."""
    app = load_app(spec)
    loop = new_loop()
    try:
        times, body = loop.run_until_complete(
            with_lifespan(app, warm_then_drive(app, n, repeat)))
    finally:
        loadgen.close_event_loop(loop)
    ok = loadgen.check_reply(200, "application/json", body, TEXT)
    verdict = "OK" if ok else repr(body)
    best, median = min(times), statistics.median(times)
    print(f"{spec:<32} {best * 1e6:7.2f} us CPU/request (median of {repeat} blocks "
          f"{median * 1e6:.2f}; n={n}, reply {verdict})")
    return best


def profile(spec: str, n: int, top: int) -> None:
    app = load_app(spec)
    loop = new_loop()
    try:
        loop.run_until_complete(drive(app, 2000))
        gc.collect()
        prof = cProfile.Profile()
        prof.enable()
        loop.run_until_complete(drive(app, n))
        prof.disable()
    finally:
        loadgen.close_event_loop(loop)
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out).strip_dirs().sort_stats(key)
        stats.print_stats(top)
        print(f"--- top {top} by {key} ---")
        print("\n".join(line for line in out.getvalue().splitlines()
                        if line.strip() and not line.startswith(("   Ordered", "   List"))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--app", default="examples.quickstart:app")
    parser.add_argument("--baselines", default="bench.bare_starlette:app,bench.sdk_server:app",
                        help="comma-separated ASGI apps to time the same way ('' for none)")
    parser.add_argument("--repeat", type=int, default=5, help="blocks; the best is reported")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--text-bytes", type=int, default=0,
                        help="size of the echoed argument (0: \"hello\")")
    args = parser.parse_args()
    global BODY, TEXT
    TEXT = loadgen.text_of(args.text_bytes)
    BODY = loadgen.make_body(TEXT)
    os.environ["MCPCORE_BENCH_TEXT_BYTES"] = str(args.text_bytes)  # read by bench.raw_asgi
    if not 1 <= args.n <= 1_000_000:
        parser.error("--n must be in [1, 1000000]")
    if not 1 <= args.repeat <= 50:
        parser.error("--repeat must be in [1, 50]")
    ours = bench(args.app, args.n, args.repeat)
    for spec in filter(None, (b.strip() for b in args.baselines.split(","))):
        base = bench(spec, args.n, args.repeat)
        print(f"  ours / {spec}: {ours / base:.2f}x the CPU per request")
    if args.profile:
        profile(args.app, min(args.n, 50_000), args.top)


if __name__ == "__main__":
    main()
