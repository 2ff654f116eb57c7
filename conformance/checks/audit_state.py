"""``requestState`` integrity (basic/patterns/mrtr.mdx, Security Considerations): part of
every audit pack. A tampered state must be refused, and a state is bound to the request
that produced it (SHOULD), so it cannot be replayed on another tool or other arguments.

Which tools answer ``input_required``: the audit settings' ``mrtr_tools`` (names, or
``{"name", "arguments"}``), the official fixtures under ``--fixtures official``, else any
read-only tool that asks for input when called with generated arguments.
"""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.context import Context
from mcpcore.conformance.legacy import default_answer
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.schema_values import example_arguments
from mcpcore.conformance.transport import Exchange

SECURITY = spec("basic/patterns/mrtr", "security-considerations")
COMMON: dict[str, Any] = {"pack": "audit", "eras": [wire.MODERN],
                          "tags": ["mrtr", "security", "audit-any"]}
FIXTURE_TOOLS = ("test_input_required_result_tampered_state",
                 "test_input_required_result_elicitation")


def answers(result: dict[str, Any]) -> dict[str, Any]:
    """An answer for every input request of an ``input_required`` result."""
    out = {}
    for key, request in as_dict(result.get("inputRequests")).items():
        reply = default_answer(as_dict(request))
        out[key] = reply if reply is not None else {"action": "decline"}
    return out


async def stateful_rounds(ctx: Context, limit: int = 2) -> list[tuple[str, dict[str, Any],
                                                                      Exchange]]:
    """Up to ``limit`` first rounds ``(tool, arguments, exchange)`` that carry a
    ``requestState``."""
    configured = ctx.options.audit.get("mrtr_tools")
    candidates: list[tuple[str, dict[str, Any]]] = []
    if isinstance(configured, list):
        for item in configured:
            if isinstance(item, str):
                candidates.append((item, {}))
            elif isinstance(item, dict) and isinstance(item.get("name"), str):
                candidates.append((item["name"], as_dict(item.get("arguments"))))
    else:
        names = {str(t.get("name")) for t in await ctx.tools()}
        candidates += [(n, {}) for n in FIXTURE_TOOLS if n in names]
        for tool in await ctx.read_only_tools():
            arguments = example_arguments(tool.get("inputSchema"))
            if arguments is not None and tool.get("name") not in FIXTURE_TOOLS:
                candidates.append((str(tool["name"]), arguments))
    found = []
    for name, arguments in candidates[: ctx.options.max_items]:
        exchange = await ctx.request("tools/call", {"name": name, "arguments": arguments},
                                     label=f"{name}: round 1")
        result = exchange.result or {}
        if result.get("resultType") == "input_required" and isinstance(
                result.get("requestState"), str):
            found.append((name, arguments, exchange))
            if len(found) >= limit:
                break
    return found


def tamper(state: str) -> list[str]:
    """Altered copies: one character flipped in the middle, and a suffix."""
    middle = len(state) // 2
    flipped = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]
    return [flipped, state + "-TAMPERED"]


@check("audit.state-tamper", title="a tampered requestState is refused",
       requirement="“If a client request contains a requestState field, servers MUST treat "
                   "requestState as an attacker-controlled input.” … “and MUST reject state that "
                   "fails verification.” (basic/patterns/mrtr, Server Requirements)",
       level=Level.MUST, spec=SECURITY, **COMMON,
       fix="Integrity-protect requestState (HMAC or AEAD with a server key) and answer a modified "
           "state with a JSON-RPC error.")
async def state_tamper(ctx: Context) -> None:
    rounds = await stateful_rounds(ctx, limit=1)
    if not rounds:
        ctx.skip("no tool answered input_required with a requestState (name one in "
                 "mrtr_tools in the audit settings)")
    name, arguments, first = rounds[0]
    result = first.result or {}
    for altered in tamper(str(result["requestState"])):
        exchange = await ctx.request("tools/call", {
            "name": name, "arguments": arguments, "inputResponses": answers(result),
            "requestState": altered}, label=f"{name}: round 2 with a tampered requestState")
        ctx.expect(exchange.error is not None,
                   f"{name} accepted a tampered requestState ({exchange.describe()})")


@check("audit.state-reuse", title="a requestState only works for the request that made it",
       requirement="“To prevent replay, servers SHOULD include the following inside the "
                   "integrity-protected requestState payload and verify each on receipt:” "
                   "(basic/patterns/mrtr, Server Requirements)",
       level=Level.SHOULD, spec=spec("basic/patterns/mrtr",
                                     "server-requirements-basic-workflow"), **COMMON,
       fix="Bind requestState to its request (method, tool name, a digest of the arguments) and "
           "refuse it elsewhere.")
async def state_reuse(ctx: Context) -> None:
    rounds = await stateful_rounds(ctx, limit=2)
    if not rounds:
        ctx.skip("no tool answered input_required with a requestState")
    name, arguments, first = rounds[0]
    result = first.result or {}
    state = result["requestState"]
    if len(rounds) > 1:
        other, other_args, other_first = rounds[1]
        exchange = await ctx.request("tools/call", {
            "name": other, "arguments": other_args,
            "inputResponses": answers(other_first.result or {}), "requestState": state},
            label=f"{other}: round 2 with the requestState of {name}")
        ctx.expect(exchange.error is not None,
                   f"{other} accepted the requestState issued for {name} "
                   f"({exchange.describe()})")
    changed = {**arguments, "conformance_extra": "x"}
    exchange = await ctx.request("tools/call", {
        "name": name, "arguments": changed, "inputResponses": answers(result),
        "requestState": state}, label=f"{name}: round 2 with other arguments")
    ctx.expect(exchange.error is not None or as_dict(exchange.result).get("isError"),
               f"{name} accepted its requestState with different arguments "
               f"({exchange.describe()})")
