"""docs/gateway-credentials.md, run as written: its configuration is the one in
``examples/gateway/exchange/``, and its walk-through (an authorization server, an
upstream, a gateway requiring bearer tokens that exchanges them) does what the page
says.

The commands run as printed (``tests.docs_blocks``), with two changes: the ports are
free ones instead of 8000, 8001 and 9000 (the machine is shared), and the configuration
is a copy naming those ports.
"""

from __future__ import annotations

import re
import subprocess
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from mcpcore.gateway.config import load, loads
from tests.docs_blocks import (
    ROOT,
    VENV_BIN,
    blocks,
    commands,
    marked,
    reader_env,
    run_printed,
    start_printed,
    stop_printed,
)
from tests.support.processes import free_port, wait_for_port

PAGE = ROOT / "docs" / "gateway-credentials.md"
EXAMPLE = ROOT / "examples" / "gateway" / "exchange"
MARKER = "tests/gateway/test_docs_gateway_credentials.py"


def test_the_pages_configuration_is_the_example() -> None:
    dpop, gateway, auth = [b for b in blocks(PAGE) if b.lang == "toml"]
    # The DPoP section's credentials table is a valid upstream's.
    upstream = '[[upstream]]\nname = "notes"\nurl = "https://notes.example.com/mcp"\n'
    credentials = loads(upstream + dpop.code).upstreams[0].credentials
    assert credentials.dpop and credentials.dpop_key is not None
    assert tomllib.loads(gateway.code) == tomllib.loads(
        (EXAMPLE / "gateway.toml").read_text())
    assert tomllib.loads(auth.code) == tomllib.loads((EXAMPLE / "auth.toml").read_text())
    config = load(EXAMPLE / "gateway.toml")
    assert config.auth == str(EXAMPLE / "auth.toml")


@pytest.mark.integration
def test_token_exchange_walk_through_as_the_page_says(tmp_path: Path) -> None:
    start, curl = marked(PAGE, MARKER, "bash")
    lines = commands(start)
    assert lines[0].startswith("export GATEWAY_SECRET=")
    assert [line.endswith("&") for line in lines[1:]] == [True, True, False]
    ports = {"8000": free_port(), "8001": free_port(), "9000": free_port()}

    def swapped(text: str) -> str:
        return re.sub(r"\b(8000|8001|9000)\b", lambda m: str(ports[m.group(1)]), text)

    secret = run_printed(f"{lines[0]}; echo $GATEWAY_SECRET").stdout.strip()
    assert len(secret) >= 16
    env = {"GATEWAY_SECRET": secret}
    for name in ("gateway.toml", "auth.toml"):
        (tmp_path / name).write_text(swapped((EXAMPLE / name).read_text()))
    started = []
    try:
        for line in lines[1:3]:
            proc = start_printed(swapped(line.removesuffix("&")), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            started.append(proc)
            wait_for_port(int(re.findall(r"--port (\d+)", swapped(line))[0]), proc)
        serve = swapped(lines[3]).replace("examples/gateway/exchange/gateway.toml",
                                          str(tmp_path / "gateway.toml"))
        gateway = start_printed(serve, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        started.append(gateway)
        assert gateway.stdout is not None
        line = gateway.stdout.readline().decode()
        assert line.strip() == ("mcpcore: serving exchange-gateway on "
                                f"http://127.0.0.1:{ports['8000']}/mcp"), line
        ready = f"http://127.0.0.1:{ports['8000']}/readyz"
        deadline = time.monotonic() + 60
        while httpx.get(ready).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        (command,) = commands(curl)
        assert run_printed(swapped(command)).stdout == "401\n"
        (program,) = marked(PAGE, MARKER, "python")
        ran = subprocess.run([str(VENV_BIN / "python"), "-c", swapped(program.code)],
                             cwd=ROOT, env=reader_env(env), capture_output=True, text=True,
                             timeout=60, check=True).stdout
        assert ran.splitlines() == ["hello"]
    finally:
        for proc in reversed(started):
            stop_printed(proc)
