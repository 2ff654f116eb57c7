"""One MRTR round without the client's own loop (``call_tool_round``), and a call's own
answerer for the 2025 server's requests (``on_request``): what a gateway relays with."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from mcpcore import Context, Server, StreamableHTTP
from mcpcore.client import Client, RemoteProtocolError
from mcpcore.client.resolvers import Unanswerable
from mcpcore.conformance.asgi import StreamingASGITransport

URL = "http://localhost/mcp"
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def never(params: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError(f"the client's own resolver was asked: {params}")


async def test_one_round_returns_input_required_raw(connect: Any) -> None:
    async with connect(on_elicit=never) as client:
        first = await client.call_tool_round("test_input_required_result_multi_round", {})
        assert first["resultType"] == "input_required"
        assert set(first["inputRequests"]) == {"user_name"}
        answer = {"action": "accept", "content": {"name": "Ada"}}
        second = await client.call_tool_round(
            "test_input_required_result_multi_round", {},
            input_responses={"user_name": answer}, request_state=first["requestState"])
        assert second["resultType"] == "input_required"
        assert set(second["inputRequests"]) == {"favorite_color"}
        done = await client.call_tool_round(
            "test_input_required_result_multi_round", {},
            input_responses={"favorite_color": {"action": "accept",
                                                "content": {"color": "teal"}}},
            request_state=second["requestState"])
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "Ada likes teal"


def asking_server() -> Server:
    server = Server("asker", "1.0.0")

    @server.tool()
    async def who(ctx: Context, tag: str) -> str:
        answer = await ctx.elicit(f"Who is {tag}?", FORM)
        return f"{tag}: {(answer.content or {}).get('name')}"

    return server


@pytest.mark.parametrize("concurrent", [1, 3])
async def test_a_2025_servers_question_reaches_the_calls_own_answerer(
        concurrent: int, state_keys: str) -> None:
    app = StreamableHTTP(asking_server())
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                        on_elicit=never) as client:
        async def call(tag: str) -> dict[str, Any]:
            async def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
                assert method == "elicitation/create"
                assert params["message"] == f"Who is {tag}?"  # its own call's question
                await asyncio.sleep(0.01)
                return {"action": "accept", "content": {"name": f"name-of-{tag}"}}

            return await client.call_tool_round("who", {"tag": tag}, on_request=answer)

        results = await asyncio.gather(*(call(f"t{i}") for i in range(concurrent)))
        assert [r["content"][0]["text"] for r in results] == [
            f"t{i}: name-of-t{i}" for i in range(concurrent)]


async def test_an_answerer_that_cannot_answer_sends_the_server_an_error(
        state_keys: str) -> None:
    app = StreamableHTTP(asking_server())
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http, \
            Client.http(URL, http_client=http, mode="legacy", heartbeat=None,
                        on_elicit=never) as client:
        async def refuse(method: str, params: dict[str, Any]) -> dict[str, Any]:
            raise Unanswerable("nobody to ask")

        with pytest.raises(RemoteProtocolError, match="nobody to ask"):
            await client.call_tool_round("who", {"tag": "x"}, on_request=refuse)
