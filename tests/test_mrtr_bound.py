"""Bound questions: an answer counts only as a reply to the question the server asked."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpcore import Context, MrtrConfig, Server
from mcpcore.jsonrpc import Request
from mcpcore.principal import ANONYMOUS
from mcpcore.sealing import KeyRing, Sealer, StateBinding, params_digest

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
    async def approve_then_ask(ctx: Context) -> str:
        """A bound approval, then two more questions: the approval rides in the state."""
        approval = await ctx.elicit("Approve?", CONFIRM, key="confirm", bound=True)
        await ctx.elicit("Name?", NAME, key="name")
        await ctx.elicit("Nick?", NAME, key="nick")
        return "approved" if approval.accepted else "declined"

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


async def test_an_answer_carried_in_the_state_is_not_replaced_by_a_volunteered_one(
    server: Server,
) -> None:
    """The answer a round used is the one carried on: a later round that slips in
    another reply to a bound question it was not asked changes nothing, in that round
    or any after it (the state once carried the slipped-in reply forward)."""
    first = await call(server, "approve_then_ask")
    second = await call(server, "approve_then_ask", requestState=first["requestState"],
                        inputResponses={"confirm": {"action": "decline"}})
    assert list(second["inputRequests"]) == ["name"]
    ada = {"action": "accept", "content": {"name": "Ada"}}
    third = await call(server, "approve_then_ask", requestState=second["requestState"],
                       inputResponses={"name": ada, "confirm": YES})
    assert list(third["inputRequests"]) == ["nick"]
    done = await call(server, "approve_then_ask", requestState=third["requestState"],
                      inputResponses={"nick": ada})
    assert done["content"][0]["text"] == "declined"


async def test_keys_asked_that_are_not_strings_are_ignored(server: Server) -> None:
    """The asked keys come out of the sealed state; only strings among them count (a
    list there, which no set can hold, is no server error either)."""
    first = await call(server, "wipe")
    sealer = server.mrtr.sealer
    assert sealer is not None
    binding = StateBinding(ANONYMOUS.key, "tools/call",
                           params_digest("tools/call", {"name": "wipe", "arguments": {}}))
    opened = sealer.open(first["requestState"], binding)
    for asked in ([1, ["confirm"], None, "confirm"], [["confirm"]]):
        state = sealer.seal(binding, round=1, data={**opened.data, "asked": asked})
        done = await call(server, "wipe", inputResponses={"confirm": YES}, requestState=state)
        if "confirm" in asked:
            assert done["content"][0]["text"] == "wiped"
        else:  # the reply counts only to a question the state proves was asked
            assert list(done["inputRequests"]) == ["confirm"]
