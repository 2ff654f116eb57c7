"""Instructions per request of an ASGI app's ``tools/call echo``, counted by valgrind.

Times move with whatever else the machine runs; an instruction count does not (the same
count, within ~1 %, run after run), so two versions of the code can be compared on a
busy machine. It is not a time: memory and cache effects (a reference cycle that keeps
a request's objects for the collector, for one) show in CPU time, not here.

    python bench/count_instructions.py [--app examples.quickstart:app] [--n 1000]
                                       [--text-bytes 0]

Runs ``profile_ours.py``'s in-process loop (no sockets, no uvicorn) under
``valgrind --tool=callgrind`` twice, for 0 and for ``--n`` requests after the same
warm-up, and prints the difference divided by ``--n``. Needs valgrind (Debian:
``apt-get install valgrind``); a run takes about half a minute per 1,000 requests.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
COLLECTED = re.compile(rb"Collected\s*:\s*([\d,]+)")
WARM_UP = 500


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", default="examples.quickstart:app")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--text-bytes", type=int, default=0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not (0 if args.child else 1) <= args.n <= 100_000:
        parser.error("--n must be in [1, 100000]")
    if args.child:
        serve(args.app, args.n, args.text_bytes)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    base = count(args.app, 0, args.text_bytes)
    total = count(args.app, args.n, args.text_bytes)
    print(f"{args.app}: {(total - base) / args.n:,.0f} instructions per request "
          f"(n={args.n}, valgrind callgrind)")


if __name__ == "__main__":
    main()
