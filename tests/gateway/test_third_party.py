"""The gateway with real third-party components, at once, on loopback.

One gateway process (``mcpcore gateway serve``) fronts ``examples.everything`` (HTTP,
2026-07-28), a server built with the official Python SDK (``mcp`` 2.3.0) reached on its
2025 session wire (HTTP, ``era = "legacy"``), a FastMCP server (HTTP; the gateway detects
2026-07-28, and a second upstream entry reaches the same server on its 2025 session wire,
where FastMCP's ``ctx.elicit`` works), and ``@modelcontextprotocol/server-everything``
(npm, 2025-only) over stdio, spawned by the gateway. Downstream, each client of each
era runs the same plan: list the tools (prefixed names from every upstream), call a tool
on each upstream, answer bridged elicitations, read resources and get prompts of several
upstreams. The clients: our own (both eras), the official Python SDK's (``mode="legacy"``
and ``mode="auto"``, which negotiates 2026-07-28), the TypeScript SDK's
(``@modelcontextprotocol/client`` 2.x, ``versionNegotiation`` legacy and auto; a small
Node script, ``clients/ts_client.cjs``).

Third-party pieces come from ``scripts/third-party.sh`` (pinned, cached): outside CI a
missing prerequisite skips loudly, in CI it fails (``tests/client/third_party.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.client.third_party import http_server, launch, stop, third_party
from tests.support.processes import ROOT, free_port, wait_for_port

pytestmark = pytest.mark.integration

STATE_KEYS = "test1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
TS_CLIENT = Path(__file__).resolve().parent / "clients" / "ts_client.cjs"
MODERN = "2026-07-28"

#: What the user answers to any elicitation (every asking tool needs only a name).
ANSWER = {"name": "Ada"}
#: The plan every client runs: a tool call on each upstream (name, arguments, a piece of
#: the expected text), resource reads (URI, a piece of the text) and prompts.
CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("everything__test_simple_text", {}, "simple text response"),
    ("sdk__add", {"a": 2, "b": 3}, "5.0"),
    ("fastmcp__add", {"a": 1, "b": 2}, "3.0"),
    ("fastmcp25__add", {"a": 4, "b": 4}, "8.0"),
    ("se__echo", {"message": "through the gateway"}, "Echo: through the gateway"),
    # Bridged elicitations: a 2025 upstream's elicitation/create mid-call (the official
    # SDK's, FastMCP's, server-everything's over stdio) and a 2026-07-28 upstream's
    # input_required, each reaching the caller in the caller's own era.
    ("sdk__ask_name", {}, "hello Ada"),
    ("fastmcp25__ask_name", {}, "hello Ada"),
    ("se__trigger-elicitation-request", {}, "Name: Ada"),
    ("everything__test_input_required_result_elicitation", {}, "Hello, Ada!"),
]
ASKERS = 4  # the calls above that ask the user
READS: list[tuple[str, str]] = [
    ("test://static-text", "static text resource"),           # examples.everything
    ("fixture://static", "static text"),                      # the SDK's (before FastMCP's)
    ("demo://resource/static/document/features.md", "Everything Server - Features"),
]
PROMPTS: list[tuple[str, dict[str, str] | None, str]] = [
    ("everything__test_simple_prompt", None, "simple prompt for testing"),
    ("sdk__greet", {"name": "Ada"}, "Hello, Ada!"),
    ("fastmcp__greet", {"name": "Bo"}, "Hello, Bo!"),
    ("se__args-prompt", {"city": "Paris"}, "Paris"),
]


def config_text(everything: str, sdk: str, fastmcp: str, node: list[str]) -> str:
    return f"""[gateway]
name = "third-party-gateway"

[[upstream]]
name = "everything"
url = {json.dumps(everything)}

[[upstream]]
name = "sdk"
url = {json.dumps(sdk)}
era = "legacy"

[[upstream]]
name = "fastmcp"
url = {json.dumps(fastmcp)}

[[upstream]]
name = "fastmcp25"
url = {json.dumps(fastmcp)}
era = "legacy"

[[upstream]]
name = "se"
command = {json.dumps(node[0])}
args = {json.dumps([*node[1:], "stdio"])}
"""


@contextlib.contextmanager
def gateway_process(config: Path, log: Path) -> Iterator[str]:
    """``mcpcore gateway serve`` on a free port, its log in a file (quoted on failure);
    yields its MCP URL once ``/readyz`` shows every upstream up."""
    port = free_port()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcore", "gateway", "serve", str(config),
             "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT, env={**os.environ, "MCPCORE_STATE_KEYS": STATE_KEYS},
            stdout=subprocess.DEVNULL, stderr=sink, start_new_session=True)
    try:
        try:
            wait_for_port(port, proc, timeout=60)
            deadline = time.monotonic() + 90  # npx-free, but node starts slowly when busy
            while True:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
                states = {n: u["state"] for n, u in ready.json().get("upstreams", {}).items()}
                if ready.status_code == 200 and set(states.values()) == {"up"} \
                        and len(states) == 5:
                    break
                assert time.monotonic() < deadline, f"upstreams not all up: {states}"
                time.sleep(0.2)
        except BaseException:
            pytest.fail(f"the gateway did not come up:\n{log.read_text()[-3000:]}")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)  # its process group: the stdio child too


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node = third_party("server-everything")
    folder = tmp_path_factory.mktemp("third-party-gateway")
    with http_server(launch("mcpcore", STATE_KEYS)) as everything, \
            http_server(launch("sdk", STATE_KEYS)) as sdk, \
            http_server(launch("fastmcp", STATE_KEYS)) as fastmcp:
        config = folder / "gateway.toml"
        config.write_text(config_text(everything, sdk, fastmcp, node), encoding="utf-8")
        with gateway_process(config, folder / "gateway.log") as url:
            yield url


def text_of(blocks: Any) -> str:
    texts = (getattr(block, "text", None) for block in blocks)
    return "\n".join(text for text in texts if isinstance(text, str))


# -- the clients: each runs the plan and reports the same shape -------------------------
async def run_ours(url: str, mode: str) -> dict[str, Any]:
    from mcpcore.client import Client

    asked: list[str] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": ANSWER}

    out: dict[str, Any] = {"asked": asked, "calls": {}, "reads": {}, "prompts": {}}
    async with Client.http(url, mode=mode, era_cache=None, on_elicit=elicit,
                           max_rounds=20) as client:
        out["version"] = client.protocol_version
        out["tools"] = [tool.name for tool in await client.tools()]
        for name, args, _ in CALLS:
            result = await client.call_tool(name, args)
            out["calls"][name] = {"isError": bool(result.is_error),
                                  "text": text_of(result.content)}
        for uri, _ in READS:
            read = await client.read_resource(uri)
            out["reads"][uri] = "\n".join(c.text for c in read.contents)  # type: ignore[union-attr]
        for prompt, arguments, _ in PROMPTS:
            got = await client.get_prompt(prompt, arguments or {})
            out["prompts"][prompt] = "\n".join(text_of([m.content]) for m in got.messages)
    return out


async def run_python_sdk(url: str, mode: str) -> dict[str, Any]:
    import mcp.types as types
    from mcp import Client

    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=ANSWER)

    out: dict[str, Any] = {"asked": asked, "calls": {}, "reads": {}, "prompts": {}}
    async with Client(url, mode=mode, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
        out["version"] = client.protocol_version
        tools: list[str] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += [tool.name for tool in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        out["tools"] = tools
        for name, args, _ in CALLS:
            result = await client.call_tool(name, args)
            out["calls"][name] = {"isError": bool(result.is_error),
                                  "text": text_of(result.content)}
        for uri, _ in READS:
            read = await client.read_resource(uri)
            out["reads"][uri] = "\n".join(getattr(c, "text", "") for c in read.contents)
        for prompt, arguments, _ in PROMPTS:
            got = await client.get_prompt(prompt, arguments)
            out["prompts"][prompt] = "\n".join(text_of([m.content]) for m in got.messages)
    return out


def run_ts_sdk(url: str, mode: str) -> dict[str, Any]:
    node = third_party("ts-sdk-v2-client")
    plan = {"answer": ANSWER, "calls": [[n, a] for n, a, _ in CALLS],
            "reads": [u for u, _ in READS], "prompts": [[n, a] for n, a, _ in PROMPTS]}
    done = subprocess.run([*node, str(TS_CLIENT), url, mode], input=json.dumps(plan),
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, f"the TypeScript client failed:\n{done.stderr[-3000:]}"
    out: dict[str, Any] = json.loads(done.stdout)
    return out


CLIENTS = [("mcpcore", MODERN), ("mcpcore", "legacy"), ("python-sdk", "auto"),
           ("python-sdk", "legacy"), ("ts-sdk", "auto"), ("ts-sdk", "legacy")]


@pytest.mark.parametrize("client, mode", CLIENTS)
async def test_every_client_uses_every_upstream_through_one_gateway(
        gateway_url: str, client: str, mode: str) -> None:
    if client == "mcpcore":
        out = await run_ours(gateway_url, mode)
    elif client == "python-sdk":
        out = await run_python_sdk(gateway_url, mode)
    else:
        out = run_ts_sdk(gateway_url, mode)
    # "auto" reaches 2026-07-28: the gateway serves it, whatever its upstreams speak.
    modern = mode != "legacy"
    assert (out["version"] == MODERN) is modern, out["version"]
    tools = set(out["tools"])
    for prefix in ("everything", "sdk", "fastmcp", "fastmcp25", "se"):
        assert any(name.startswith(f"{prefix}__") for name in tools), prefix
    assert {name for name, _, _ in CALLS} <= tools
    for name, _, expected in CALLS:
        call = out["calls"][name]
        assert call.get("isError") is False and expected in call["text"], (name, call)
    assert len(out["asked"]) == ASKERS, out["asked"]
    for uri, expected in READS:
        assert expected in out["reads"][uri], (uri, out["reads"][uri])
    for prompt, _, expected in PROMPTS:
        assert expected in out["prompts"][prompt], (prompt, out["prompts"][prompt])
