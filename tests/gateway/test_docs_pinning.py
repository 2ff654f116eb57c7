"""docs/gateway-pinning.md, run as written: its example configuration is
``examples/gateway/pinned.toml``; its commands pin the two stdio upstreams, serve the
gateway after the ``files`` upstream changed its tool (the page's ``env`` line), and
``diff`` and ``approve`` the change with the digest ``diff`` printed. What each command
prints is what the page shows after it (``# `` lines), where ``…`` stands for any text
(a shortened digest, the folder of the lock file).

The commands run as printed (``tests.docs_blocks``), with two changes: the configuration
is a copy in a temporary folder (``…/examples/gateway/pinned.toml``, its ``cwd`` the
checkout), so the lock file is written there, and the port is a free one instead of 8000
(the machine is shared).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.docs_blocks import (
    ROOT,
    VENV_BIN,
    Block,
    commands,
    marked,
    reader_env,
    run_printed,
    start_printed,
    stop_printed,
)
from tests.support.processes import free_port

PAGE = ROOT / "docs" / "gateway-pinning.md"
EXAMPLE = ROOT / "examples" / "gateway" / "pinned.toml"
MARKER = "tests/gateway/test_docs_pinning.py"
SHOWN_CONFIG = "examples/gateway/pinned.toml"


def transcript(block: Block) -> list[tuple[str, list[str]]]:
    """Each command of a shell block, with the lines the page shows it printing (the
    ``# `` lines right after it)."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.code.replace("\\\n", " ").splitlines():
        if line.startswith("#"):
            assert steps, f"{block.where}: output shown before any command"
            steps[-1][1].append(line.removeprefix("#").removeprefix(" "))
        elif line.strip():
            steps.append((" ".join(line.split()), []))
    assert [command for command, _ in steps] == [" ".join(c.split()) for c in commands(block)]
    return steps


def shown_as(shown: str, printed: str) -> bool:
    """Whether ``printed`` is ``shown``, where each ``…`` in ``shown`` is any text."""
    pattern = ".+?".join(re.escape(part) for part in shown.split("…"))
    return re.fullmatch(pattern, printed) is not None


def assert_prints(shown: list[str], printed: str, what: str) -> None:
    lines = printed.splitlines()
    assert len(lines) == len(shown) and all(
        shown_as(s, p) for s, p in zip(shown, lines, strict=True)), (
        f"{what} prints\n{printed}\nbut the page shows\n" + "\n".join(shown))


def same_modulo_ellipsis(shown: Any, real: Any, where: str = "") -> None:
    if isinstance(shown, str) and "…" in shown:
        assert isinstance(real, str) and shown_as(shown, real), f"{where}: {real!r}"
    elif isinstance(shown, dict):
        assert isinstance(real, dict) and set(shown) == set(real), f"{where}: {real!r}"
        for key in shown:
            same_modulo_ellipsis(shown[key], real[key], f"{where}.{key}")
    else:
        assert shown == real, f"{where}: the page shows {shown!r}, the file has {real!r}"


def test_the_pages_configuration_is_the_example() -> None:
    shown = [b for b in marked(PAGE, MARKER, "toml") if "[gateway]" in b.code]
    assert len(shown) == 1
    assert tomllib.loads(shown[0].code) == tomllib.loads(EXAMPLE.read_text())
    # The page's upgrade is one `env` line of the example's `files` upstream.
    (upgrade,) = [b for b in marked(PAGE, MARKER, "toml") if "[gateway]" not in b.code]
    assert upgrade.code.startswith("env = ") and upgrade.code.count("\n") == 1
    assert [line for line in EXAMPLE.read_text().splitlines()
            if line.startswith("env = ")] == [
        'env = { PINNED_DESCRIPTION = "Read a file. Returns its text." }']


def test_the_approved_digest_is_the_one_diff_shows() -> None:
    (diff,) = [b for b in marked(PAGE, MARKER, "bash") if commands(b)[0].split()[2] == "diff"]
    (approve,) = [b for b in marked(PAGE, MARKER, "bash") if commands(b)[0].split()[2] == "approve"]
    ((_, printed),) = transcript(diff)
    now = re.search(r"now (sha256:[0-9a-f]+)…\)", printed[0])
    assert now is not None, printed[0]
    digest = re.search(r"--digest (sha256:[0-9a-f]{64})\b", transcript(approve)[0][0])
    assert digest is not None and digest.group(1).startswith(now.group(1))


@pytest.mark.integration
def test_pin_quarantine_diff_and_approve_as_the_page_says(tmp_path: Path) -> None:
    folder = tmp_path / "examples" / "gateway"
    folder.mkdir(parents=True)
    config = folder / "pinned.toml"
    text = EXAMPLE.read_text()
    assert text.count('cwd = "../.."') == 2
    config.write_text(text.replace('cwd = "../.."', f"cwd = {json.dumps(str(ROOT))}"))
    port = free_port()

    def swapped(command: str) -> str:
        assert SHOWN_CONFIG in command or "8000" in command, command
        return re.sub(r"\b8000\b", str(port), command.replace(SHOWN_CONFIG, str(config)))

    def run(block: Block, statuses: list[int]) -> list[str]:
        outputs = []
        steps = transcript(block)
        assert len(steps) == len(statuses)
        for (command, shown), status in zip(steps, statuses, strict=True):
            ran = run_printed(swapped(command), timeout=120)
            assert ran.returncode == status, (command, ran.stdout, ran.stderr)
            assert_prints(shown, ran.stdout, command)
            outputs.append(ran.stdout)
        return outputs

    pin, serve, curl, diff, approve = marked(PAGE, MARKER, "bash")

    # pin: the lock file of both upstreams, whose `files` part is what the page shows.
    run(pin, [0])
    lock = json.loads((folder / "pinned.lock").read_text())
    (shown_lock,) = [b for b in marked(PAGE, MARKER, "json") if '"version"' in b.code]
    shown = json.loads(shown_lock.code)
    assert shown["version"] == lock["version"] and list(shown["upstreams"]) == ["files"]
    assert sorted(lock["upstreams"]) == ["everything", "files"]
    same_modulo_ellipsis(shown["upstreams"]["files"], lock["upstreams"]["files"], "files")

    # The upgrade: the page's `env` line replaces the example's.
    (upgrade,) = [b for b in marked(PAGE, MARKER, "toml") if "[gateway]" not in b.code]
    lines = config.read_text().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if line.startswith("env = ")]
    lines[at] = upgrade.code
    config.write_text("".join(lines))

    # serve: the changed tool is held, logged once, counted by /readyz, refused by name.
    (command,) = commands(serve)
    logged, said = marked(PAGE, MARKER, "text")
    log = folder / "serve.log"
    with log.open("wb") as stderr:
        gateway = start_printed(swapped(command), stdout=subprocess.PIPE, stderr=stderr)
    try:
        assert gateway.stdout is not None
        line = gateway.stdout.readline().decode()
        assert line.strip() == ("mcpcore: serving pinned-gateway on "
                                f"http://127.0.0.1:{port}/mcp"), (line, log.read_text())
        deadline = time.monotonic() + 60
        while httpx.get(f"http://127.0.0.1:{port}/readyz").status_code != 200:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        (probe,) = commands(curl)
        printed = run_printed(swapped(probe), timeout=30).stdout
        (shown_ready,) = [b for b in marked(PAGE, MARKER, "json") if '"upstreams"' in b.code
                          and '"status"' in b.code]
        assert json.loads(printed) == json.loads(shown_ready.code)
        (program,) = marked(PAGE, MARKER, "python")
        ran = subprocess.run([str(VENV_BIN / "python"), "-c", swapped_port(program.code, port)],
                             cwd=ROOT, env=reader_env(), capture_output=True, text=True,
                             timeout=60, check=True).stdout
        assert ran.splitlines() == said.code.splitlines()
    finally:
        stop_printed(gateway)
    (shown_log,) = logged.code.splitlines()
    held = [line for line in log.read_text().splitlines() if "quarantined tool" in line]
    assert len(held) == 1 and shown_as(shown_log, held[0]), log.read_text()

    # diff, then approve with the digest diff printed: the lock holds the new definition.
    (printed,) = run(diff, [1])
    now = re.search(r"now (sha256:[0-9a-f]{64})\)", printed)
    assert now is not None, printed
    assert f"--digest {now.group(1)}" in transcript(approve)[0][0], (
        f"the page approves another digest than the one diff prints ({now.group(1)})")
    run(approve, [0, 0])
    approved = json.loads((folder / "pinned.lock").read_text())
    assert approved["upstreams"]["files"]["tools"]["read_file"]["digest"] == now.group(1)
    assert approved["upstreams"]["everything"] == lock["upstreams"]["everything"]


def swapped_port(code: str, port: int) -> str:
    assert "127.0.0.1:8000" in code
    return code.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
