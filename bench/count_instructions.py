"""Instructions per request of an ASGI app's ``tools/call echo``, counted by valgrind.

Times move with whatever else the machine runs; an instruction count does not (the same
count, within ~1 %, run after run), so two versions of the code can be compared on a
busy machine. It is not a time: memory and cache effects (a reference cycle that keeps
a request's objects for the collector, for one) show in CPU time, not here.

    python bench/count_instructions.py [--app examples.quickstart:app] [--n 1000]
                                       [--text-bytes 0] [--served]
    python bench/count_instructions.py --gateway bare-modern [--n 1000]

By default it runs ``profile_ours.py``'s in-process loop (no sockets, no uvicorn; one
request per pass of the event loop) under ``valgrind --tool=callgrind`` twice, for 0 and
for ``--n`` requests after the same warm-up, and prints the difference divided by
``--n``. With ``--served`` the counted process is the app under uvicorn (uvloop,
httptools, as ``run.py`` serves it), driven over ``CONCURRENCY`` keep-alive connections:
what the server spends per request, uvicorn included (``--app bench.raw_asgi:app`` is
uvicorn's own share). With ``--gateway KIND-ERA`` (``bare-modern``, ``bare-2025``,
``full-modern``, ``full-2025``: ``gateway_apps.py``) the counted process is a gateway
in front of ``examples.quickstart`` (under uvicorn, not counted), driven the same way:
the gateway's whole cost of a proxied call, uvicorn and its upstream client included.
Needs valgrind (Debian: ``apt-get install valgrind``); a run takes
about half a minute per 1,000 requests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
COLLECTED = re.compile(rb"Collected\s*:\s*([\d,]+)")
WARM_UP = 500
#: Keep-alive connections of a ``--served`` run (``run.py``'s default concurrency).
CONCURRENCY = 32
HOST = "127.0.0.1"


def serve(app_spec: str, n: int, text_bytes: int) -> None:
    """The measured process: warm up, then ``n`` requests (``--child``)."""
    for path in (str(ROOT), str(BENCH_DIR)):
        if path not in sys.path:
            sys.path.insert(0, path)
    os.environ["MCPCORE_BENCH_TEXT_BYTES"] = str(text_bytes)
    import loadgen
    import profile_ours

    profile_ours.TEXT = loadgen.text_of(text_bytes)
    profile_ours.BODY = loadgen.make_body(profile_ours.TEXT)
    app = profile_ours.load_app(app_spec)
    loop = loadgen.new_event_loop()
    try:
        for requests in (WARM_UP, n):
            if requests:
                loop.run_until_complete(profile_ours.drive(app, requests))
    finally:
        loadgen.close_event_loop(loop)


def count(app_spec: str, n: int, text_bytes: int) -> int:
    """Instructions valgrind counted for one whole child run."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               sys.executable, str(Path(__file__).resolve()), "--child", "--app", app_spec,
               "--n", str(n), "--text-bytes", str(text_bytes)]
    done = subprocess.run(command, capture_output=True, cwd=ROOT, check=False)
    found = COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run failed (exit {done.returncode}):\n"
                         + done.stderr.decode(errors="replace")[-2000:])
    return int(found.group(1).replace(b",", b""))


async def _drive(port: int, n: int, text_bytes: int,
                 headers: dict[str, str] | None = None) -> None:
    """``n`` requests over ``CONCURRENCY`` connections, each answer checked."""
    sys.path.insert(0, str(BENCH_DIR))
    import loadgen

    text = loadgen.text_of(text_bytes)
    request = loadgen.build_request(HOST, port, body=loadgen.make_body(text),
                                    extra_headers=headers)
    left = n

    async def connection() -> None:
        nonlocal left
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            while left > 0:
                left -= 1
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)content-length: *(\d+)", head)
                if length is None:
                    raise SystemExit(f"no Content-Length in {head!r}")
                body = await reader.readexactly(int(length.group(1)))
                ctype = re.search(rb"(?i)content-type: *([^\r]+)", head)
                status = int(head.split(b" ", 2)[1])
                kind = ctype.group(1).decode() if ctype else ""
                if not loadgen.check_reply(status, kind, body, text):
                    raise SystemExit(f"wrong answer: {head!r} {body[:200]!r}")
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(CONCURRENCY)))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def count_served(app_spec: str, n: int, text_bytes: int, served: list[str] | None = None,
                 headers: dict[str, str] | None = None) -> int:
    """Instructions valgrind counted for uvicorn serving a warm-up and then ``n``
    (``served``: the command to count instead, given the port to listen on)."""
    port = _free_port()
    served = served or [sys.executable, "-m", "uvicorn", app_spec, "--host", HOST,
                        "--port", "{port}", "--workers", "1", "--loop", "uvloop", "--http",
                        "httptools", "--log-level", "warning", "--no-access-log"]
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               *(part.replace("{port}", str(port)) for part in served)]
    env = {**os.environ, "MCPCORE_BENCH_TEXT_BYTES": str(text_bytes),
           "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                socket.create_connection((HOST, port), 0.5).close()
                if headers is None or _answers(port, headers):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server under valgrind did not start") from None
                time.sleep(0.2)
        for requests in (WARM_UP, n):
            if requests:
                asyncio.run(_drive(port, requests, text_bytes, headers))
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=300)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    found = COLLECTED.search(err)
    if found is None:
        raise SystemExit("valgrind printed no count:\n" + err.decode(errors="replace")[-2000:])
    return int(found.group(1).replace(b",", b""))


def _answers(port: int, headers: dict[str, str]) -> bool:
    """Is the gateway on ``port`` ready (its catalog built)?"""
    import http.client

    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def count_gateway(target: str, n: int) -> tuple[int, int]:
    """(instructions for 0 calls, for ``n``) of the gateway ``target`` (``KIND-ERA``)."""
    sys.path.insert(0, str(BENCH_DIR))
    import bench_auth
    import gateway_apps

    kind, _, era = target.partition("-")
    era = {"modern": "2026-07-28", "2025": "legacy"}[era]
    upstream_port = _free_port()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "examples.quickstart:app", "--host", HOST,
         "--port", str(upstream_port), "--loop", "uvloop", "--http", "httptools",
         "--log-level", "warning", "--no-access-log", "--timeout-keep-alive", "75"],
        cwd=ROOT)
    as_server = as_thread = None
    try:
        served = [sys.executable, str(BENCH_DIR / "gateway_apps.py"), kind, era,
                  f"http://{HOST}:{upstream_port}/mcp", "{port}"]
        headers: dict[str, str] = {}
        if kind == "full":
            as_server, as_thread, issuer = bench_auth.serve_in_thread(
                gateway_apps.authorization_server)
            served += ["--issuer", issuer.issuer, "--audit", os.devnull]
            headers = {"Authorization": f"Bearer {gateway_apps.caller_token(issuer)}"}
        return (count_served("", 0, 0, served, headers),
                count_served("", n, 0, served, headers))
    finally:
        upstream.terminate()
        upstream.wait(10)
        if as_server is not None:
            as_server.should_exit = True
            as_thread.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", default="examples.quickstart:app")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--text-bytes", type=int, default=0)
    parser.add_argument("--served", action="store_true",
                        help="count the app under uvicorn, over sockets")
    parser.add_argument("--gateway", choices=("bare-modern", "bare-2025", "full-modern",
                                              "full-2025"),
                        help="count a gateway in front of examples.quickstart (served)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not (0 if args.child else 1) <= args.n <= 100_000:
        parser.error("--n must be in [1, 100000]")
    if args.child:
        serve(args.app, args.n, args.text_bytes)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if args.gateway:
        base, total = count_gateway(args.gateway, args.n)
        print(f"gateway {args.gateway}: {(total - base) / args.n:,.0f} instructions per "
              f"proxied call, gateway process only, uvicorn included (n={args.n}, "
              "valgrind callgrind)")
        return
    counter = count_served if args.served else count
    base = counter(args.app, 0, args.text_bytes)
    total = counter(args.app, args.n, args.text_bytes)
    where = "under uvicorn" if args.served else "in process"
    print(f"{args.app}: {(total - base) / args.n:,.0f} instructions per request {where} "
          f"(n={args.n}, valgrind callgrind)")


if __name__ == "__main__":
    main()
