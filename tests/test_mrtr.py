"""MRTR on a dedicated server, driven through ``Server.handle`` (``DirectPeer``).

The fixture tools' round trips over every transport are in test_server.py; here the
engine's rules: keys, capabilities per request, sealed state bindings, rounds, single use.
"""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

from mcpcore import (
    Context,
    InputRequest,
    MrtrConfig,
    Principal,
    Server,
    elicitation,
    roots,
    sampling,
    url_elicitation,
)
from mcpcore.errors import McpError
from mcpcore.jsonrpc import decode_message, encode_error
from mcpcore.sealing import KeyRing, Sealer
from mcpcore.stores import MemoryStore
from tests.support.peers import DirectPeer, Reply
from tests.support.wire import make_meta

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ACCEPT_ADA = {"action": "accept", "content": {"name": "Ada"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


def build(config: MrtrConfig | None = None) -> Server:
    server = Server("mrtr", "1.0.0", mrtr=config)

    @server.tool()
    async def greet(ctx: Context, polite: bool = False) -> str:
        answer = await ctx.elicit("Name?", NAME, key="name")
        if not answer.accepted:
            return f"no ({answer.action})"
        return ("Dear " if polite else "Hi ") + answer.content["name"]

    @server.tool()
    async def everything_at_once(ctx: Context) -> str:
        name, reply, found = await ctx.ask(
            elicitation("Name?", NAME, key="n"),
            sampling([{"role": "user", "content": {"type": "text", "text": "Capital?"}}],
                     max_tokens=5, key="s"),
            roots(key="r"))
        return f"{name.content['name']}|{reply.text}|{found.roots[0]['uri']}"

    @server.tool()
    async def unkeyed(ctx: Context) -> str:
        first = await ctx.elicit("A?", NAME)
        second = await ctx.elicit("B?", NAME)
        return f"{first.content['name']}+{second.content['name']}"

    @server.tool()
    async def counter(ctx: Context) -> str:
        ctx.state["rounds"] = ctx.state.get("rounds", 0) + 1
        answer = await ctx.elicit("Again?", {"type": "object",
                                             "properties": {"more": {"type": "boolean"}}},
                                  key=f"round{ctx.state['rounds']}")
        return f"rounds={ctx.state['rounds']} more={answer.content}"

    @server.tool()
    async def url_flow(ctx: Context) -> str:
        answer = await ctx.elicit_url("Sign in", "https://example.com/login", key="login")
        return f"url {answer.action}"

    @server.tool()
    async def sampling_with_tools(ctx: Context) -> str:
        reply = await ctx.sample([{"role": "user", "content": {"type": "text", "text": "x"}}],
                                 max_tokens=5, key="t",
                                 tools=[{"name": "t", "inputSchema": {"type": "object"}}])
        return str(reply.text)

    @server.resource("test://secret")
    async def secret(ctx: Context) -> str:
        answer = await ctx.elicit("Password hint?", NAME, key="hint")
        return f"hint={answer.content['name']}"

    return server


@pytest.fixture
def peer() -> DirectPeer:
    return DirectPeer(build())


async def retry(peer: DirectPeer, first: Reply, params: dict[str, Any],
                responses: dict[str, Any], **kwargs: Any) -> Reply:
    method = kwargs.pop("method", "tools/call")
    return await peer.request(method, {**params, "inputResponses": responses,
                                       "requestState": first.result["requestState"]}, **kwargs)


def text(reply: Reply) -> str:
    return str(reply.result["content"][0]["text"])


async def test_round_trip_with_arguments_bound(peer: DirectPeer) -> None:
    params = {"name": "greet", "arguments": {"polite": True}}
    first = await peer.request("tools/call", params)
    assert first.result["inputRequests"] == {"name": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Name?", "requestedSchema": NAME}}}
    assert text(await retry(peer, first, params, {"name": ACCEPT_ADA})) == "Dear Ada"
    # Same state, different arguments: the state is bound to the original params.
    changed = await retry(peer, first, {"name": "greet", "arguments": {"polite": False}},
                          {"name": ACCEPT_ADA})
    assert changed.error["code"] == -32602


@pytest.mark.parametrize(("action", "expected"), [("decline", "no (decline)"),
                                                  ("cancel", "no (cancel)")])
async def test_decline_and_cancel(peer: DirectPeer, action: str, expected: str) -> None:
    params = {"name": "greet", "arguments": {}}
    first = await peer.request("tools/call", params)
    assert text(await retry(peer, first, params, {"name": {"action": action}})) == expected


async def test_several_kinds_in_one_round(peer: DirectPeer) -> None:
    params = {"name": "everything_at_once", "arguments": {}}
    first = await peer.request("tools/call", params)
    requests = first.result["inputRequests"]
    assert {k: v["method"] for k, v in requests.items()} == {
        "n": "elicitation/create", "s": "sampling/createMessage", "r": "roots/list"}
    assert requests["r"] == {"method": "roots/list"}  # no params, no id
    assert requests["s"]["params"]["maxTokens"] == 5
    # A partial answer re-requests only what is missing, carrying the rest.
    partial = await retry(peer, first, params, {"n": ACCEPT_ADA})
    assert set(partial.result["inputRequests"]) == {"s", "r"}
    done = await retry(peer, partial, params, {"s": SAMPLED, "r": ROOTS})
    assert text(done) == "Ada|Paris|file:///work"


async def test_unknown_extra_response_keys_are_ignored(peer: DirectPeer) -> None:
    params = {"name": "greet", "arguments": {}}
    first = await peer.request("tools/call", params)
    done = await retry(peer, first, params, {"name": ACCEPT_ADA, "stray": {"x": 1}})
    assert text(done) == "Hi Ada"


async def test_generated_keys_are_unique_within_a_request(peer: DirectPeer) -> None:
    params = {"name": "unkeyed", "arguments": {}}
    first = await peer.request("tools/call", params)
    assert list(first.result["inputRequests"]) == ["elicitation_1"]
    second = await retry(peer, first, params, {"elicitation_1": ACCEPT_ADA})
    assert list(second.result["inputRequests"]) == ["elicitation_2"]
    done = await retry(peer, second, params, {"elicitation_2": {"action": "accept",
                                                                "content": {"name": "Bo"}}})
    assert text(done) == "Ada+Bo"


async def test_handler_state_rides_in_request_state(peer: DirectPeer) -> None:
    params = {"name": "counter", "arguments": {}}
    first = await peer.request("tools/call", params)
    assert list(first.result["inputRequests"]) == ["round1"]
    done = await retry(peer, first, params, {"round1": {"action": "accept",
                                                        "content": {"more": False}}})
    # The handler ran again from the top with its state: round counter went 1 → 2.
    assert list(done.result["inputRequests"]) == ["round2"]


async def test_rounds_are_capped() -> None:
    peer = DirectPeer(build(MrtrConfig(max_rounds=2)))
    params = {"name": "unkeyed", "arguments": {}}
    first = await peer.request("tools/call", params)
    second = await retry(peer, first, params, {"elicitation_1": ACCEPT_ADA})
    third = await retry(peer, second, params, {"elicitation_2": ACCEPT_ADA})
    assert third.error["code"] == -32602
    assert "rounds" in third.error["message"]


@pytest.mark.parametrize(("tool", "caps", "required"), [
    ("greet", {"sampling": {}}, {"elicitation": {}}),
    ("url_flow", {"elicitation": {}}, {"elicitation": {"url": {}}}),
    ("sampling_with_tools", {"sampling": {}}, {"sampling": {"tools": {}}}),
    ("everything_at_once", {"elicitation": {}, "sampling": {}}, {"roots": {}}),
])
async def test_undeclared_capability_is_32021(peer: DirectPeer, tool: str, caps: dict[str, Any],
                                              required: dict[str, Any]) -> None:
    reply = await peer.request("tools/call", {"name": tool, "arguments": {}},
                               meta=make_meta(caps=caps))
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": required}


async def test_url_elicitation_with_the_capability(peer: DirectPeer) -> None:
    params = {"name": "url_flow", "arguments": {}}
    caps = {"elicitation": {"url": {}}}
    first = await peer.request("tools/call", params, meta=make_meta(caps=caps))
    ask = first.result["inputRequests"]["login"]["params"]
    assert ask == {"mode": "url", "message": "Sign in", "url": "https://example.com/login"}
    assert "elicitationId" not in ask  # gone in 2026-07-28
    done = await retry(peer, first, params, {"login": {"action": "accept"}},
                       meta=make_meta(caps=caps))
    assert text(done) == "url accept"


async def test_capabilities_are_per_request_not_sticky(peer: DirectPeer) -> None:
    params = {"name": "greet", "arguments": {}}
    first = await peer.request("tools/call", params)
    again = await retry(peer, first, params, {"name": ACCEPT_ADA},
                        meta=make_meta(caps={}))  # this retry no longer declares elicitation
    assert again.error["code"] == -32021


async def test_resource_read_may_ask_and_keeps_cache_hints(peer: DirectPeer) -> None:
    params = {"uri": "test://secret"}
    first = await peer.request("resources/read", params)
    assert first.result["resultType"] == "input_required"
    done = await retry(peer, first, params, {"hint": ACCEPT_ADA}, method="resources/read")
    assert done.result["contents"][0]["text"] == "hint=Ada"
    assert "ttlMs" in done.result and "cacheScope" in done.result
@pytest.mark.parametrize(("responses", "why"), [
    ({"name": {"action": "accept"}}, "accepted form without content"),
    ({"name": {"action": "accept", "content": "Ada"}}, "content not an object"),
    ({"name": {"action": "accept", "content": {}}}, "content misses a required field"),
    ({"name": {"action": "accept", "content": {"name": ["A"]}}}, "wrong type"),
    ({"name": {"content": {"name": "A"}}}, "no action"),
    ({"name": None}, "entry null"),
])
async def test_bad_elicitation_answers(peer: DirectPeer, responses: dict[str, Any],
                                       why: str) -> None:
    params = {"name": "greet", "arguments": {}}
    first = await peer.request("tools/call", params)
    reply = await retry(peer, first, params, responses)
    assert reply.error["code"] == -32602, why


@pytest.mark.parametrize(("key", "answer"), [
    ("s", {"role": "robot", "content": {"type": "text", "text": "x"}, "model": "m"}),
    ("s", {"role": "assistant", "content": "x", "model": "m"}),
    ("s", {"role": "assistant", "content": {"type": "text", "text": "x"}}),
    ("r", {"roots": "file:///"}),
    ("r", {"roots": [{"name": "no uri"}]}),
    ("r", {}),
])
async def test_bad_sampling_and_roots_answers(peer: DirectPeer, key: str,
                                              answer: dict[str, Any]) -> None:
    params = {"name": "everything_at_once", "arguments": {}}
    first = await peer.request("tools/call", params)
    reply = await retry(peer, first, params, {"n": ACCEPT_ADA, "s": SAMPLED, "r": ROOTS,
                                              key: answer})
    assert reply.error["code"] == -32602


async def test_responses_without_state_are_a_fresh_start(peer: DirectPeer) -> None:
    """No requestState: answers under the asked key still count (stateless retry)."""
    reply = await peer.request("tools/call", {"name": "greet", "arguments": {},
                                              "inputResponses": {"name": ACCEPT_ADA}})
    assert text(reply) == "Hi Ada"


async def test_state_is_bound_to_the_principal() -> None:
    server = build()

    async def handle(body: dict[str, Any], principal: Principal) -> dict[str, Any]:
        request = decode_message(json.dumps(body).encode())
        try:
            result = await server.handle(request, principal=principal)  # type: ignore[arg-type]
        except McpError as exc:
            return json.loads(encode_error(1, exc))  # type: ignore[no-any-return]
        return {"result": result}

    params = {"name": "greet", "arguments": {}, "_meta": make_meta()}
    alice, bob = Principal("alice", "https://idp"), Principal("bob", "https://idp")
    first = await handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                         alice)
    state = first["result"]["requestState"]
    again = {**params, "requestState": state, "inputResponses": {"name": ACCEPT_ADA}}
    stolen = await handle({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": again},
                          bob)
    assert stolen["error"]["code"] == -32602
    owned = await handle({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": again},
                         alice)
    assert owned["result"]["content"][0]["text"] == "Hi Ada"


async def test_state_from_another_key_ring_is_rejected() -> None:
    spec_a, spec_b = KeyRing.new_key("a"), KeyRing.new_key("b")
    ring_a, ring_b = Sealer(KeyRing.from_config(spec_a)), Sealer(KeyRing.from_config(spec_b))
    issuing, checking = DirectPeer(build(MrtrConfig(sealer=ring_a))), DirectPeer(
        build(MrtrConfig(sealer=ring_b)))
    params = {"name": "greet", "arguments": {}}
    first = await issuing.request("tools/call", params)
    assert (await retry(checking, first, params, {"name": ACCEPT_ADA})).error["code"] == -32602
    # A fleet sharing the ring (old key kept for rotation) accepts it.
    shared = Sealer(KeyRing.from_config(KeyRing.new_key("c") + "," + spec_a))
    assert text(await retry(DirectPeer(build(MrtrConfig(sealer=shared))), first, params,
                            {"name": ACCEPT_ADA})) == "Hi Ada"


async def test_single_use_state_cannot_be_replayed() -> None:
    peer = DirectPeer(build(MrtrConfig(single_use=True, store=MemoryStore())))
    params = {"name": "unkeyed", "arguments": {}}
    first = await peer.request("tools/call", params)
    assert "inputRequests" in (await retry(peer, first, params,
                                           {"elicitation_1": ACCEPT_ADA})).result
    replay = await retry(peer, first, params, {"elicitation_1": ACCEPT_ADA})
    assert replay.error["code"] == -32602


def test_input_request_wire_forms() -> None:
    assert roots(key="r").wire() == {"method": "roots/list"}
    assert elicitation("m", NAME).wire() == {"method": "elicitation/create", "params": {
        "mode": "form", "message": "m", "requestedSchema": NAME}}
    assert url_elicitation("m", "https://x").wire()["params"]["mode"] == "url"
    built = sampling([], max_tokens=3, include_context="none", stop_sequences=["x"])
    assert built.params == {"messages": [], "maxTokens": 3, "includeContext": "none",
                            "stopSequences": ["x"]}
    assert isinstance(built, InputRequest)


async def test_expired_state_is_rejected() -> None:
    now = [1_000_000.0]
    sealer = Sealer(KeyRing.from_config(KeyRing.new_key("e")), ttl_seconds=60,
                    clock=lambda: now[0])
    peer = DirectPeer(build(MrtrConfig(sealer=sealer)))
    params = {"name": "greet", "arguments": {}}
    first = await peer.request("tools/call", params)
    now[0] += 61
    expired = await retry(peer, first, params, {"name": ACCEPT_ADA})
    assert expired.error["code"] == -32602
    assert "expired" in expired.error["message"]


async def test_a_round_leaves_no_cycles_for_the_garbage_collector(peer: DirectPeer) -> None:
    """Each round's objects (context, flow, the questions asked) are freed when the
    request ends, not left for the cycle collector: a busy server would otherwise run it
    every few dozen rounds."""
    params = {"name": "greet", "arguments": {}}
    await retry(peer, await peer.request("tools/call", params), params, {"name": ACCEPT_ADA})
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            first = await peer.request("tools/call", params)
            assert text(await retry(peer, first, params, {"name": ACCEPT_ADA})) == "Hi Ada"
        del first
        assert gc.collect() == 0
    finally:
        gc.enable()


async def test_an_answer_is_held_to_the_form_checked_when_it_was_asked(
    peer: DirectPeer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ctx.elicit`` checks its form, then awaits the answer: the answer is validated
    against that checked form, which is not looked up from the schema a second time,
    and still validated (a bad answer is -32602)."""
    import mcpcore.inputs

    params = {"name": "greet", "arguments": {}}
    first = await peer.request("tools/call", params)
    checked: list[object] = []
    check = mcpcore.inputs.check_elicitation_form

    def counted(schema: object) -> Any:
        checked.append(schema)
        return check(schema)

    def not_again(schema: object, content: object) -> list[str]:
        raise AssertionError("the form was looked up again for its answer")

    monkeypatch.setattr(mcpcore.inputs, "check_elicitation_form", counted)
    monkeypatch.setattr(mcpcore.inputs, "validate_elicitation_content", not_again)
    assert text(await retry(peer, first, params, {"name": ACCEPT_ADA})) == "Hi Ada"
    assert checked == [NAME]
    bad = await retry(peer, first, params, {"name": {"action": "accept",
                                                     "content": {"name": 5}}})
    assert bad.error["code"] == -32602


async def test_awaiting_a_question_in_a_round_makes_no_coroutine(
    peer: DirectPeer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In an MRTR round the answers are at hand: awaiting ``ctx.elicit`` takes its answer
    (or stops the handler) at once, not through the flow's ``gather_one`` coroutine,
    which other flows (a task's) still go through."""
    from mcpcore.inputs import InputFlow

    async def no_coroutine(self: InputFlow, request: InputRequest) -> Any:
        raise AssertionError("gather_one was driven")

    monkeypatch.setattr(InputFlow, "gather_one", no_coroutine)
    params = {"name": "greet", "arguments": {}}
    first = await peer.request("tools/call", params)
    assert first.result["resultType"] == "input_required"
    assert text(await retry(peer, first, params, {"name": ACCEPT_ADA})) == "Hi Ada"


async def test_every_round_runs_through_run_round(peer: DirectPeer,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``SealedRetries`` has no copy of the round of its own (issue 25): a first round,
    its retry and a call that never asks all run through ``mrtr.run_round``, the one
    the legacy bridge runs too, with the answers each round carries."""
    import mcpcore.mrtr

    seen: list[tuple[dict[str, Any], dict[str, Any], frozenset[str]]] = []
    real = mcpcore.mrtr.run_round

    def counted(ctx: Any, handler: Any, carried: dict[str, Any], fresh: dict[str, Any],
                asked: frozenset[str], then: Any, about: Any) -> Any:
        seen.append((carried, fresh, asked))
        return real(ctx, handler, carried, fresh, asked, then, about)

    monkeypatch.setattr(mcpcore.mrtr, "run_round", counted)
    params = {"name": "greet", "arguments": {}}
    first = await peer.request("tools/call", params)
    assert first.result["resultType"] == "input_required"
    assert text(await retry(peer, first, params, {"name": ACCEPT_ADA})) == "Hi Ada"
    assert seen == [({}, {}, frozenset()), ({}, {"name": ACCEPT_ADA}, frozenset({"name"}))]


async def test_a_round_is_one_coroutine_run_round_s() -> None:
    """``SealedRetries.run`` makes no coroutine of its own for a first round or a retry
    (one frame per round, not two: docs/performance.md, issue 25): it hands back
    ``run_round``'s, and raises a bad retry's error at once."""
    import inspect

    import msgspec

    from mcpcore.meta import parse_request_meta
    from mcpcore.mrtr import SealedRetries, run_round
    from mcpcore.params import CallToolParams

    server = build()
    strategy = server._retries
    assert isinstance(strategy, SealedRetries)
    assert not inspect.iscoroutinefunction(strategy.run)
    peer = DirectPeer(server)
    first = await peer.request("tools/call", {"name": "greet", "arguments": {}})
    ctx = Context(1, "tools/call", parse_request_meta(make_meta()), inputs=strategy)
    no_arguments = msgspec.Raw(b"{}")

    async def handler() -> dict[str, Any]:
        return {"content": []}

    for params in (CallToolParams(name="greet", arguments=no_arguments),
                   CallToolParams(name="greet", arguments=no_arguments,
                                  input_responses={"name": ACCEPT_ADA},
                                  request_state=first.result["requestState"])):
        round_ = strategy.run(ctx, params, handler)
        assert inspect.iscoroutine(round_) and round_.cr_code is run_round.__code__
        assert (await round_).body == {"content": []}
    with pytest.raises(McpError, match="inputResponses must be an object"):
        strategy.run(ctx, CallToolParams(name="greet", input_responses=[1]), handler)
