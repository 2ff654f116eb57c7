"""Policy on every routed call of the gateway, in both downstream eras: one seam (the
engine's gate), four outcomes (allow, deny, confirm, throttle), lists filtered by the
same rules, rules matching upstreams, categories from the config over annotations, one
audit event per call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpcore import Server, StreamableHTTP
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from mcpcore.gateway.policy import gateway_policy
from mcpcore.policy import (
    MemoryAuditSink,
    Policy,
    RateLimit,
    Rule,
    RuleFileError,
    Ruleset,
    loads,
)
from mcpcore.policy.gate import (
    GATEABLE_METHODS,
    LISTS,
    ROUTED_METHODS,
    SUBSCRIBING,
    TASK_METHODS,
)
from mcpcore.tools import CATEGORIES
from tests.gateway.inprocess import (
    URL,
    alpha_server,
    beta_server,
    downstream,
    jobs_server,
    serving,
    two_upstreams,
    with_jobs,
)

ERAS = ["2026-07-28", "legacy"]

#: One request for each routed method, naming something the gateway serves.
REQUESTS: dict[str, dict[str, Any]] = {
    "tools/call": {"name": "alpha__add", "arguments": {"a": 1, "b": 2}},
    "resources/read": {"uri": "mem://alpha/7"},
    "prompts/get": {"name": "alpha__greet", "arguments": {"name": "ada"}},
    "completion/complete": {"ref": {"type": "ref/prompt", "name": "alpha__greet"},
                            "argument": {"name": "name", "value": "al"}},
}
#: The request that subscribes to a resource's updates, per downstream era (a
#: ``subscriptions/listen`` names its URIs; a 2025 session's ``resources/subscribe``
#: is the session's own, not a route of the server): each URI is gated as a read.
SUBSCRIBE: dict[str, str] = {"2026-07-28": "subscriptions/listen",
                             "legacy": "resources/subscribe"}
SUBSCRIBED = "mem://alpha/7"
#: Methods the gateway serves that name no upstream's item: they route nowhere.
NOT_ROUTED = frozenset({"server/discover"})
#: One request for each of the tasks extension's methods, on a task the gateway relays
#: (2026-07-28 only: the extension does not exist in the 2025 revisions).
TASK_REQUESTS: dict[str, dict[str, Any]] = {
    "tasks/get": {}, "tasks/update": {"inputResponses": {}}, "tasks/cancel": {}}


def apps() -> dict[str, object]:
    return {"alpha": StreamableHTTP(alpha_server()), "beta": StreamableHTTP(beta_server())}


def rules(*table: Rule, default: str = "deny", **options: Any) -> Ruleset:
    """A rule set for the anonymous callers of these tests: no scope needed."""
    return Ruleset(table, default=default,  # type: ignore[arg-type]
                   category_scopes={c: () for c in CATEGORIES}, **options)


def policy(ruleset: Ruleset, audit: MemoryAuditSink, config: GatewayConfig | None = None
           ) -> Policy:
    made = gateway_policy(config or two_upstreams(), ruleset=ruleset, sinks=[audit])
    assert made is not None
    return made


async def send(client: Any, method: str) -> dict[str, Any]:
    return await client.request(method, REQUESTS[method])


async def subscribe(client: Any, mode: str, uri: str = SUBSCRIBED) -> None:
    """Subscribe to ``uri`` the way ``mode``'s era does, then let go."""
    if mode == "legacy":
        await client.subscribe_resource(uri)
        await client.unsubscribe_resource(uri)
        return
    async with client.listen({"resourceSubscriptions": [uri]}) as sub:
        await anext(sub)  # acknowledged: the subscription is held


# -- one seam, every route ------------------------------------------------------------------
@pytest.mark.parametrize("mode", ERAS)
async def test_every_routed_method_goes_through_the_policy(mode: str) -> None:
    audit = MemoryAuditSink()
    deny_all = policy(rules(), audit)
    async with serving(two_upstreams(), apps(), policy=deny_all) as gateway, \
            downstream(gateway, mode) as client:
        served = gateway.server.methods
        # Every method the gateway serves is known here: a new route must be classified
        # (gated, a list filtered by the rules, a subscription gated per URI, or routed
        # nowhere) or this fails. The tasks extension's methods are gated too
        # (test_every_task_method_...).
        assert served == (ROUTED_METHODS | TASK_METHODS | set(LISTS)
                          | {SUBSCRIBE["2026-07-28"]} | NOT_ROUTED)
        assert set(SUBSCRIBING) == set(SUBSCRIBE.values())
        assert gateway.server.policy is deny_all
        assert all(deny_all.gates(m) for m in GATEABLE_METHODS | set(SUBSCRIBING))
        for method in sorted(ROUTED_METHODS):
            audit.events.clear()
            if method == "tools/call":
                result = await send(client, method)
                assert result["isError"] is True, method
                assert result["content"][0]["text"] == "This tool call is not permitted."
            else:
                with pytest.raises(RemoteProtocolError) as refused:
                    await send(client, method)
                assert refused.value.code == -32600, method
                assert refused.value.data == {"reason": "default_deny", "rule": "default"}
            [event] = audit.events
            assert (event.method, event.decision, event.rule_id, event.upstream) == (
                method, "deny", "default", "alpha")
        # A subscription, in this era's way: the same seam, the same refusal, one event.
        audit.events.clear()
        with pytest.raises(RemoteProtocolError) as refused:
            await subscribe(client, mode)
        assert refused.value.code == -32600
        assert refused.value.data == {"reason": "default_deny", "rule": "default"}
        [event] = audit.events
        assert (event.method, event.tool, event.decision, event.rule_id, event.upstream,
                event.result) == (SUBSCRIBE[mode], SUBSCRIBED, "deny", "default", "alpha",
                                  "error")
        assert gateway.updates.subscribed("alpha") == []
        # Lists: filtered by the same rules, so nothing is listed.
        assert await client.tools() == []
        assert await client.resources() == []
        assert await client.resource_templates() == []
        assert await client.prompts() == []

    # The same requests under allow-all: the refusals above were the policy's.
    audit.events.clear()
    allow_all = policy(rules(default="allow"), audit)
    async with serving(two_upstreams(), apps(), policy=allow_all) as gateway, \
            downstream(gateway, mode) as client:
        assert (await send(client, "tools/call"))["content"][0]["text"] == "3"
        read = await send(client, "resources/read")
        assert read["contents"][0]["text"] == "alpha item 7"
        prompt = await send(client, "prompts/get")
        assert prompt["messages"][0]["content"]["text"] == "Hello ada"
        completed = await send(client, "completion/complete")
        assert completed["completion"]["values"] == ["alice", "albert"]
        await subscribe(client, mode)
        assert [(e.method, e.decision, e.result) for e in audit.events] == [
            ("tools/call", "allow", "ok"), ("resources/read", "allow", "ok"),
            ("prompts/get", "allow", "ok"), ("completion/complete", "allow", "ok"),
            (SUBSCRIBE[mode], "allow", "ok")]
        assert (audit.events[-1].tool, audit.events[-1].upstream) == (SUBSCRIBED, "alpha")
        assert {t.name for t in await client.tools()} >= {"alpha__add", "beta__echo"}


@pytest.mark.parametrize("mode", ERAS)
async def test_every_task_method_goes_through_the_policy(mode: str) -> None:
    """tasks/get, tasks/update, tasks/cancel on a task the gateway relays: each through
    the seam, judged as the tool whose call made the task (its upstream, its category),
    one audit event each; a rule that now denies the tool denies them too. In a 2025
    session they do not exist: nothing is routed, nothing gated."""
    audit = MemoryAuditSink()
    config = with_jobs(two_upstreams())
    gate = policy(rules(default="allow"), audit, config)
    served = {**apps(), "jobs": StreamableHTTP(jobs_server())}
    async with serving(config, served, policy=gate) as gateway, \
            downstream(gateway, mode) as client:
        if mode == "legacy":
            for method, params in TASK_REQUESTS.items():
                with pytest.raises(RemoteProtocolError) as missing:
                    await client.request(method, {"taskId": "x", **params})
                assert missing.value.code == -32601, method
            assert audit.events == []
            return
        handle = await client.tasks.call_tool("jobs__build", {"seconds": 60})
        assert not isinstance(handle, dict) and hasattr(handle, "task_id")
        [created] = audit.events
        assert (created.method, created.result, created.task_id) == (
            "tools/call", "task", handle.task_id)
        # Denied first: the rules now refuse the upstream, and so every task method.
        gate.ruleset = rules(Rule("no-jobs", "deny", upstreams={"jobs"}), default="allow")
        for method, params in TASK_REQUESTS.items():
            audit.events.clear()
            with pytest.raises(RemoteProtocolError) as refused:
                await client.tasks.request(method, handle.task_id, **params)
            assert refused.value.code == -32600, method
            assert refused.value.data == {"reason": "rule_deny", "rule": "no-jobs"}
            [event] = audit.events
            assert (event.method, event.decision, event.rule_id, event.tool,
                    event.upstream) == (method, "deny", "no-jobs", "jobs__build", "jobs")
        # Allowed: the same requests reach the upstream, one audit event each.
        gate.ruleset = rules(default="allow")
        audit.events.clear()
        for method, params in TASK_REQUESTS.items():
            await client.tasks.request(method, handle.task_id, **params)
        assert [(e.method, e.decision, e.tool, e.upstream, e.result)
                for e in audit.events] == [
            (method, "allow", "jobs__build", "jobs", "ok") for method in TASK_REQUESTS]
        assert (await client.tasks.request("tasks/get", handle.task_id))["status"] == \
            "cancelled"


async def test_a_task_is_confirmed_and_counted_once_at_its_call() -> None:
    """A confirm rule asks before the call that makes the task, not at each poll; a rate
    limit counts the call, not the polls."""
    audit = MemoryAuditSink()
    config = with_jobs(two_upstreams())
    ruleset = rules(Rule("ask-jobs", "confirm", upstreams={"jobs"}), default="allow",
                    tool_rate_limits={"jobs__build": RateLimit(1, 3600)})
    asked: list[str] = []

    def on_elicit(params: Any) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"confirm": True}}

    served = {**apps(), "jobs": StreamableHTTP(jobs_server())}
    async with serving(config, served, policy=policy(ruleset, audit, config)) as gateway, \
            downstream(gateway, "2026-07-28", on_elicit=on_elicit) as client:
        handle = await client.tasks.call_tool("jobs__build", {"seconds": 0})
        assert hasattr(handle, "wait")
        assert len(asked) == 1
        result = await handle.wait()  # polls: tasks/get, as often as it takes
        assert result.content[0].text == "built in 0 s"
        assert len(asked) == 1
        polls = [e for e in audit.events if e.method == "tasks/get"]
        assert polls and {(e.decision, e.reason_code, e.rule_id) for e in polls} == {
            ("allow", "task_of_call", "ask-jobs")}
        # The call itself was counted: a second one is over the limit.
        with pytest.raises(RemoteProtocolError) as limited:
            await client.tasks.call_tool("jobs__build", {"seconds": 0})
        assert isinstance(limited.value.data, dict)
        assert limited.value.data["reason"] == "rate_limited"


async def test_a_policy_that_leaves_routes_ungated_is_refused() -> None:
    tools_only = Policy(rules(), sinks=[])
    with pytest.raises(ValueError, match="every routed method"):
        Gateway(two_upstreams(), policy=tools_only)


async def test_the_config_rule_file_is_loaded_at_start(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('version = 1\ndefault = "deny"\n\n[[rules]]\nid = "beta-only"\n'
                    'effect = "allow"\nupstreams = ["beta"]\n')
    config = GatewayConfig(upstreams=two_upstreams().upstreams, policy=str(path))
    gateway = Gateway(config)
    assert gateway.policy is not None and gateway.server.policy is gateway.policy
    assert gateway.policy.methods == GATEABLE_METHODS
    assert gateway.policy.ruleset.rules[0].upstreams == frozenset({"beta"})
    await gateway.aclose()
    path.write_text('version = 1\n\n[[rules]]\nid = "x"\neffect = "allow"\n'
                    'upstreams = ["fil[es"]\n')
    with pytest.raises(RuleFileError, match=r"policy.toml:6: rule 'x': upstream pattern"):
        Gateway(config)


# -- rules that match upstreams ---------------------------------------------------------------
def test_rule_files_take_upstreams_and_their_hash_says_so() -> None:
    text = '[[rules]]\nid = "files-read"\neffect = "allow"\nupstreams = ["files"]\n'
    ruleset = loads(text)
    assert ruleset.rules[0].upstreams == frozenset({"files"})
    assert 'upstreams = ["files"]' in ruleset.canonical()
    assert ruleset.hash != loads(text.replace('"files"', '"notes"')).hash
    # A narrower allow after a wider one is shadowed, upstreams judged like tools.
    with pytest.raises(RuleFileError, match="can never apply"):
        loads(text + '\n[[rules]]\nid = "files-add"\neffect = "allow"\n'
                     'upstreams = ["files"]\ntools = ["files__add"]\n')
    with pytest.raises(RuleFileError, match=r"rules.toml:4: unknown key 'upstream' .*"
                                            r"did you mean 'upstreams'"):
        loads(text.replace("upstreams", "upstream"), source="rules.toml")


@pytest.mark.parametrize("mode", ERAS)
async def test_rules_match_the_upstream_and_lists_follow(mode: str) -> None:
    audit = MemoryAuditSink()
    ruleset = rules(Rule("no-beta", "deny", upstreams={"beta"}),
                    Rule("no-greeting", "deny", tools={"alpha__greet"}),
                    default="allow")
    async with serving(two_upstreams(), apps(), policy=policy(ruleset, audit)) as gateway, \
            downstream(gateway, mode) as client:
        assert {t.name for t in await client.tools()} == {
            "alpha__add", "alpha__shared", "alpha__slow_progress", "alpha__fail"}
        assert [r.uri for r in await client.resources()] == ["mem://shared/readme"]
        assert await client.prompts() == []
        denied = await client.call_tool("beta__echo", {"text": "hi"})
        assert denied.is_error is True
        with pytest.raises(RemoteProtocolError) as refused:
            await client.read_resource("mem://beta/notes")
        assert refused.value.data == {"reason": "rule_deny", "rule": "no-beta"}
        with pytest.raises(RemoteProtocolError):
            await client.get_prompt("alpha__greet", {"name": "x"})
        ok = await client.call_tool("alpha__add", {"a": 2, "b": 2})
        assert ok.content[0].text == "4"
        assert [(e.tool, e.upstream, e.rule_id) for e in audit.events] == [
            ("beta__echo", "beta", "no-beta"), ("mem://beta/notes", "beta", "no-beta"),
            ("alpha__greet", "alpha", "no-greeting"), ("alpha__add", "alpha", "default")]


async def test_an_alias_is_judged_as_the_name_it_stands_for() -> None:
    audit = MemoryAuditSink()
    config = two_upstreams(aliases={"plus": "alpha__add"})
    ruleset = rules(Rule("no-add", "deny", tools={"alpha__add"}), default="allow")
    async with serving(config, apps(), policy=policy(ruleset, audit, config)) as gateway, \
            downstream(gateway, "2026-07-28") as client:
        assert "plus" not in {t.name for t in await client.tools()}
        assert (await client.call_tool("plus", {"a": 1, "b": 1})).is_error is True
        assert audit.events[-1].rule_id == "no-add"


# -- categories ---------------------------------------------------------------------------
@pytest.mark.parametrize("categories", [{}, {"ad?": "destructive"}])
async def test_config_categories_win_over_annotations(categories: dict[str, str]) -> None:
    audit = MemoryAuditSink()
    config = GatewayConfig(upstreams=(
        UpstreamConfig("alpha", url=URL, categories=categories),  # type: ignore[arg-type]
        UpstreamConfig("beta", url=URL, era="legacy")))
    ruleset = rules(Rule("reads", "allow", categories={"read"}))
    async with serving(config, apps(), policy=policy(ruleset, audit, config)) as gateway, \
            downstream(gateway, "2026-07-28") as client:
        add = gateway.server.tools.find("alpha__add")
        assert add is not None and add.upstream == "alpha"
        result = await client.call_tool("alpha__add", {"a": 1, "b": 1})
        if categories:  # the config says destructive: the read rule no longer allows it
            assert (add.category, result.is_error) == ("destructive", True)
            assert audit.events[-1].category == "destructive"
        else:  # readOnlyHint: a read
            assert (add.category, result.is_error) == ("read", False)
            assert audit.events[-1].category == "read"


# -- confirm -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("answer", [True, False])
async def test_confirmation_through_the_gateway(mode: str, answer: bool) -> None:
    audit = MemoryAuditSink()
    asked: list[dict[str, Any]] = []

    def on_elicit(params: Any) -> dict[str, Any]:
        asked.append(params if isinstance(params, dict) else dict(params))
        return {"action": "accept", "content": {"confirm": answer}}

    ruleset = rules(Rule("ask-for-beta", "confirm", upstreams={"beta"}), default="allow")
    async with serving(two_upstreams(), apps(), policy=policy(ruleset, audit)) as gateway, \
            downstream(gateway, mode, on_elicit=on_elicit) as client:
        result = await client.call_tool("beta__echo", {"text": "hi"})
        assert len(asked) == 1
        assert asked[0]["message"].startswith(
            "Allow the tool 'beta__echo' (destructive, reaches external systems, on beta)")
        final = audit.events[-1]
        assert (final.upstream, final.rule_id) == ("beta", "ask-for-beta")
        if answer:
            assert result.content[0].text == "beta: hi"
            assert (final.decision, final.reason_code, final.confirmation, final.result) == (
                "allow", "confirmed", "accepted", "ok")
        else:
            assert result.is_error is True
            assert result.content[0].text == "The user did not approve this tool call."
            assert (final.decision, final.confirmation) == ("deny", "declined")
        if mode != "legacy":  # MRTR: the question round, then the retry that carries it
            first = audit.events[-2]
            assert (first.result, first.confirmation) == ("input_required", "pending")
            assert first.confirmation_id == final.confirmation_id
        # A read under the same rule is confirmed the same way.
        asked.clear()
        if answer:
            read = await client.read_resource("mem://beta/notes")
            assert read.contents[0].text == "beta's notes"
        else:
            with pytest.raises(RemoteProtocolError) as refused:
                await client.read_resource("mem://beta/notes")
            assert refused.value.data == {"reason": "confirmation_declined",
                                          "rule": "ask-for-beta"}
        assert len(asked) == 1
        assert asked[0]["message"] == ("Allow reading the resource 'mem://beta/notes' "
                                       "(read-only, reaches external systems, on beta)?")


async def test_a_completion_cannot_be_confirmed_so_a_confirm_rule_denies_it() -> None:
    audit = MemoryAuditSink()
    ruleset = rules(Rule("ask", "confirm", upstreams={"alpha"}), default="allow")
    async with serving(two_upstreams(), apps(), policy=policy(ruleset, audit)) as gateway, \
            downstream(gateway, "2026-07-28",
                       on_elicit=lambda p: {"action": "accept"}) as client:
        with pytest.raises(RemoteProtocolError) as refused:
            await send(client, "completion/complete")
        assert refused.value.data == {"reason": "confirmation_unavailable", "rule": "ask"}


# -- throttle ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ERAS)
async def test_rate_limits_per_principal_upstream_and_tool(mode: str) -> None:
    audit = MemoryAuditSink()
    ruleset = rules(default="allow", tool_rate_limits={"alpha__add": RateLimit(2, 3600)},
                    rate_limit=RateLimit(3, 3600))
    async with serving(two_upstreams(), apps(), policy=policy(ruleset, audit)) as gateway, \
            downstream(gateway, mode) as client:
        for _ in range(2):
            assert (await client.call_tool("alpha__add", {"a": 1, "b": 1})).is_error is False
        with pytest.raises(RemoteProtocolError) as limited:
            await client.call_tool("alpha__add", {"a": 1, "b": 1})
        assert limited.value.data["reason"] == "rate_limited"
        assert audit.events[-1].rule_id == "rate_limit"
        # Another tool has its own window; reads are counted too (the rule set's limit).
        assert (await client.call_tool("beta__echo", {"text": "x"})).is_error is False
        for _ in range(3):
            await client.read_resource("mem://beta/notes")
        with pytest.raises(RemoteProtocolError) as read_limited:
            await client.read_resource("mem://beta/notes")
        assert read_limited.value.data["reason"] == "rate_limited"


# -- audit ----------------------------------------------------------------------------------
async def test_one_audit_event_per_call_with_its_fields() -> None:
    audit = MemoryAuditSink()
    ruleset = rules(Rule("alpha-ok", "allow", upstreams={"alpha"}))
    async with serving(two_upstreams(), apps(), policy=policy(ruleset, audit)) as gateway, \
            downstream(gateway, "2026-07-28") as client:
        await client.call_tool("alpha__fail")
        await client.call_tool("beta__echo", {"text": "x"})
        with pytest.raises(RemoteProtocolError):
            await client.read_resource("mem://alpha/missing")
    ok, denied, missing = audit.events
    assert (ok.subject, ok.method, ok.tool, ok.upstream, ok.decision, ok.rule_id,
            ok.result) == ("anonymous", "tools/call", "alpha__fail", "alpha", "allow",
                           "alpha-ok", "tool_error")
    assert (denied.upstream, denied.decision, denied.rule_id, denied.result) == (
        "beta", "deny", "default", "tool_error")
    assert (missing.method, missing.upstream, missing.decision, missing.result,
            missing.error_code) == ("resources/read", "alpha", "allow", "error", -32602)
    assert all(e.latency_ms > 0 and e.ruleset_hash == ruleset.hash for e in audit.events)
    assert '"upstream":"alpha"' in ok.to_json()


# -- the engine seam, without a gateway -----------------------------------------------------
async def test_a_filtered_tools_list_leaves_out_unlisted_tools() -> None:
    server = Server("s", policy=Policy(rules(default="allow"), sinks=[],
                                       filter_tools_list=True))

    async def handler(arguments: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"content": []}

    server.tools.add_raw({"name": "shown", "inputSchema": {"type": "object"}}, handler)
    server.tools.add_raw({"name": "held", "inputSchema": {"type": "object"}}, handler,
                         listed=False)
    assert [t.name for t in server.tools.listed()] == ["shown"]
    from mcpcore.client import Client
    from tests.gateway.inprocess import http_client

    async with http_client(StreamableHTTP(server)) as http, \
            Client.http(URL, http_client=http, era_cache=None) as client:
        assert [t.name for t in await client.tools()] == ["shown"]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_servers_subscriptions_are_gated_when_its_reads_are(mode: str) -> None:
    """Not only a gateway's: any ``Server`` whose policy gates ``resources/read`` judges
    each resource subscription the same way (one audit event each); a policy of tools
    only leaves them alone, as it leaves reads."""
    from mcpcore.client import Client
    from tests.gateway.inprocess import http_client

    audit = MemoryAuditSink()
    ruleset = rules(Rule("no-secrets", "deny", tools={"mem://secret"}), default="allow")
    for methods, gated in ((ROUTED_METHODS, True), (frozenset({"tools/call"}), False)):
        audit.events.clear()
        server = Server("s", policy=Policy(ruleset, sinks=[audit], methods=methods))
        for uri in ("mem://secret", "mem://open"):
            server.resource(uri, name=uri[6:])(lambda: "text")
        async with http_client(StreamableHTTP(server)) as http, \
                Client.http(URL, http_client=http, mode=mode, era_cache=None) as client:
            await subscribe(client, mode, "mem://open")
            if gated:
                with pytest.raises(RemoteProtocolError) as refused:
                    await subscribe(client, mode, "mem://secret")
                assert refused.value.data == {"reason": "rule_deny", "rule": "no-secrets"}
            else:
                await subscribe(client, mode, "mem://secret")
        assert [(e.method, e.tool, e.decision) for e in audit.events] == ([
            (SUBSCRIBE[mode], "mem://open", "allow"),
            (SUBSCRIBE[mode], "mem://secret", "deny")] if gated else [])
