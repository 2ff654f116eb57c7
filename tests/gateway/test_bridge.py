"""Bridging the eras: an upstream's questions mid-call reach the caller in all four
cells (caller 2026-07-28 or 2025, upstream 2026-07-28 or 2025), the relay state is
sealed and bound, and a hostile upstream is bounded (mcpcore/gateway/bridge.py)."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcpcore import Context, Server, StreamableHTTP
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.client.resolvers import Unanswerable
from mcpcore.errors import InvalidRequestState, McpError
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.bridge import MAX_RELAY_ROUNDS, RELAY, Park
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from mcpcore.jsonrpc import decode_message, encode_error
from mcpcore.meta import parse_request_meta
from mcpcore.principal import Principal
from mcpcore.sealing import KeyRing, Sealer, StateBinding, params_digest
from tests.gateway.inprocess import URL, downstream, serving
from tests.support.clock import ManualClock
from tests.support.wire import make_meta

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOR = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
ALICE = Principal("alice", "https://idp")
BOB = Principal("bob", "https://idp")
#: Downstream eras, and upstream eras: the four cells.
CALLERS = ["2026-07-28", "legacy"]
UPSTREAMS = ["new", "old"]  # "new" speaks 2026-07-28 to the gateway, "old" a 2025 session


def asker_server(root: str = "asker") -> Server:
    """Tools, prompts and a resource (``mem://ROOT/secret``) that ask the caller."""
    server = Server("asker", "1.0.0")

    @server.tool()
    async def two_rounds(ctx: Context) -> str:
        """Asks a name, then (another round) a colour."""
        name = await ctx.elicit("What is your name?", NAME, key="user_name")
        color = await ctx.elicit("Favourite colour?", COLOR, key="favorite_color")
        return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}"

    @server.tool()
    async def who(ctx: Context, tag: str) -> str:
        """Asks one question naming the tag."""
        answer = await ctx.elicit(f"Who is {tag}?", NAME)
        return f"{tag}: {(answer.content or {}).get('name')} ({answer.action})"

    @server.tool()
    async def think(ctx: Context) -> str:
        """Asks the caller's model, then its roots."""
        reply = await ctx.sample([{"role": "user", "content": {"type": "text",
                                                               "text": "Say hi"}}],
                                 max_tokens=5, key="hi")
        roots = await ctx.list_roots(key="roots")
        return f"{reply.text} from {roots.roots[0]['uri']}"

    @server.tool()
    async def forever(ctx: Context) -> str:
        """Never satisfied: a new question every round."""
        n = 0
        while True:
            await ctx.elicit(f"Again ({n})?", NAME, key=f"q{n}")
            n += 1

    @server.prompt()
    async def greeting(ctx: Context) -> str:
        """A prompt that asks the caller's name first."""
        answer = await ctx.elicit("What is your name?", NAME, key="who")
        return f"Greet {(answer.content or {}).get('name')}"

    @server.prompt()
    async def ask(ctx: Context, tag: str) -> str:
        """A prompt with an argument that asks one question naming it."""
        answer = await ctx.elicit(f"Who is {tag}?", NAME)
        return f"{tag}: {(answer.content or {}).get('name')} ({answer.action})"

    @server.resource(f"mem://{root}/secret", name="secret", mime_type="text/plain")
    async def secret(ctx: Context) -> str:
        """A resource that asks the caller's name first."""
        answer = await ctx.elicit("Who reads this?", NAME, key="reader")
        return f"for {(answer.content or {}).get('name')} only"

    @server.tool()
    async def heavy(ctx: Context) -> str:
        """Keeps a large state between rounds (its requestState grows past the gateway's
        bound)."""
        ctx.state["blob"] = secrets.token_hex(3000)
        answer = await ctx.elicit("Name?", NAME, key="n")
        return str(answer.content)

    return server


def config() -> GatewayConfig:
    return GatewayConfig(upstreams=(UpstreamConfig("new", url=URL, era="2026-07-28"),
                                    UpstreamConfig("old", url=URL, era="legacy")))


@asynccontextmanager
async def gateway_over_askers() -> AsyncIterator[Gateway]:
    apps = {name: StreamableHTTP(asker_server(name)) for name in UPSTREAMS}
    async with serving(config(), apps) as gateway:
        yield gateway


class User:
    """A downstream user's resolvers, recording what they were asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("elicitation/create", params))
        if "colour" in params["message"]:
            return {"action": "accept", "content": {"color": "teal"}}
        return {"action": "accept", "content": {"name": "Ada"}}

    def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("sampling/createMessage", params))
        return {"role": "assistant", "content": {"type": "text", "text": "hi"},
                "model": "test-model"}

    def roots(self) -> dict[str, Any]:
        self.asked.append(("roots/list", {}))
        return {"roots": [{"uri": "file:///work"}]}

    def options(self) -> dict[str, Any]:
        return {"on_elicit": self.elicit, "on_sample": self.sample, "on_roots": self.roots,
                "max_rounds": 20}


# -- the four cells --------------------------------------------------------------------


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("caller", CALLERS)
async def test_elicitation_rounds_cross_every_cell(caller: str, upstream: str) -> None:
    user = User()
    async with gateway_over_askers() as gateway, \
            downstream(gateway, caller, **user.options()) as client:
        result = await client.call_tool(f"{upstream}__two_rounds")
        assert result.is_error is not True, result
        assert result.content[0].text == "Ada likes teal"  # type: ignore[union-attr]
        assert [p["message"] for _, p in user.asked] == ["What is your name?",
                                                        "Favourite colour?"]
        assert gateway.parking.parks == {}  # nothing left parked


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("caller", CALLERS)
async def test_sampling_and_roots_cross_every_cell(caller: str, upstream: str) -> None:
    user = User()
    async with gateway_over_askers() as gateway, \
            downstream(gateway, caller, **user.options()) as client:
        result = await client.call_tool(f"{upstream}__think")
        assert result.content[0].text == "hi from file:///work"  # type: ignore[union-attr]
        assert [kind for kind, _ in user.asked] == ["sampling/createMessage", "roots/list"]


@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_a_caller_without_the_capability_gets_32021(upstream: str) -> None:
    async with gateway_over_askers() as gateway, \
            downstream(gateway, "2026-07-28", on_sample=User().sample) as client:
        with pytest.raises(RemoteProtocolError) as missing:
            await client.call_tool(f"{upstream}__who", {"tag": "x"})
        assert missing.value.code == -32021
        assert gateway.parking.parks == {}


# -- the relay state, sealed and bound ---------------------------------------------------


async def handle(gateway: Gateway, params: dict[str, Any], principal: Principal = ALICE,
                 caps: dict[str, Any] | None = None, method: str = "tools/call"
                 ) -> dict[str, Any]:
    """One stateless 2026-07-28 request to the gateway as ``principal``: its result or
    its error object."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method,
            "params": {**params, "_meta": make_meta(caps)}}
    request = decode_message(json.dumps(body).encode())
    try:
        return {"result": await gateway.server.handle(request,  # type: ignore[arg-type]
                                                      principal=principal)}
    except McpError as exc:
        return json.loads(encode_error(1, exc))  # type: ignore[no-any-return]


def answered(params: dict[str, Any], first: dict[str, Any], **answers: Any
             ) -> dict[str, Any]:
    return {**params, "requestState": first["result"]["requestState"],
            "inputResponses": answers}


ADA = {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_a_relayed_round_completes_for_its_owner(upstream: str) -> None:
    async with gateway_over_askers() as gateway:
        params = {"name": f"{upstream}__who", "arguments": {"tag": "t"}}
        first = await handle(gateway, params)
        assert first["result"]["resultType"] == "input_required"
        ((key, request),) = first["result"]["inputRequests"].items()
        assert request["params"]["message"] == "Who is t?"
        done = await handle(gateway, answered(params, first, **{key: ADA}))
        assert done["result"]["content"][0]["text"] == "t: Ada (accept)"


async def test_the_upstreams_state_rides_inside_the_gateways_sealed_state() -> None:
    async with gateway_over_askers() as gateway:
        params = {"name": "new__who", "arguments": {"tag": "t"}}
        first = await handle(gateway, params)
        token = first["result"]["requestState"]
        binding = StateBinding(ALICE.key, "tools/call", params_digest("tools/call", params))
        opened = gateway.server.mrtr.get_sealer().open(token, binding)
        relay = opened.data["state"][RELAY]
        inner = relay["state"]  # the upstream's own requestState
        assert isinstance(inner, str) and len(inner) > 40
        assert inner not in token  # never in clear to the caller
        assert (relay["upstream"], relay["tool"]) == ("new", "who")


@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_a_state_replayed_by_another_principal_is_refused(upstream: str) -> None:
    async with gateway_over_askers() as gateway:
        params = {"name": f"{upstream}__who", "arguments": {"tag": "t"}}
        first = await handle(gateway, params)
        key = next(iter(first["result"]["inputRequests"]))
        stolen = await handle(gateway, answered(params, first, **{key: ADA}), BOB)
        assert stolen["error"] == {"code": -32602, "message": "requestState was issued to "
                                                              "a different principal"}
        # The owner still can: the refusal took nothing from it.
        done = await handle(gateway, answered(params, first, **{key: ADA}))
        assert done["result"]["content"][0]["text"] == "t: Ada (accept)"


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("other", [{"name": "{u}__two_rounds", "arguments": {}},
                                   {"name": "{u}__who", "arguments": {"tag": "other"}}],
                         ids=["another_tool", "other_arguments"])
async def test_a_state_replayed_elsewhere_is_refused(upstream: str, other: dict[str, Any]
                                                     ) -> None:
    async with gateway_over_askers() as gateway:
        params = {"name": f"{upstream}__who", "arguments": {"tag": "t"}}
        first = await handle(gateway, params)
        key = next(iter(first["result"]["inputRequests"]))
        moved = {**other, "name": other["name"].format(u=upstream)}
        replayed = await handle(gateway, answered(moved, first, **{key: ADA}))
        assert replayed["error"] == {"code": -32602,
                                     "message": "requestState belongs to a different request"}
        # Refused before anything reached the upstream: the owner's call goes on.
        done = await handle(gateway, answered(params, first, **{key: ADA}))
        assert done["result"]["content"][0]["text"] == "t: Ada (accept)"


@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_a_state_replayed_after_expiry_is_refused(upstream: str,
                                                        state_keys: str) -> None:
    now = [1_000_000.0]
    async with gateway_over_askers() as gateway:
        gateway.server.mrtr.sealer = Sealer(KeyRing.from_config(state_keys),
                                            ttl_seconds=60, clock=lambda: now[0])
        params = {"name": f"{upstream}__who", "arguments": {"tag": "t"}}
        first = await handle(gateway, params)
        key = next(iter(first["result"]["inputRequests"]))
        now[0] += 61
        expired = await handle(gateway, answered(params, first, **{key: ADA}))
        assert expired["error"]["code"] == -32602
        assert "expired" in expired["error"]["message"]


async def test_an_answered_round_of_a_parked_call_cannot_be_replayed() -> None:
    async with gateway_over_askers() as gateway:
        params = {"name": "old__two_rounds", "arguments": {}}
        first = await handle(gateway, params)
        key = next(iter(first["result"]["inputRequests"]))
        second = await handle(gateway, answered(params, first, **{key: ADA}))
        assert second["result"]["resultType"] == "input_required"
        replay = await handle(gateway, answered(params, first, **{key: ADA}))
        assert replay["error"]["code"] == -32602
        assert replay["error"]["data"] == {"upstream": "old", "reason": "answered"}
        key2 = next(iter(second["result"]["inputRequests"]))
        done = await handle(gateway, answered(
            params, second, **{key2: {"action": "accept", "content": {"color": "red"}}}))
        assert done["result"]["content"][0]["text"] == "Ada likes red"


async def test_a_retry_on_another_instance_is_refused_clearly() -> None:
    apps = {name: StreamableHTTP(asker_server(name)) for name in UPSTREAMS}
    async with serving(config(), apps) as first_instance, \
            serving(config(), apps) as second_instance:
        params = {"name": "old__who", "arguments": {"tag": "t"}}
        first = await handle(first_instance, params)
        key = next(iter(first["result"]["inputRequests"]))
        elsewhere = await handle(second_instance, answered(params, first, **{key: ADA}))
        assert elsewhere["error"]["code"] == -32602
        assert elsewhere["error"]["data"] == {"upstream": "old",
                                              "reason": "parked_elsewhere"}
        assert "another gateway instance" in elsewhere["error"]["message"]
        # The instance that holds it completes it.
        done = await handle(first_instance, answered(params, first, **{key: ADA}))
        assert done["result"]["content"][0]["text"] == "t: Ada (accept)"


async def test_a_parked_call_times_out_and_a_late_retry_hears_why() -> None:
    clock = ManualClock()
    async with gateway_over_askers() as gateway:
        gateway.parking.clock = clock
        params = {"name": "old__who", "arguments": {"tag": "t"}}
        first = await handle(gateway, params)
        key = next(iter(first["result"]["inputRequests"]))
        (park,) = gateway.parking.parks.values()
        await clock.until_sleeping(1)  # the park's watchdog
        await clock.advance(gateway.parking.park_timeout + 1)
        assert gateway.parking.parks == {}
        assert park.task is not None
        with pytest.raises(BaseException):  # noqa: B017 - cancelled, or the upstream's error
            await asyncio.wait_for(park.task, 30)
        late = await handle(gateway, answered(params, first, **{key: ADA}))
        assert late["error"]["data"] == {"upstream": "old", "reason": "parked_gone"}
        assert "did not answer within" in late["error"]["message"]


async def test_parked_calls_are_bounded_per_principal() -> None:
    async with gateway_over_askers() as gateway:
        gateway.parking.max_per_principal = 1
        first = await handle(gateway, {"name": "old__who", "arguments": {"tag": "a"}})
        assert first["result"]["resultType"] == "input_required"
        second = await handle(gateway, {"name": "old__who", "arguments": {"tag": "b"}})
        assert second["error"]["data"] == {"upstream": "old", "reason": "too_many_waiting"}
        other = await handle(gateway, {"name": "old__who", "arguments": {"tag": "c"}}, BOB)
        assert other["result"]["resultType"] == "input_required"
        assert len(gateway.parking.parks) == 2


@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_concurrent_callers_each_get_their_own_question(upstream: str) -> None:
    async with gateway_over_askers() as gateway:
        users = [Principal(f"user{i}", "https://idp") for i in range(4)]
        firsts = await asyncio.gather(*(
            handle(gateway, {"name": f"{upstream}__who", "arguments": {"tag": u.subject}}, u)
            for u in users))
        for user, first in zip(users, firsts, strict=True):
            (request,) = first["result"]["inputRequests"].values()
            assert request["params"]["message"] == f"Who is {user.subject}?"
        done = await asyncio.gather(*(
            handle(gateway, answered(
                {"name": f"{upstream}__who", "arguments": {"tag": u.subject}}, first,
                **{next(iter(first["result"]["inputRequests"])): {
                    "action": "accept", "content": {"name": f"n-{u.subject}"}}}), u)
            for u, first in zip(users, firsts, strict=True)))
        assert [d["result"]["content"][0]["text"] for d in done] == [
            f"{u.subject}: n-{u.subject} (accept)" for u in users]


# -- a hostile upstream -----------------------------------------------------------------


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("caller", CALLERS)
async def test_an_upstream_asking_forever_is_stopped(caller: str, upstream: str) -> None:
    user = User()
    async with gateway_over_askers() as gateway, \
            downstream(gateway, caller, **user.options()) as client:
        with pytest.raises(RemoteProtocolError) as stopped:
            await client.call_tool(f"{upstream}__forever")
        assert stopped.value.data == {"upstream": upstream, "reason": "input_rounds"}
        assert len(user.asked) == MAX_RELAY_ROUNDS
        assert gateway.parking.parks == {}


async def test_an_oversized_upstream_state_is_refused() -> None:
    async with gateway_over_askers() as gateway:
        refused = await handle(gateway, {"name": "new__heavy", "arguments": {}})
        assert refused["error"]["data"] == {"upstream": "new", "reason": "too_large"}
        assert "requestState" in refused["error"]["message"]


async def test_a_question_after_its_park_closed_is_refused_at_once() -> None:
    async with gateway_over_askers() as gateway:
        park = Park("p1", gateway.upstreams["old"], ALICE.key, "digest")
        gateway.parking.parks[park.id] = park
        gateway.parking.close(park, "its caller did not answer within 300 s")
        with pytest.raises(Unanswerable, match="did not answer within"):
            await asyncio.wait_for(park.answer("elicitation/create", {
                "message": "late?", "requestedSchema": NAME}), 30)


async def test_a_relay_state_of_another_upstream_never_reaches_this_one() -> None:
    """Sealed for the served name, but the catalog gave that name to another upstream
    since: the state is refused, not sent to the new owner."""
    async with gateway_over_askers() as gateway:
        ctx = Context(1, "tools/call", parse_request_meta(make_meta()), ALICE)
        ctx.state[RELAY] = {"upstream": "new", "tool": "who", "round": 1, "asked": [],
                            "state": "the new upstream's state"}
        with pytest.raises(InvalidRequestState, match="another upstream tool"):
            await gateway.relay.call_tool(gateway.upstreams["old"], "who", {"tag": "t"},
                                          ctx, None)
        assert gateway.parking.parks == {}


async def test_a_missing_capability_is_http_400_as_the_upstream_answered_it() -> None:
    """The upstream's -32021 (the caller did not declare what its question needs) reaches
    the caller with the status the spec gives that error on Streamable HTTP: 400, as
    the engine's own ``MissingRequiredClientCapability`` (the official suite's
    ``sep-2575-missing-capability-http-400`` through a gateway)."""
    from tests.gateway.inprocess import http_client

    async with gateway_over_askers() as gateway, \
            http_client(StreamableHTTP(gateway.server)) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "new__who", "arguments": {"tag": "x"},
                           "_meta": make_meta({})}}
        response = await http.post(URL, json=body, headers={
            "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
            "mcp-name": "new__who", "accept": "application/json, text/event-stream"})
        assert response.json()["error"]["code"] == -32021
        assert response.status_code == 400


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("caller", CALLERS)
async def test_questions_in_prompts_get_and_resources_read_are_relayed(
        caller: str, upstream: str) -> None:
    """multi-round-trip.mdx lets ``prompts/get`` and ``resources/read`` answer
    ``input_required`` too, and a 2025 server may send requests in the middle of any
    request: the upstream's questions there reach the caller (as ``input_required``,
    or ``elicitation/create`` for a 2025 caller) and its answer goes back (with the
    upstream's sealed state, or to the parked request of a 2025 upstream)."""
    user = User()
    async with gateway_over_askers() as gateway, \
            downstream(gateway, caller, **user.options()) as client:
        prompt = await client.get_prompt(f"{upstream}__greeting")
        assert prompt.messages[0].content.text == "Greet Ada"  # type: ignore[union-attr]
        read = await client.read_resource(f"mem://{upstream}/secret")
        assert read.contents[0].text == "for Ada only"  # type: ignore[union-attr]
        assert [kind for kind, _ in user.asked] == ["elicitation/create"] * 2
        assert gateway.parking.parks == {}  # nothing left parked


def prompted(upstream: str, **arguments: str) -> dict[str, Any]:
    return {"name": f"{upstream}__ask", "arguments": arguments or {"tag": "t"}}


@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_a_prompts_relay_state_is_bound_like_a_tools(upstream: str) -> None:
    """The state of a ``prompts/get`` that asks is sealed and bound as a tool call's:
    another principal, other arguments, or another method (a read of the upstream's
    resource) cannot use it, and nothing of those reaches the upstream's waiting
    request; its owner's retry completes it."""
    async with gateway_over_askers() as gateway:
        params = prompted(upstream)
        first = await handle(gateway, params, method="prompts/get")
        assert first["result"]["resultType"] == "input_required"
        ((key, request),) = first["result"]["inputRequests"].items()
        assert request["params"]["message"] == "Who is t?"
        retry = answered(params, first, **{key: ADA})
        stolen = await handle(gateway, retry, BOB, method="prompts/get")
        assert stolen["error"] == {"code": -32602, "message": "requestState was issued to "
                                                              "a different principal"}
        other = await handle(gateway, {**retry, **prompted(upstream, tag="other")},
                             method="prompts/get")
        assert other["error"]["message"] == "requestState belongs to a different request"
        read = {"uri": f"mem://{upstream}/secret", "requestState": retry["requestState"],
                "inputResponses": retry["inputResponses"]}
        elsewhere = await handle(gateway, read, method="resources/read")
        assert elsewhere["error"]["message"] == ("requestState was issued for a different "
                                                 "method, not resources/read")
        done = await handle(gateway, retry, method="prompts/get")
        assert done["result"]["messages"][0]["content"]["text"] == "t: Ada (accept)"
        assert gateway.parking.parks == {}


async def test_a_parked_read_names_its_method_and_is_refused_on_another_instance() -> None:
    """A 2025 upstream's ``resources/read`` that asks is parked like a tool call (the
    relay state names the read and the URI, the park is bound to them): a retry on
    another instance is refused at once; the instance that holds it completes it."""
    apps = {name: StreamableHTTP(asker_server(name)) for name in UPSTREAMS}
    async with serving(config(), apps) as first_instance, \
            serving(config(), apps) as second_instance:
        params = {"uri": "mem://old/secret"}
        first = await handle(first_instance, params, method="resources/read")
        ((key, request),) = first["result"]["inputRequests"].items()
        assert (key, request["params"]["message"]) == ("elicitation_1", "Who reads this?")
        (park,) = first_instance.parking.parks.values()
        assert park.method == "resources/read"
        binding = StateBinding(ALICE.key, "resources/read",
                               params_digest("resources/read", params))
        sealed = first_instance.server.mrtr.get_sealer().open(
            first["result"]["requestState"], binding).data["state"][RELAY]
        assert (sealed["method"], sealed["tool"], sealed["park"]) == (
            "resources/read", "mem://old/secret", park.id)
        retry = answered(params, first, **{key: ADA})
        elsewhere = await handle(second_instance, retry, method="resources/read")
        assert elsewhere["error"]["data"] == {"upstream": "old",
                                              "reason": "parked_elsewhere"}
        done = await handle(first_instance, retry, method="resources/read")
        assert done["result"]["contents"][0]["text"] == "for Ada only"


async def test_answers_volunteered_with_the_first_request_reach_a_modern_upstream() -> None:
    """A first request may carry ``inputResponses`` (no requestState), with keys the
    server never asked among them: the upstream decides, as when called directly, and
    answers at once (the official suite's ``sep-2322-ignore-unexpected-params``)."""
    from tests.gateway.inprocess import http_client

    async with gateway_over_askers() as gateway, \
            http_client(StreamableHTTP(gateway.server)) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "new__who", "arguments": {"tag": "x"},
                           "inputResponses": {
                               "elicitation_1": {"action": "accept",
                                                 "content": {"name": "Ada"}},
                               "not_asked": {"action": "accept", "content": {"n": 1}}},
                           "_meta": make_meta()}}
        response = await http.post(URL, json=body, headers={
            "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
            "mcp-name": "new__who", "accept": "application/json, text/event-stream"})
        result = response.json()["result"]
        assert result["resultType"] == "complete"
        assert result["content"][0]["text"] == "x: Ada (accept)"
