"""An upstream that fails: down at start, down later, answering garbage or too much, or
failing until its circuit opens. The gateway answers one typed error quickly and keeps
serving the others. Time is a ManualClock: nothing waits for real."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpcore import StreamableHTTP
from mcpcore.client import wire
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway import upstreams
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from mcpcore.transports.asgi import Receive, Scope, Send
from tests.gateway.inprocess import URL, alpha_server, beta_server, downstream, serving
from tests.support.clock import ManualClock, until


class Faulty:
    """An upstream app that can be made to fail: ``mode`` is ``ok``, ``down`` (the
    connection drops before any response), ``garbage`` (an HTML page), ``huge`` (a JSON
    body of ``huge_bytes``), ``amplify`` (a body of 5,000 tiny objects) or
    ``bad_result`` (a JSON-RPC result that is not one)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.mode = "ok"
        self.huge_bytes = 0
        self.posts = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.mode == "ok":
            await self.app(scope, receive, send)
            return
        self.posts += 1
        if self.mode == "down":
            return  # no response at all: what a dead socket looks like
        if self.mode == "bad_result":
            body = json.loads((await receive())["body"])
            reply = {"jsonrpc": "2.0", "id": body.get("id"),
                     "result": {"content": "not a list", "resultType": "complete"}}
            payload = json.dumps(reply).encode()
            ctype = b"application/json"
        elif self.mode == "garbage":
            payload, ctype = b"<html>502 Bad Gateway</html>", b"text/html"
        elif self.mode == "amplify":  # small on the wire, large once decoded
            body = json.loads((await receive())["body"])
            payload = (b'{"jsonrpc": "2.0", "id": ' + json.dumps(body.get("id")).encode()
                       + b', "result": {"content": [' + b'{"a":1},' * 5000 + b'{}]}}')
            ctype = b"application/json"
        else:
            payload = b'{"jsonrpc": "2.0", "id": 1, "result": {"x": "' + \
                b"x" * self.huge_bytes + b'"}}'
            ctype = b"application/json"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", ctype)]})
        await send({"type": "http.response.body", "body": payload})


def config(**alpha: Any) -> GatewayConfig:
    return GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL, **alpha),
                                    UpstreamConfig("beta", url=URL)))


def reason(exc: pytest.ExceptionInfo[RemoteProtocolError]) -> str:
    assert exc.value.code == -32603
    assert exc.value.data["upstream"] == "alpha"
    return str(exc.value.data["reason"])


async def test_an_upstream_down_at_start_leaves_the_others_served() -> None:
    alpha = Faulty(StreamableHTTP(alpha_server()))
    alpha.mode = "down"
    clock = ManualClock()
    apps = {"alpha": alpha, "beta": StreamableHTTP(beta_server())}
    async with serving(config(), apps, clock=clock) as gateway, \
            downstream(gateway) as client:
        assert gateway.ready
        assert [t.name for t in await client.tools()] == ["beta__shared", "beta__echo"]
        assert gateway.health()["alpha"]["state"] == "down"
        assert "cannot connect" in gateway.health()["alpha"]["lastError"]
        # It comes back: the supervisor's next attempt reaches it, the catalog follows.
        alpha.mode = "ok"
        await clock.advance(1)  # the first retry comes after 0.5 s
        await until(lambda: gateway.snapshot is not None and not gateway.snapshot.missing)
        names = [t.name for t in await client.tools(refresh=True)]
        assert "alpha__add" in names and "beta__echo" in names
        assert gateway.health()["alpha"]["state"] == "up"


async def test_an_upstream_reached_again_closes_its_circuit_and_rejoins_the_catalog(
        ) -> None:
    # Down at start: the first catalog's listing fails, and with breaker_failures = 1
    # that opens its circuit. When the supervisor reaches it again, the refresh that
    # follows must list it at once, not hit the open circuit and leave it out until the
    # next periodic refresh (5 minutes by default).
    alpha = Faulty(StreamableHTTP(alpha_server()))
    alpha.mode = "down"
    clock = ManualClock()
    apps = {"alpha": alpha, "beta": StreamableHTTP(beta_server())}
    async with serving(config(breaker_failures=1, breaker_reset=60.0), apps,
                       clock=clock) as gateway, downstream(gateway) as client:
        assert gateway.upstreams["alpha"].breaker.state == "open"
        alpha.mode = "ok"
        await clock.advance(1)  # the supervisor's first retry, long before breaker_reset
        await until(lambda: gateway.snapshot is not None and not gateway.snapshot.missing)
        assert gateway.upstreams["alpha"].breaker.state == "closed"
        assert (await client.call_tool("alpha__add", {"a": 1, "b": 2})).content[0].text == "3"


async def test_an_upstream_down_at_a_refresh_keeps_its_tools_and_typed_errors() -> None:
    # Listed once, then down when the catalog refreshes (its interval, or another
    # upstream coming back): its tools stay listed and a call gets the typed error of
    # the moment, not "unknown tool" until a refresh minutes later; back up, it answers.
    alpha = Faulty(StreamableHTTP(alpha_server()))
    apps = {"alpha": alpha, "beta": StreamableHTTP(beta_server())}
    async with serving(config(breaker_failures=10), apps,
                       clock=ManualClock()) as gateway, downstream(gateway) as client:
        listed = [t.name for t in await client.tools()]
        alpha.mode = "down"
        await gateway.refresh()
        assert [t.name for t in await client.tools(refresh=True)] == listed
        with pytest.raises(RemoteProtocolError) as down:
            await client.call_tool("alpha__add", {"a": 1, "b": 2})
        assert reason(down) == "down"
        alpha.mode = "ok"
        assert (await client.call_tool("alpha__add", {"a": 1, "b": 2})).content[0].text == "3"


async def test_the_circuit_opens_after_failures_in_a_row_and_a_probe_closes_it() -> None:
    alpha = Faulty(StreamableHTTP(alpha_server()))
    clock = ManualClock()
    apps = {"alpha": alpha, "beta": StreamableHTTP(beta_server())}
    async with serving(config(breaker_failures=2, breaker_reset=10.0), apps,
                       clock=clock) as gateway, downstream(gateway) as client:
        alpha.mode = "down"
        for _ in range(2):
            with pytest.raises(RemoteProtocolError) as down:
                await client.call_tool("alpha__add", {"a": 1, "b": 2})
            assert reason(down) == "down"
        posts = alpha.posts
        with pytest.raises(RemoteProtocolError) as opened:
            await client.call_tool("alpha__add", {"a": 1, "b": 2})
        assert reason(opened) == "circuit_open"
        assert alpha.posts == posts  # answered at once: nothing was sent upstream
        assert gateway.health()["alpha"]["state"] == "open-circuit"
        # The others are served meanwhile.
        assert (await client.call_tool("beta__echo", {"text": "x"})).content[0].text == "beta: x"
        # After breaker_reset one probe goes through; still failing, it re-opens.
        await clock.advance(10)
        with pytest.raises(RemoteProtocolError) as probe:
            await client.call_tool("alpha__add", {"a": 1, "b": 2})
        assert reason(probe) == "down"
        with pytest.raises(RemoteProtocolError) as reopened:
            await client.call_tool("alpha__add", {"a": 1, "b": 2})
        assert reason(reopened) == "circuit_open"
        # Healthy again: the next probe closes it.
        alpha.mode = "ok"
        await clock.advance(10)
        assert (await client.call_tool("alpha__add", {"a": 1, "b": 2})).content[0].text == "3"
        assert gateway.health()["alpha"]["state"] == "up"


async def test_a_relayed_error_does_not_count_against_the_circuit() -> None:
    apps = {"alpha": StreamableHTTP(alpha_server()), "beta": StreamableHTTP(beta_server())}
    async with serving(config(breaker_failures=1), apps,
                       clock=ManualClock()) as gateway, downstream(gateway) as client:
        for _ in range(3):
            with pytest.raises(RemoteProtocolError):
                await client.read_resource("mem://alpha/missing")
        assert gateway.upstreams["alpha"].breaker.state == "closed"


@pytest.mark.parametrize("mode", ["garbage", "huge", "amplify", "bad_result"])
async def test_garbage_and_oversized_answers_are_one_typed_error(
        mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstreams, "MAX_RESPONSE_BYTES", 64 * 1024)
    monkeypatch.setattr(wire, "MAX_JSON_VALUES", 1000)  # 40 KB of tiny objects pass it
    alpha = Faulty(StreamableHTTP(alpha_server()))
    alpha.huge_bytes = 1024 * 1024
    apps = {"alpha": alpha, "beta": StreamableHTTP(beta_server())}
    async with serving(config(), apps, clock=ManualClock()) as gateway, \
            downstream(gateway) as client:
        alpha.mode = mode
        with pytest.raises(RemoteProtocolError) as failed:
            await client.call_tool("alpha__add", {"a": 1, "b": 2})
        expected = {"garbage": "invalid_response", "huge": "too_large",
                    "amplify": "too_large", "bad_result": "invalid_response"}[mode]
        assert reason(failed) == expected
        assert len(failed.value.message) < 2000
        assert (await client.call_tool("beta__echo", {"text": "x"})).is_error is not True


async def test_a_slow_upstream_times_out() -> None:
    import asyncio

    from mcpcore import Server

    slow = Server("slow")
    started = asyncio.Event()

    @slow.tool()
    async def wait() -> str:
        started.set()
        await asyncio.Event().wait()  # never answers
        return "never"

    clock = ManualClock()
    gateway_config = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL, timeout=5.0),))
    async with serving(gateway_config, {"alpha": StreamableHTTP(slow)},
                       clock=clock) as gateway, downstream(gateway) as client:
        call = asyncio.ensure_future(client.call_tool("alpha__wait"))
        await asyncio.wait_for(started.wait(), 30)
        await clock.advance(5)
        with pytest.raises(RemoteProtocolError) as timed_out:
            await call
        assert reason(timed_out) == "timeout"


def test_a_missing_env_from_variable_is_refused_when_the_gateway_is_built() -> None:
    from mcpcore.gateway.app import Gateway

    config = GatewayConfig(upstreams=(UpstreamConfig(
        "tool", command="server", env={"MODE": "fast"},
        env_from={"TOKEN": "GATEWAY_TOOL_TOKEN"}),))
    with pytest.raises(ValueError, match=r"\$GATEWAY_TOOL_TOKEN, which is not set"):
        Gateway(config, environ={"PATH": "/usr/bin"})
    # Set, it is passed on; the gateway's other variables are not.
    gateway = Gateway(config, environ={"PATH": "/usr/bin", "GATEWAY_TOOL_TOKEN": "t",
                                       "AWS_SECRET_ACCESS_KEY": "no"})
    assert gateway.upstreams["tool"].env == {"PATH": "/usr/bin", "MODE": "fast",
                                             "TOKEN": "t"}
