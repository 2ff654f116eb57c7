"""A stdio server works whatever its stdin is — a pipe, a regular file, ``/dev/null`` or
a terminal — and exits cleanly at end of input.

This used to hang forever after a ``PermissionError`` with ``< /dev/null`` (epoll cannot
watch it) and crash with ``ValueError: Pipe transport is for pipes/sockets only`` with
``< requests.jsonl``. The last test runs docs/stdio.md's "Trying it by hand" as written."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "examples.quickstart", "--stdio"]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
REQUESTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
     "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": META}},
]
LINES = "".join(json.dumps(r) + "\n" for r in REQUESTS).encode()

pytestmark = pytest.mark.integration


def replies(out: bytes) -> dict[int, dict[str, object]]:
    found = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {m["id"]: m for m in found}


def check(out: bytes) -> None:
    got = replies(out)
    assert set(got) == {1, 2}
    assert got[2]["result"]["content"] == [{"type": "text", "text": "hi"}]  # type: ignore[index]


def test_dev_null_is_end_of_input_at_once() -> None:
    with open(os.devnull, "rb") as stdin:
        done = subprocess.run(COMMAND, cwd=ROOT, stdin=stdin, capture_output=True,
                              timeout=30, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr


def test_a_regular_file_is_read_line_by_line(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(LINES)
    with requests.open("rb") as stdin:
        done = subprocess.run(COMMAND, cwd=ROOT, stdin=stdin, capture_output=True,
                              timeout=30, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    check(done.stdout)


def test_an_oversized_line_in_a_file_is_refused_and_the_rest_is_served(
        tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    # 5 MiB: over the default 4 MiB message limit.
    requests.write_bytes(b'{"x": "' + b"a" * (5 * 1024 * 1024) + b'"}\n' + LINES)
    with requests.open("rb") as stdin:
        done = subprocess.run(COMMAND, cwd=ROOT, stdin=stdin, capture_output=True,
                              timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(m.get("id") is None and "error" in m for m in lines)
    check(b"\n".join(json.dumps(m).encode() for m in lines if m.get("id") is not None))


def test_a_pipe_is_served_until_it_closes() -> None:
    done = subprocess.run(COMMAND, cwd=ROOT, input=LINES, capture_output=True, timeout=30,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    check(done.stdout)


def test_a_terminal_is_served_until_end_of_file() -> None:
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(COMMAND, cwd=ROOT, stdin=follower, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        os.close(follower)
        follower = -1
        for request in REQUESTS:
            os.write(leader, json.dumps(request).encode() + b"\n")
        os.write(leader, b"\x04")  # Ctrl-D at the start of a line: end of file
        out, err = proc.communicate(timeout=30)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert proc.returncode == 0, err.decode()[-2000:]
    check(out)


def test_the_stdio_pages_command_runs_as_written(tmp_path: Path) -> None:
    from tests.docs_blocks import blocks

    (block,) = [b for b in blocks(ROOT / "docs" / "stdio.md") if b.code.startswith("cat >")]
    venv_bin = str(Path(sys.executable).parent)
    script = block.code.replace(".venv/bin/", venv_bin + "/")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", f"cd {tmp_path} && {script}"],
                          capture_output=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    check(done.stdout)
