"""docs/troubleshooting.md quotes what the code really says: each entry's symptom is
provoked here, in process (ASGI through httpx) or in a subprocess, and the message the
code produced must appear on the page word for word."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpcore import (
    Context,
    KeyRing,
    MrtrConfig,
    Policy,
    RateLimit,
    Rule,
    Ruleset,
    Sealer,
    Server,
    StreamableHTTP,
)
from tests.support.processes import free_port, require_tool
from tests.support.wire import make_meta, standard_headers

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
METADATA = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
LEGACY_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "old-client", "version": "1"}}}
JSON_HEADERS = {"Accept": "application/json, text/event-stream",
                "Content-Type": "application/json"}


def quoted(message: str) -> None:
    """``message`` is on the page (whitespace-insensitive: the page wraps lines)."""
    assert " ".join(message.split()) in " ".join(PAGE.split()), (
        f"docs/troubleshooting.md does not quote {message!r}")


def call(tool: str, arguments: dict[str, Any], request_id: int = 1,
         **extra: Any) -> tuple[dict[str, Any], dict[str, str]]:
    params = {"name": tool, "arguments": arguments,
              "_meta": make_meta({"elicitation": {}}), **extra}
    return ({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params},
            standard_headers("tools/call", params))


def echo_server(**kwargs: Any) -> Server:
    server = Server("troubleshooting", "1.0.0", **kwargs)

    @server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return server


def asgi(app: Any, base: str = "http://127.0.0.1") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base)


async def test_a_forwarded_host_and_a_foreign_origin_are_refused_as_quoted() -> None:
    body, headers = call("echo", {"text": "hi"})
    async with asgi(StreamableHTTP(echo_server())) as client:
        host = await client.post("/mcp", json=body,
                                 headers={**headers, "Host": "mcp.example.com"})
        origin = await client.post("/mcp", json=body,
                                   headers={**headers, "Origin": "https://evil.example"})
    assert host.status_code == origin.status_code == 403
    quoted(host.text)
    quoted(origin.json()["error"]["message"])
    # The fix the page gives: the public name in allowed_hosts.
    async with asgi(StreamableHTTP(echo_server(), allowed_hosts=["mcp.example.com"])) as fixed:
        answer = await fixed.post("/mcp", json=body,
                                  headers={**headers, "Host": "mcp.example.com"})
    assert answer.status_code == 200 and answer.json()["result"]["content"][0]["text"] == "hi"
    quoted('allowed_hosts=["mcp.example.com"]')
    quoted("MCPCORE_ALLOWED_HOSTS=mcp.example.com")


async def test_request_state_from_another_key_ring_fails_as_quoted() -> None:
    def instance(kid: str) -> StreamableHTTP:
        ring = KeyRing.from_config(KeyRing.new_key(kid))
        server = Server("fleet", "1.0.0", mrtr=MrtrConfig(sealer=Sealer(ring)))

        @server.tool()
        async def ask(ctx: Context) -> str:
            """Ask for a name."""
            await ctx.elicit("Your name?", {"type": "object", "properties": {
                "name": {"type": "string"}}}, key="name")
            return "thanks"

        return StreamableHTTP(server)

    body, headers = call("ask", {})
    async with asgi(instance("blue")) as blue, asgi(instance("green")) as green:
        first = (await blue.post("/mcp", json=body, headers=headers)).json()["result"]
        assert first["resultType"] == "input_required"
        body, headers = call("ask", {}, 2, requestState=first["requestState"],
                             inputResponses={"name": {"action": "accept",
                                                      "content": {"name": "Ada"}}})
        retry = await green.post("/mcp", json=body, headers=headers)
    assert retry.status_code == 200
    error = retry.json()["error"]
    assert error["code"] == -32602
    quoted(error["message"])


def test_the_per_process_key_warning_is_quoted() -> None:
    from mcpcore.sealing import SealingDevModeWarning

    with pytest.warns(SealingDevModeWarning) as caught:
        KeyRing.generate_dev()
    message = str(caught[0].message)
    fragment = message.split(":")[0]
    assert fragment.startswith("requestState is sealed with")
    quoted(fragment)


def test_an_empty_key_ring_stops_the_server_as_quoted() -> None:
    done = subprocess.run([sys.executable, "-m", "mcpcore", "serve", "examples.quickstart"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "MCPCORE_STATE_KEYS": ""})
    assert done.returncode == 2
    quoted(done.stderr.strip().splitlines()[-1])


async def test_redis_down_is_a_503_with_retry_after_as_quoted(
        caplog: pytest.LogCaptureFixture) -> None:
    from mcpcore.stores import RedisStore

    port = free_port()  # nothing listens there
    store = RedisStore.from_url(f"redis://127.0.0.1:{port}/0", operation_timeout=0.5)
    server = echo_server(store=store)
    try:
        with caplog.at_level(logging.ERROR):
            async with asgi(StreamableHTTP(server)) as client:
                refused = await client.post("/mcp", json=LEGACY_INIT, headers=JSON_HEADERS)
                body, headers = call("echo", {"text": "still here"})
                stateless = await client.post("/mcp", json=body, headers=headers)
    finally:
        await store.close()
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    quoted(json.dumps(refused.json()["error"], separators=(",", ":")))
    assert stateless.status_code == 200  # a plain call does not need the Store
    logged = [r.getMessage() for r in caplog.records if r.name == "mcpcore.stores"
              and r.getMessage().startswith(f"Redis at 127.0.0.1:{port} is unavailable:")]
    assert len(logged) == 1, logged  # once per outage, not once per request
    quoted("Redis at HOST:PORT is unavailable: ...")


def test_uvicorn_without_the_fast_extra_fails_as_quoted(tmp_path: Path) -> None:
    """The venv has uvloop (the dev extras include ``fast``): run uvicorn from a copy of
    site-packages without it, and the import fails as it does for a plain install."""
    site = Path(sysconfig.get_paths()["purelib"])
    require_tool((site / "uvloop").is_dir(), "uvloop in the virtual environment")
    bare = tmp_path / "site"
    bare.mkdir()
    for entry in site.iterdir():
        if not entry.name.startswith("uvloop"):
            (bare / entry.name).symlink_to(entry)
    done = subprocess.run(
        [sys.executable, "-S", "-m", "uvicorn", "examples.quickstart:app", "--loop", "uvloop",
         "--port", "0"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": f"{bare}{os.pathsep}{ROOT}"})
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == "ModuleNotFoundError: No module named 'uvloop'"
    quoted(last)
    quoted("pip install 'mcpcore[fast]'")


@pytest.mark.integration
def test_the_official_suite_wants_its_fixture_tools_as_quoted() -> None:
    from tests.integration.conftest import OFFICIAL_SUITE, running_example

    require_tool(OFFICIAL_SUITE.exists() and (Path.home() / ".cache" / "mcpcore").exists(),
                 "the official suite (scripts/official-suite.sh, installed by make test)")
    with running_example("quickstart") as url:
        done = subprocess.run(
            [str(OFFICIAL_SUITE), "server", "--url", url, "--scenario",
             "tools-call-simple-text", "--spec-version", "2026-07-28"],
            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "MCPCORE_SUITE_QUIET": "1", "NO_COLOR": "1"})
    output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    failure = re.search(r"Error: (Failed: Unknown tool: test_simple_text)", output)
    assert failure, output[-3000:]
    quoted(failure.group(1))


async def test_a_mount_at_mcp_redirects_as_quoted() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    app = Starlette(routes=[Mount("/mcp", StreamableHTTP(echo_server(), path=None))])
    body, headers = call("echo", {"text": "hi"})
    async with asgi(app) as client:
        response = await client.post("/mcp", json=body, headers=headers)
    assert response.status_code == 307
    quoted(f"{response.status_code} {response.reason_phrase}")
    quoted(f"location: {response.headers['location']}")
    quickstart = (ROOT / "docs" / "quickstart.md").read_text()
    assert "## Mounting in an existing ASGI app" in quickstart and 'Route("/mcp"' in quickstart


def test_serve_without_stdio_prints_a_url_not_mcp_as_quoted() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", "serve",
                             "examples.quickstart:server", "--port", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert re.fullmatch(r"mcpcore: serving quickstart on http://127\.0\.0\.1:\d+/mcp", line)
    quoted(re.sub(r":\d+/mcp$", ":8000/mcp", line))
    quoted("--stdio")


async def test_a_2025_client_against_a_modern_only_server_fails_as_quoted() -> None:
    async with asgi(StreamableHTTP(echo_server(), legacy=False)) as client:
        bare = await client.post("/mcp", json=LEGACY_INIT, headers=JSON_HEADERS)
        versioned = await client.post("/mcp", json=LEGACY_INIT, headers={
            **JSON_HEADERS, "MCP-Protocol-Version": "2025-06-18"})
    assert bare.status_code == versioned.status_code == 400
    assert bare.json()["error"]["code"] == -32020
    assert versioned.json()["error"]["code"] == -32022
    quoted(bare.json()["error"]["message"])
    quoted(versioned.json()["error"]["message"])
    # The fix: the default (legacy on) serves it.
    async with asgi(StreamableHTTP(echo_server())) as client:
        served = await client.post("/mcp", json=LEGACY_INIT, headers=JSON_HEADERS)
    assert served.status_code == 200 and "result" in served.json()


async def test_a_rate_limited_call_is_a_429_as_quoted() -> None:
    open_scopes: dict[Any, Any] = dict.fromkeys(
        ("read", "write_idempotent", "write_additive", "destructive"), ())
    policy = Policy(Ruleset([Rule("reads", "allow", categories={"read"})],
                            category_scopes=open_scopes, rate_limit=RateLimit(1, 60)))
    async with asgi(StreamableHTTP(echo_server(policy=policy))) as client:
        for request_id in (1, 2):
            body, headers = call("echo", {"text": "x"}, request_id)
            response = await client.post("/mcp", json=body, headers=headers)
    assert response.status_code == 429 and int(response.headers["retry-after"]) >= 1
    error = response.json()["error"]
    assert error["data"]["reason"] == "rate_limited"
    quoted(f"{response.status_code} {response.reason_phrase}")
    quoted(error["message"])


async def test_auth_challenges_are_as_quoted() -> None:
    from mcpcore.auth.config import IssuerConfig, ResourceServerConfig
    from mcpcore.auth.server.resource_server import BearerAuthMiddleware

    config = ResourceServerConfig(
        resource="https://mcp.example.com/mcp", required_scopes=frozenset({"mcp"}),
        authorization_servers=(IssuerConfig("https://auth.example.com",
                                            jwks_uri="https://auth.example.com/jwks"),))
    policy = Policy(Ruleset([Rule("reads", "allow", categories={"read"})]),
                    resource_metadata=METADATA)
    server = echo_server(policy=policy)
    protected = BearerAuthMiddleware(StreamableHTTP(server, allowed_hosts=["mcp.example.com"]),
                                     config=config)
    body, headers = call("echo", {"text": "x"})
    try:
        async with asgi(protected, "https://mcp.example.com") as client:
            missing = await client.post("/mcp", json=body, headers=headers)
    finally:
        await protected.aclose()
    assert missing.status_code == 401
    quoted(missing.text)
    quoted(f"WWW-Authenticate: {missing.headers['www-authenticate']}")
    # The anonymous caller of the bare app has no scopes: the policy's step-up 403.
    async with asgi(StreamableHTTP(server)) as client:
        short = await client.post("/mcp", json=body, headers=headers)
    assert short.status_code == 403
    quoted(short.json()["error"]["message"])
    quoted(f"WWW-Authenticate: {short.headers['www-authenticate']}")
