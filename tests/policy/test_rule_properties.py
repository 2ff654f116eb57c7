"""Properties of the engine and the rule files, over generated principals and rule sets.

The central one: no generated principal ever gets a destructive tool (allowed or put to
a person) unless an allow or confirm rule of the rule set matches the call, and no deny
rule does. "Matches" is judged here by a naive oracle written from the rule's fields,
independent of the engine's indexed, short-circuiting path.

Each example decides and explains a generated rule set, so these are the slowest
properties of the unit tests: the default run gives them a small budget, and the full one
(the budget they were written with, five to six times the examples) runs on demand
(tests/support/budgets.py)::

    HYPOTHESIS_PROFILE=full .venv/bin/pytest tests/policy/test_rule_properties.py
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcpcore.policy import (
    Call,
    Rule,
    Ruleset,
    ToolPolicy,
    auth_kind,
    decide,
    expand_scopes,
    explain,
    load,
    loads,
)
from mcpcore.principal import Principal
from mcpcore.tools import CATEGORIES
from tests.support.budgets import budget

EXAMPLE = load(Path(__file__).resolve().parents[2] / "examples" / "policy.toml")

ISSUERS = ["https://idp.example", "https://other.example", None]
TENANTS = ["contoso", "fabrikam", "evil", None]
SUBJECTS = ["ada", "rita", "demo-client", "sync", "olga"]
CLIENTS = ["notes-app", "demo-client", "sync", None]
SCOPES = ["mcp:read", "mcp:write", "mcp:admin", "files:admin", "other"]
GROUPS = ["interns", "staff", "ops", "eng"]
KINDS = [None, "ema", "wif", "client_credentials"]
METHODS = ["jwt", "introspection", "wif", "anonymous"]
TOOLS = ["delete_note", "nightly_cleanup", "purge_all", "add_note", "set_status",
         "search_notes", "weather", "files.rm", "files.ls"]
ARG_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 300),
                       st.sampled_from(["system.x", "todo", "/srv/a", "/etc/passwd", ""]),
                       st.lists(st.integers(0, 3), max_size=3))
# Monday 2026-03-02 00:00 UTC and the two weeks after it.
NOW = st.floats(1_772_409_600.0, 1_772_409_600.0 + 14 * 86_400, allow_nan=False)


@st.composite
def principals(draw: st.DrawFn) -> Principal:
    claims: dict[str, Any] = {}
    kind = draw(st.sampled_from(KINDS))
    if kind is not None:
        claims["auth_kind"] = kind
    groups = draw(st.lists(st.sampled_from(GROUPS), max_size=3, unique=True))
    if groups:
        claims["groups"] = groups
    subject = draw(st.sampled_from(SUBJECTS))
    client = draw(st.sampled_from([*CLIENTS, subject]))
    return Principal(subject=subject, issuer=draw(st.sampled_from(ISSUERS)),
                     tenant=draw(st.sampled_from(TENANTS)), client_id=client,
                     scopes=frozenset(draw(st.lists(st.sampled_from(SCOPES), max_size=3))),
                     auth_method=draw(st.sampled_from(METHODS)), claims=claims)


def some(values: list[Any]) -> st.SearchStrategy[list[Any] | None]:
    return st.none() | st.lists(st.sampled_from([v for v in values if v is not None]),
                                min_size=1, max_size=2, unique=True)


@st.composite
def rules(draw: st.DrawFn, index: int) -> Rule:
    effect = draw(st.sampled_from(["allow", "deny", "confirm"]))
    kwargs: dict[str, Any] = {
        "tools": draw(st.none() | st.lists(st.sampled_from([*TOOLS, "files.*", "*note*"]),
                                           min_size=1, max_size=2, unique=True)),
        "categories": draw(some(list(CATEGORIES))),
        "external": draw(st.sampled_from([None, True, False])),
        "issuers": draw(some(ISSUERS)), "tenants": draw(some(TENANTS)),
        "subjects": draw(some(SUBJECTS)), "groups": draw(some(GROUPS)),
        "clients": draw(some(CLIENTS)), "auth_kinds": draw(some([*KINDS, "jwt"])),
        "scopes": draw(some(SCOPES)),
        "interactive": draw(st.sampled_from([None, True, False])),
    }
    if draw(st.booleans()):
        kwargs["args"] = {"name": draw(st.sampled_from([
            {"prefix": "system."}, {"eq": "todo"}, {"max_length": 4}, {"present": False},
            {"in": ["todo", 3, True]}, {"ge": 10, "lt": 100}]))}
    if draw(st.booleans()):
        kwargs["window"] = draw(st.sampled_from([
            {"days": ["sat", "sun"]}, {"hours": "22:00-06:00", "timezone": "Europe/Berlin"},
            {"days": ["mon"], "hours": "09:00-17:00", "timezone": "+05:30"}]))
    if effect == "confirm":
        kwargs["autonomous"] = draw(st.booleans())
    return Rule(f"rule-{index}", effect, **{k: v for k, v in kwargs.items() if v is not None})


@st.composite
def rulesets(draw: st.DrawFn) -> Ruleset:
    count = draw(st.integers(0, 8))
    return Ruleset([draw(rules(i)) for i in range(count)],
                   allowed_tenants=draw(st.none() | st.just(["contoso", "fabrikam"])))


@st.composite
def calls(draw: st.DrawFn, tool: str) -> Call:
    arguments = draw(st.dictionaries(st.sampled_from(["name", "path", "n"]), ARG_VALUES,
                                     max_size=3))
    return Call("tools/call", tool, interactive=draw(st.booleans()), arguments=arguments,
                now=draw(NOW))


def naive_matches(rule: Rule, principal: Principal, tool: ToolPolicy, call: Call,
                  ruleset: Ruleset) -> bool:
    """Does ``rule`` match, judged field by field without the engine's machinery."""
    kind = auth_kind(principal, ruleset.non_interactive_kinds)
    interactive = call.interactive and kind not in ruleset.non_interactive_kinds
    groups = principal.claims.get("groups", [])
    granted = expand_scopes(principal.scopes, ruleset.scope_hierarchy)
    wants: list[bool] = []
    if rule.tools is not None:
        wants.append(any(fnmatchcase(tool.name, t) for t in rule.tools))
    if rule.categories is not None:
        wants.append(tool.category in rule.categories)
    if rule.external is not None:
        wants.append(tool.external is rule.external)
    for name, value in (("issuers", principal.issuer), ("tenants", principal.tenant),
                        ("subjects", principal.subject), ("clients", principal.client_id),
                        ("auth_kinds", kind)):
        allowed = getattr(rule, name)
        if allowed is not None:
            wants.append(value in allowed)
    if rule.groups is not None:
        wants.append(any(g in rule.groups for g in groups))
    if rule.scopes is not None:
        wants.append(all(s in granted for s in rule.scopes))
    if rule.interactive is not None:
        wants.append(interactive is rule.interactive)
    if rule.args is not None:
        assert call.arguments is not None
        wants.append(all(c.matches(call.arguments[n]) if n in call.arguments
                         else c.matches() for n, c in rule.args.items()))
    if rule.window is not None:
        wants.append(rule.window.matches(call.now))
    return all(wants)


def _check_destructive(principal: Principal, call: Call, tool: ToolPolicy,
                       ruleset: Ruleset) -> None:
    decision = decide(principal, call, tool, ruleset)
    matching = [r for r in ruleset.rules if naive_matches(r, principal, tool, call, ruleset)]
    if decision.outcome in ("allow", "confirm"):
        deciding = [r for r in matching if r.id == decision.rule_id]
        assert deciding, (decision, [r.id for r in matching])
        assert deciding[0].effect in ("allow", "confirm")
        assert not any(r.effect == "deny" for r in matching)
        if decision.outcome == "allow":   # a confirm rule lets through only the autonomous
            assert deciding[0].effect == "allow" or deciding[0].autonomous
    elif any(r.effect == "deny" for r in matching):
        assert decision.reason_code in ("rule_deny", "issuer_not_allowed",
                                        "tenant_not_allowed")
    # explain tells the same story.
    assert explain(principal, call, tool, ruleset).decision == decision


@budget(small=40, full=250, deadline=None)
@given(principal=principals(), data=st.data(), ruleset=rulesets(),
       tool=st.sampled_from(TOOLS), external=st.booleans())
def test_no_destructive_call_without_a_matching_allow_or_confirm_rule(
        principal: Principal, data: st.DataObject, ruleset: Ruleset, tool: str,
        external: bool) -> None:
    call = data.draw(calls(tool))
    _check_destructive(principal, call, ToolPolicy(tool, "destructive", external), ruleset)


@budget(small=50, full=250, deadline=None)
@given(principal=principals(), data=st.data(),
       tool=st.sampled_from(["delete_note", "nightly_cleanup", "purge_all", "mystery"]))
def test_the_example_file_never_lets_a_destructive_call_through_unmatched(
        principal: Principal, data: st.DataObject, tool: str) -> None:
    call = data.draw(calls(tool))
    _check_destructive(principal, call, ToolPolicy(tool, "destructive", False), EXAMPLE)


@budget(small=40, full=200, deadline=None)
@given(principal=principals(), data=st.data(), ruleset=rulesets(),
       tool=st.sampled_from(TOOLS), category=st.sampled_from(CATEGORIES))
def test_the_decision_is_the_naive_reading_of_the_table(
        principal: Principal, data: st.DataObject, ruleset: Ruleset, tool: str,
        category: Any) -> None:
    """Issuer/tenant, then any matching deny, else the first matching rule, else the
    default; the same inputs give the same decision every time."""
    call = data.draw(calls(tool))
    policy = ToolPolicy(tool, category, True)
    decision = decide(principal, call, policy, ruleset)
    assert decide(principal, call, policy, ruleset) == decision
    if ruleset.allowed_tenants is not None and principal.tenant not in ruleset.allowed_tenants:
        assert decision.reason_code == "tenant_not_allowed"
        return
    matching = [r for r in ruleset.rules if naive_matches(r, principal, policy, call, ruleset)]
    denies = [r for r in matching if r.effect == "deny"]
    if denies:
        assert (decision.outcome, decision.rule_id) == ("deny", denies[0].id)
    elif matching:
        assert decision.rule_id in (matching[0].id, "scope")
    else:
        assert decision.rule_id in ("default", "scope")


@budget(small=25, full=150, deadline=None)
@given(data=st.data(), count=st.integers(0, 6))
def test_canonical_text_reads_back_to_the_same_rule_set(data: st.DataObject,
                                                        count: int) -> None:
    # One distinct tool per rule, so no rule can shadow another (the reader refuses that).
    table = []
    for i in range(count):
        rule = data.draw(rules(i))
        kwargs = {name: getattr(rule, name) for name in (
            "categories", "external", "issuers", "tenants", "subjects", "groups", "clients",
            "auth_kinds", "scopes", "args", "window")}
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        interactive = rule.interactive
        if rule.effect == "confirm" and interactive is False and not rule.autonomous:
            interactive = None
        table.append(Rule(rule.id, rule.effect, tools={f"tool{i}"}, interactive=interactive,
                          autonomous=rule.autonomous, **kwargs))
    ruleset = Ruleset(table)
    again = loads(ruleset.canonical())
    assert again.canonical() == ruleset.canonical()
    assert again.hash == ruleset.hash
