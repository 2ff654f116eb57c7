"""A real 2025-11-25 client through the fleet: the official Python SDK (``mcp`` 2.3.0).

Three instances of examples/everything share one real Redis (``MCPCORE_REDIS_URL``) and
sit behind nginx round-robin with no sticky sessions. The SDK initializes a legacy
session, lists tools and calls tools that ask the client for input (elicitation,
sampling). The tool call's SSE stream stays open on one instance while the SDK's
answer POST is routed by nginx to the next one: the answer reaches the waiting instance
only through the Store's pub/sub. ``X-Upstream`` (added by nginx) shows which
instance served each HTTP request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.integration.conftest import Fleet, RedisServer, fleet

pytestmark = pytest.mark.integration

USER = {"username": "ada", "email": "ada@example.com"}
MODEL_ANSWER = "Paris is the capital of France."


@pytest.fixture(scope="module")
def redis_fleet(redis_server: RedisServer,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with fleet(tmp_path_factory.mktemp("legacy-fleet"),
               env={"MCPCORE_REDIS_URL": redis_server.url}) as running:
        yield running


@dataclass
class Exchange:
    """One HTTP exchange as the SDK's httpx client saw it."""

    method: str
    status: int
    upstream: str
    body: Any  # the JSON-RPC message posted, if any


@dataclass
class Recorder:
    exchanges: list[Exchange] = field(default_factory=list)
    elicitations: list[types.ElicitRequestParams] = field(default_factory=list)
    samplings: list[types.CreateMessageRequestParams] = field(default_factory=list)

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        body = json.loads(request.content) if request.content else None
        self.exchanges.append(Exchange(request.method, response.status_code,
                                       response.headers.get("x-upstream", ""), body))

    async def elicit(self, context: Any, params: types.ElicitRequestParams
                     ) -> types.ElicitResult:
        self.elicitations.append(params)
        return types.ElicitResult(action="accept", content=dict(USER))

    async def sample(self, context: Any, params: types.CreateMessageRequestParams
                     ) -> types.CreateMessageResult:
        self.samplings.append(params)
        return types.CreateMessageResult(
            role="assistant", model="test-model",
            content=types.TextContent(type="text", text=MODEL_ANSWER))

    def upstream_of_call(self, tool: str) -> str:
        (found,) = [e.upstream for e in self.exchanges
                    if isinstance(e.body, dict) and e.body.get("method") == "tools/call"
                    and e.body["params"]["name"] == tool]
        return found

    def answers(self) -> list[Exchange]:
        """POSTs carrying the client's JSON-RPC responses to bridged server requests."""
        return [e for e in self.exchanges if isinstance(e.body, dict)
                and "method" not in e.body and ("result" in e.body or "error" in e.body)]


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


def access_log_upstreams(log: Path, session_id: str) -> set[str]:
    """Upstreams nginx logged for this session's requests (``METHOD STATUS UP SID``)."""
    seen = set()
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == session_id:
            seen.add(parts[2])
    return seen


async def test_sdk_legacy_session_with_bridged_input_across_instances(
        redis_fleet: Fleet) -> None:
    recorder = Recorder()
    session_ids: list[str] = []

    async def capture_sid(response: httpx2.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid and sid not in session_ids:
            session_ids.append(sid)

    async with (
        httpx2.AsyncClient(timeout=30, event_hooks={
            "response": [recorder.on_response, capture_sid]}) as http,
        streamable_http_client(redis_fleet.url, http_client=http) as (read, write),
        ClientSession(read, write, sampling_callback=recorder.sample,
                      elicitation_callback=recorder.elicit) as session,
    ):
        init = await session.initialize()
        assert init.protocol_version == "2025-11-25"
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"test_simple_text", "test_elicitation", "test_sampling"} <= names
        simple = await session.call_tool("test_simple_text", {})
        assert text_of(simple) == "This is a simple text response for testing."
        elicited = await session.call_tool("test_elicitation", {"message": "Who are you?"})
        assert text_of(elicited) == f"User response: action=accept, content={USER}"
        sampled = await session.call_tool("test_sampling", {"prompt": "Capital of France?"})
        assert text_of(sampled) == f"LLM response: {MODEL_ANSWER}"

    # The callbacks saw the server's questions as 2025-11-25 server requests.
    assert [p.message for p in recorder.elicitations] == ["Who are you?"]
    assert len(recorder.samplings) == 1
    assert recorder.samplings[0].messages[0].content.text == "Capital of France?"

    # Routing: every answer POST landed on another instance than the open tool call.
    answers = recorder.answers()
    assert len(answers) == 2, recorder.exchanges
    assert all(a.status == 202 for a in answers)
    call_upstreams = [recorder.upstream_of_call("test_elicitation"),
                      recorder.upstream_of_call("test_sampling")]
    answer_upstreams = [a.upstream for a in answers]
    print(f"\ncalls on {call_upstreams}, answers on {answer_upstreams}")
    assert all(call_upstreams) and all(answer_upstreams)
    assert call_upstreams[0] != answer_upstreams[0]
    assert call_upstreams[1] != answer_upstreams[1]
    served = {e.upstream for e in recorder.exchanges}
    assert len(served) >= 2, served
    # nginx's own log agrees (the SDK's DELETE ended the session: nothing left behind).
    assert len(session_ids) == 1
    assert len(access_log_upstreams(redis_fleet.access_log, session_ids[0])) >= 2


async def test_concurrent_sdk_sessions_get_their_own_answers(redis_fleet: Fleet) -> None:
    """Answers are routed by (session, server request id): four sessions at once never
    receive each other's answers."""
    async def one(tag: str) -> tuple[str, str]:
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            streamable_http_client(redis_fleet.url, http_client=http) as (read, write),
        ):
            async def elicit(context: Any, params: types.ElicitRequestParams
                             ) -> types.ElicitResult:
                await asyncio.sleep(0.05)  # keep several questions in flight at once
                return types.ElicitResult(action="accept",
                                          content={"username": tag, "email": f"{tag}@x"})

            async def sample(context: Any, params: types.CreateMessageRequestParams
                             ) -> types.CreateMessageResult:
                return types.CreateMessageResult(
                    role="assistant", model="m",
                    content=types.TextContent(type="text", text=f"model-{tag}"))

            async with ClientSession(read, write, sampling_callback=sample,
                                     elicitation_callback=elicit) as session:
                await session.initialize()
                elicited = await session.call_tool("test_elicitation", {"message": tag})
                sampled = await session.call_tool("test_sampling", {"prompt": tag})
                return text_of(elicited), text_of(sampled)

    tags = [f"user{i}" for i in range(4)]
    results = await asyncio.gather(*(one(t) for t in tags))
    for tag, (elicited, sampled) in zip(tags, results, strict=True):
        assert f"'username': '{tag}'" in elicited
        assert sampled == f"LLM response: model-{tag}"
