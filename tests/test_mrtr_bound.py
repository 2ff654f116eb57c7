"""Bound questions: an answer counts only as a reply to the question the server asked."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpcore import Context, MrtrConfig, Server
from mcpcore.jsonrpc import Request
from mcpcore.sealing import KeyRing, Sealer

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
YES = {"action": "accept", "content": {"confirm": True}}
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
           "required": ["confirm"]}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@pytest.fixture
def server() -> Server:
    server = Server("bound", "1", mrtr=MrtrConfig(
        sealer=Sealer(KeyRing.from_config(KeyRing.new_key("t")))))

    @server.tool()
    async def wipe(ctx: Context) -> str:
        """Asks for a bound confirmation."""
        answer = await ctx.elicit("Really wipe?", CONFIRM, key="confirm", bound=True)
        return "wiped" if answer.accepted and answer.content["confirm"] else "kept"

    @server.tool()
    async def two_step(ctx: Context) -> str:
        """Asks a name, then a bound confirmation."""
        name = await ctx.elicit("Name?", NAME, key="name")
        await ctx.elicit("Sure?", CONFIRM, key="confirm", bound=True)
        return f"done for {name.content['name']}"

    return server


async def call(server: Server, tool: str, **extra: Any) -> dict[str, Any]:
    params = {"name": tool, "arguments": {}, "_meta": META, **extra}
    return await server.handle(Request(1, "tools/call", msgspec.Raw(msgspec.json.encode(params))))


async def test_a_volunteered_answer_does_not_count(server: Server) -> None:
    result = await call(server, "wipe", inputResponses={"confirm": YES})
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["confirm"]


async def test_the_reply_to_the_question_counts(server: Server) -> None:
    first = await call(server, "wipe")
    done = await call(server, "wipe", inputResponses={"confirm": YES},
                      requestState=first["requestState"])
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == "wiped"


async def test_state_from_a_round_that_asked_something_else_does_not_count(
    server: Server,
) -> None:
    first = await call(server, "two_step")
    assert list(first["inputRequests"]) == ["name"]
    # Round 2 answers the name and slips in a confirmation nobody asked for yet.
    second = await call(server, "two_step", requestState=first["requestState"],
                        inputResponses={"name": {"action": "accept",
                                                 "content": {"name": "Ada"}},
                                        "confirm": YES})
    assert second["resultType"] == "input_required"
    assert list(second["inputRequests"]) == ["confirm"]
    third = await call(server, "two_step", requestState=second["requestState"],
                       inputResponses={"confirm": YES})
    assert third["content"][0]["text"] == "done for Ada"
