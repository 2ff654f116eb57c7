"""Per-tool timeouts (the server's default, the rule set's default and per tool) and
downstream gating (a tool may exchange tokens only for the audiences it declares; the
rest is refused before the token service is asked, and audited)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from mcpcore import Policy, Principal, Rule, Ruleset, Server
from mcpcore.auth.client_auth import ClientSecretPost
from mcpcore.auth.errors import DownstreamNotAllowed
from mcpcore.auth.server.downstream import DownstreamCredentials, TokenExchange
from mcpcore.auth.server.inbound import InboundToken
from mcpcore.auth.urls import NetworkPolicy
from mcpcore.context import Context
from mcpcore.jsonrpc import Request
from mcpcore.policy import Downstream, MemoryAuditSink, ToolSettings
from tests.support.wire import make_meta

ANYONE = {c: [] for c in ("read", "write_idempotent", "write_additive", "destructive")}
ALICE = Principal("alice", issuer="https://idp.example", tenant="t", auth_method="jwt")
API = "https://api.example"


async def call(server: Server, tool: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments, "_meta": make_meta({})}
    import msgspec

    request = Request(id=1, method="tools/call", params=msgspec.json.encode(params))
    return await server.handle(request, principal=ALICE)


def timed_server(**options: Any) -> tuple[Server, list[str]]:
    server = Server("timeouts", **options)
    ran: list[str] = []

    @server.tool()
    async def wait(seconds: float) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            ran.append("cancelled")
            raise
        return "done"

    @server.tool()
    async def own_timeout() -> str:
        raise TimeoutError("the upstream timed out")  # the tool's own, not ours

    return server, ran


async def test_a_handler_past_the_servers_timeout_is_cancelled_with_a_clear_error() -> None:
    server, ran = timed_server(tool_timeout=0.05)
    assert (await call(server, "wait", seconds=0))["content"][0]["text"] == "done"
    result = await asyncio.wait_for(call(server, "wait", seconds=60), 5)
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Tool wait did not finish within 0.05 seconds"
    assert ran == ["cancelled"]
    # A TimeoutError the tool raises itself is its failure, not a timeout of ours.
    own = await call(server, "own_timeout")
    assert own["isError"] is True and "internal error" in own["content"][0]["text"]


async def test_the_rule_set_sets_the_default_and_per_tool_timeouts() -> None:
    audit = MemoryAuditSink()
    rules = Ruleset([Rule("all", "allow")], category_scopes=ANYONE, timeout=60,
                    tools={"wait": ToolSettings(timeout=0.05)})
    server, ran = timed_server(policy=Policy(rules, sinks=[audit]), tool_timeout=0.01)
    assert rules.timeout_for("wait") == 0.05 and rules.timeout_for("own_timeout") == 60
    result = await asyncio.wait_for(call(server, "wait", seconds=60), 5)
    assert result["isError"] is True and "0.05 seconds" in result["content"][0]["text"]
    assert ran == ["cancelled"]
    event = audit.events[-1]
    assert (event.result, event.timeout_seconds, event.decision) == ("timeout", 0.05,
                                                                     "allow")
    # The server's own default applies where the rule set says nothing.
    plain = Ruleset([Rule("all", "allow")], category_scopes=ANYONE)
    server2, _ = timed_server(policy=Policy(plain, sinks=[audit]), tool_timeout=0.05)
    late = await asyncio.wait_for(call(server2, "wait", seconds=60), 5)
    assert "0.05 seconds" in late["content"][0]["text"]


class Sts:
    def __init__(self) -> None:
        self.asked: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(request)
        return httpx.Response(200, json={"access_token": "t-" + str(len(self.asked)),
                                         "token_type": "Bearer"})


def gated_server(sts: Sts, audit: MemoryAuditSink) -> Server:
    credentials = DownstreamCredentials(exchange=TokenExchange(
        "https://sts.example/token", issuer="https://sts.example",
        client_auth=ClientSecretPost("mcp", "s"), network=NetworkPolicy(),
        client=httpx.AsyncClient(transport=httpx.MockTransport(sts))))
    rules = Ruleset([Rule("all", "allow")], category_scopes=ANYONE, tools={
        "reports": ToolSettings(downstream=(Downstream(API + "/", frozenset({"read",
                                                                              "list"})),))})
    server = Server("gated", policy=Policy(rules, sinks=[audit]))

    async def exchange(ctx: Context, audience: str, scopes: list[str]) -> str:
        try:
            token = await credentials.for_principal(ctx.principal, audience=audience,
                                                    scopes=scopes,
                                                    inbound=InboundToken("inbound"))
        except DownstreamNotAllowed as exc:
            return f"refused: {exc}"
        return f"got {token.audience}"

    @server.tool(annotations={"readOnlyHint": True})
    async def reports(ctx: Context, audience: str, scopes: list[str]) -> str:
        return await exchange(ctx, audience, scopes)

    @server.tool(annotations={"readOnlyHint": True})
    async def undeclared(ctx: Context, audience: str, scopes: list[str]) -> str:
        return await exchange(ctx, audience, scopes)

    return server


@pytest.mark.parametrize(("tool", "audience", "scopes", "allowed"), [
    ("reports", API, ["read"], True),                    # declared (trailing / ignored)
    ("reports", API, [], True),                          # fewer scopes than declared
    ("reports", API, ["read", "list"], True),
    ("reports", API, ["read", "write"], False),          # a scope beyond the declared
    ("reports", "https://evil.example", ["read"], False),  # another audience
    ("undeclared", API, ["read"], False),                # the tool declares nothing
])
async def test_downstream_gating(tool: str, audience: str, scopes: list[str],
                                 allowed: bool) -> None:
    sts, audit = Sts(), MemoryAuditSink()
    server = gated_server(sts, audit)
    text = (await call(server, tool, audience=audience, scopes=scopes))["content"][0]["text"]
    event = audit.events[-1]
    assert event.downstream == [{"audience": audience, "scopes": sorted(scopes),
                                 "result": "allowed" if allowed else "refused"}]
    if allowed:
        assert text == f"got {audience}" and len(sts.asked) == 1
    else:
        assert text.startswith("refused: this tool may not obtain a token for")
        assert sts.asked == []          # refused before the token service was contacted


async def test_outside_a_gated_call_the_exchange_is_not_restricted() -> None:
    sts = Sts()
    credentials = DownstreamCredentials(exchange=TokenExchange(
        "https://sts.example/token", issuer="https://sts.example",
        client_auth=ClientSecretPost("mcp", "s"), network=NetworkPolicy(),
        client=httpx.AsyncClient(transport=httpx.MockTransport(sts))))
    token = await credentials.for_principal(ALICE, audience="https://any.example",
                                            inbound=InboundToken("inbound"))
    assert token.audience == "https://any.example" and len(sts.asked) == 1
