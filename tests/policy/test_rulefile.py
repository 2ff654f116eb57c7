"""Rule files: what loads, what is refused (every problem, with its line), the canonical
form and its hash, and a server that refuses to start with a bad file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpcore.policy import (
    ArgCondition,
    Downstream,
    RateLimit,
    Rule,
    RuleFileError,
    Ruleset,
    TimeWindow,
    ToolSettings,
    load,
    loads,
)
from mcpcore.policy.rulefile import parse
from tests.integration.conftest import TEST_STATE_KEYS, free_port

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
version = 1
default = "deny"
allowed_issuers = ["https://idp.example"]
allowed_tenants = ["contoso", "fabrikam"]
timeout = 20
groups_claim = "roles"
rate_limit = { calls = 30, seconds = 60 }

[scope_hierarchy]
"mcp:admin" = ["mcp:write"]
"mcp:write" = ["mcp:read"]

[categories.read]
scopes = ["tools-basic"]

[categories.destructive]
scopes = ["mcp:admin"]
rate_limit = { calls = 5, seconds = 60 }

[tools.export]
scopes = ["export:run"]
timeout = 120
rate_limit = { calls = 2, seconds = 3600 }
downstream = [
    { audience = "https://api.example/", scopes = ["reports:read"] },
    { audience = "https://files.example", scopes = [] },
]

[[rules]]
id = "no-egress-for-fabrikam"
effect = "deny"
tenants = ["fabrikam"]
external = true

[[rules]]
id = "ops-deploys-in-office-hours"
effect = "confirm"
tools = ["deploy.*"]
groups = ["ops"]
window = { days = ["mon", "tue", "wed", "thu", "fri"], hours = "08:00-18:00", timezone = "+01:00" }

[[rules]]
id = "small-transfers"
effect = "allow"
tools = ["transfer"]
args = { amount = { gt = 0, le = 100 }, currency = { in = ["EUR", "USD"] } }

[[rules]]
id = "reads"
effect = "allow"
categories = ["read"]
"""


def test_a_good_file_loads_into_the_ruleset_it_says() -> None:
    loaded = parse(GOOD, source="good.toml")
    rules = loaded.ruleset
    expected = Ruleset(
        [
            Rule("no-egress-for-fabrikam", "deny", tenants={"fabrikam"}, external=True),
            Rule("ops-deploys-in-office-hours", "confirm", tools={"deploy.*"},
                 groups={"ops"}, window=TimeWindow(days=["mon", "tue", "wed", "thu", "fri"],
                                                   hours="08:00-18:00",
                                                   timezone="+01:00")),
            Rule("small-transfers", "allow", tools={"transfer"},
                 args={"amount": ArgCondition(gt=0, le=100),
                       "currency": {"in": ["EUR", "USD"]}}),
            Rule("reads", "allow", categories={"read"}),
        ],
        allowed_issuers={"https://idp.example"}, allowed_tenants={"contoso", "fabrikam"},
        timeout=20, groups_claim="roles", rate_limit=RateLimit(30, 60),
        category_scopes={"read": {"tools-basic"}},
        category_rate_limits={"destructive": RateLimit(5, 60)},
        tools={"export": ToolSettings(frozenset({"export:run"}), RateLimit(2, 3600), 120,
                                      (Downstream("https://api.example/",
                                                  frozenset({"reports:read"})),
                                       Downstream("https://files.example")))},
    )
    assert rules.hash == expected.hash
    assert rules.canonical() == expected.canonical()
    assert loaded.lines == {"no-egress-for-fabrikam": 29, "ops-deploys-in-office-hours": 35,
                            "small-transfers": 42, "reads": 48}
    assert rules.timeout_for("export") == 120 and rules.timeout_for("other") == 20


def test_the_canonical_form_reads_back_to_the_same_hash_and_text() -> None:
    first = loads(GOOD)
    again = loads(first.canonical())
    assert again.hash == first.hash and again.canonical() == first.canonical()
    # Order of keys, spacing and comments do not matter; a changed value does.
    shuffled = GOOD.replace('version = 1\ndefault = "deny"\n', 'default = "deny" # fail\n')
    assert loads(shuffled).hash == first.hash
    assert loads(GOOD.replace("le = 100", "le = 200")).hash != first.hash
    assert loads(GOOD.replace('"EUR", "USD"', '"USD", "EUR"')).hash != first.hash  # ordered


def test_the_example_rule_file_is_valid_and_its_hash_is_stable() -> None:
    example = load(ROOT / "examples" / "policy.toml")
    assert example.hash == load(ROOT / "examples" / "policy.toml").hash
    assert [r.id for r in example.rules][:2] == ["purge-disabled",
                                                 "system-notes-are-read-only"]


# -- bad files: every problem, with its line ------------------------------------------------
RULE = '[[rules]]\nid = "r"\neffect = "allow"\n'
BAD: list[tuple[str, str, int, str]] = [
    ("syntax", "[[rules]\nid = 1\n", 1, "invalid TOML"),
    ("syntax later", 'default = "deny"\n\nx = [1,\n', 4, "the file ends too early"),
    ("syntax inside", 'default = "deny"\n\nx = [1,,]\n', 3, "invalid TOML"),
    ("unknown top key", 'defualt = "deny"\n', 1,
     "unknown key 'defualt' in the rule file (did you mean 'default'?)"),
    ("wrong version", "version = 2\n", 1, "version must be 1"),
    ("wrong default", 'default = "maybe"\n', 1, "default must be one of allow, deny, confirm"),
    ("tenants as a string", 'allowed_tenants = "contoso"\n', 1,
     "allowed_tenants must be a list of non-empty strings, not a string"),
    ("empty tenant list", "allowed_tenants = []\n", 1, "allowed_tenants is empty"),
    ("negative timeout", "timeout = -1\n", 1, "timeout must be a number of seconds > 0"),
    ("zero calls", "rate_limit = { calls = 0, seconds = 60 }\n", 1,
     "calls must be a whole number >= 1"),
    ("unknown limit key", "[rate_limit]\ncalls = 1\nseconds = 1\nburst = 3\n", 4,
     "unknown key 'burst' in rate_limit"),
    ("unknown category", "[categories.admin]\nscopes = []\n", 1,
     "unknown category 'admin'"),
    ("bad tool name", '[tools."no spaces"]\ntimeout = 1\n', 1, "is not a tool name"),
    ("unknown tool key", "[tools.t]\ntimeout = 1\ntimout = 2\n", 3,
     "unknown key 'timout' in tools.t (did you mean 'timeout'?)"),
    ("downstream without audience", "[tools.t]\ndownstream = [{ scopes = [] }]\n", 2,
     "tools.t.downstream[0].audience must be a non-empty string"),
    ("downstream twice", '[tools.t]\ndownstream = [{ audience = "https://a" }, '
     '{ audience = "https://a/" }]\n', 2, "names 'https://a/' twice"),
    ("rules not an array", 'rules = "all"\n', 1, "rules must be an array of tables"),
    ("rule without id", '[[rules]]\neffect = "allow"\n', 1, "rule #1 needs an id"),
    ("rule with a bad id", '[[rules]]\nid = "a b"\neffect = "allow"\n', 2, "needs an id"),
    ("reserved id", '[[rules]]\nid = "default"\neffect = "allow"\n', 2, "is reserved"),
    ("unknown effect", '[[rules]]\nid = "r"\neffect = "permit"\n', 3,
     "effect must be one of allow, deny, confirm"),
    ("unknown rule key", RULE + 'tool = ["x"]\n', 4,
     "unknown key 'tool' in rule 'r' (did you mean 'tools'?)"),
    ("tools as a string", RULE + 'tools = "x"\n', 4, "tools must be a list"),
    ("empty matcher", RULE + "tools = []\n", 4, "tools is empty: nothing can match"),
    ("repeated value", RULE + 'tenants = ["a", "a"]\n', 4, "lists 'a' twice"),
    ("unclosed glob", RULE + 'tools = ["files.[ab"]\n', 4, "has an unclosed '['"),
    ("impossible tool pattern", RULE + 'tools = ["files/*"]\n', 4,
     "can never match a tool name"),
    ("unknown category in a rule", RULE + 'categories = ["admin"]\n', 4,
     "unknown category 'admin'"),
    ("external as a string", RULE + 'external = "yes"\n', 4,
     "external must be true or false, not a string"),
    ("unknown predicate", RULE + 'args = { path = { startswith = "/" } }\n', 4,
     "unknown predicate 'startswith'"),
    ("predicate of the wrong type", RULE + 'args = { n = { lt = "5" } }\n', 4,
     "lt needs a finite number"),
    ("empty range", RULE + "args = { n = { gt = 5, lt = 3 } }\n", 4,
     "the number range is empty"),
    ("eq against prefix", RULE + 'args = { s = { eq = "abc", prefix = "x" } }\n', 4,
     "no value allowed by 'eq' satisfies the other predicates"),
    ("absent and more", RULE + "args = { s = { present = false, max_length = 3 } }\n", 4,
     "present = false cannot be combined"),
    ("empty in", RULE + "args = { s = { in = [] } }\n", 4, "in needs at least one value"),
    ("empty args", RULE + "args = {}\n", 4, "args is empty"),
    ("args on a nested table", RULE + "[rules.args.path]\nprefix = 5\n", 4,
     "prefix needs a string"),
    ("bad hours", RULE + 'window = { hours = "9-17" }\n', 4, "hours must look like"),
    ("empty hours", RULE + 'window = { hours = "09:00-09:00" }\n', 4, "nothing can match"),
    ("bad day", RULE + 'window = { days = ["funday"] }\n', 4, "unknown day 'funday'"),
    ("bad timezone", RULE + 'window = { days = ["mon"], timezone = "Mars/Base" }\n', 4,
     "unknown timezone 'Mars/Base'"),
    ("unknown window key", RULE + 'window = { day = ["mon"] }\n', 4,
     "unknown key 'day' in rule 'r': window"),
    ("autonomous allow", RULE + "autonomous = true\n", 4,
     "autonomous applies to confirm rules only"),
    ("confirm that can never ask", '[[rules]]\nid = "r"\neffect = "confirm"\n'
     "interactive = false\n", 4, "always denies them"),
    ("tenant outside the allowed", 'allowed_tenants = ["contoso"]\n' + RULE
     + 'tenants = ["fabrikam"]\n', 5, "are all outside allowed_tenants"),
    ("duplicate id", RULE + "\n" + RULE.replace('"allow"', '"deny"'), 6,
     "rule id 'r' is already used by the rule on line 1"),
    ("repeated rule", RULE + 'tools = ["x"]\n\n[[rules]]\nid = "s"\neffect = "allow"\n'
     'tools = ["x"]\n', 6, "rule 's' repeats rule 'r' (line 1)"),
    ("contradiction", RULE + 'tools = ["x"]\n\n[[rules]]\nid = "s"\neffect = "deny"\n'
     'tools = ["x"]\n', 6, "rule 's' contradicts rule 'r' (line 1)"),
    ("allow then confirm, same conditions", RULE + 'tools = ["x"]\n\n[[rules]]\nid = "s"\n'
     'effect = "confirm"\ntools = ["x"]\n', 6, "the first rule always wins"),
    ("shadowed by a wider allow", RULE + 'categories = ["read"]\n\n[[rules]]\nid = "s"\n'
     'effect = "allow"\ntools = ["x"]\ncategories = ["read"]\n', 6,
     "rule 's' can never apply: rule 'r' (line 1) comes first"),
    ("shadowed by a wider deny", '[[rules]]\nid = "r"\neffect = "deny"\ntools = ["x*"]\n'
     '\n[[rules]]\nid = "s"\neffect = "confirm"\ntools = ["x1"]\ntenants = ["a"]\n', 6,
     "rule 's' can never apply: the deny rule 'r'"),
    ("a later deny catches all", RULE + 'tools = ["x"]\ntenants = ["a"]\n\n[[rules]]\n'
     'id = "s"\neffect = "deny"\ntools = ["x"]\n', 7,
     "rule 'r' (line 1) can never apply: the deny rule 's'"),
    ("inside a multi-line array", RULE + 'tools = [\n  "ok",\n  "no way",\n]\n', 4,
     "can never match a tool name"),
]


@pytest.mark.parametrize(("case", "text", "line", "message"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_rule_file_is_refused_with_the_line(case: str, text: str, line: int,
                                                  message: str) -> None:
    with pytest.raises(RuleFileError) as info:
        loads(text, source="rules.toml")
    found = [(p.line, p.message) for p in info.value.problems]
    assert any(n == line and message in m for n, m in found), found
    assert f"rules.toml:{line}: " in str(info.value)


def test_every_problem_is_reported_at_once_and_nothing_is_loaded() -> None:
    text = ('defualt = "deny"\n' '[[rules]]\nid = "a"\neffect = "nope"\n'
            '[[rules]]\nid = "b"\neffect = "allow"\ntools = ["x["]\n')
    with pytest.raises(RuleFileError) as info:
        loads(text, source="f.toml")
    assert [p.line for p in info.value.problems] == [1, 4, 8]
    assert str(info.value).splitlines()[0].startswith("f.toml:1: unknown key 'defualt'")


def test_size_limits() -> None:
    big = "# padding\n" * 200 + RULE
    with pytest.raises(RuleFileError, match=r"rules.toml:103: the file is larger than 1024"):
        loads(big, source="rules.toml", max_bytes=1024)
    many = "".join(f'[[rules]]\nid = "r{i}"\neffect = "allow"\ntools = ["t{i}"]\n\n'
                   for i in range(6))
    with pytest.raises(RuleFileError, match=r"rules.toml:26: more than 5 rules"):
        loads(many, source="rules.toml", max_rules=5)
    with pytest.raises(RuleFileError, match="not UTF-8"):
        loads(b'# caf\xe9\n', source="rules.toml")
    with pytest.raises(RuleFileError, match="cannot read the file"):
        load(ROOT / "no-such-rules.toml")


def test_a_server_given_a_bad_file_refuses_to_start(tmp_path: Path) -> None:
    bad = tmp_path / "rules.toml"
    bad.write_text(RULE + 'tools = ["files.[ab"]\n')
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "examples.policy_server", "--port", str(port)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS,
             "MCPCORE_POLICY_FILE": str(bad)})
    assert done.returncode != 0
    assert f"{bad}:4: rule 'r': tool pattern 'files.[ab' has an unclosed '['" in done.stderr
    assert "Traceback" not in done.stderr
    assert "MCP endpoint" not in done.stdout   # it never got as far as serving
