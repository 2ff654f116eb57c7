"""docs/gateway.md, run as written: its example configuration is the one in
``examples/gateway/``, and its commands serve three servers behind the gateway, whose
``/readyz`` and client output are what the page shows.

The commands run as printed (``tests.docs_blocks``), with two changes: the ports are
free ones instead of 8000-8002 (the machine is shared), and the configuration is a copy
naming those ports.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from tests.docs_blocks import (
    ROOT,
    VENV_BIN,
    blocks,
    commands,
    marked,
    reader_env,
    start_printed,
    stop_printed,
)
from tests.support.processes import free_port, wait_for_port

PAGE = ROOT / "docs" / "gateway.md"
EXAMPLE = ROOT / "examples" / "gateway" / "gateway.toml"
MARKER = "tests/gateway/test_docs_gateway.py"


def test_the_pages_configuration_is_the_example() -> None:
    (shown,) = [b for b in blocks(PAGE) if b.lang == "toml" and b.marker is None]
    assert tomllib.loads(shown.code) == tomllib.loads(EXAMPLE.read_text())


@pytest.mark.integration
def test_three_servers_behind_the_gateway_as_the_page_says(tmp_path: Path) -> None:
    start, curl = marked(PAGE, MARKER, "bash")
    lines = commands(start)
    assert [line.endswith("&") for line in lines] == [True, True, False]
    ports = {"8001": free_port(), "8002": free_port(), "8000": free_port()}

    def swapped(text: str) -> str:
        return re.sub(r"\b(800[012])\b", lambda m: str(ports[m.group(1)]), text)

    config = tmp_path / "gateway.toml"
    config.write_text(swapped(EXAMPLE.read_text()).replace(
        'cwd = "../.."', f"cwd = {json.dumps(str(ROOT))}"))
    started = []
    try:
        for line in lines[:2]:
            proc = start_printed(swapped(line.removesuffix("&")),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            started.append(proc)
            wait_for_port(int(re.findall(r"--port (\d+)", swapped(line))[0]), proc)
        serve = swapped(lines[2]).replace("examples/gateway/gateway.toml", str(config))
        assert str(config) in serve
        gateway = start_printed(serve, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append(gateway)
        assert gateway.stdout is not None
        line = gateway.stdout.readline().decode()
        assert line.strip() == ("mcpcore: serving example-gateway on "
                                f"http://127.0.0.1:{ports['8000']}/mcp"), line
        url = f"http://127.0.0.1:{ports['8000']}/readyz"
        deadline = time.monotonic() + 60
        while httpx.get(url).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        (command,) = commands(curl)
        printed = subprocess.run(["bash", "-c", swapped(command)], cwd=ROOT,
                                 env=reader_env(), capture_output=True, text=True,
                                 timeout=30, check=True).stdout
        (shown,) = [b for b in blocks(PAGE) if b.lang == "json" and "upstreams" in b.code]
        assert json.loads(printed) == json.loads(shown.code)
        (program,) = marked(PAGE, MARKER, "python")
        ran = subprocess.run([str(VENV_BIN / "python"), "-c", swapped(program.code)],
                             cwd=ROOT, env=reader_env(), capture_output=True, text=True,
                             timeout=60, check=True).stdout
        assert ran.splitlines() == ["2026-07-28 True True", "hello",
                                    "legacy True True", "hello"]
    finally:
        for proc in reversed(started):
            stop_printed(proc)
