"""The README's promises hold: its code is the example's code, and its curl commands get
answers from what `make serve` and `mcpcore serve examples.quickstart` start."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BASH = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
CURLS = [block for block in BASH if block.startswith("curl ")]


def test_the_quick_start_code_is_the_example_file() -> None:
    block = re.search(r"```python\n# examples/quickstart.py\n(.*?)```", README, re.DOTALL)
    assert block is not None
    source = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    without_docstring = source.split('"""', 2)[2].lstrip("\n")
    assert block.group(1) == without_docstring


def test_make_serve_runs_the_everything_example() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nserve:", 1)[1].split("\n\n", 1)[0]
    assert "-m examples.everything" in recipe


@contextlib.contextmanager
def announced(command: list[str]) -> Iterator[str]:
    """Run a server command with ``--port 0``; yield the URL it announces on stdout."""
    proc = subprocess.Popen([*command, "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("mcpcore: serving "), line
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def run_curl(block: str, url: str) -> dict[str, object]:
    if shutil.which("curl") is None:
        if os.environ.get("CI"):
            pytest.fail("curl is missing, but CI must have it")
        pytest.skip("SKIPPED LOUDLY: curl is not installed")
    command = re.sub(r"http://127\.0\.0\.1:\d+/mcp", url, block)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                          timeout=30, check=True)
    reply: dict[str, object] = json.loads(done.stdout)
    return reply


def test_the_curl_after_the_two_commands_answers_make_serve() -> None:
    assert len(CURLS) == 2
    with announced([sys.executable, "-m", "examples.everything"]) as url:
        reply = run_curl(CURLS[0], url)
    assert "error" not in reply, reply
    result = reply["result"]
    assert isinstance(result, dict) and result["resultType"] == "complete"
    assert result["content"][0]["type"] == "text"


def test_the_quick_start_curl_answers_the_quickstart_server() -> None:
    with announced([sys.executable, "-m", "mcpcore", "serve", "examples.quickstart"]) as url:
        reply = run_curl(CURLS[1], url)
    assert reply["result"] == {
        "content": [{"type": "text", "text": "hi"}], "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "quickstart",
                                                         "version": "1.0.0"}}}
