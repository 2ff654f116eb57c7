"""The README's and docs/quickstart.md's commands do what they say: the quick-start code is
the example's code, each serving command serves, and the curl commands get answers from
what `make serve` and the quickstart start (ports swapped for free ones)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs_blocks import ROOT, Block, blocks, reader_env
from tests.support.processes import free_port

README = ROOT / "README.md"
QUICKSTART = ROOT / "docs" / "quickstart.md"
VENV_BIN = Path(sys.executable).parent


def shell_blocks(page: Path, first_word: str) -> list[Block]:
    return [b for b in blocks(page) if b.lang in ("bash", "sh")
            and b.code.lstrip().startswith(first_word)]


CURLS = shell_blocks(README, "curl")
SERVE_LINES = [line.split("#")[0].strip() for line in
               shell_blocks(README, ".venv/bin/mcpcore serve")[0].code.splitlines()
               if line.strip()]


def test_the_quick_start_code_is_the_example_file() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n# examples/quickstart.py\n(.*?)```", text, re.DOTALL)
    assert block is not None
    source = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    without_docstring = source.split('"""', 2)[2].lstrip("\n")
    assert block.group(1) == without_docstring


def test_make_serve_runs_the_everything_example() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nserve:", 1)[1].split("\n\n", 1)[0]
    assert "-m examples.everything" in recipe


def test_make_serve_installs_only_what_serving_needs(tmp_path: Path) -> None:
    """On a fresh clone ``make serve`` installed the whole dev set (94 packages, about
    two minutes) for an example that needs the runtime dependencies; ``make test`` still
    gets ``[dev]``. ``make -n`` prints what each would run in a venv not made yet."""
    if shutil.which("make") is None:
        pytest.skip("SKIPPED LOUDLY: make is not installed")

    def dry_run(target: str) -> str:
        return subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=True).stdout

    serve = [line for line in dry_run("serve").splitlines() if "pip install" in line]
    assert serve and all("[dev]" not in line and "-e ." in line for line in serve), serve
    assert any("-e '.[dev]'" in line for line in dry_run("lint").splitlines())


def test_the_licence_is_an_spdx_expression() -> None:
    """``license = { text = ... }`` made every install print three boxed setuptools
    deprecation warnings; the SPDX string form needs setuptools 77 to build."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in project["build-system"]["requires"]


def local(command: str, port: int) -> list[str]:
    """A docs command line, run with this interpreter's venv and ``port``."""
    command = re.sub(r"--port \d+", f"--port {port}", command)
    words = command.split()
    if words[0].startswith(".venv/bin/"):
        words[0] = str(VENV_BIN / words[0].removeprefix(".venv/bin/"))
    return words


@contextlib.contextmanager
def listening(command: list[str], port: int) -> Iterator[str]:
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=reader_env())
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", port), 0.2):
                break
            assert proc.poll() is None, f"{command} exited with {proc.returncode}"
            assert time.monotonic() < deadline, f"{command} did not listen"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run_curl(block: Block, url: str) -> dict[str, object]:
    if shutil.which("curl") is None:
        if os.environ.get("CI"):
            pytest.fail("curl is missing, but CI must have it")
        pytest.skip("SKIPPED LOUDLY: curl is not installed")
    command = re.sub(r"http://127\.0\.0\.1:\d+/mcp", url, block.code)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                          timeout=30, check=True)
    reply: dict[str, object] = json.loads(done.stdout)
    return reply


def echo_result(reply: dict[str, object]) -> object:
    result = reply["result"]
    assert isinstance(result, dict)
    return result["content"]


def test_the_curl_after_the_two_commands_answers_make_serve() -> None:
    assert len(CURLS) == 2
    port = free_port()
    with listening([sys.executable, "-m", "examples.everything", "--port", str(port)],
                   port) as url:
        reply = run_curl(CURLS[0], url)
    assert "error" not in reply, reply
    result = reply["result"]
    assert isinstance(result, dict) and result["resultType"] == "complete"
    assert result["content"][0]["type"] == "text"


@pytest.mark.parametrize("command", [c for c in SERVE_LINES if "--stdio" not in c])
def test_each_http_serving_command_of_the_quick_start_serves(command: str) -> None:
    """``mcpcore serve``, ``python -m``, ``uvicorn``: each answers the quick-start curl."""
    port = free_port()
    with listening(local(command, port), port) as url:
        reply = run_curl(CURLS[1], url)
    assert echo_result(reply) == [{"type": "text", "text": "hi"}]


def test_the_stdio_command_of_the_quick_start_serves() -> None:
    (command,) = [c for c in SERVE_LINES if "--stdio" in c]
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hi"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}
    done = subprocess.run(local(command, 0), cwd=ROOT, input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=30, check=True,
                          env=reader_env())
    assert echo_result(json.loads(done.stdout)) == [{"type": "text", "text": "hi"}]


def test_the_quickstart_pages_commands_serve_and_answer() -> None:
    """docs/quickstart.md: serve the quickstart by hand, then its discover curl."""
    (by_hand,) = shell_blocks(QUICKSTART, "python3 -m venv")
    serve_line = by_hand.code.strip().splitlines()[-1]
    (curl,) = shell_blocks(QUICKSTART, "curl")
    port = free_port()
    with listening(local(serve_line, port), port) as url:
        reply = run_curl(curl, url)
    result = reply["result"]
    assert isinstance(result, dict) and result["supportedVersions"] == ["2026-07-28"]
