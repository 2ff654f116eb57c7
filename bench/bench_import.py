"""Import cost of each side of mcpcore, next to the official SDK's, from ``-X importtime``.

Each statement runs in a fresh interpreter ``--runs`` times (default 15); a run's cost is
the sum of the cumulative times of the top-level imports the statement triggers (Python's
own start-up imports, measured by running ``pass``, are left out). The best run counts: it
is the one least disturbed by whatever else the machine does. Ratios are to the first row.

    .venv/bin/python bench/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

STATEMENTS = [
    ("import mcpcore", "import mcpcore"),
    ("server author", "from mcpcore import Server, StreamableHTTP"),
    ("client author", "from mcpcore.client import Client"),
    ("SDK server (mcp 2.3.0)", "from mcp.server.mcpserver import MCPServer"),
    ("SDK client (mcp 2.3.0)", "from mcp import Client"),
]
LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def top_level(statement: str) -> dict[str, int]:
    """Cumulative µs of each top-level import a fresh interpreter makes for ``statement``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", statement],
                          capture_output=True, text=True, check=True)
    found: dict[str, int] = {}
    for line in done.stderr.splitlines():
        match = LINE.match(line)
        if match and match.group(3) == " ":  # depth 0: one space after the bar
            found[match.group(4)] = int(match.group(2))
    return found


def cost_ms(statement: str, startup: set[str], runs: int) -> float:
    best = min(sum(us for name, us in top_level(statement).items() if name not in startup)
               for _ in range(runs))
    return best / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    startup = set(top_level("pass"))
    rows = [(label, stmt, cost_ms(stmt, startup, args.runs)) for label, stmt in STATEMENTS]
    base = rows[1][2]
    print(f"{'what':<24}{'statement':<46}{'ms':>8}{'vs server':>10}")
    for label, stmt, ms in rows:
        print(f"{label:<24}{stmt:<46}{ms:>8.1f}{ms / base:>10.2f}")


if __name__ == "__main__":
    main()
