"""Small judgements shared by the check modules."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.transport import RecordedExchange


def expect_error(ctx: AuditContext, exchange: RecordedExchange, code: int,
                 status: int | None = None, what: str = "") -> None:
    """The exchange is a JSON-RPC error ``code`` (and, on HTTP, status ``status``)."""
    label = what or exchange.label
    if exchange.failure:
        ctx.fail(f"{label}: {exchange.failure}", exchange)
    problems = []
    if ctx.http and status is not None and exchange.status != status:
        problems.append(f"HTTP {exchange.status} instead of {status}")
    if exchange.code != code:
        got = f"error {exchange.code}" if exchange.error is not None else (
            "a result" if exchange.result is not None else "no JSON-RPC response")
        problems.append(f"{got} instead of error {code}")
    if problems:
        ctx.fail(f"{label}: " + " and ".join(problems) + f" ({exchange.describe()})", exchange)


def expect_result(ctx: AuditContext, exchange: RecordedExchange, what: str = "") -> dict[str, Any]:
    """The exchange carries a result; returns it."""
    result = exchange.result
    if result is None:
        ctx.fail(f"{what or exchange.label}: expected a result, got {exchange.describe()}",
                 exchange)
    return result


def expect_alive(ctx: AuditContext, exchange: RecordedExchange, what: str = "") -> None:
    """No 5xx, no dropped connection, no hang."""
    label = what or exchange.label
    if exchange.failure:
        ctx.fail(f"{label}: {exchange.failure}", exchange)
    if exchange.status is not None and exchange.status >= 500:
        ctx.fail(f"{label}: HTTP {exchange.status} ({exchange.describe()})", exchange)


#: Every client capability a first round can declare (so a tool that asks for input does).
ALL_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


async def callable_tools(ctx: AuditContext) -> list[tuple[str, dict[str, Any]]]:
    """Tools the suite may call, with arguments: the ``mrtr_tools`` of the audit settings
    (names, or ``{"name", "arguments"}``; the user says they are safe to call), then each
    read-only tool the suite can make valid arguments for. Tools whose schema puts an
    argument in a header are left out (their calls need ``header_props``)."""
    from mcpcore.conformance import wire
    from mcpcore.conformance.model import as_dict
    from mcpcore.conformance.schema_values import example_arguments

    out: list[tuple[str, dict[str, Any]]] = []
    configured = ctx.options.audit.get("mrtr_tools")
    for item in configured if isinstance(configured, list) else []:
        if isinstance(item, str):
            out.append((item, {}))
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            out.append((item["name"], as_dict(item.get("arguments"))))
    named = {name for name, _ in out}
    for tool in await ctx.read_only_tools():
        schema = tool.get("inputSchema")
        arguments = example_arguments(schema)
        if arguments is not None and tool.get("name") not in named \
                and not wire.header_params(schema):
            out.append((str(tool["name"]), arguments))
    return out[: ctx.options.max_items]


async def first_rounds(ctx: AuditContext) -> list[tuple[str, dict[str, Any], RecordedExchange]]:
    """``callable_tools`` called once each per session, declaring every client
    capability: ``(tool, arguments, exchange)``. Shared by the checks that need a tool
    asking for input."""
    from mcpcore.conformance import wire

    async def call_all() -> list[tuple[str, dict[str, Any], RecordedExchange]]:
        if not await ctx.has_capability("tools"):
            return []
        out = []
        for name, arguments in await callable_tools(ctx):
            exchange = await ctx.request("tools/call", {"name": name, "arguments": arguments},
                                         meta=wire.meta(ALL_CAPABILITIES),
                                         label=f"{name}: round 1, every capability declared")
            out.append((name, arguments, exchange))
        return out

    rounds: list[tuple[str, dict[str, Any], RecordedExchange]] = await ctx.session.once(
        "first-rounds", call_all)
    return rounds
