"""Small judgements shared by the check modules."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance.context import Context
from mcpcore.conformance.transport import Exchange


def expect_error(ctx: Context, exchange: Exchange, code: int, status: int | None = None,
                 what: str = "") -> None:
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


def expect_result(ctx: Context, exchange: Exchange, what: str = "") -> dict[str, Any]:
    """The exchange carries a result; returns it."""
    result = exchange.result
    if result is None:
        ctx.fail(f"{what or exchange.label}: expected a result, got {exchange.describe()}",
                 exchange)
    return result


def expect_alive(ctx: Context, exchange: Exchange, what: str = "") -> None:
    """No 5xx, no dropped connection, no hang."""
    label = what or exchange.label
    if exchange.failure:
        ctx.fail(f"{label}: {exchange.failure}", exchange)
    if exchange.status is not None and exchange.status >= 500:
        ctx.fail(f"{label}: HTTP {exchange.status} ({exchange.describe()})", exchange)
