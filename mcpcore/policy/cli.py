"""``mcpcore policy``: review a rule file without running a server.

::

    mcpcore policy check RULES.toml
        validate; print the canonical form and its hash (exit 0), or every problem
        with its line (exit 1)

    mcpcore policy explain RULES.toml --principal 'sub=alice,tenant=contoso,scopes=mcp:read' \\
        --tool delete_note [--args '{"name": "todo"}'] [--server MODULE[:NAME]]
        the decision, the rule that made it, and why every other rule did not match

``--principal`` is either comma-separated ``key=value`` pairs (``sub``, ``iss``,
``tenant``, ``client``, ``scopes`` and ``groups`` space-separated, ``kind``,
``method``, ``act``) or a JSON object of token claims (``sub``, ``iss``, ``tenant``,
``client_id``, ``scope``, ``groups``, ``auth_kind``, ...). The tool's category and
external flag come from the server's registry with ``--server``; otherwise from
``--category`` and ``--external``/``--internal`` (default: destructive and external,
what a tool without annotations is). ``--json`` prints the explanation as JSON (the
table-driven tests read it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from typing import Any

from mcpcore.policy.engine import (
    Call,
    Explanation,
    ToolPolicy,
    describe_mismatch,
    explain,
)
from mcpcore.policy.rulefile import RuleFile, RuleFileError, read
from mcpcore.principal import Principal
from mcpcore.tools import CATEGORIES, Category

_KEYS = {"sub": "subject", "subject": "subject", "iss": "issuer", "issuer": "issuer",
         "tenant": "tenant", "client": "client_id", "client_id": "client_id",
         "scopes": "scopes", "scope": "scopes", "groups": "groups", "kind": "auth_kind",
         "auth_kind": "auth_kind", "method": "auth_method", "auth_method": "auth_method",
         "act": "actors", "actors": "actors"}


class UsageProblem(ValueError):
    """A command-line value that cannot be used (exit status 2)."""


def configure(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    check = verbs.add_parser("check", help="validate a rule file; print its canonical form "
                                           "and hash")
    check.add_argument("rules", help="the rule file (TOML)")
    check.add_argument("--hash-only", action="store_true",
                       help="print only the hash")
    why = verbs.add_parser("explain", help="decide one call and say why")
    why.add_argument("rules", help="the rule file (TOML)")
    why.add_argument("--principal", required=True,
                     help="who calls: 'sub=alice,tenant=contoso,scopes=mcp:read', or a JSON "
                          "object of token claims ({\"sub\": ..., \"scope\": ..., "
                          "\"groups\": ...})")
    why.add_argument("--tool", required=True, help="the tool's name")
    why.add_argument("--args", default="{}", help="the call's arguments (a JSON object)")
    why.add_argument("--server", help="MODULE[:NAME]: take the tool from this server's "
                                      "registry")
    why.add_argument("--category", choices=CATEGORIES, default=None,
                     help="the tool's category without --server (default destructive)")
    side = why.add_mutually_exclusive_group()
    side.add_argument("--external", dest="external", action="store_true", default=None,
                      help="the tool reaches external systems (the default)")
    side.add_argument("--internal", dest="external", action="store_false",
                      help="the tool stays inside (openWorldHint: false)")
    why.add_argument("--no-elicitation", action="store_true",
                     help="the client did not declare elicitation (cannot confirm)")
    why.add_argument("--at", help="when the call happens (ISO 8601; default now)")
    why.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    try:
        loaded = read(args.rules)
    except RuleFileError as exc:
        print(exc, file=sys.stderr)
        count = len(exc.problems)
        print(f"{count} problem{'s' if count != 1 else ''}; the rule file was not loaded",
              file=sys.stderr)
        return 1
    if args.verb == "check":
        return _check(loaded, args)
    try:
        return _explain(loaded, args)
    except UsageProblem as exc:
        print(f"mcpcore policy explain: {exc}", file=sys.stderr)
        return 2


def _check(loaded: RuleFile, args: argparse.Namespace) -> int:
    ruleset = loaded.ruleset
    if not args.hash_only:
        sys.stdout.write(ruleset.canonical())
        print()
        print(f"# {len(ruleset.rules)} rules; hash of the canonical form above:")
    print(ruleset.hash)
    return 0


# -- explain ------------------------------------------------------------------------------
def parse_principal(text: str) -> Principal:
    """A ``Principal`` from ``key=value,...`` pairs or a JSON object of claims."""
    text = text.strip()
    if text.startswith("{"):
        try:
            claims = json.loads(text)
        except ValueError as exc:
            raise UsageProblem(f"--principal is not valid JSON: {exc}") from None
        if not isinstance(claims, dict):
            raise UsageProblem("--principal JSON must be an object")
        return _from_claims(claims)
    fields: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        name = _KEYS.get(key.strip().lower())
        if not sep or name is None:
            raise UsageProblem(f"--principal: {part!r} is not key=value with a key among "
                               f"{', '.join(sorted(set(_KEYS)))}")
        fields[name] = value.strip()
    built: dict[str, Any] = {"sub": fields.get("subject", "anonymous")}
    for name, claim in (("issuer", "iss"), ("tenant", "tenant"), ("client_id", "client_id"),
                        ("auth_kind", "auth_kind"), ("auth_method", "auth_method")):
        if name in fields:
            built[claim] = fields[name]
    if "scopes" in fields:
        built["scope"] = fields["scopes"]
    if "groups" in fields:
        built["groups"] = fields["groups"].split()
    if "actors" in fields:
        built["act"] = fields["actors"].split()
    return _from_claims(built)


def _from_claims(claims: dict[str, Any]) -> Principal:
    def text(name: str) -> str | None:
        value = claims.get(name)
        if value is not None and not isinstance(value, str):
            raise UsageProblem(f"--principal: {name} must be a string")
        return value

    scope = claims.get("scope", claims.get("scopes", ""))
    scopes = scope.split() if isinstance(scope, str) else scope
    if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
        raise UsageProblem("--principal: scope must be a space-separated string or a list")
    groups = claims.get("groups", [])
    if not (isinstance(groups, str) or (isinstance(groups, list)
                                        and all(isinstance(g, str) for g in groups))):
        # A token whose groups claim is not strings matches no group rule; an operator
        # asking "what if" means something else, so say so rather than explain nothing.
        raise UsageProblem("--principal: groups must be a string or a list of strings")
    actors = claims.get("act", [])
    actors = [actors] if isinstance(actors, str) else actors
    if not isinstance(actors, list) or not all(isinstance(a, str) for a in actors):
        raise UsageProblem("--principal: act must be a subject or a list of subjects "
                           "(strings), outermost actor first")
    subject = text("sub") or "anonymous"
    method = text("auth_method") or ("anonymous" if subject == "anonymous" else "jwt")
    return Principal(subject=subject, issuer=text("iss"), tenant=text("tenant"),
                     client_id=text("client_id"), scopes=frozenset(scopes),
                     actors=tuple(actors), auth_method=method,
                     claims=claims)


def _tool(args: argparse.Namespace) -> ToolPolicy:
    if args.server:
        from mcpcore.cli import TargetError, load_target
        from mcpcore.errors import UnknownTool

        try:
            server, _ = load_target(args.server)
        except TargetError as exc:
            raise UsageProblem(str(exc)) from None
        if server is None:
            raise UsageProblem(f"{args.server} is not a Server (name MODULE:server)")
        try:
            return ToolPolicy.of(server.tools.get(args.tool))
        except UnknownTool:
            raise UsageProblem(f"{args.server} has no tool {args.tool!r}") from None
    category: Category = args.category or "destructive"
    external = True if args.external is None else args.external
    return ToolPolicy(args.tool, category, external)


def _when(value: str | None) -> float:
    if value is None:
        return time.time()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageProblem(f"--at {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise UsageProblem("--at needs a timezone (e.g. 2026-03-02T10:00:00+01:00 or ...Z)")
    return moment.timestamp()


def _explain(loaded: RuleFile, args: argparse.Namespace) -> int:
    principal = parse_principal(args.principal)
    try:
        arguments = json.loads(args.args)
    except ValueError as exc:
        raise UsageProblem(f"--args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise UsageProblem("--args must be a JSON object")
    tool = _tool(args)
    call = Call("tools/call", tool.name, interactive=not args.no_elicitation,
                arguments=arguments, now=_when(args.at))
    why = explain(principal, call, tool, loaded.ruleset)
    report = _report(why, tool, loaded)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        _print(report)
    return 0


def _report(why: Explanation, tool: ToolPolicy, loaded: RuleFile) -> dict[str, Any]:
    d = why.decision
    facts = why.facts
    p = facts.principal
    rules = []
    for verdict in why.rules:
        rule = verdict.rule
        reason = ("matched" if verdict.matched
                  else describe_mismatch(rule, verdict.mismatch or "", tool, facts))
        rules.append({"id": rule.id, "effect": rule.effect, "line": loaded.lines.get(rule.id),
                      "matched": verdict.matched, "mismatch": verdict.mismatch,
                      "role": verdict.role, "reason": reason})
    return {
        "decision": {"outcome": d.outcome, "rule_id": d.rule_id, "reason_code": d.reason_code,
                     "required_scopes": sorted(d.required_scopes),
                     "ruleset_hash": d.ruleset_hash,
                     "rule_line": loaded.lines.get(d.rule_id)},
        "principal": {"subject": p.subject, "issuer": p.issuer, "tenant": p.tenant,
                      "client_id": p.client_id, "auth_kind": facts.kind,
                      "interactive": facts.interactive, "groups": sorted(facts.groups),
                      "granted_scopes": sorted(facts.granted)},
        "tool": {"name": tool.name, "category": tool.category, "external": tool.external},
        "checks": [{"check": name, "ok": ok, "detail": detail}
                   for name, ok, detail in why.checks],
        "rules": rules,
    }


_ROLE_TEXT = {"decided": "DECIDED", "overruled": "matched, overruled by a deny",
              "shadowed": "matched, but an earlier rule decided",
              "skipped": "not reached"}


def _print(report: dict[str, Any]) -> None:
    d, p, tool = report["decision"], report["principal"], report["tool"]
    where = f" (line {d['rule_line']})" if d["rule_line"] else ""
    print(f"decision  {d['outcome']} ({d['reason_code']})")
    print(f"rule      {d['rule_id']}{where}")
    print(f"ruleset   {d['ruleset_hash']}")
    print(f"tool      {tool['name']} ({tool['category']}, "
          f"{'external' if tool['external'] else 'internal'})")
    who = ", ".join(f"{k} {p[k]}" for k in ("issuer", "tenant", "client_id") if p[k])
    print(f"caller    {p['subject']} ({who + ', ' if who else ''}kind {p['auth_kind']}, "
          f"{'interactive' if p['interactive'] else 'cannot be asked'})")
    print("checks")
    for check in report["checks"]:
        print(f"  {'ok  ' if check['ok'] else 'FAIL'}  {check['check']:<7} {check['detail']}")
    print("rules")
    width = max([len(r["id"]) for r in report["rules"]] + [4])
    for i, rule in enumerate(report["rules"], 1):
        line = f"line {rule['line']}" if rule["line"] else ""
        state = (_ROLE_TEXT.get(rule["role"], "") if rule["matched"] or rule["role"]
                 else f"no match: {rule['reason']}")
        print(f"  {i:>2}  {rule['id']:<{width}}  {rule['effect']:<7}  {line:<9}  {state}")
    if not report["rules"]:
        print("  (none)")


__all__ = ["UsageProblem", "configure", "parse_principal", "run"]
