"""``make conformance``: the official suite against ``examples.everything``, both eras.

Starts the example on a free loopback port, runs ``scripts/official-suite.sh server`` with
``--requirements 2026-07-28`` and then ``2025-11-25`` against the same endpoint, and prints
the scored totals of each (scenarios the suite marks "not scored" — extensions and pending
ones — are counted apart). Exit status 0 when every scored scenario of both runs passes.

    .venv/bin/python scripts/conformance.py [--keep-output DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "scripts" / "official-suite.sh"
ERAS = ("2026-07-28", "2025-11-25")
#: A summary line: ``✓ tools-list: 4 passed, 0 failed``.
RESULT = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed", re.M)
#: An entry of the suite's "Not scored for …" list: ``  ✗ tasks-lifecycle (extension)``.
UNSCORED = re.compile(r"^\s+[✓✗] (\S+) \(([\w-]+)\)$", re.M)


def free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def everything() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "examples.everything", "--port", str(port)], cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("examples.everything did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run_era(url: str, era: str, out: Path) -> tuple[int, int, list[str], str]:
    """Scored (passed, total), the failing scored scenarios, and a line on the unscored."""
    done = subprocess.run(
        [str(SUITE), "server", "--url", url, "--requirements", era, "-o", str(out)],
        capture_output=True, text=True, timeout=900, check=False)
    text = done.stdout
    summary = text[text.find("=== SUMMARY"):]
    if not summary:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"the suite printed no summary for {era} (exit {done.returncode})")
    unscored = dict(UNSCORED.findall(summary))
    results = {name: mark == "✓" for mark, name, _, _ in RESULT.findall(summary)}
    scored = {name: ok for name, ok in results.items() if name not in unscored}
    failing = sorted(name for name, ok in scored.items() if not ok)
    kinds: dict[str, list[bool]] = {}
    for name, kind in unscored.items():
        kinds.setdefault(kind, []).append(results.get(name, False))
    extra = ", ".join(f"{kind} {sum(oks)}/{len(oks)}" for kind, oks in sorted(kinds.items()))
    return sum(scored.values()), len(scored), failing, extra


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep-output", type=Path, help="keep the suite's -o folders here")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp, everything() as url:
        base = args.keep_output or Path(tmp)
        for era in ERAS:
            passed, total, failing, extra = run_era(url, era, base / era)
            line = f"{era}: {passed}/{total} scored scenarios pass"
            print(line + (f" (not scored: {extra})" if extra else ""), flush=True)
            if failing:
                print(f"  failing: {', '.join(failing)}")
                ok = False
            if total == 0:
                ok = False
    if args.keep_output:
        print(f"checks.json per scenario under {args.keep_output}")
    return 0 if ok else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main())
