"""``mcpcore policy check`` and ``explain`` on the example rule file, as a table.

Each row is (who, tool, arguments, options) → (outcome, rule id, reason code). Every row
runs three ways and must agree: ``decide`` on the loaded rule set, ``mcpcore policy
explain --json`` in process (``mcpcore.cli.main``), and, for a sample, the installed
console script in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from mcpcore.cli import main
from mcpcore.policy import Call, ToolPolicy, decide, load
from mcpcore.policy.cli import parse_principal

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "policy.toml"
SERVER = "examples.policy_server"

ADMIN = "sub=ada,tenant=contoso,scopes=mcp:admin,client=notes-app"
READER = "sub=rita,tenant=contoso,scopes=mcp:read,client=notes-app"
EDITOR = "sub=eddie,tenant=contoso,scopes=mcp:write,client=notes-app"
OUTSIDER = "sub=olga,tenant=fabrikam,scopes=mcp:admin,client=notes-app"
NO_TENANT = "sub=nobody,scopes=mcp:admin"
ANONYMOUS = "sub=anonymous"
JOB = "sub=demo-client,client=demo-client,tenant=contoso,scopes=mcp:admin"
OTHER_JOB = "sub=sync,client=sync,tenant=contoso,scopes=mcp:admin"
WIF = "sub=w1,tenant=contoso,scopes=mcp:admin,method=wif"
EMA = '{"sub": "emma", "tenant": "contoso", "scope": "mcp:admin", "auth_kind": "ema"}'
INTERN = "sub=ian,tenant=contoso,scopes=mcp:admin,groups=interns staff"
MONDAY = "2026-03-02T10:00:00+01:00"
SATURDAY = "2026-03-07T10:00:00+01:00"
FRIDAY_NIGHT_UTC = "2026-03-06T23:30:00Z"     # already Saturday in Berlin
SUNDAY_NIGHT_UTC = "2026-03-08T23:30:00Z"     # already Monday in Berlin

Row = tuple[str, str, str, dict[str, Any], list[str], tuple[str, str, str]]
ROWS: list[Row] = [
    ("reader reads", READER, "search_notes", {"query": "x"}, [],
     ("allow", "reads", "rule_allow")),
    ("reader reads the external weather", READER, "weather", {"city": "Oslo"}, [],
     ("allow", "reads", "rule_allow")),
    ("reader writes: step up", READER, "add_note", {"name": "n", "text": "t"}, [],
     ("deny", "scope", "insufficient_scope")),
    ("editor adds a note", EDITOR, "add_note", {"name": "n", "text": "t"}, [],
     ("allow", "writes", "rule_allow")),
    ("editor may not write system notes", EDITOR, "add_note",
     {"name": "system.motd", "text": "t"}, [],
     ("deny", "system-notes-are-read-only", "rule_deny")),
    ("nor may the admin", ADMIN, "add_note", {"name": "system.x", "text": "t"}, [],
     ("deny", "system-notes-are-read-only", "rule_deny")),
    ("a number is not a prefix match", EDITOR, "add_note", {"name": 123, "text": "t"}, [],
     ("allow", "writes", "rule_allow")),
    ("an absent argument is not a prefix match", EDITOR, "add_note", {}, [],
     ("allow", "writes", "rule_allow")),
    ("editor sets the status on Monday", EDITOR, "set_status", {"status": "ok"},
     ["--at", MONDAY], ("allow", "writes", "rule_allow")),
    ("not on Saturday", EDITOR, "set_status", {"status": "ok"}, ["--at", SATURDAY],
     ("deny", "board-frozen-on-weekends", "rule_deny")),
    ("not even the admin", ADMIN, "set_status", {"status": "ok"}, ["--at", SATURDAY],
     ("deny", "board-frozen-on-weekends", "rule_deny")),
    ("Friday night UTC is Saturday in Berlin", ADMIN, "set_status", {"status": "ok"},
     ["--at", FRIDAY_NIGHT_UTC], ("deny", "board-frozen-on-weekends", "rule_deny")),
    ("Sunday night UTC is Monday in Berlin", EDITOR, "set_status", {"status": "ok"},
     ["--at", SUNDAY_NIGHT_UTC], ("allow", "writes", "rule_allow")),
    ("reader sets the status: step up", READER, "set_status", {"status": "ok"},
     ["--at", MONDAY], ("deny", "scope", "insufficient_scope")),
    ("admin deletes: a person confirms", ADMIN, "delete_note", {"name": "todo"}, [],
     ("confirm", "confirm-destructive", "confirmation_required")),
    ("a system note cannot be deleted", ADMIN, "delete_note", {"name": "system.x"}, [],
     ("deny", "system-notes-are-read-only", "rule_deny")),
    ("the rule deny comes before the scope check", EDITOR, "delete_note",
     {"name": "system.x"}, [], ("deny", "system-notes-are-read-only", "rule_deny")),
    ("no elicitation: nobody to confirm", ADMIN, "delete_note", {"name": "todo"},
     ["--no-elicitation"], ("deny", "confirm-destructive", "confirmation_unavailable")),
    ("editor deletes: step up to admin", EDITOR, "delete_note", {"name": "todo"}, [],
     ("deny", "scope", "insufficient_scope")),
    ("reader deletes: step up to admin", READER, "delete_note", {"name": "todo"}, [],
     ("deny", "scope", "insufficient_scope")),
    ("purge is off for the admin", ADMIN, "purge_all", {}, [],
     ("deny", "purge-disabled", "rule_deny")),
    ("purge is off for a reader, without a 403", READER, "purge_all", {}, [],
     ("deny", "purge-disabled", "rule_deny")),
    ("purge is off for the job", JOB, "purge_all", {}, [],
     ("deny", "purge-disabled", "rule_deny")),
    ("the demo job cleans up unattended", JOB, "nightly_cleanup", {}, [],
     ("allow", "cleanup-unattended", "autonomous")),
    ("the demo job cannot confirm a delete", JOB, "delete_note", {"name": "todo"}, [],
     ("deny", "confirm-destructive", "confirmation_unavailable")),
    ("another job cannot clean up", OTHER_JOB, "nightly_cleanup", {}, [],
     ("deny", "confirm-destructive", "confirmation_unavailable")),
    ("a person cleaning up confirms", ADMIN, "nightly_cleanup", {}, [],
     ("confirm", "confirm-destructive", "confirmation_required")),
    ("the job reads", JOB, "search_notes", {"query": "x"}, [],
     ("allow", "reads", "rule_allow")),
    ("another tenant is refused", OUTSIDER, "search_notes", {"query": "x"}, [],
     ("deny", "tenant", "tenant_not_allowed")),
    ("another tenant is refused before any rule", OUTSIDER, "purge_all", {}, [],
     ("deny", "tenant", "tenant_not_allowed")),
    ("no tenant at all", NO_TENANT, "search_notes", {"query": "x"}, [],
     ("deny", "tenant", "tenant_not_allowed")),
    ("anonymous", ANONYMOUS, "search_notes", {"query": "x"}, [],
     ("deny", "tenant", "tenant_not_allowed")),
    ("interns read", INTERN, "search_notes", {"query": "x"}, [],
     ("allow", "reads", "rule_allow")),
    ("interns do not write", INTERN, "add_note", {"name": "n", "text": "t"}, [],
     ("deny", "interns-read-only", "rule_deny")),
    ("interns do not delete", INTERN, "delete_note", {"name": "todo"}, [],
     ("deny", "interns-read-only", "rule_deny")),
    ("interns do not set the status", INTERN, "set_status", {"status": "x"},
     ["--at", MONDAY], ("deny", "interns-read-only", "rule_deny")),
    ("an EMA principal confirms like a person", EMA, "delete_note", {"name": "todo"}, [],
     ("confirm", "confirm-destructive", "confirmation_required")),
    ("an EMA principal reads", EMA, "weather", {"city": "Oslo"}, [],
     ("allow", "reads", "rule_allow")),
    ("a workload identity cannot confirm", WIF, "delete_note", {"name": "todo"}, [],
     ("deny", "confirm-destructive", "confirmation_unavailable")),
    ("a workload identity reads", WIF, "search_notes", {"query": "x"}, [],
     ("allow", "reads", "rule_allow")),
    ("the admin asks the weather", ADMIN, "weather", {"city": "Oslo"}, [],
     ("allow", "reads", "rule_allow")),
    ("an unregistered tool is destructive", ADMIN, "mystery", {}, ["--no-server"],
     ("confirm", "confirm-destructive", "confirmation_required")),
    ("an unregistered read tool", READER, "mystery", {},
     ["--no-server", "--category", "read", "--internal"],
     ("allow", "reads", "rule_allow")),
    ("an unregistered idempotent write", EDITOR, "mystery", {},
     ["--no-server", "--category", "write_idempotent"], ("allow", "writes", "rule_allow")),
]


def _argv(who: str, tool: str, arguments: dict[str, Any], options: list[str]) -> list[str]:
    extra = [o for o in options if o != "--no-server"]
    server = [] if "--no-server" in options else ["--server", SERVER]
    return ["policy", "explain", str(RULES), "--principal", who, "--tool", tool,
            "--args", json.dumps(arguments), *server, *extra, "--json"]


def test_the_table_has_at_least_forty_rows() -> None:
    assert len(ROWS) >= 40
    assert len({row[0] for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize(("case", "who", "tool", "arguments", "options", "expected"), ROWS,
                         ids=[row[0] for row in ROWS])
def test_explain_table(case: str, who: str, tool: str, arguments: dict[str, Any],
                       options: list[str], expected: tuple[str, str, str],
                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_argv(who, tool, arguments, options)) == 0
    report = json.loads(capsys.readouterr().out)
    decision = report["decision"]
    assert (decision["outcome"], decision["rule_id"], decision["reason_code"]) == expected
    ruleset = load(RULES)
    assert decision["ruleset_hash"] == ruleset.hash
    # The engine itself agrees, for the same call.
    from examples.policy_server import server

    if "--no-server" in options:
        category = options[options.index("--category") + 1] if "--category" in options \
            else "destructive"
        policy = ToolPolicy(tool, category, "--internal" not in options)  # type: ignore[arg-type]
    else:
        policy = ToolPolicy.of(server.tools.get(tool))
    at = options[options.index("--at") + 1] if "--at" in options else MONDAY
    call = Call("tools/call", tool, interactive="--no-elicitation" not in options,
                arguments=arguments, now=datetime.fromisoformat(at).timestamp())
    direct = decide(parse_principal(who), call, policy, ruleset)
    assert (direct.outcome, direct.rule_id, direct.reason_code) == expected
    # The rule that decided is named with its line; every other rule says why not.
    lines = {r["id"]: r["line"] for r in report["rules"]}
    if decision["rule_id"] in lines:
        assert decision["rule_line"] == lines[decision["rule_id"]]
        decided = [r for r in report["rules"] if r["role"] == "decided"]
        assert [r["id"] for r in decided] == [decision["rule_id"]]
    for rule in report["rules"]:
        assert rule["matched"] or rule["reason"] != "matched"


def test_explain_through_the_console_script() -> None:
    # One process proves the command is wired (each started process costs ~0.6 s of
    # CPU); test_explain_table decides every row of the table through the same main().
    _case, who, tool, arguments, options, expected = ROWS[0]
    assert "--no-server" not in options  # the process loads the example server too
    done = subprocess.run([sys.executable, "-m", "mcpcore", *_argv(who, tool, arguments,
                                                                    options)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)["decision"]
    assert (decision["outcome"], decision["rule_id"], decision["reason_code"]) == expected


def test_explain_in_words_names_each_rule_and_why(capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    argv = _argv(EDITOR, "add_note", {"name": "system.motd", "text": "t"}, [])
    assert main(argv[:-1]) == 0
    out = capsys.readouterr().out
    assert "decision  deny (rule_deny)" in out
    assert "rule      system-notes-are-read-only (line" in out
    assert "DECIDED" in out
    assert "no match: tool 'add_note' matches none of ['purge_all']" in out
    assert "matched, overruled by a deny" in out           # the "writes" allow rule


def test_check_prints_the_canonical_form_and_its_hash(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["policy", "check", str(RULES)]) == 0
    out = capsys.readouterr().out
    ruleset = load(RULES)
    canonical, _, tail = out.partition("\n# ")
    assert canonical + "\n" == ruleset.canonical() + "\n"
    assert tail.splitlines()[-1] == ruleset.hash
    assert main(["policy", "check", str(RULES), "--hash-only"]) == 0
    assert capsys.readouterr().out.strip() == ruleset.hash


def test_check_of_a_bad_file_lists_every_problem_and_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('default = "maybe"\n\n[[rules]]\nid = "x"\nefect = "allow"\n')
    assert main(["policy", "check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:1: default must be one of allow, deny, confirm" in err
    assert f"{bad}:5: unknown key 'efect' in rule 'x' (did you mean 'effect'?)" in err
    assert f"{bad}:3: rule 'x': effect must be one of allow, deny, confirm" in err
    assert "3 problems; the rule file was not loaded" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--principal", "nobody"], "is not key=value"),
    (["--principal", "{nope"], "not valid JSON"),
    (["--principal", "sub=a", "--args", "[1]"], "--args must be a JSON object"),
    (["--principal", "sub=a", "--at", "yesterday"], "not an ISO 8601 time"),
    (["--principal", "sub=a", "--at", "2026-03-02T10:00:00"], "needs a timezone"),
    (["--principal", "sub=a", "--server", "examples.policy_server", "--tool", "nope"],
     "has no tool 'nope'"),
    (["--principal", "sub=a", "--server", "no_such_module_here"], "cannot import"),
])
def test_explain_usage_problems_exit_2(argv: list[str], message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    base = ["policy", "explain", str(RULES)]
    if "--tool" not in argv:
        argv = [*argv, "--tool", "search_notes"]
    assert main([*base, *argv]) == 2
    assert message in capsys.readouterr().err
