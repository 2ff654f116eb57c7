"""A parked call handed across gateway instances through the shared Store
(mcpcore/gateway/handoff.py): several ``Gateway`` objects sharing one ``MemoryStore``,
as a fleet shares its Redis (tests/gateway/test_fleet_store.py runs the same flow on a
real redis-server), and the fleet's series and alert rules of docs/gateway.md
("Operating a fleet")."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpcore import Context, Server, StreamableHTTP
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.bridge import MAX_RELAY_ROUNDS, RELAY
from mcpcore.gateway.handoff import alive_key, inbox
from mcpcore.sealing import StateBinding, params_digest
from mcpcore.stores.base import Store, StoreUnavailable
from mcpcore.stores.memory import MemoryStore
from tests.gateway.inprocess import serving
from tests.gateway.test_bridge import ADA, ALICE, BOB, NAME, answered, asker_server, config
from tests.gateway.test_bridge import handle as handle_on

#: Short, so that a dead owner is noticed quickly here (the default is 10 s).
LIVENESS = 0.6


def counting_server(seen: Counter[str]) -> Server:
    """The asker's tools, and ``tally``: counts each answer it receives, per tag."""
    server = asker_server()

    @server.tool()
    async def progressing(ctx: Context) -> str:
        """Asks a name, then reports progress once."""
        answer = await ctx.elicit("Name?", NAME, key="n")
        await ctx.report_progress(1, 1, "answered")
        return str((answer.content or {}).get("name"))

    @server.tool()
    async def tally(ctx: Context, tag: str) -> str:
        """Asks a name; counts the answers it got."""
        answer = await ctx.elicit(f"Tally {tag}?", NAME, key="n")
        seen[tag] += 1
        return f"{tag}: {(answer.content or {}).get('name')} #{seen[tag]}"

    return server


@contextlib.asynccontextmanager
async def instances(count: int, store: Store | None = None,
                    seen: Counter[str] | None = None, timeout: float | None = None
                    ) -> AsyncIterator[list[Gateway]]:
    """``count`` gateways over the same upstreams, sharing ``store`` (a new
    ``MemoryStore`` unless given); ``timeout``: the upstreams'."""
    store = MemoryStore() if store is None else store
    apps = {"new": StreamableHTTP(asker_server()),
            "old": StreamableHTTP(counting_server(Counter() if seen is None else seen))}
    shared = config()
    if timeout is not None:
        shared = dataclasses.replace(shared, upstreams=tuple(
            dataclasses.replace(u, timeout=timeout) for u in shared.upstreams))
    async with contextlib.AsyncExitStack() as stack:
        gateways = [await stack.enter_async_context(serving(shared, apps, store=store))
                    for _ in range(count)]
        for gateway in gateways:
            assert gateway.handoff is not None
            gateway.handoff.liveness_ttl = LIVENESS
        yield gateways


async def handle(gateway: Gateway, params: dict[str, Any], principal: Any = ALICE
                 ) -> dict[str, Any]:
    """``test_bridge.handle``, bounded: a handoff must never hang."""
    return await asyncio.wait_for(handle_on(gateway, params, principal), 60)


def key_of(first: dict[str, Any]) -> str:
    return next(iter(first["result"]["inputRequests"]))


WHO = {"name": "old__who", "arguments": {"tag": "t"}}


async def test_a_retry_on_another_instance_completes_through_the_store() -> None:
    async with instances(2) as (owner, other):
        first = await handle(owner, WHO)
        assert first["result"]["resultType"] == "input_required"
        assert len(owner.parking.parks) == 1
        done = await handle(other, answered(WHO, first, **{key_of(first): ADA}))
        assert done["result"]["content"][0]["text"] == "t: Ada (accept)"
        assert owner.parking.parks == {} and other.parking.parks == {}


async def test_every_round_may_land_on_another_instance() -> None:
    """Three rounds, three instances: the call stays parked on the first, the relay
    state names it each round, and each retry is handed to it."""
    params = {"name": "old__two_rounds", "arguments": {}}
    async with instances(3) as (first_instance, second_instance, third_instance):
        first = await handle(first_instance, params)
        second = await handle(second_instance, answered(params, first,
                                                        **{key_of(first): ADA}))
        assert second["result"]["resultType"] == "input_required"
        (question,) = second["result"]["inputRequests"].values()
        assert question["params"]["message"] == "Favourite colour?"
        state = second_instance.server.mrtr.get_sealer().open(
            second["result"]["requestState"],
            StateBinding(ALICE.key, "tools/call", params_digest("tools/call", params)))
        relay = state.data["state"][RELAY]
        assert relay["instance"] == first_instance.parking.instance
        assert relay["round"] == 2
        assert second_instance.parking.parks == {}  # nothing parked on the forwarder
        done = await handle(third_instance, answered(
            params, second, **{key_of(second): {"action": "accept",
                                                "content": {"color": "teal"}}}))
        assert done["result"]["content"][0]["text"] == "Ada likes teal"
        assert first_instance.parking.parks == {}


@pytest.mark.parametrize("where", ["two_forwarders", "owner_and_forwarder"])
async def test_two_retries_of_one_round_at_once_deliver_one_answer(where: str) -> None:
    seen: Counter[str] = Counter()
    params = {"name": "old__tally", "arguments": {"tag": "x"}}
    async with instances(3, seen=seen) as (owner, second, third):
        first = await handle(owner, params)
        retry = answered(params, first, **{key_of(first): ADA})
        targets = (second, third) if where == "two_forwarders" else (owner, second)
        outcomes = await asyncio.gather(*(handle(g, retry) for g in targets))
        done = [o for o in outcomes if "result" in o]
        refused = [o for o in outcomes if "error" in o]
        assert len(done) == 1 and len(refused) == 1, outcomes
        assert done[0]["result"]["content"][0]["text"] == "x: Ada #1"
        assert refused[0]["error"]["code"] == -32602
        assert refused[0]["error"]["data"]["reason"] in ("parked_busy", "answered")
        assert seen["x"] == 1  # the upstream got exactly one answer
        # A third try, later, on any instance: refused (the round's claim says it was
        # answered; or, when the owner answered it itself, the owner says the call ended).
        again = await handle(third, retry)
        assert again["error"]["data"] == {
            "upstream": "old",
            "reason": "answered" if where == "two_forwarders" else "parked_gone"}
        assert seen["x"] == 1


async def test_the_binding_is_as_strict_across_instances() -> None:
    async with instances(2) as (owner, other):
        first = await handle(owner, WHO)
        retry = answered(WHO, first, **{key_of(first): ADA})
        stolen = await handle(other, retry, BOB)
        assert stolen["error"]["message"] == "requestState was issued to a different principal"
        moved = answered({"name": "old__who", "arguments": {"tag": "other"}}, first,
                         **{key_of(first): ADA})
        assert (await handle(other, moved))["error"]["message"] == \
            "requestState belongs to a different request"
        # Refused before anything was claimed or sent: the owner's call goes on.
        done = await handle(other, retry)
        assert done["result"]["content"][0]["text"] == "t: Ada (accept)"


async def test_an_owner_that_died_is_owner_gone_not_a_hang() -> None:
    async with instances(2) as (owner, other):
        first = await handle(owner, WHO)
        assert owner.handoff is not None and owner.handoff._listener is not None
        # As a SIGKILL leaves it: nobody listens, nobody refreshes, the key is still
        # there until its TTL runs out.
        owner.handoff._listener.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await owner.handoff._listener
        store = other.store
        assert store is not None
        assert await store.get(alive_key(owner.parking.instance)) is not None
        gone = await handle(other, answered(WHO, first, **{key_of(first): ADA}))
        assert gone["error"]["code"] == -32602
        assert gone["error"]["data"] == {"upstream": "old", "reason": "owner_gone"}
        assert "has stopped" in gone["error"]["message"]


async def test_an_owner_alive_but_silent_is_owner_silent_within_the_bound() -> None:
    """The owner says it is alive but its answer never comes (its inbox lost the
    message): the forwarder gives up after the upstream's timeout plus the liveness
    TTL, saying the outcome is unknown, and the round stays claimed (no second try)."""
    async with instances(2, timeout=1.0) as (owner, other):
        first = await handle(owner, WHO)
        assert owner.handoff is not None

        def deaf(channel: str, raw: bytes) -> None:
            return None

        owner.handoff._heard = deaf  # type: ignore[method-assign]
        retry = answered(WHO, first, **{key_of(first): ADA})
        silent = await handle(other, retry)
        assert silent["error"]["data"] == {"upstream": "old", "reason": "owner_silent"}
        assert "unknown" in silent["error"]["message"]
        again = await handle(other, retry)
        assert again["error"]["data"]["reason"] == "parked_busy"
        assert len(owner.parking.parks) == 1  # never delivered: it times out there


async def test_an_owner_that_stopped_is_owner_gone_at_once() -> None:
    async with instances(2) as (owner, other):
        first = await handle(owner, WHO)
        assert owner.handoff is not None
        await owner.handoff.aclose()  # a graceful stop: its liveness key goes with it
        gone = await handle(other, answered(WHO, first, **{key_of(first): ADA}))
        assert gone["error"]["data"] == {"upstream": "old", "reason": "owner_gone"}


async def test_the_owners_refusals_reach_the_caller_through_the_forwarder() -> None:
    async with instances(2) as (owner, other):
        first = await handle(owner, WHO)
        (park,) = owner.parking.parks.values()
        owner.parking.close(park, "its caller did not answer within 300 s")
        late = await handle(other, answered(WHO, first, **{key_of(first): ADA}))
        assert late["error"]["data"] == {"upstream": "old", "reason": "parked_gone"}
        assert "did not answer within 300 s" in late["error"]["message"]


async def test_an_upstream_asking_forever_is_stopped_across_instances() -> None:
    params = {"name": "old__forever", "arguments": {}}
    async with instances(2) as gateways:
        step = await handle(gateways[0], params)
        for n in range(1, MAX_RELAY_ROUNDS + 1):
            assert "result" in step, step
            step = await handle(gateways[n % 2], answered(params, step,
                                                          **{key_of(step): ADA}))
        assert step["error"]["data"] == {"upstream": "old", "reason": "input_rounds"}
        assert gateways[0].parking.parks == {}


class Flaky:
    """A store whose every operation fails while ``down`` (as Redis unreachable)."""

    def __init__(self, store: MemoryStore) -> None:
        self.inner = store
        self.down = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name in ("get", "set", "set_if_absent", "delete", "publish") and self.down:
            async def refused(*args: Any, **kwargs: Any) -> Any:
                raise StoreUnavailable("the test's store is down")
            return refused
        return attribute


async def test_a_store_down_is_retryable_and_loses_nothing() -> None:
    shared = MemoryStore()
    flaky = Flaky(shared)
    async with instances(1, shared) as (owner,), \
            instances(1, flaky) as (other,):  # type: ignore[arg-type]
        first = await handle(owner, WHO)
        retry = answered(WHO, first, **{key_of(first): ADA})
        flaky.down = True
        refused = await handle(other, retry)
        assert refused["error"]["data"]["reason"] == "store_unavailable"
        assert len(owner.parking.parks) == 1  # nothing was delivered
        flaky.down = False
        done = await handle(other, retry)
        assert done["result"]["content"][0]["text"] == "t: Ada (accept)"


async def test_a_forged_message_on_an_owners_inbox_is_dropped() -> None:
    async with instances(2) as (owner, other):
        first = await handle(owner, WHO)
        (park,) = owner.parking.parks.values()
        store = owner.store
        assert store is not None
        await store.publish(inbox(owner.parking.instance),
                            b'{"kind": "deliver", "id": "x", "park": "' +
                            park.id.encode() + b'", "round": 1}')
        await store.publish(inbox(owner.parking.instance), b"\xff" * 100)
        await asyncio.sleep(0.05)
        assert not park.attached and park.round == 1  # untouched
        done = await handle(other, answered(WHO, first, **{key_of(first): ADA}))
        assert done["result"]["content"][0]["text"] == "t: Ada (accept)"


async def test_progress_of_a_forwarded_round_reaches_its_caller() -> None:
    """The upstream's notifications while the owner waits on a forwarded round go
    back with it (bounded), to the request that forwarded it."""
    async with instances(2) as (owner, other):
        first = await handle(owner, {"name": "old__progressing", "arguments": {}})
        assert first["result"]["resultType"] == "input_required"
        assert other.handoff is not None
        notes: list[Any] = []

        async def notify(note: Any) -> None:
            notes.append(note)

        (park,) = owner.parking.parks.values()
        relay = {"park": park.id, "instance": owner.parking.instance, "round": 1}
        (key,) = park.asked
        forwarded = asyncio.ensure_future(other.handoff.forward(
            owner.upstreams["old"], relay, ALICE.key, park.digest,
            {key: {"action": "accept", "content": {"name": "Ada"}}}, notify))
        outcome = await asyncio.wait_for(forwarded, 60)
        assert outcome["content"][0]["text"] == "Ada"  # type: ignore[call-overload]
        assert [(n.method, n.params["message"]) for n in notes] == [
            ("notifications/progress", "answered")]


async def test_without_a_store_a_retry_elsewhere_is_still_parked_elsewhere() -> None:
    apps = {"new": StreamableHTTP(asker_server()), "old": StreamableHTTP(asker_server())}
    async with serving(config(), apps) as one, serving(config(), apps) as two:
        assert one.handoff is None
        first = await handle(one, WHO)
        elsewhere = await handle(two, answered(WHO, first, **{key_of(first): ADA}))
        assert elsewhere["error"]["data"] == {"upstream": "old",
                                              "reason": "parked_elsewhere"}


async def test_the_fleet_series_count_parked_calls_and_handoffs() -> None:
    """``mcpcore_gateway_parked_calls`` and ``mcpcore_gateway_handoffs_total``, and
    every series and label the fleet's alert rules in docs/gateway.md ("Operating a
    fleet") name."""
    import yaml

    from mcpcore.gateway import serve
    from tests.docs_blocks import ROOT, marked
    from tests.gateway.test_observability import check_rules

    (block,) = marked(ROOT / "docs" / "gateway.md", "tests/gateway/test_handoff.py", "yaml")
    rules = yaml.safe_load(block.code)["groups"][0]["rules"]
    assert len(rules) >= 3
    store = MemoryStore()
    apps = {"new": StreamableHTTP(asker_server()), "old": StreamableHTTP(asker_server())}
    metered = dataclasses.replace(config(), metrics=True)
    async with serving(metered, apps, store=store) as owner, \
            serving(metered, apps, store=store) as other:
        metrics = serve.observe(other)
        owner_metrics = serve.observe(owner)
        assert metrics is not None and owner_metrics is not None
        first = await handle(owner, WHO)
        held = (await owner_metrics.render()).decode()
        assert 'mcpcore_gateway_parked_calls{upstream="old"} 1.0' in held
        await handle(other, answered(WHO, first, **{key_of(first): ADA}))
        again = await handle(other, answered(WHO, first, **{key_of(first): ADA}))
        assert again["error"]["data"]["reason"] == "answered"
        text = (await metrics.render()).decode()
        assert 'mcpcore_gateway_handoffs_total{outcome="ok"} 1.0' in text
        assert 'mcpcore_gateway_handoffs_total{outcome="answered"} 1.0' in text
        assert 'mcpcore_gateway_parked_calls{upstream="old"} 0.0' in \
            (await owner_metrics.render()).decode()
        # A store error, for the server's own series the rules name.
        metrics.store_error(StoreUnavailable("down"))
        text = (await metrics.render()).decode()
    check_rules(rules, text)
