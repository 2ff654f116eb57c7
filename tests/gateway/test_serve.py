"""``mcpcore gateway serve``: the process (both eras on /mcp, /healthz, /readyz), and its
one-line refusals."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from mcpcore.cli import main
from mcpcore.client import Client
from mcpcore.gateway import serve as gateway_serve
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from mcpcore.transports.http import LOCAL_HOSTS
from tests.gateway.inprocess import URL, alpha_server, http_client
from tests.support.processes import ROOT, subprocess_env


async def test_readyz_says_when_the_catalog_is_built_and_each_upstreams_state() -> None:
    from mcpcore import StreamableHTTP

    upstream = http_client(StreamableHTTP(alpha_server()))
    config = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL),))
    gateway = Gateway(config, http_clients={"alpha": upstream})
    app = gateway_serve.build(gateway, allowed_hosts=LOCAL_HOSTS)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app),
                                 base_url="http://localhost") as http:
        assert (await http.get("/healthz")).status_code == 200
        before = await http.get("/readyz")
        assert before.status_code == 503
        assert before.json()["problem"] == "the catalog is not built yet"
        await gateway.start()
        try:
            after = await http.get("/readyz")
            assert after.status_code == 200
            assert after.json() == {"status": "ready", "problem": None, "upstreams": {
                "alpha": {"state": "up", "era": "2026-07-28"}}}
        finally:
            await gateway.aclose()
            await upstream.aclose()


async def test_readyz_counts_each_upstreams_quarantined_tools(tmp_path: Path) -> None:
    """With pinned tool definitions, ``/readyz`` says how many of each upstream's tools
    are held (docs/gateway-pinning.md); here no lock file is written yet, so every tool
    of the upstream is new and held."""
    from mcpcore import StreamableHTTP

    alpha = alpha_server()
    upstream = http_client(StreamableHTTP(alpha))
    config = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL),),
                           pins=str(tmp_path / "gateway.lock"))
    gateway = Gateway(config, http_clients={"alpha": upstream})
    app = gateway_serve.build(gateway, allowed_hosts=LOCAL_HOSTS)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app),
                                 base_url="http://localhost") as http:
        await gateway.start()
        try:
            ready = await http.get("/readyz")
            assert ready.status_code == 200
            assert ready.json()["upstreams"] == {"alpha": {
                "state": "up", "era": "2026-07-28", "quarantinedTools": len(alpha.tools)}}
        finally:
            await gateway.aclose()
            await upstream.aclose()


def test_a_file_that_cannot_be_loaded_is_one_line_and_status_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    args = argparse.Namespace(file=str(tmp_path / "missing.toml"), stdio=False,
                              log_level="warning")
    assert gateway_serve.serve(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcpcore gateway serve: ") and err.count("\n") == 1
    assert "missing.toml" in err


def test_stdio_refuses_the_flags_of_http(capsys: pytest.CaptureFixture[str]) -> None:
    # `--stdio --port N` was accepted silently, the port unused.
    assert main(["gateway", "serve", str(ROOT / "examples" / "gateway_config.toml"), "--stdio",
                 "--port", "9000"]) == 2
    assert capsys.readouterr().err == (
        "mcpcore gateway serve: --port has no meaning with --stdio (it serves over "
        "stdin/stdout, not HTTP): drop it or --stdio\n")


@pytest.mark.integration
async def test_the_command_serves_both_eras_and_stops_its_stdio_upstreams(
        tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(f"""
[[upstream]]
name = "quick"
command = {json.dumps(sys.executable)}
args = ["-m", "examples.quickstart", "--stdio"]
cwd = {json.dumps(str(ROOT))}
env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}

[[upstream]]
name = "nowhere"
url = "http://127.0.0.1:9/mcp"
timeout = 5.0
""")
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpcore", "gateway", "serve", str(config), "--port", "0"],
        cwd=ROOT, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("mcpcore: serving mcpcore-gateway on http://127.0.0.1:"), line
        url = line.rsplit(" ", 1)[1].strip()
        base = url.removesuffix("/mcp")
        async with httpx.AsyncClient(base_url=base) as http:
            deadline = time.monotonic() + 60
            while (ready := await http.get("/readyz")).status_code != 200:
                assert time.monotonic() < deadline, ready.text
                await asyncio.sleep(0.1)
            assert ready.json()["upstreams"] == {
                "quick": {"state": "up", "era": "2026-07-28"},
                "nowhere": {"state": "down", "era": None}}
        for mode in ("2026-07-28", "legacy"):
            async with Client.http(url, mode=mode, era_cache=None) as client:
                echoed = await client.call_tool("quick__echo", {"text": mode})
                assert echoed.content[0].text == mode
        children = _children(process.pid)
        assert children  # the stdio upstream, in a process group of its own
        os.kill(process.pid, signal.SIGTERM)
        # uvicorn re-raises the signal it caught once it is done: SIGTERM is the status.
        assert process.wait(30) in (0, -signal.SIGTERM)
        for pid in children:
            assert not Path(f"/proc/{pid}").exists(), f"upstream {pid} outlived the gateway"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid:
            found.append(int(entry.name))
    return found
