"""The input bridge: one MRTR handler serves legacy sessions through real
server→client requests on the tool call's SSE stream, answered by separate POSTs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpcore import Context, MrtrConfig, Server, StreamableHTTP
from mcpcore.transports.legacy_http import LegacyShim
from tests.support.asgi import Exchange
from tests.support.clock import ManualClock
from tests.support.legacy import LegacyClient

FULL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}
USER = {"username": "ada", "email": "ada@example.com"}


async def ask(call: Exchange, method: str) -> dict[str, Any]:
    """The next message must be a server request for ``method``; return it."""
    message = await call.next()
    assert message.get("method") == method, message
    assert message["jsonrpc"] == "2.0"
    assert isinstance(message["id"], (str, int))
    return message


async def final(call: Exchange) -> dict[str, Any]:
    message = await call.next()
    await call.finished()
    assert "method" not in message, message
    assert call.complete
    return message


async def test_elicitation_round_trip(client: LegacyClient) -> None:
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "Who are you?"}}, id=41)
    question = await ask(call, "elicitation/create")
    assert call.is_sse and call.headers["mcp-session-id"] == client.session_id
    params = question["params"]
    assert params["mode"] == "form"
    assert params["message"] == "Who are you?"
    assert params["requestedSchema"]["required"] == ["username", "email"]
    assert "_meta" not in params or "io.modelcontextprotocol/subscriptionId" not in str(params)

    reply = await client.answer(question["id"], {"action": "accept", "content": USER})
    assert reply.status == 202 and reply.body is None
    done = await final(call)
    assert done["id"] == 41
    assert done["result"] == {"content": [{"type": "text", "text":
                                           f"User response: action=accept, content={USER}"}]}


async def test_2025_06_18_forms_have_no_mode(client: LegacyClient) -> None:
    await client.initialize("2025-06-18", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "m"}})
    question = await ask(call, "elicitation/create")
    assert "mode" not in question["params"]
    await client.answer(question["id"], {"action": "decline"})
    done = await final(call)
    assert "action=decline" in done["result"]["content"][0]["text"]


async def test_sampling_round_trip(client: LegacyClient) -> None:
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_sampling",
                                        "arguments": {"prompt": "Capital of France?"}})
    question = await ask(call, "sampling/createMessage")
    assert question["params"]["maxTokens"] == 100
    assert question["params"]["messages"][0]["content"]["text"] == "Capital of France?"
    await client.answer(question["id"], {"role": "assistant", "model": "m",
                                         "content": {"type": "text", "text": "Paris"}})
    done = await final(call)
    assert done["result"]["content"][0]["text"] == "LLM response: Paris"


async def test_multi_round_asks_one_question_after_the_other(client: LegacyClient) -> None:
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_input_required_result_multi_round"})
    first = await ask(call, "elicitation/create")
    assert first["params"]["message"] == "What is your name?"
    await client.answer(first["id"], {"action": "accept", "content": {"name": "Ada"}})
    second = await ask(call, "elicitation/create")
    assert second["params"]["message"] == "What is your favourite colour?"
    assert second["id"] != first["id"]
    await client.answer(second["id"], {"action": "accept", "content": {"color": "teal"}})
    done = await final(call)
    assert done["result"]["content"][0]["text"] == "Ada likes teal"


async def test_several_questions_at_once_answered_out_of_order(client: LegacyClient) -> None:
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_input_required_result_multiple_inputs"})
    questions = {}
    for _ in range(3):
        message = await call.next()
        questions[message["method"]] = message
    assert set(questions) == {"elicitation/create", "sampling/createMessage", "roots/list"}
    assert len({q["id"] for q in questions.values()}) == 3
    await client.answer(questions["roots/list"]["id"],
                        {"roots": [{"uri": "file:///work", "name": "work"}]})
    await client.answer(questions["sampling/createMessage"]["id"], {
        "role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}})
    await client.answer(questions["elicitation/create"]["id"],
                        {"action": "accept", "content": {"name": "Ada"}})
    done = await final(call)
    assert done["result"]["content"][0]["text"] == "name=Ada greeting=hi roots=1"


async def test_a_client_error_response_fails_the_call_clearly(client: LegacyClient) -> None:
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "m"}}, id="e1")
    question = await ask(call, "elicitation/create")
    reply = await client.answer(question["id"], error={"code": -32600,
                                                       "message": "User rejected the form"})
    assert reply.status == 202
    done = await final(call)
    assert done["id"] == "e1"
    assert done["error"]["code"] == -32603
    assert "elicitation/create" in done["error"]["message"]
    assert "User rejected the form" in done["error"]["message"]


async def test_without_the_capability_no_question_is_sent(client: LegacyClient) -> None:
    await client.initialize("2025-11-25", {})
    call = client.stream("tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "m"}}, id="nocap")
    done = await final(call)
    assert done["id"] == "nocap"
    assert "error" in done
    assert done["error"]["code"] == -32021
    assert "elicitation" in done["error"]["data"]["requiredCapabilities"]


async def test_an_answer_from_another_session_is_not_taken(app: Any,
                                                           client: LegacyClient) -> None:
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "m"}})
    question = await ask(call, "elicitation/create")
    intruder = LegacyClient(app)
    try:
        await intruder.initialize("2025-11-25", FULL_CAPS)
        forged = await intruder.answer(question["id"], {"action": "accept",
                                                        "content": {"username": "eve"}})
        assert forged.status == 202  # accepted as a message, but routed to its own session
        with pytest.raises(TimeoutError):
            await call.next(timeout=0.2)
    finally:
        await intruder.aclose()
    await client.answer(question["id"], {"action": "accept", "content": USER})
    done = await final(call)
    assert "ada@example.com" in done["result"]["content"][0]["text"]


async def test_closing_the_stream_does_not_cancel_a_legacy_request(
        client: LegacyClient) -> None:
    """In legacy sessions disconnection is not cancellation."""
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "m"}})
    question = await ask(call, "elicitation/create")
    await call.hang_up()
    reply = await client.answer(question["id"], {"action": "accept", "content": USER})
    assert reply.status == 202
    await call.finished()
    assert not call.task.cancelled()
    assert call.sent_after_hang_up >= 1  # the handler ran on and produced its response


async def test_notifications_cancelled_ends_the_call_without_a_response(
        client: LegacyClient) -> None:
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "m"}}, id=77)
    await ask(call, "elicitation/create")
    cancelled = await client.notify("notifications/cancelled", {"requestId": 77})
    assert cancelled.status == 202
    await call.finished()
    assert call.complete
    assert all("result" not in m and "error" not in m for m in call.pending())


async def test_cancelling_the_call_cancels_its_outstanding_questions(
        client: LegacyClient) -> None:
    await client.initialize("2025-11-25", FULL_CAPS)
    call = client.stream("tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "m"}}, id=78)
    question = await ask(call, "elicitation/create")
    await client.notify("notifications/cancelled", {"requestId": 78})
    await call.finished()
    notices = [m for m in call.pending() if m.get("method") == "notifications/cancelled"]
    assert [n["params"]["requestId"] for n in notices] == [question["id"]]


async def test_a_2025_03_26_client_may_answer_inside_a_batch(client: LegacyClient) -> None:
    await client.initialize("2025-03-26", {"sampling": {}})
    call = client.stream("tools/call", {"name": "test_sampling",
                                        "arguments": {"prompt": "p"}})
    question = await ask(call, "sampling/createMessage")
    reply = await client.post([{"jsonrpc": "2.0", "id": question["id"], "result": {
        "role": "assistant", "model": "m", "content": {"type": "text", "text": "batched"}}}])
    assert reply.status == 202
    done = await final(call)
    assert done["result"]["content"][0]["text"] == "LLM response: batched"


async def test_a_question_cannot_be_asked_from_inside_a_batch(client: LegacyClient) -> None:
    await client.initialize("2025-03-26", {"sampling": {}})
    reply = await client.post([{"jsonrpc": "2.0", "id": "s", "method": "tools/call",
                                "params": {"name": "test_sampling",
                                           "arguments": {"prompt": "p"}}}])
    assert reply.status == 200
    (item,) = reply.body
    assert item["id"] == "s"
    assert item["error"]["code"] == -32603
    assert "batch" in item["error"]["message"]


# -- a small server: URL elicitation and the answer timeout ------------------------------
@pytest.fixture
async def small() -> AsyncIterator[LegacyClient]:
    server = Server("bridge-tests", mrtr=MrtrConfig.from_env())

    @server.tool()
    async def sign_in(ctx: Context) -> str:
        """Sends the user to a URL."""
        answer = await ctx.elicit_url("Please sign in", "https://example.com/sign-in")
        return f"action={answer.action}"

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        """Asks a name."""
        answer = await ctx.elicit("Name?", {"type": "object",
                                            "properties": {"name": {"type": "string"}}})
        return f"hello {answer.content['name']}"

    clock = ManualClock()
    app = StreamableHTTP(server, legacy=LegacyShim(server, response_timeout=300,
                                                  sleep=clock.sleep))
    legacy = LegacyClient(app)
    legacy.clock = clock  # type: ignore[attr-defined]
    yield legacy
    await legacy.aclose()


async def test_url_elicitation_gets_a_minted_elicitation_id(small: LegacyClient) -> None:
    """2025-11-25 URL elicitation requires elicitationId; 2026-07-28 has none."""
    await small.initialize("2025-11-25", {"elicitation": {"form": {}, "url": {}}})
    ids = set()
    for _ in range(2):
        call = small.stream("tools/call", {"name": "sign_in"})
        question = await ask(call, "elicitation/create")
        params = question["params"]
        assert params["mode"] == "url"
        assert params["url"] == "https://example.com/sign-in"
        assert isinstance(params["elicitationId"], str) and len(params["elicitationId"]) >= 16
        ids.add(params["elicitationId"])
        await small.answer(question["id"], {"action": "accept"})
        done = await final(call)
        assert done["result"]["content"][0]["text"] == "action=accept"
    assert len(ids) == 2


async def test_an_unanswered_question_times_out_with_a_clear_error(
        small: LegacyClient) -> None:
    await small.initialize("2025-11-25", {"elicitation": {}})
    call = small.stream("tools/call", {"name": "ask_name"}, id="slow")
    await ask(call, "elicitation/create")
    clock: ManualClock = small.clock  # type: ignore[attr-defined]
    await clock.until_sleeping(2)  # the answer's timeout and the stream's keepalive
    await clock.advance(299)
    assert call.pending() == []  # not yet
    await clock.advance(1)
    done = await final(call)
    assert done["id"] == "slow"
    assert done["error"]["code"] == -32603
    assert "Timed out after 300s" in done["error"]["message"]
    assert "elicitation/create" in done["error"]["message"]


async def test_a_waiting_bridged_stream_sends_keepalives() -> None:
    server = Server("keepalive-tests", mrtr=MrtrConfig.from_env())

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        """Asks a name."""
        answer = await ctx.elicit("Name?", {"type": "object",
                                            "properties": {"name": {"type": "string"}}})
        return f"hello {answer.content['name']}"

    clock = ManualClock()
    app = StreamableHTTP(server, legacy=LegacyShim(server, keepalive=15, sleep=clock.sleep))
    legacy = LegacyClient(app)
    try:
        await legacy.initialize("2025-11-25", {"elicitation": {}})
        call = legacy.stream("tools/call", {"name": "ask_name"})
        question = await ask(call, "elicitation/create")
        await clock.until_sleeping(2)
        for _ in range(6):  # six keepalive periods without an answer
            await clock.advance(15)
        waited = call.comments
        await legacy.answer(question["id"], {"action": "accept", "content": {"name": "Ada"}})
        await final(call)
        assert waited == 6
    finally:
        await legacy.aclose()
