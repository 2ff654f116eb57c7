"""``/metrics`` after a scripted run of examples/operated, parsed with prometheus_client's
own parser: every expected series is there, with the values the script implies; labels
stay bounded; a scrape never blocks requests; 401/403 answers count by reason."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from examples.operated import build
from mcpcore.metrics import Metrics
from tests.support.wire import make_meta, standard_headers

RULES = """\
version = 1
default = "deny"
[categories.read]
scopes = []
[tools.lookup]
rate_limit = { calls = 3, seconds = 60 }
[tools.slow]
timeout = 0.05
[[rules]]
id = "no-drops"
effect = "deny"
tools = ["drop_*"]
[[rules]]
id = "reads"
effect = "allow"
categories = ["read"]
"""


class Client:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.ids = 0

    async def post(self, method: str, params: dict[str, Any],
                   headers: dict[str, str] | None = None) -> httpx.Response:
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method,
                "params": {**params, "_meta": make_meta({})}}
        sent = standard_headers(method, body["params"])
        sent["Accept"] = "application/json"
        sent.update(headers or {})
        return await self.http.post("/mcp", json=body, headers=sent)

    async def call(self, tool: str, **arguments: Any) -> httpx.Response:
        return await self.post("tools/call", {"name": tool, "arguments": arguments})


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[tuple[Client, Metrics]]:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    _, app, metrics = build(policy_file=rules)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield Client(http), metrics


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_a_scripted_run_leaves_the_expected_series(rig: tuple[Client, Metrics]
                                                         ) -> None:
    client, _ = rig
    assert (await client.post("tools/list", {})).status_code == 200
    for _ in range(3):
        assert (await client.call("lookup", key="alpha")).json()["result"]["content"][0][
            "text"] == "1"
    limited = await client.call("lookup", key="alpha")                        # 4th: 429
    assert limited.status_code == 429
    quick = await client.call("slow", seconds=0.0)
    assert quick.json()["result"]["content"][0]["text"] == "waited 0 s"
    late = (await client.call("slow", seconds=30)).json()["result"]               # timeout
    assert late["isError"] is True and "did not finish within 0.05 seconds" in (
        late["content"][0]["text"])
    denied = (await client.call("drop_table", name="t")).json()["result"]
    assert denied["isError"] is True
    unknown = (await client.call("no_such_tool")).json()
    assert unknown["error"]["code"] == -32602
    forged = await client.post("tools/call", {"name": "lookup", "arguments": {"key": "x"},
                                              "requestState": "forged.state"})
    assert forged.json()["error"]["code"] == -32602
    bad_type = await client.http.post("/mcp", content=b"{}",
                                      headers={"Content-Type": "text/plain"})
    assert bad_type.status_code == 415
    assert (await client.http.get("/healthz")).text == "ok\n"
    assert (await client.http.get("/readyz")).text == "ready\n"

    scrape = await client.http.get("/metrics")
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain; version=")
    found = samples(scrape.text)
    requests = "mcpcore_requests_total"
    assert value(found, requests, method="tools/list", tool="", outcome="ok") == 1
    assert value(found, requests, method="tools/call", tool="lookup", outcome="ok") == 3
    assert value(found, requests, method="tools/call", tool="lookup", outcome="error") == 2
    assert value(found, requests, method="tools/call", tool="slow", outcome="ok") == 1
    assert value(found, requests, method="tools/call", tool="slow",
                 outcome="tool_error") == 1
    assert value(found, requests, method="tools/call", tool="drop_table",
                 outcome="tool_error") == 1
    assert value(found, requests, method="tools/call", tool="_unknown", outcome="error") == 1
    assert value(found, "mcpcore_errors_total", method="tools/call", code="-32600") == 1
    assert value(found, "mcpcore_errors_total", method="tools/call", code="-32602") == 2
    assert value(found, "mcpcore_tool_timeouts_total", tool="slow") == 1
    assert value(found, "mcpcore_rate_limited_total", tool="lookup") == 1
    assert value(found, "mcpcore_mrtr_state_rejected_total") == 1
    decisions = "mcpcore_policy_decisions_total"
    # Three lookups, two slow calls, and the forged one (decided before its state failed).
    assert value(found, decisions, decision="allow", rule="reads", reason="rule_allow") == 6
    assert value(found, decisions, decision="deny", rule="no-drops", reason="rule_deny") == 1
    assert value(found, decisions, decision="deny", rule="rate_limit",
                 reason="rate_limited") == 1
    # Every tools/call was timed; the one that timed out took at least its budget.
    calls = sum(v for (n, labels), v in found.items()
                if n == "mcpcore_request_duration_seconds_count"
                and ("method", "tools/call") in labels)
    assert calls == 9
    slow_sum = value(found, "mcpcore_request_duration_seconds_sum", method="tools/call",
                     outcome="tool_error")
    assert slow_sum >= 0.05
    assert value(found, "mcpcore_requests_in_flight") == 0
    assert value(found, "mcpcore_listen_streams") == 0
    assert value(found, "mcpcore_ready") == 1
    assert value(found, "mcpcore_http_responses_total", status="415") == 1
    assert value(found, "mcpcore_http_responses_total", status="429") == 1
    assert value(found, "mcpcore_http_responses_total", status="200") >= 8
    # Bounded labels: no argument, URI or request id ever became one.
    labels = {v for (_, pairs) in found for _, v in pairs}
    assert not labels & {"alpha", "no_such_tool", "forged.state", "t", "x"}


async def test_health_and_metrics_answer_get_and_head_only(rig: tuple[Client, Metrics]
                                                           ) -> None:
    client, _ = rig
    head = await client.http.head("/healthz")
    assert head.status_code == 200 and head.content == b""
    posted = await client.http.post("/metrics")
    assert posted.status_code == 405 and posted.headers["allow"] == "GET, HEAD"
    # /metrics keeps the Host check (a rebinding page must not read it); health does not.
    rebound = await client.http.get("/metrics", headers={"Host": "evil.example"})
    assert rebound.status_code == 403
    probe = await client.http.get("/healthz", headers={"Host": "10.1.2.3:8000"})
    assert probe.status_code == 200


async def test_a_scrape_never_blocks_requests(rig: tuple[Client, Metrics]) -> None:
    """A collector that cannot finish until a tools/call has completed: if the scrape
    ran on the event loop, the call could never run and this would time out."""
    client, metrics = rig
    released = threading.Event()

    class Slow:
        def collect(self) -> list[Any]:
            assert released.wait(10), "the request never ran while the scrape was busy"
            return []

    metrics.registry.register(Slow())  # type: ignore[arg-type]
    scrape = asyncio.ensure_future(client.http.get("/metrics"))
    await asyncio.sleep(0)
    answer = await asyncio.wait_for(client.call("lookup", key="beta"), 10)
    assert answer.json()["result"]["content"][0]["text"] == "2"
    assert not scrape.done()
    released.set()
    assert (await asyncio.wait_for(scrape, 10)).status_code == 200


async def test_auth_failures_count_by_reason() -> None:
    from examples.policy_server import build_app
    from mcpcore.health import Operations

    app, _, _ = build_app("http://127.0.0.1:8000")
    metrics = Metrics()  # the HTTP layer only: the example's module-level server stays as is
    front = Operations(app, metrics=metrics)
    transport = httpx.ASGITransport(app=front)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": make_meta({})}}
        headers = {**standard_headers("tools/list", body["params"]),
                   "Accept": "application/json"}
        missing = await c.post("/mcp", json=body, headers=headers)
        garbage = await c.post("/mcp", json=body,
                               headers={**headers, "Authorization": "Bearer not-a-jwt"})
        found = samples((await c.get("/metrics")).text)
    assert (missing.status_code, garbage.status_code) == (401, 401)
    failures = "mcpcore_auth_failures_total"
    assert value(found, failures, reason="missing_credentials") == 1
    assert value(found, failures, reason="invalid_token") == 1
    assert value(found, "mcpcore_http_responses_total", status="401") == 2
