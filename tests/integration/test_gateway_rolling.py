"""A rolling restart of a gateway fleet under load (issue 27, docs/gateway.md "Operating
a fleet", the drain procedure): three ``mcpcore gateway serve`` processes started as the
page prints them (``--drain-seconds 5 --graceful-timeout 30``), behind nginx with the
block of docs/deploying.md (round-robin, ``proxy_next_upstream error timeout``), one
real Redis, in front of one upstream (``tests.support.rolling_upstream``) reached
twice: as a 2026-07-28 server (``fast``: ``work`` takes 200 ms, so calls are in flight
when an instance stops) and on its 2025 session wire (``forms``: ``ask`` asks the
caller mid-call, which parks the upstream call on the instance that made it).

A load runs all along: modern (2026-07-28) and 2025-era downstream clients calling
``fast__work``, and modern clients calling ``forms__ask`` whose user takes 300 ms to
answer (so calls are parked when their instance stops). Each instance in turn gets
SIGTERM; the test watches its ``/readyz`` (503 ``draining`` at once), waits for it to
exit, starts it again on its port, waits for its ``/readyz``, waits nginx's
``fail_timeout``, and goes on.

Asserted: every call either succeeded or got a typed retryable error (HTTP 503 with
``Retry-After`` and a ``reason``), whose retry then succeeded; nothing else (no 502,
no reset, no ``owner_gone``, no unknown tool). And the upstream's own counts: every
call that succeeded ran exactly once upstream (no call lost, none run twice: nginx
never sends a ``tools/call`` POST to a second instance once one got it). The figures
are printed (``-s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpcore.client import Client
from mcpcore.client.errors import RemoteProtocolError
from tests.integration.conftest import REPO, TEST_STATE_KEYS, Fleet, RedisServer, fleet
from tests.integration.test_gateway_fleet import documented_serve, wait_ready
from tests.support.processes import free_port, stop, wait_for_port

pytestmark = pytest.mark.integration

#: One call, at most, however loaded the machine (a drain is 5 s, a start a few).
CALL_TIMEOUT = 90.0
#: Typed retryable refusals one call may meet before it must succeed.
MAX_TRIES = 8
#: What a typed retryable refusal says (``data.reason`` of an HTTP 503).
RETRYABLE = {"shutting_down", "overloaded", "store_unavailable", "unavailable"}
#: nginx's ``fail_timeout`` in the documented block, and a margin.
FAIL_TIMEOUT = 2.5

CONFIG = """
[gateway]
store_url_env = "GW_REDIS"

[[upstream]]
name = "fast"
url = "{url}"

[[upstream]]
name = "forms"
url = "{url}"
era = "legacy"
"""


@contextlib.contextmanager
def rolling_upstream() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.rolling_upstream", "--host", "127.0.0.1",
         "--port", str(port)], cwd=REPO,
        env={**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, timeout=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


@dataclass
class Outcomes:
    """Every call the load made: its tag, kind and each try's result."""

    calls: dict[str, list[str]] = field(default_factory=dict)  # tag → try results
    kinds: dict[str, str] = field(default_factory=dict)
    failures: list[tuple[str, str]] = field(default_factory=list)

    def record(self, kind: str, tag: str, result: str) -> None:
        self.kinds[tag] = kind
        self.calls.setdefault(tag, []).append(result)

    def succeeded(self) -> list[str]:
        return [tag for tag, tries in self.calls.items() if tries[-1] == "ok"]


def judge(exc: BaseException) -> str | None:
    """The reason of a typed retryable refusal, else None."""
    if isinstance(exc, RemoteProtocolError) and exc.http_status == 503 and \
            isinstance(exc.data, dict) and exc.data.get("reason") in RETRYABLE:
        return str(exc.data["reason"])
    return None


async def load_worker(url: str, kind: str, mode: str, number: int, outcomes: Outcomes,
                      stopping: asyncio.Event) -> None:
    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.3)  # a user taking a moment: the call stays parked
        return {"action": "accept", "content": {"name": "Ada"}}

    async with httpx.AsyncClient(timeout=CALL_TIMEOUT) as http, \
            Client.http(url, http_client=http, mode=mode, era_cache=None,
                        timeout=CALL_TIMEOUT, on_elicit=answer) as client:
        count = 0
        while not stopping.is_set():
            count += 1
            tag = f"{kind}-{number}-{count}"
            tool, arguments, expected = (
                ("forms__ask", {"tag": tag}, f"{tag}: Ada") if kind == "bridged" else
                ("fast__work", {"tag": tag, "ms": 200}, f"{tag} done"))
            for _ in range(MAX_TRIES):
                try:
                    result = await asyncio.wait_for(client.call_tool(tool, arguments),
                                                    CALL_TIMEOUT)
                except Exception as exc:  # judged: typed and retryable, or a failure
                    reason = judge(exc)
                    if reason is None:
                        outcomes.record(kind, tag, f"failed: {exc!r}")
                        outcomes.failures.append((tag, repr(exc)))
                        break
                    outcomes.record(kind, tag, reason)
                    await asyncio.sleep(0.2)
                    continue
                text = str(result.content[0].text) if result.content else ""
                if result.is_error or text != expected:
                    outcomes.record(kind, tag, f"wrong: {text!r}")
                    outcomes.failures.append((tag, text))
                else:
                    outcomes.record(kind, tag, "ok")
                break
            else:
                outcomes.failures.append((tag, f"still refused after {MAX_TRIES} tries"))


def readyz(port: int) -> tuple[int, str]:
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
    except httpx.HTTPError as exc:
        return 0, type(exc).__name__
    status = answer.json().get("status", "") if answer.content.startswith(b"{") else ""
    return answer.status_code, str(status)


def restart(running: Fleet, index: int, env: dict[str, str], serve: Any,
            figures: dict[str, list[float]]) -> None:
    """SIGTERM, watch ``/readyz`` say draining, wait for the exit, start again on the
    same port, wait for ``/readyz``: the drain procedure of docs/gateway.md."""
    port, proc = running.ports[index], running.procs[index]
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    seen = []
    while True:
        status, text = readyz(port)
        seen.append((round(time.monotonic() - signalled, 2), status, text))
        if (status, text) == (503, "draining"):
            break
        assert time.monotonic() - signalled < 4.0, f"/readyz never said draining: {seen}"
        time.sleep(0.05)
    figures["readyz_draining_after_s"].append(time.monotonic() - signalled)
    proc.wait(timeout=60)
    figures["exited_after_s"].append(time.monotonic() - signalled)
    running.procs[index] = subprocess.Popen(
        serve(port), cwd=REPO,
        env={**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS, **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(running.instance_url(index).replace("/mcp", "/readyz"))
    figures["ready_again_after_s"].append(time.monotonic() - signalled)


async def test_a_rolling_restart_under_load_loses_no_acknowledged_call(
        tmp_path: Path, redis_server: RedisServer) -> None:
    outcomes = Outcomes()
    figures: dict[str, list[float]] = {"readyz_draining_after_s": [], "exited_after_s": [],
                                       "ready_again_after_s": []}
    with rolling_upstream() as upstream:
        config = tmp_path / "fleet.toml"
        config.write_text(CONFIG.format(url=upstream))
        serve, keys = documented_serve(config)
        env = {"GW_REDIS": redis_server.url, "MCPCORE_STATE_KEYS": keys}
        with fleet(tmp_path, env=env, command=serve) as running:
            for index in range(len(running.ports)):
                wait_ready(running.instance_url(index).replace("/mcp", "/readyz"))
            stopping = asyncio.Event()
            workers = [
                *(load_worker(running.url, "modern", "2026-07-28", n, outcomes, stopping)
                  for n in range(4)),
                *(load_worker(running.url, "legacy", "legacy", n, outcomes, stopping)
                  for n in range(2)),
                *(load_worker(running.url, "bridged", "2026-07-28", n, outcomes, stopping)
                  for n in range(2))]
            load = asyncio.gather(*workers)
            try:
                await asyncio.sleep(2.0)
                started = time.monotonic()
                for index in range(len(running.ports)):
                    await asyncio.to_thread(restart, running, index, env, serve, figures)
                    await asyncio.sleep(FAIL_TIMEOUT)  # nginx tries the instance again
                rolled = time.monotonic() - started
            finally:
                stopping.set()
                await asyncio.wait_for(load, CALL_TIMEOUT * MAX_TRIES)
            # What ran upstream, per tag, asked of one instance directly.
            tags = list(outcomes.calls)
            async with Client.http(running.instance_url(0), mode="2026-07-28",
                                   era_cache=None, timeout=CALL_TIMEOUT) as direct:
                counted = json.loads((await direct.call_tool(
                    "fast__ran", {"tags": tags})).content[0].text)
            log = running.access_log.read_text().splitlines()

    tries = Counter(result for results in outcomes.calls.values() for result in results)
    retried = [tag for tag, results in outcomes.calls.items() if len(results) > 1]
    per_kind = Counter(outcomes.kinds[tag] for tag in outcomes.calls)
    passed_on = [line for line in log if line.startswith("POST") and ", " in line]
    print(f"\nrolling restart of 3 gateways under load in {rolled:.1f} s: "
          f"{len(outcomes.calls)} calls ({dict(per_kind)}), tries {dict(tries)}; "
          f"{len(retried)} retried after a typed refusal, all then succeeded: "
          f"{all(outcomes.calls[t][-1] == 'ok' for t in retried)}; failures "
          f"{len(outcomes.failures)}; POSTs nginx passed to another instance after a "
          f"refused connection {len(passed_on)}; "
          + "; ".join(f"{k} {[round(v, 2) for v in vs]}" for k, vs in figures.items()))
    assert not outcomes.failures, outcomes.failures[:20]
    assert per_kind["modern"] and per_kind["legacy"] and per_kind["bridged"], per_kind
    assert all(results[-1] == "ok" for results in outcomes.calls.values())
    # Every call acknowledged ran exactly once upstream; every refusal ran nothing.
    twice = {tag: n for tag, n in counted.items() if n != 1}
    assert not twice, twice
