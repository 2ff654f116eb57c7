"""Policy evaluation for a 50-rule file: ``decide`` per call, and what a policy adds to
a whole ``tools/call`` through the engine, in-process.

    python bench/bench_policy.py [--iterations 50000]

The rule file is generated (``rules_toml``): 50 rules in the mix a platform team
writes — per-tool denies, argument predicates, group and tenant rules, a time window,
category allows — loaded through ``mcpcore.policy.loads`` like any file. Calls rotate
over 500 principals (tenants, groups, scopes, kinds) and eight tools, so caches see
real variety. Reports µs per ``decide`` (target ≤ 10 µs) and the ratio of a
``tools/call`` with the policy (decision, audit event into a discarding sink) to the
same call without one.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import msgspec

from mcpcore import Policy, Principal, Server
from mcpcore.jsonrpc import Request
from mcpcore.policy import Call, ToolPolicy, decide, loads

TOOLS = [("search", "read", False), ("fetch_url", "read", True),
         ("add_note", "write_additive", False), ("set_status", "write_idempotent", False),
         ("delete_note", "destructive", False), ("purge_all", "destructive", False),
         ("files.rm", "destructive", False), ("export", "read", True)]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


def rules_toml() -> str:
    parts = ['version = 1', 'default = "deny"',
             'allowed_tenants = ["t0", "t1", "t2", "t3", "t4"]', ""]

    def rule(rid: str, effect: str, **kw: str) -> None:
        parts.extend(["[[rules]]", f'id = "{rid}"', f'effect = "{effect}"',
                      *(f"{k} = {v}" for k, v in kw.items()), ""])

    for i in range(20):
        rule(f"deny-tool-{i}", "deny", tools=f'["retired_{i}"]')
    for i in range(8):
        rule(f"deny-args-{i}", "deny", tools='["add_note", "delete_note"]',
             args=f'{{ name = {{ prefix = "system{i}." }} }}')
    for i in range(6):
        rule(f"group-{i}", "deny", groups=f'["interns{i}"]',
             categories='["write_additive", "destructive"]')
    for i in range(5):
        rule(f"tenant-egress-{i}", "deny", tenants=f'["t{i}"]', external="true",
             categories='["write_additive"]')
    rule("frozen-weekends", "deny", tools='["set_status"]',
         window='{ days = ["sat", "sun"], timezone = "Europe/Berlin" }')
    for i in range(5):
        rule(f"bot-{i}", "confirm", tools='["files.*"]', clients=f'["bot{i}"]',
             autonomous="true")
    rule("confirm-destructive", "confirm", categories='["destructive"]')
    rule("reads", "allow", categories='["read"]')
    rule("writes", "allow", categories='["write_idempotent", "write_additive"]')
    rule("admins-export", "allow", tools='["export"]', scopes='["mcp:admin"]')
    rule("ops", "allow", groups='["ops"]', tools='["files.*"]')
    return "\n".join(parts)


def principals(n: int) -> list[Principal]:
    scopes = [{"mcp:read"}, {"mcp:write"}, {"mcp:admin"}, set()]
    return [Principal(f"user{i}", issuer="https://idp.example", tenant=f"t{i % 6}",
                      client_id=f"bot{i % 7}" if i % 5 == 0 else "app",
                      scopes=frozenset(scopes[i % 4]), auth_method="jwt",
                      claims={"groups": [f"interns{i % 9}", "staff"] if i % 3 else ["ops"]})
            for i in range(n)]


def time_decide(iterations: int) -> tuple[float, int]:
    ruleset = loads(rules_toml())
    people = principals(500)
    tools = [ToolPolicy(n, c, e) for n, c, e in TOOLS]  # type: ignore[arg-type]
    now = 1_772_445_600.0
    calls = [Call("tools/call", t.name, interactive=True,
                  arguments={"name": f"system{i % 10}.x" if i % 4 == 0 else "n"}, now=now)
             for i, t in enumerate(tools)]
    work = [(people[i % len(people)], calls[i % len(calls)], tools[i % len(tools)])
            for i in range(4000)]
    for p, c, t in work:  # warm-up
        decide(p, c, t, ruleset)
    rounds = max(1, iterations // len(work))
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            for p, c, t in work:
                decide(p, c, t, ruleset)
        best = min(best, (time.perf_counter() - start) / (rounds * len(work)))
    return best * 1e6, len(ruleset.rules)


class Discard:
    def emit(self, event: Any) -> None:
        return None


def server(policy: Policy | None) -> Server:
    s = Server("bench-policy", policy=policy)

    @s.tool(annotations={"readOnlyHint": True})
    def search(query: str) -> str:
        """Search."""
        return query

    return s


async def time_handle(s: Server, principal: Principal, n: int) -> float:
    raw = msgspec.json.encode({"name": "search", "arguments": {"query": "q"}, "_meta": META})
    request = Request(1, "tools/call", msgspec.Raw(raw))
    for _ in range(1000):
        await s.handle(request, principal=principal)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            await s.handle(request, principal=principal)
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=50_000)
    args = parser.parse_args()
    per_call, count = time_decide(args.iterations)
    print(f"decide, {count}-rule file: {per_call:.2f} us per call (target <= 10 us: "
          f"{'met' if per_call <= 10 else 'MISSED'})")
    alice = principals(3)[2]
    ruleset = loads(rules_toml())
    gated = server(Policy(ruleset, sinks=[Discard()]))
    plain = server(None)
    n = max(1000, args.iterations // 10)
    with_policy = asyncio.run(time_handle(gated, alice, n))
    without = asyncio.run(time_handle(plain, alice, n))
    print(f"tools/call through Server.handle: {without:.1f} us without a policy, "
          f"{with_policy:.1f} us with it (ratio {with_policy / without:.2f})")


if __name__ == "__main__":
    main()
