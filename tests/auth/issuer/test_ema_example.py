"""``examples/enterprise_auth``: the one command (docs/auth.md's
``python -m examples.enterprise_auth``), as CI runs it, and what it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.")


def test_the_enterprise_example_runs_end_to_end() -> None:
    proc = subprocess.run([sys.executable, "-m", "examples.enterprise_auth"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "all steps passed" in proc.stdout
    assert "after step-up to mcp:admin mcp:read and one confirmation" in proc.stdout
    assert "ema-never-purges" in proc.stdout
    assert not JWT.search(out), "a token or an ID-JAG was printed"
    assert "Warning" not in proc.stderr
