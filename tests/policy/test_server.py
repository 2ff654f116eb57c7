"""The policy wired into a Server, over Streamable HTTP in-process (auth spec 5.12-5.17).

The principal is injected the way auth middleware does it: an ASGI wrapper sets
``scope["mcpcore.principal"]``. Every call must leave exactly one audit event.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from mcpcore import (
    InsufficientScope,
    LoggingAuditSink,
    MemoryAuditSink,
    MrtrConfig,
    Policy,
    Principal,
    RateLimit,
    Rule,
    Ruleset,
    Server,
    StreamableHTTP,
)
from mcpcore.context import Context
from mcpcore.principal import PRINCIPAL_SCOPE_KEY
from mcpcore.stores.memory import MemoryStore
from tests.support.wire import FULL_CAPS, make_meta, standard_headers

IDP = "https://idp.example"
PRM = "https://mcp.example/.well-known/oauth-protected-resource/mcp"
SECRET_ARG = "s3cr3t-argument-value"
TOKEN_ID = "jti-must-not-leak"

ALICE = Principal("alice", issuer=IDP, tenant="contoso", client_id="app",
                  scopes=frozenset({"mcp:admin"}), auth_method="jwt", token_id=TOKEN_ID)
READER = Principal("rita", issuer=IDP, tenant="contoso", client_id="app",
                   scopes=frozenset({"mcp:read"}), auth_method="jwt")
OUTSIDER = Principal("eve", issuer=IDP, tenant="evil", client_id="app",
                     scopes=frozenset({"mcp:admin"}), auth_method="jwt")
BOT = Principal("sync", issuer=IDP, tenant="contoso", client_id="sync",
                scopes=frozenset({"mcp:admin"}), auth_method="client_credentials")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    server: Server
    policy: Policy
    audit: MemoryAuditSink
    clock: Clock
    ran: list[str]

    async def post(self, principal: Principal | None, method: str,
                   params: dict[str, Any], caps: dict[str, Any] | None = None
                   ) -> httpx.Response:
        inner = StreamableHTTP(self.server)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if principal is not None:
                scope = {**scope, PRINCIPAL_SCOPE_KEY: principal}
            await inner(scope, receive, send)

        body = {"jsonrpc": "2.0", "id": 1, "method": method,
                "params": {**params, "_meta": make_meta(FULL_CAPS if caps is None else caps)}}
        headers = standard_headers(method, body["params"])
        headers["Accept"] = "application/json"
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.post("/mcp", json=body, headers=headers)

    async def call(self, principal: Principal | None, tool: str,
                   arguments: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        caps = extra.pop("caps", None)
        params = {"name": tool, "arguments": arguments or {}, **extra}
        response = await self.post(principal, "tools/call", params, caps)
        message: dict[str, Any] = response.json()
        return message


def make_rig(*, filter_list: bool = False, rate_limit: RateLimit | None = None) -> Rig:
    audit, clock, ran = MemoryAuditSink(), Clock(), []
    rules = Ruleset(
        [
            Rule("no-shutdown", "deny", tools={"shutdown"}),
            Rule("confirm-destructive", "confirm", categories={"destructive"}),
            Rule("reads", "allow", categories={"read"}),
            Rule("writes", "allow", categories={"write_additive", "write_idempotent"}),
        ],
        allowed_tenants={"contoso"},
        tool_rate_limits={"search": rate_limit} if rate_limit else None,
    )
    policy = Policy(rules, sinks=[audit], clock=clock, resource_metadata=PRM,
                    filter_tools_list=filter_list)
    server = Server("policy-test", policy=policy,
                    mrtr=MrtrConfig.from_env(single_use=True, store=MemoryStore()))

    @server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    def search(query: str) -> str:
        ran.append("search")
        return f"found {len(query)}"

    @server.tool(annotations={"readOnlyHint": False, "destructiveHint": False})
    def add_note(text: str) -> str:
        ran.append("add_note")
        return "noted"

    @server.tool(annotations={"destructiveHint": True}, required_scopes=["files:admin",
                                                                        "mcp:admin"])
    def wipe(path: str) -> str:
        ran.append("wipe")
        return "wiped"

    @server.tool()
    def delete_file(path: str, api_token: str = "") -> str:
        ran.append("delete_file")
        return f"deleted {path}"

    @server.tool()
    def shutdown() -> str:
        ran.append("shutdown")
        return "bye"

    @server.tool(annotations={"destructiveHint": True})
    async def purge(ctx: Context) -> str:
        answer = await ctx.elicit("Which bucket?", {"type": "object", "properties": {
            "bucket": {"type": "string"}}, "required": ["bucket"]}, key="bucket")
        ran.append("purge")
        return f"purged {answer.content['bucket']}"

    return Rig(server, policy, audit, clock, ran)


def text(message: dict[str, Any]) -> str:
    return str(message["result"]["content"][0]["text"])


# -- scope failures: 403 with the complete challenge ----------------------------------------
async def test_insufficient_scope_is_a_403_with_the_complete_challenge() -> None:
    rig = make_rig()
    response = await rig.post(READER, "tools/call", {"name": "add_note",
                                                     "arguments": {"text": "hi"}})
    assert response.status_code == 403
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{PRM}", scope="mcp:write", error="insufficient_scope"')
    error = response.json()["error"]
    assert error["code"] == InsufficientScope.code
    assert error["data"] == {"requiredScopes": ["mcp:write"]}
    # Every scope the tool needs, in one challenge (1.06), even those already held.
    response = await rig.post(ALICE, "tools/call", {"name": "wipe",
                                                    "arguments": {"path": "/"}})
    assert response.status_code == 403
    assert 'scope="files:admin mcp:admin"' in response.headers["www-authenticate"]
    assert rig.ran == []
    [first, second] = rig.audit.events
    assert (first.decision, first.reason_code, first.rule_id, first.error_code) == (
        "deny", "insufficient_scope", "scope", -32600)
    assert second.required_scopes == ["files:admin", "mcp:admin"]


async def test_denials_no_scope_can_fix_are_tool_errors_without_a_challenge() -> None:
    rig = make_rig()
    for principal, tool, reason in [(OUTSIDER, "search", "tenant_not_allowed"),
                                    (ALICE, "shutdown", "rule_deny"),
                                    (READER, "shutdown", "rule_deny")]:  # not a 403 either
        response = await rig.post(principal, "tools/call", {"name": tool, "arguments": {}})
        assert response.status_code == 200
        assert "www-authenticate" not in response.headers
        result = response.json()["result"]
        assert result["isError"] is True
        assert result["content"][0]["text"] == "This tool call is not permitted."
        event = rig.audit.events[-1]
        assert (event.decision, event.reason_code, event.result) == ("deny", reason,
                                                                     "tool_error")
        assert event.rule_id not in result["content"][0]["text"]
    assert rig.ran == []


async def test_allowed_call_runs_and_is_audited() -> None:
    rig = make_rig()
    message = await rig.call(READER, "search", {"query": "abc"})
    assert text(message) == "found 3" and rig.ran == ["search"]
    [event] = rig.audit.events
    assert (event.decision, event.rule_id, event.reason_code, event.result) == (
        "allow", "reads", "rule_allow", "ok")
    assert (event.category, event.external, event.subject, event.tenant) == (
        "read", False, "rita", "contoso")
    assert event.ruleset_hash == rig.policy.ruleset.hash and event.ts == rig.clock.now


async def test_invalid_arguments_are_checked_after_the_policy() -> None:
    rig = make_rig()
    outsider = await rig.call(OUTSIDER, "search", {"query": 42})
    assert text(outsider) == "This tool call is not permitted."   # no schema hints leak
    allowed = await rig.call(READER, "search", {"query": 42})
    assert allowed["result"]["isError"] is True and "Invalid arguments" in text(allowed)
    assert [e.result for e in rig.audit.events] == ["tool_error", "tool_error"]
    assert rig.audit.events[1].decision == "allow"


async def test_unknown_tool_is_still_audited() -> None:
    rig = make_rig()
    message = await rig.call(ALICE, "nope")
    assert message["error"]["code"] == -32602
    [event] = rig.audit.events
    assert (event.tool, event.result, event.error_code) == ("nope", "error", -32602)


# -- CONFIRM through MRTR -----------------------------------------------------------------
async def ask(rig: Rig, principal: Principal = ALICE) -> tuple[str, str, dict[str, Any]]:
    first = await rig.call(principal, "delete_file", {"path": "/tmp/x", "api_token": SECRET_ARG})
    result = first["result"]
    assert result["resultType"] == "input_required" and rig.ran == []
    [(key, request)] = result["inputRequests"].items()
    return key, result["requestState"], request


async def test_confirmation_round_trip_runs_the_tool_once_approved() -> None:
    rig = make_rig()
    key, state, request = await ask(rig)
    assert request["method"] == "elicitation/create"
    params = request["params"]
    assert params["mode"] == "form"
    assert params["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"
    message = params["message"]
    assert "delete_file" in message and "destructive" in message and "/tmp/x" in message
    assert SECRET_ARG not in message and "api_token=(hidden)" in message
    approved = await rig.call(ALICE, "delete_file",
                              {"path": "/tmp/x", "api_token": SECRET_ARG},
                              requestState=state,
                              inputResponses={key: {"action": "accept",
                                                    "content": {"confirm": True}}})
    assert text(approved) == "deleted /tmp/x" and rig.ran == ["delete_file"]
    asked, done = rig.audit.events
    assert (asked.decision, asked.reason_code, asked.result, asked.confirmation) == (
        "confirm", "confirmation_required", "input_required", "pending")
    assert (done.decision, done.reason_code, done.result, done.confirmation) == (
        "allow", "confirmed", "ok", "accepted")
    assert asked.confirmation_id == done.confirmation_id is not None
    assert asked.confirmation_id in key
    # Single-use state: the same approval cannot run the tool a second time.
    replay = await rig.call(ALICE, "delete_file", {"path": "/tmp/x", "api_token": SECRET_ARG},
                            requestState=state,
                            inputResponses={key: {"action": "accept",
                                                  "content": {"confirm": True}}})
    assert replay["error"]["code"] == -32602 and rig.ran == ["delete_file"]


@pytest.mark.parametrize(("answer", "recorded"), [
    ({"action": "decline"}, "declined"),
    ({"action": "cancel"}, "cancelled"),
    ({"action": "accept", "content": {"confirm": False}}, "declined"),
])
async def test_a_declined_confirmation_is_a_tool_error(answer: dict[str, Any],
                                                       recorded: str) -> None:
    rig = make_rig()
    key, state, _ = await ask(rig)
    message = await rig.call(ALICE, "delete_file", {"path": "/tmp/x", "api_token": SECRET_ARG},
                             requestState=state, inputResponses={key: answer})
    assert message["result"]["isError"] is True
    assert text(message) == "The user did not approve this tool call."
    assert rig.ran == []
    event = rig.audit.events[-1]
    assert (event.decision, event.reason_code, event.confirmation) == (
        "deny", "confirmation_declined", recorded)


async def test_approval_without_this_calls_sealed_state_is_never_seen() -> None:
    rig = make_rig()
    key, state, _ = await ask(rig)
    accept = {key: {"action": "accept", "content": {"confirm": True}}}
    args = {"path": "/tmp/x", "api_token": SECRET_ARG}
    # Self-approval sent up front: the key is unknown, so the server asks anyway.
    guessed = await rig.call(ALICE, "delete_file", args, inputResponses=accept)
    assert guessed["result"]["resultType"] == "input_required"
    # Another principal replaying Alice's state, tampered state, other arguments: refused.
    bob = Principal("bob", issuer=IDP, tenant="contoso", scopes=frozenset({"mcp:admin"}),
                    auth_method="jwt")
    stolen = await rig.call(bob, "delete_file", args, requestState=state,
                            inputResponses=accept)
    assert stolen["error"]["code"] == -32602
    tampered = await rig.call(ALICE, "delete_file", args, requestState=state[:-4] + "AAAA",
                              inputResponses=accept)
    assert tampered["error"]["code"] == -32602
    other = await rig.call(ALICE, "delete_file", {"path": "/etc", "api_token": SECRET_ARG},
                           requestState=state, inputResponses=accept)
    assert other["error"]["code"] == -32602
    assert rig.ran == []


async def test_non_interactive_callers_are_denied_instead_of_asked() -> None:
    rig = make_rig()
    no_elicitation = await rig.call(ALICE, "delete_file", {"path": "/x"}, caps={})
    machine = await rig.call(BOT, "delete_file", {"path": "/x"})
    for message in (no_elicitation, machine):
        assert message["result"]["isError"] is True
        assert message["result"].get("resultType") == "complete"
    assert rig.ran == []
    assert [e.reason_code for e in rig.audit.events] == ["confirmation_unavailable"] * 2
    assert rig.audit.events[1].auth_kind == "client_credentials"


async def test_confirmation_then_the_handlers_own_question() -> None:
    rig = make_rig()
    first = (await rig.call(ALICE, "purge"))["result"]
    [confirm_key] = first["inputRequests"]
    second = (await rig.call(ALICE, "purge", requestState=first["requestState"],
                             inputResponses={confirm_key: {"action": "accept",
                                                           "content": {"confirm": True}}}
                             ))["result"]
    assert list(second["inputRequests"]) == ["bucket"]
    done = await rig.call(ALICE, "purge", requestState=second["requestState"],
                          inputResponses={"bucket": {"action": "accept",
                                                     "content": {"bucket": "b1"}}})
    assert text(done) == "purged b1" and rig.ran == ["purge"]
    assert [e.result for e in rig.audit.events] == ["input_required", "input_required", "ok"]


# -- rate limits --------------------------------------------------------------------------
async def test_rate_limit_per_principal_and_tool_with_an_injected_clock() -> None:
    rig = make_rig(rate_limit=RateLimit(2, 60))
    answers = [await rig.call(READER, "search", {"query": "q"}) for _ in range(2)]
    assert [a["result"].get("isError", False) for a in answers] == [False, False]
    rig.clock.now += 15
    response = await rig.post(READER, "tools/call", {"name": "search",
                                                     "arguments": {"query": "q"}})
    # Past the limit: a JSON-RPC error (not a tool result), HTTP 429 with Retry-After,
    # and the same hint in data: the first call leaves the window 45 s from now.
    assert response.status_code == 429
    assert response.headers["retry-after"] == "45"
    assert response.json()["error"] == {
        "code": -32600, "message": "Too many calls to this tool; try again later",
        "data": {"reason": "rate_limited", "retryAfterSeconds": 45}}
    limited = rig.audit.events[-1]
    assert (limited.decision, limited.reason_code, limited.rule_id, limited.result,
            limited.error_code) == ("deny", "rate_limited", "rate_limit", "error", -32600)
    assert text(await rig.call(ALICE, "search", {"query": "q"})) == "found 1"  # own bucket
    rig.clock.now += 46
    assert text(await rig.call(READER, "search", {"query": "q"})) == "found 1"
    assert rig.ran == ["search"] * 4


# -- tools/list ---------------------------------------------------------------------------
async def test_filtered_tools_list_is_per_principal_and_private() -> None:
    rig = make_rig(filter_list=True)

    async def names(principal: Principal) -> tuple[list[str], str]:
        result = (await rig.post(principal, "tools/list", {})).json()["result"]
        return [t["name"] for t in result["tools"]], result["cacheScope"]

    assert await names(ALICE) == (["search", "add_note", "wipe", "delete_file", "purge"],
                                  "private")
    # Missing scopes do not hide a tool (the call gets a 403 to step up); denials do.
    assert (await names(READER))[0] == ["search", "add_note", "wipe", "delete_file", "purge"]
    assert await names(OUTSIDER) == ([], "private")
    unfiltered = make_rig()
    result = (await unfiltered.post(OUTSIDER, "tools/list", {})).json()["result"]
    assert result["cacheScope"] == "public" and len(result["tools"]) == 6
    assert rig.audit.events == []   # lists are not tool calls


# -- audit --------------------------------------------------------------------------------
async def test_every_outcome_gives_exactly_one_event_without_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rig = make_rig(rate_limit=RateLimit(1, 60))
    rig.policy.sinks.append(LoggingAuditSink())
    caplog.set_level(logging.INFO, logger="mcpcore.audit")
    calls: list[tuple[Principal, str, dict[str, Any]]] = [
        (ALICE, "search", {"query": SECRET_ARG}),                  # allow
        (ALICE, "search", {"query": SECRET_ARG}),                  # rate limited
        (OUTSIDER, "search", {"query": SECRET_ARG}),               # tenant
        (ALICE, "shutdown", {}),                                   # rule deny
        (READER, "add_note", {"text": SECRET_ARG}),                # 403
        (ALICE, "delete_file", {"path": SECRET_ARG, "api_token": SECRET_ARG}),  # confirm
        (ALICE, "missing", {"x": SECRET_ARG}),                     # unknown tool
    ]
    for principal, tool, arguments in calls:
        await rig.call(principal, tool, arguments)
    events = rig.audit.events
    assert len(events) == len(calls)
    assert [e.reason_code for e in events] == [
        "rule_allow", "rate_limited", "tenant_not_allowed", "rule_deny",
        "insufficient_scope", "confirmation_required", "unknown_tool"]
    lines = [r.getMessage() for r in caplog.records if r.name == "mcpcore.audit"]
    assert len(lines) == len(calls)
    for line, event in zip(lines, events, strict=True):
        assert json.loads(line) == event.to_dict()
        assert SECRET_ARG not in line and TOKEN_ID not in line
        assert event.args_digest.startswith("sha256:")
    assert events[0].token_id_sha256 == hashlib.sha256(TOKEN_ID.encode()).hexdigest()
    assert events[0].args_digest == events[1].args_digest != events[3].args_digest
    assert all(e.latency_ms >= 0 for e in events)


async def test_a_failing_sink_does_not_change_the_outcome(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        def emit(self, event: Any) -> None:
            raise RuntimeError("disk full")

    rig = make_rig()
    rig.policy.sinks.insert(0, Broken())
    assert text(await rig.call(READER, "search", {"query": "q"})) == "found 1"
    assert len(rig.audit.events) == 1
    assert "audit sink" in caplog.text


async def test_without_a_policy_nothing_is_gated() -> None:
    server = Server("plain")

    @server.tool()
    def shutdown() -> str:
        return "bye"

    rig = Rig(server, Policy(Ruleset()), MemoryAuditSink(), Clock(), [])
    assert text(await rig.call(OUTSIDER, "shutdown")) == "bye"


async def test_error_headers_are_sent_on_every_http_error_path() -> None:
    """The generic mechanism: an McpError's ``http_headers`` reach the response."""
    from mcpcore.transports.error_reply import send_error

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await send_error(send, InsufficientScope({"b", "a", "offline_access"}), 7)
    start = sent[0]
    assert start["status"] == 403
    assert (b"www-authenticate", b'Bearer scope="a b", error="insufficient_scope"') in (
        start["headers"])
    assert json.loads(sent[1]["body"])["error"]["data"] == {"requiredScopes": ["a", "b"]}
