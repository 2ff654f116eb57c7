"""The pure policy engine: categories, scopes, rule order, determinism (auth spec 5.09-5.18).

``decide`` is a function of (principal, call, tool policy, rule set) alone, so every edge
is a row in a table, and the same row always gives the same ``Decision``.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore.policy import (
    Call,
    Decision,
    MemoryRateLimiter,
    RateLimit,
    Rule,
    Ruleset,
    ToolPolicy,
    auth_kind,
    decide,
    expand_scopes,
    summarize_arguments,
)
from mcpcore.principal import Principal
from mcpcore.tools import (
    Category,
    ToolRegistry,
    category_from_annotations,
    external_from_annotations,
)

IDP = "https://idp.example"

# -- categories (5.10) --------------------------------------------------------------------
CATEGORY_TABLE: list[tuple[dict[str, Any] | None, Category, bool]] = [
    (None, "destructive", True),                                     # no annotations at all
    ({}, "destructive", True),
    ({"readOnlyHint": True}, "read", True),
    ({"readOnlyHint": True, "destructiveHint": True}, "read", True),  # destructive ignored
    ({"readOnlyHint": True, "openWorldHint": False}, "read", False),
    ({"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True},
     "write_idempotent", True),
    ({"destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
     "write_idempotent", False),
    ({"destructiveHint": False, "idempotentHint": False}, "write_additive", True),
    ({"destructiveHint": False}, "write_additive", True),             # idempotent unset
    ({"readOnlyHint": False, "destructiveHint": True}, "destructive", True),
    ({"idempotentHint": True}, "destructive", True),                  # destructive unset
    ({"readOnlyHint": "true", "destructiveHint": "false"}, "destructive", True),  # not bool
    ({"openWorldHint": None}, "destructive", True),                   # only false closes
]


@pytest.mark.parametrize(("annotations", "category", "external"), CATEGORY_TABLE)
def test_category_and_external_come_from_the_servers_annotations(
    annotations: dict[str, Any] | None, category: Category, external: bool
) -> None:
    assert category_from_annotations(annotations) == category
    assert external_from_annotations(annotations) is external


def test_an_explicit_category_beats_annotations_and_unknown_means_destructive() -> None:
    registry = ToolRegistry()

    def f() -> str:
        return ""

    declared = registry.add(f, name="declared", annotations={"readOnlyHint": True},
                            category="write_additive", external=False)
    assert (declared.category, declared.external) == ("write_additive", False)
    derived = registry.add(f, name="derived", annotations={"readOnlyHint": True,
                                                           "openWorldHint": False})
    assert (derived.category, derived.external) == ("read", False)
    bogus = registry.add(f, name="bogus", category="admin")  # type: ignore[arg-type]
    assert bogus.category == "destructive"


# -- scopes (5.11) ------------------------------------------------------------------------
@pytest.mark.parametrize(("held", "implied"), [
    ({"mcp:admin"}, {"mcp:admin", "mcp:write", "mcp:read"}),
    ({"mcp:write"}, {"mcp:write", "mcp:read"}),
    ({"mcp:read"}, {"mcp:read"}),
    ({"other"}, {"other"}),
    (set(), set()),
])
def test_scope_hierarchy_admin_includes_write_includes_read(held: set[str],
                                                           implied: set[str]) -> None:
    assert expand_scopes(held, Ruleset().scope_hierarchy) == implied


@pytest.mark.parametrize(("category", "scope"), [
    ("read", "mcp:read"), ("write_idempotent", "mcp:write"),
    ("write_additive", "mcp:write"), ("destructive", "mcp:admin"),
])
def test_default_scope_per_category_and_per_tool_override(category: Category,
                                                          scope: str) -> None:
    rules = Ruleset()
    assert rules.required_scopes(ToolPolicy("t", category)) == {scope}
    assert rules.required_scopes(ToolPolicy("t", category, required_scopes=frozenset(
        {"files:write"}))) == {"files:write"}
    custom = Ruleset(category_scopes={"read": {"tools-basic"}})
    assert custom.required_scopes(ToolPolicy("t", "read")) == {"tools-basic"}
    assert custom.required_scopes(ToolPolicy("t", "destructive")) == {"mcp:admin"}


# -- the decision table (5.18) ------------------------------------------------------------
def person(subject: str = "alice", *, tenant: str | None = "contoso",
           scopes: set[str] | frozenset[str] = frozenset({"mcp:read"}), issuer: str = IDP,
           auth_method: str = "jwt", client_id: str | None = "app") -> Principal:
    return Principal(subject=subject, issuer=issuer, tenant=tenant, client_id=client_id,
                     scopes=frozenset(scopes), auth_method=auth_method)


READ_TOOL = ToolPolicy("search", "read", external=False)
NOTE_TOOL = ToolPolicy("add_note", "write_additive", external=False)
FETCH_TOOL = ToolPolicy("fetch_url", "read", external=True)
DELETE_TOOL = ToolPolicy("delete_file", "destructive", external=False)
SHUTDOWN_TOOL = ToolPolicy("shutdown", "destructive", external=False)

RULES = Ruleset(
    [
        Rule("no-shutdown", "deny", tools={"shutdown"}),
        Rule("fabrikam-no-egress", "deny", tenants={"fabrikam"}, external=True),
        Rule("bots-may-delete", "confirm", categories={"destructive"}, autonomous=True,
             clients={"nightly-job"}),
        Rule("confirm-destructive", "confirm", categories={"destructive"}),
        Rule("reads", "allow", categories={"read"}),
        Rule("writes", "allow", categories={"write_idempotent", "write_additive"}),
    ],
    allowed_issuers={IDP},
    allowed_tenants={"contoso", "fabrikam"},
)
H = RULES.hash
ADMIN = {"mcp:admin"}
BOT = Principal(subject="nightly-job", issuer=IDP, tenant="contoso", client_id="nightly-job",
                scopes=frozenset(ADMIN), auth_method="jwt")
OTHER_BOT = Principal(subject="sync", issuer=IDP, tenant="contoso", client_id="sync",
                      scopes=frozenset(ADMIN), auth_method="client_credentials")


def d(outcome: str, rule_id: str, scopes: set[str], reason: str) -> Decision:
    return Decision(outcome, rule_id, H, frozenset(scopes), reason)  # type: ignore[arg-type]


DECISIONS: list[tuple[str, Principal, ToolPolicy, bool, Decision]] = [
    ("read allowed", person(), READ_TOOL, True,
     d("allow", "reads", {"mcp:read"}, "rule_allow")),
    ("write via hierarchy", person(scopes={"mcp:admin"}), NOTE_TOOL, True,
     d("allow", "writes", {"mcp:write"}, "rule_allow")),
    ("write without scope", person(), NOTE_TOOL, True,
     d("deny", "scope", {"mcp:write"}, "insufficient_scope")),
    ("destructive asks a person", person(scopes=ADMIN), DELETE_TOOL, True,
     d("confirm", "confirm-destructive", {"mcp:admin"}, "confirmation_required")),
    ("no elicitation: cannot confirm", person(scopes=ADMIN), DELETE_TOOL, False,
     d("deny", "confirm-destructive", {"mcp:admin"}, "confirmation_unavailable")),
    ("client_credentials: cannot confirm", OTHER_BOT, DELETE_TOOL, True,
     d("deny", "confirm-destructive", {"mcp:admin"}, "confirmation_unavailable")),
    ("autonomous rule lets a bot through", BOT, DELETE_TOOL, True,
     d("allow", "bots-may-delete", {"mcp:admin"}, "autonomous")),
    ("deny rule", person(scopes=ADMIN), SHUTDOWN_TOOL, True,
     d("deny", "no-shutdown", {"mcp:admin"}, "rule_deny")),
    ("deny rule wins over a missing scope", person(), SHUTDOWN_TOOL, True,
     d("deny", "no-shutdown", {"mcp:admin"}, "rule_deny")),
    ("deny beats a later allow (external read)", person(tenant="fabrikam"), FETCH_TOOL, True,
     d("deny", "fabrikam-no-egress", {"mcp:read"}, "rule_deny")),
    ("same tool, other tenant", person(), FETCH_TOOL, True,
     d("allow", "reads", {"mcp:read"}, "rule_allow")),
    ("tenant wins over a missing scope", person(tenant="evil", scopes=set()), DELETE_TOOL,
     True, d("deny", "tenant", {"mcp:admin"}, "tenant_not_allowed")),
    ("no tenant at all", person(tenant=None), READ_TOOL, True,
     d("deny", "tenant", {"mcp:read"}, "tenant_not_allowed")),
    ("issuer first", person(issuer="https://other", tenant="evil"), READ_TOOL, True,
     d("deny", "issuer", {"mcp:read"}, "issuer_not_allowed")),
]


@pytest.mark.parametrize(("case", "principal", "tool", "interactive", "expected"), DECISIONS,
                         ids=[row[0] for row in DECISIONS])
def test_decision_table(case: str, principal: Principal, tool: ToolPolicy,
                        interactive: bool, expected: Decision) -> None:
    call = Call("tools/call", tool.name, "sha256:x", interactive=interactive)
    first = decide(principal, call, tool, RULES)
    assert first == expected
    # Deterministic: the same inputs, again and against an equal rule set, same answer.
    assert decide(principal, call, tool, RULES) == first
    rebuilt = Ruleset(RULES.rules, allowed_issuers={IDP},
                      allowed_tenants={"fabrikam", "contoso"})
    assert decide(principal, call, tool, rebuilt) == first


def test_nothing_matched_falls_to_the_default_which_fails_closed() -> None:
    call = Call("tools/call", "x")
    tool = ToolPolicy("x", "read")
    assert decide(person(), call, tool, Ruleset()) == Decision(
        "deny", "default", Ruleset().hash, frozenset({"mcp:read"}), "default_deny")
    opened = Ruleset(default="allow")
    assert decide(person(), call, tool, opened).reason_code == "default_allow"
    # A default deny is a denial no scope fixes: it wins over the scope check too.
    assert decide(person(scopes=set()), call, tool, Ruleset()).reason_code == "default_deny"


def test_first_matching_allow_or_confirm_wins_in_table_order() -> None:
    alice = person(scopes=ADMIN)
    call = Call("tools/call", "delete_file")
    allow_first = Ruleset([Rule("alice", "allow", subjects={"alice"}),
                           Rule("confirm", "confirm", categories={"destructive"})])
    confirm_first = Ruleset(list(reversed(allow_first.rules)))
    assert decide(alice, call, DELETE_TOOL, allow_first).rule_id == "alice"
    assert decide(alice, call, DELETE_TOOL, confirm_first).outcome == "confirm"


@pytest.mark.parametrize("change", [
    lambda: Ruleset(RULES.rules[:-1], allowed_issuers={IDP},
                    allowed_tenants={"contoso", "fabrikam"}),
    lambda: Ruleset(RULES.rules[::-1], allowed_issuers={IDP},
                    allowed_tenants={"contoso", "fabrikam"}),
    lambda: Ruleset(RULES.rules, allowed_issuers={IDP}, allowed_tenants={"contoso"}),
    lambda: Ruleset(RULES.rules, allowed_issuers={IDP},
                    allowed_tenants={"contoso", "fabrikam"}, default="allow"),
    lambda: Ruleset(RULES.rules, allowed_issuers={IDP},
                    allowed_tenants={"contoso", "fabrikam"}, rate_limit=RateLimit(5, 60)),
    lambda: Ruleset(RULES.rules, allowed_issuers={IDP},
                    allowed_tenants={"contoso", "fabrikam"},
                    category_scopes={"read": {"mcp:basic"}}),
])
def test_changing_the_rule_set_changes_its_hash(change: Any) -> None:
    changed: Ruleset = change()
    assert changed.hash != RULES.hash
    assert decide(person(), Call("tools/call", "search"), READ_TOOL,
                  changed).ruleset_hash == changed.hash


def test_rule_validation() -> None:
    with pytest.raises(ValueError):
        Rule("x", "maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Rule("x", "allow", categories={"admin"})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Rule("x", "allow", autonomous=True)
    with pytest.raises(ValueError):
        Ruleset([Rule("x", "allow"), Rule("x", "deny")])


def test_rule_tool_patterns_and_matchers() -> None:
    rules = Ruleset([Rule("files", "allow", tools={"files.*"}, scopes={"mcp:write"})])
    writer = person(scopes={"mcp:write"})
    assert decide(writer, Call("tools/call", "files.read"), ToolPolicy("files.read", "read"),
                  rules).outcome == "allow"
    assert decide(writer, Call("tools/call", "mail.read"), ToolPolicy("mail.read", "read"),
                  rules).rule_id == "default"
    # The scope matcher uses the hierarchy-expanded set, and a reader lacks mcp:write.
    assert decide(person(), Call("tools/call", "files.read"), ToolPolicy("files.read", "read"),
                  rules).rule_id == "default"


def test_rules_can_single_out_enterprise_managed_principals() -> None:
    """An ``auth_kinds`` matcher tells an EMA principal (its token came from an enterprise
    IdP's ID-JAG) from an interactive user and from a machine client."""
    rules = Ruleset([
        Rule("ema-never-deletes", "deny", auth_kinds={"ema"}, categories={"destructive"}),
        Rule("confirm-destructive", "confirm", categories={"destructive"}),
    ])
    ema = Principal("alice", issuer=IDP, scopes=frozenset({"mcp:admin"}), auth_method="jwt",
                    claims={"auth_kind": "ema"})
    user = person(scopes={"mcp:admin"})
    delete = Call("tools/call", "delete_file")
    assert decide(ema, delete, DELETE_TOOL, rules).rule_id == "ema-never-deletes"
    assert decide(user, delete, DELETE_TOOL, rules).outcome == "confirm"
    assert Rule("r", "deny", auth_kinds="ema").canonical()["auth_kinds"] == ["ema"]


@pytest.mark.parametrize(("principal", "kind"), [
    (person(), "jwt"),
    (person(auth_method="wif"), "wif"),
    (Principal("svc", client_id="svc", auth_method="jwt"), "client_credentials"),
    (Principal("svc", client_id="svc", actors=("x",), auth_method="jwt"), "jwt"),
    (Principal("bob", auth_method="jwt", claims={"auth_kind": "ema"}), "ema"),
])
def test_auth_kind(principal: Principal, kind: str) -> None:
    assert auth_kind(principal) == kind


def test_memory_rate_limiter_slides_its_window() -> None:
    limiter = MemoryRateLimiter()
    limit = RateLimit(2, 10)
    assert [limiter.hit("k", limit, t) for t in (0, 1, 2, 9.9)] == [True, True, False, False]
    assert limiter.hit("k", limit, 10.0) is True        # the call at 0 left the window
    assert limiter.hit("other", limit, 10.0) is True    # keys are independent
    small = MemoryRateLimiter(max_keys=1)
    assert small.hit("a", limit, 0) and small.hit("b", limit, 0)
    with pytest.raises(ValueError):
        RateLimit(0, 1)


def test_argument_summary_hides_secrets_and_cuts_long_values() -> None:
    text = summarize_arguments(None, {  # type: ignore[arg-type]
        "path": "/etc/hosts", "password": "hunter2", "body": "x" * 100, "tags": [1, 2],
        "opts": {"a": 1}, "n": 3, "more": 1})
    assert "hunter2" not in text and "password=(hidden)" in text
    assert "tags=(list of 2)" in text and "opts=(object)" in text and "… 2 more" in text
    assert len(text) < 200
    assert summarize_arguments(None, {}) == "no arguments"  # type: ignore[arg-type]
