"""How long ``mcpcore conformance`` takes against a local server, against the official
suite on the same server as the baseline.

    python bench/bench_conformance.py [--runs 3] [--fuzz 10000]

Starts ``examples.everything`` on a free loopback port, then times (wall clock, each a
fresh process, as CI runs them): our full black-box run (both eras, core pack), the same
with ``--fixtures official``, ``--fuzz N``, and the official suite's
``--requirements 2026-07-28`` and ``2025-11-25`` runs. Prints the medians, their ratio
to the official suite, and the machine's load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from run import free_port  # bench/ is not a package: its sibling, run as a script

ROOT = Path(__file__).resolve().parents[1]




@contextlib.contextmanager
def everything() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "examples.everything", "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                raise SystemExit("examples.everything did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def timed(argv: list[str]) -> tuple[float, int]:
    start = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    return time.monotonic() - start, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fuzz", type=int, default=10000)
    parser.add_argument("--no-official", action="store_true")
    args = parser.parse_args()
    ours = [sys.executable, "-m", "mcpcore.conformance", "--no-progress"]
    results: dict[str, list[float]] = {}
    with everything() as url, tempfile.TemporaryDirectory() as tmp:
        cases = {
            "ours: core, both eras": [*ours, "--url", url],
            "ours: core + fixtures, both eras": [*ours, "--url", url, "--fixtures", "official"],
        }
        if not args.no_official:
            suite = str(ROOT / "scripts" / "official-suite.sh")
            for era in ("2026-07-28", "2025-11-25"):
                cases[f"official: --requirements {era}"] = [
                    suite, "server", "--url", url, "--requirements", era, "-o",
                    os.path.join(tmp, era)]
        for name, argv in cases.items():
            for _ in range(args.runs):
                seconds, code = timed(argv)
                results.setdefault(name, []).append(seconds)
            print(f"{name:<40} {statistics.median(results[name]):6.2f} s  (exit {code})",
                  flush=True)
        seconds, code = timed([*ours, "--url", url, "--spec", "2026-07-28", "--check",
                               "fuzz.*", "--fuzz", str(args.fuzz), "--fuzz-seconds", "55"])
        print(f"{'ours: --fuzz ' + str(args.fuzz):<40} {seconds:6.2f} s  (exit {code})")
    if not args.no_official:
        official = (statistics.median(results["official: --requirements 2026-07-28"])
                    + statistics.median(results["official: --requirements 2025-11-25"]))
        mine = statistics.median(results["ours: core + fixtures, both eras"])
        print(f"ratio ours (core + fixtures, both eras) / official (both eras): "
              f"{mine / official:.2f}")
    print(f"load average: {os.getloadavg()} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
