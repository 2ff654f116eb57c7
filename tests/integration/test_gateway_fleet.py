"""The gateway as a fleet, as docs/gateway.md ("Operating a fleet") starts it: its
configuration and its commands (three ``mcpcore gateway serve FILE`` processes, run as
printed with this machine's ports and paths) behind nginx round-robin (the block of
docs/deploying.md, no stickiness), sharing one real Redis (``[gateway] store_url_env``)
and one key ring (``MCPCORE_STATE_KEYS``, made by the page's ``new-key`` command), in
front of two real upstreams: ``examples.everything`` (2026-07-28, MRTR) and the official
Python SDK's server on its 2025 session wire (``era = "legacy"``: its questions
mid-call park the upstream call on the instance that made it).

(a) a modern client's MRTR rounds land on different instances and complete; (b) a
bridged elicitation (2025 upstream) whose retry lands on another instance than the one
holding the parked call completes, the upstream counting exactly one answer; (c) a
2025-era client's session works across instances; (d) the instance holding a parked
call is killed (SIGKILL): the client's retry through nginx gets ``owner_gone`` within
the owner's liveness bound, and the other instances keep serving.

nginx adds ``X-Upstream`` (the instance that answered) to each response: the tests
read it to see where each round landed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpcore.client import Client
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway.handoff import LIVENESS_TTL
from tests.client.third_party import http_server, launch
from tests.docs_blocks import ROOT, as_printed, commands, marked, run_printed
from tests.gateway.test_bridge import User
from tests.integration.conftest import TEST_STATE_KEYS, Fleet, RedisServer, fleet

pytestmark = pytest.mark.integration

#: Every flow is bounded (a loaded 2-core CI machine: generous).
FLOW_TIMEOUT = 120.0

PAGE = ROOT / "docs" / "gateway.md"
MARKER = "tests/integration/test_gateway_fleet.py"


@pytest.fixture(scope="module")
def upstreams() -> Iterator[tuple[str, str]]:
    with http_server(launch("mcpcore", TEST_STATE_KEYS)) as everything, \
            http_server(launch("sdk", TEST_STATE_KEYS)) as sdk:
        yield everything, sdk


def documented_serve(config: Path) -> tuple[Callable[[int], list[str]], str]:
    """The page's loop body (``mcpcore gateway serve`` with its flags) for ``config``,
    as the argv of one instance on a port; and the key ring made by the page's
    command."""
    (bash,) = marked(PAGE, MARKER, "bash")
    keys, redis, loop, line, done = commands(bash)
    # The page's key ring, made as printed; its Redis variable, with this run's Redis.
    assert keys.startswith('export MCPCORE_STATE_KEYS="$(')
    made = run_printed(f'{keys}\nprintf %s "$MCPCORE_STATE_KEYS"')
    assert made.returncode == 0 and made.stdout.startswith("k"), made.stderr
    assert redis.startswith("export GW_REDIS=redis://")
    assert (loop, done) == ("for port in 8001 8002 8003; do", "done")
    assert line.startswith(".venv/bin/mcpcore gateway serve fleet.toml --port $port")
    served = as_printed(line.removesuffix("&").replace("fleet.toml", str(config)))

    def serve(port: int) -> list[str]:  # the page's loop body, for one port
        return ["bash", "-c", "exec " + served.replace("$port", str(port))]

    return serve, made.stdout.strip()


@pytest.fixture(scope="module")
def gateways(upstreams: tuple[str, str], redis_server: RedisServer,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    folder = tmp_path_factory.mktemp("gateway-fleet")
    (toml,) = marked(PAGE, MARKER, "toml")
    everything, sdk = upstreams
    shown = toml.code.replace("http://127.0.0.1:8010/mcp", everything)
    config = folder / "fleet.toml"
    config.write_text(shown.replace("http://127.0.0.1:8011/mcp", sdk))
    serve, keys = documented_serve(config)
    env = {"GW_REDIS": redis_server.url, "MCPCORE_STATE_KEYS": keys}
    with fleet(folder, env=env, command=serve) as running:
        for index in range(len(running.ports)):
            wait_ready(running.instance_url(index).replace("/mcp", "/readyz"))
        yield running


def wait_ready(url: str, seconds: float = 90.0) -> None:
    """Until the instance's catalog is built (``/readyz`` 200)."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=5).status_code == 200:
                return
        assert time.monotonic() < deadline, f"{url} not ready within {seconds} s"
        time.sleep(0.2)


class Landings:
    """Where nginx sent each JSON-RPC request (its ``X-Upstream``)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []  # (method, or "answer"; instance)

    async def hook(self, response: httpx.Response) -> None:
        try:
            body = json.loads(response.request.content or b"null")
        except (ValueError, httpx.RequestNotRead):
            body = None
        if isinstance(body, dict):
            what = str(body.get("method", "answer"))
            self.seen.append((what, response.headers.get("x-upstream", "")))

    def of(self, method: str) -> list[str]:
        return [where for what, where in self.seen if what == method]


@contextlib.asynccontextmanager
async def client(running: Fleet, mode: str, landings: Landings, **options: Any
                 ) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=FLOW_TIMEOUT,
                                 event_hooks={"response": [landings.hook]}) as http, \
            Client.http(running.url, http_client=http, mode=mode, era_cache=None,
                        timeout=FLOW_TIMEOUT, **options) as connected:
        yield connected


def text(result: Any) -> str:
    assert result.is_error is not True, result
    return str(result.content[0].text)


async def test_a_modern_relay_completes_with_rounds_on_different_instances(
        gateways: Fleet) -> None:
    user, landings = User(), Landings()
    async with client(gateways, "2026-07-28", landings, **user.options()) as modern:
        result = await asyncio.wait_for(modern.call_tool(
            "everything__test_input_required_result_multi_round"), FLOW_TIMEOUT)
    assert text(result) == "Ada likes teal"
    assert len(user.asked) == 2
    rounds = landings.of("tools/call")
    print(f"\nMRTR rounds on {rounds}")
    assert len(rounds) == 3 and len(set(rounds)) >= 2, rounds


async def test_a_bridged_elicitation_is_answered_through_another_instance(
        gateways: Fleet) -> None:
    """The 2025 upstream's question parks its call on one instance; the retry lands
    on another (round-robin), is handed to the owner through Redis, and the upstream
    counts one answer."""
    crossed = 0
    for attempt in range(4):  # round-robin crosses at once; other traffic may not let it
        user, landings = User(), Landings()
        tag = f"fleet-{attempt}-{os.getpid()}"
        async with client(gateways, "2026-07-28", landings, **user.options()) as modern:
            result = await asyncio.wait_for(modern.call_tool(
                "forms__ask_counted", {"tag": tag}), FLOW_TIMEOUT)
            assert text(result) == f"{tag}: Ada"
            counted = await modern.call_tool("forms__answers_counted", {"tag": tag})
            assert text(counted) == "1"  # exactly one answer reached the upstream
        first, retry = landings.of("tools/call")[:2]
        print(f"\nparked on {first}, retried on {retry}")
        if first != retry:
            crossed += 1
            break
    assert crossed, "no retry landed on another instance in four tries"


async def test_a_2025_client_session_works_across_instances(gateways: Fleet) -> None:
    user, landings = User(), Landings()
    async with client(gateways, "legacy", landings, **user.options()) as legacy:
        assert text(await legacy.call_tool("everything__test_simple_text")) == \
            "This is a simple text response for testing."
        # 2025 upstream asking a 2025 client, then a 2026-07-28 upstream's rounds
        # becoming the client's session requests: their answers are POSTs that nginx
        # spreads over the instances, routed back through Redis.
        assert text(await asyncio.wait_for(legacy.call_tool("forms__ask_name"),
                                           FLOW_TIMEOUT)) == "hello Ada"
        assert text(await asyncio.wait_for(legacy.call_tool(
            "everything__test_input_required_result_multi_round"), FLOW_TIMEOUT)) == \
            "Ada likes teal"
    assert [kind for kind, _ in user.asked] == ["elicitation/create"] * 3
    served = {where for _, where in landings.seen}
    print(f"\nthe 2025 session was served by {sorted(served)}")
    assert len(served) >= 2, landings.seen


async def test_the_instance_holding_a_parked_call_is_killed(gateways: Fleet) -> None:
    """Runs last: it kills an instance. The retry gets ``owner_gone`` within the
    owner's liveness TTL plus a check interval (here: well inside the bound), and the
    fleet keeps serving."""
    landings = Landings()
    killed: list[float] = []

    def answer_after_killing_the_owner(params: dict[str, Any]) -> dict[str, Any]:
        (owner,) = landings.of("tools/call")
        index = gateways.ports.index(int(owner.rsplit(":", 1)[1]))
        os.kill(gateways.procs[index].pid, signal.SIGKILL)
        gateways.procs[index].wait(30)
        killed.append(time.monotonic())
        return {"action": "accept", "content": {"name": "Ada"}}

    async with client(gateways, "2026-07-28", landings,
                      on_elicit=answer_after_killing_the_owner) as modern:
        with pytest.raises(RemoteProtocolError) as gone:
            await asyncio.wait_for(modern.call_tool("forms__ask_counted",
                                                    {"tag": "killed"}), FLOW_TIMEOUT)
        waited = time.monotonic() - killed[0]
        print(f"\nowner_gone {waited:.1f} s after the owner was killed "
              f"(liveness TTL {LIVENESS_TTL:g} s)")
        assert gone.value.code == -32602
        assert gone.value.data == {"upstream": "forms", "reason": "owner_gone"}
        assert waited < FLOW_TIMEOUT
        # The two others keep serving, through nginx.
        for _ in range(6):
            assert text(await modern.call_tool("everything__test_simple_text")) == \
                "This is a simple text response for testing."
            assert text(await modern.call_tool("forms__add", {"a": 1, "b": 2})) == "3.0"
    alive = [p for p in gateways.procs if p.poll() is None]
    assert len(alive) == 2
