"""examples/protected_server.py: the AS, PRM and the protected endpoint in one process,
served by uvicorn on loopback and driven over real HTTP."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from examples.protected_server import build_app
from tests.auth.support import LoopbackServer, Recorder
from tests.support.processes import free_port


async def test_example_end_to_end_with_client_credentials() -> None:
    recorder = Recorder()
    secret = "example-secret"
    with LoopbackServer(
        lambda url: build_app(url, inner=recorder, client_secret=secret)[0], lifespan="on"
    ) as server:
        resource = server.url + "/mcp"
        async with httpx.AsyncClient(base_url=server.url) as c:
            prm = (await c.get("/.well-known/oauth-protected-resource/mcp")).json()
            assert prm["resource"] == resource
            [issuer] = prm["authorization_servers"]
            as_meta = (await c.get("/.well-known/oauth-authorization-server/as")).json()
            assert as_meta["issuer"] == issuer == server.url + "/as"
            denied = await c.post("/mcp", content=b"{}")
            assert denied.status_code == 401
            assert (
                f'resource_metadata="{server.url}/.well-known/oauth-protected-resource/mcp"'
                in denied.headers["www-authenticate"]
            )
            grant = await c.post(
                as_meta["token_endpoint"],
                auth=("demo-client", secret),
                data={"grant_type": "client_credentials", "resource": resource, "scope": "mcp"},
            )
            token = grant.json()["access_token"]
            auth = {"authorization": f"Bearer {token}"}
            ok = await c.post(
                "/mcp", content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers=auth
            )
            step_up = await c.post(
                "/mcp",
                content=b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
                b'"params":{"name":"test_trigger_tool_change"}}',
                headers=auth,
            )
    assert ok.status_code == 200
    assert step_up.status_code == 403
    assert 'scope="mcp tools:admin"' in step_up.headers["www-authenticate"]
    assert [call["principal"].subject for call in recorder.calls] == ["demo-client"]


async def test_example_protects_the_real_everything_server() -> None:
    everything = pytest.importorskip("examples.everything")
    with LoopbackServer(
        lambda url: build_app(url, inner=everything.app)[0], lifespan="on"
    ) as server:
        async with httpx.AsyncClient(base_url=server.url) as c:
            denied = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert denied.status_code == 401


@pytest.mark.integration
def test_module_runs_as_a_program() -> None:
    """``python -m examples.protected_server`` starts, prints how to get a token, serves;
    then ``python -m examples.oauth_end_to_end --url`` runs its OAuth clients against it.
    These are the two commands of docs/auth.md's "Trying it locally"."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "examples.protected_server", "--port", str(port), "--print-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(6)]  # type: ignore[union-attr]
        token = lines[5].split()[-1]
        deadline = time.monotonic() + 20
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
                break
            except httpx.ConnectError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert r.json()["resource"] == f"http://127.0.0.1:{port}/mcp"
        denied = httpx.post(f"http://127.0.0.1:{port}/mcp", json={})
        assert denied.status_code == 401
        allowed = httpx.post(
            f"http://127.0.0.1:{port}/mcp", json={}, headers={"authorization": f"Bearer {token}"}
        )
        assert allowed.status_code not in (401, 403)
        clients = subprocess.run(
            [sys.executable, "-m", "examples.oauth_end_to_end", "--url",
             f"http://127.0.0.1:{port}/mcp"], capture_output=True, text=True, timeout=120)
        assert clients.returncode == 0, clients.stdout + clients.stderr
        assert "eyJ" not in clients.stdout + clients.stderr  # fingerprints, never tokens
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
