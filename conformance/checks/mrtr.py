"""Requests that ask the client for input (basic/patterns/mrtr.mdx, client/elicitation.mdx,
2026-07-28): a result that asks says so, and form answers are validated.

The tools called are ``common.callable_tools``: the ``mrtr_tools`` of the audit settings
and the read-only tools, each once per run declaring every client capability.
"""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.audit_state import answers
from mcpcore.conformance.checks.common import ALL_CAPABILITIES, expect_alive, first_rounds
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.schema_values import example_arguments, invalid_variants
from mcpcore.conformance.transport import RecordedExchange

MODERN = [wire.MODERN]
#: The requests that may answer input_required (mrtr.mdx, "Server requirements").
MAY_ASK = ("tools/call", "prompts/get", "resources/read")
NOT_AN_OPTION = "conformance-not-an-option"


def _asks(result: dict[str, Any]) -> bool:
    return "inputRequests" in result or "requestState" in result


@check("results.input-required", title="a result that asks for input says input_required",
       requirement="“The `result` MUST include a `resultType` field to indicate the type of "
                   "the result”; “a `resultType` of ”input_required“ indicates the request "
                   "is incomplete and more information is needed” (basic/index.mdx); "
                   "“Servers MUST NOT send `InputRequiredResult` responses on any other client "
                   "requests” and “Servers MUST include at least one of `inputRequests` or "
                   "`requestState` in every `InputRequiredResult` response” (mrtr.mdx).",
       level=Level.MUST, spec=spec("basic/patterns/mrtr", "inputrequiredresult"),
       eras=MODERN, tags=["results", "mrtr"], final=True,
       fix="Answer with resultType \"input_required\" whenever the result carries "
           "inputRequests or requestState (a client treats \"complete\" as final and never "
           "retries), only on tools/call, prompts/get and resources/read.")
async def input_required(ctx: AuditContext) -> None:
    await first_rounds(ctx)
    seen = 0
    for exchange in list(ctx.session.exchanges):
        for message in exchange.messages:
            result = message.get("result")
            if "method" in message or not isinstance(result, dict):
                continue
            kind = result.get("resultType")
            if kind != "input_required" and not _asks(result):
                continue
            seen += 1
            problem = ""
            if kind != "input_required":
                carried = [k for k in ("inputRequests", "requestState") if k in result]
                problem = f"the result carries {carried} but resultType is {kind!r}"
            elif exchange.method not in MAY_ASK:
                problem = f"{exchange.method} answered input_required"
            elif not _asks(result):
                problem = "input_required with neither inputRequests nor requestState"
            if problem:
                ctx.evidence.insert(0, exchange)
                ctx.fail(f"{exchange.label}: {problem} ({exchange.describe()})")
    if not seen:
        ctx.skip("no request of the run asked for input (name such tools in mrtr_tools in "
                 "the audit settings)")
    ctx.note(f"{seen} result(s) asking for input")


def form_violations(schema: Any) -> list[tuple[str, Any]]:
    """``(what is wrong, content)``: form answers that break ``requestedSchema``."""
    out = list(invalid_variants(schema))
    base = example_arguments(schema) or {}
    for name, prop in as_dict(as_dict(schema).get("properties")).items():
        if isinstance(prop, dict) and isinstance(prop.get("enum"), list):
            out.append((f"{name!r} outside its enum", {**base, name: NOT_AN_OPTION}))
            break
    return out


def _forms(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The form-mode elicitations of an input_required result: ``{key: requestedSchema}``."""
    out = {}
    for key, request in as_dict(result.get("inputRequests")).items():
        params = as_dict(as_dict(request).get("params"))
        if as_dict(request).get("method") == "elicitation/create" and params.get(
                "mode", "form") == "form" and isinstance(params.get("requestedSchema"), dict):
            out[str(key)] = params["requestedSchema"]
    return out


@check("mrtr.elicitation-validated", title="form answers that break the schema are refused",
       requirement="“Servers SHOULD validate received data matches the requested schema” "
                   "(client/elicitation.mdx, Form Mode Security); “Servers SHOULD validate "
                   "that the data provided by the client is a valid `InputResponses` object "
                   "and that the information inside can be correctly parsed” (mrtr.mdx).",
       level=Level.SHOULD, spec=spec("client/elicitation", "form-mode-security"),
       eras=MODERN, tags=["mrtr", "security"],
       fix="Validate each accepted form answer against the requestedSchema you sent before "
           "using it; on a mismatch answer with a JSON-RPC error (-32602) or ask again.")
async def elicitation_validated(ctx: AuditContext) -> None:
    tested = 0
    for name, arguments, first in await first_rounds(ctx):
        result = as_dict(first.result)
        # The forms it asks for, whatever resultType says (results.input-required
        # judges the label; a wrong one must not hide how the answers are handled).
        forms = _forms(result)
        for key, schema in list(forms.items())[:2]:
            for what, content in form_violations(schema)[:3]:
                replies = answers(result)
                replies[key] = {"action": "accept", "content": content}
                params: dict[str, Any] = {"name": name, "arguments": arguments,
                                          "inputResponses": replies}
                if "requestState" in result:
                    params["requestState"] = result["requestState"]
                retry = await ctx.request("tools/call", params, meta=wire.meta(ALL_CAPABILITIES),
                                          label=f"{name}: {key} answered with {what}")
                tested += 1
                _refused(ctx, retry, f"{name}: the answer to {key!r} with {what}")
        if first not in ctx.evidence and forms:
            ctx.evidence.insert(0, first)
    if not tested:
        ctx.skip("no tool called asked for a form (name such tools in mrtr_tools in the "
                 "audit settings)")


def _refused(ctx: AuditContext, exchange: RecordedExchange, what: str) -> None:
    expect_alive(ctx, exchange, what)
    result = as_dict(exchange.result)
    if exchange.error is not None or result.get("resultType") == "input_required" or \
            _asks(result) or result.get("isError") is True:
        return   # refused, or asked again
    ctx.fail(f"{what} was used: the call completed ({exchange.describe()})")


__all__ = ["form_violations"]
