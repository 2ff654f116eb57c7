"""Prompts and completion (server/prompts.mdx, server/utilities/completion.mdx)."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_error, expect_result
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]


async def _prompts(ctx: AuditContext) -> list[dict[str, Any]]:
    if not await ctx.has_capability("prompts"):
        ctx.skip("the server declares no prompts capability")
    prompts = await ctx.items("prompts/list")
    if not prompts:
        ctx.skip("prompts/list is empty")
    return prompts


def _arguments(prompt: dict[str, Any]) -> dict[str, str]:
    return {str(a.get("name")): "conformance" for a in prompt.get("arguments") or []
            if isinstance(a, dict) and a.get("required")}


@check("prompts.get", title="listed prompts can be rendered",
       requirement="GetPromptResult requires messages, and each PromptMessage has a role and "
                   "content (schema.ts); “All messages between MCP clients and servers MUST follow "
                   "the JSON-RPC 2.0 specification” (basic/index).",
       level=Level.MUST, spec=spec("server/prompts", "getting-a-prompt"), eras=MODERN,
       tags=["prompts"],
       fix="Return messages whose entries have role 'user' or 'assistant' and a content block.")
async def get(ctx: AuditContext) -> None:
    judged, asked, refused = 0, [], []
    for prompt in (await _prompts(ctx))[: ctx.options.max_items]:
        name = prompt.get("name")
        arguments = _arguments(prompt)
        exchange = await ctx.request("prompts/get", {"name": name, "arguments": arguments},
                                     label=f"prompts/get {name}")
        if arguments and exchange.code == -32602:
            # The values are made up ("conformance"): a prompt may rightly refuse them.
            refused.append(str(name))
            continue
        result = expect_result(ctx, exchange, f"prompts/get {name}")
        if result.get("resultType") == "input_required":
            asked.append(str(name))
            continue
        judged += 1
        messages = result.get("messages")
        ctx.expect(isinstance(messages, list), f"{name}: no messages array")
        for message in messages or []:
            message = as_dict(message)
            ctx.expect(message.get("role") in ("user", "assistant"),
                       f"{name}: message role {message.get('role')!r}")
            ctx.expect(isinstance(message.get("content"), dict), f"{name}: message lacks content")
    untested = _untested(asked, refused)
    if not judged:
        ctx.skip(f"no GetPromptResult to judge: {untested}")
    if untested:
        ctx.note(f"{judged} prompt(s) rendered and judged; not judged: {untested}")


def _untested(asked: list[str], refused: list[str]) -> str:
    parts = []
    if asked:
        parts.append(f"{len(asked)} asked for input (input_required): {', '.join(asked[:5])}")
    if refused:
        parts.append(f"{len(refused)} refused the made-up argument values with -32602: "
                     f"{', '.join(refused[:5])}")
    return "; ".join(parts)


@check("prompts.errors", title="unknown prompts and missing arguments are -32602",
       requirement="“Servers SHOULD return standard JSON-RPC errors for common failure cases: "
                   "Invalid prompt name: -32602 (Invalid params) Missing required arguments: "
                   "-32602 (Invalid params)” (server/prompts, Error Handling)",
       level=Level.SHOULD, spec=spec("server/prompts", "error-handling"), eras=MODERN,
       tags=["prompts", "errors"],
       fix="Answer an unknown prompt name or a missing required argument with -32602.")
async def errors(ctx: AuditContext) -> None:
    prompts = await _prompts(ctx)
    exchange = await ctx.request("prompts/get", {"name": "conformance_no_such_prompt"},
                                 label="prompts/get of an unknown prompt")
    expect_error(ctx, exchange, -32602)
    for prompt in prompts:
        required = _arguments(prompt)
        if required:
            exchange = await ctx.request("prompts/get", {"name": prompt.get("name"),
                                                         "arguments": {}},
                                         label=f"prompts/get {prompt.get('name')} without "
                                               "its required arguments")
            expect_alive(ctx, exchange)
            expect_error(ctx, exchange, -32602)
            return


@check("completion.complete", title="completion/complete answers with at most 100 values",
       requirement="“Servers that support completions MUST declare the completions capability” "
                   "(server/utilities/completion); CompleteResult's values are “An array of "
                   "completion values. Must not exceed 100 items.” (schema.ts CompleteResult)",
       level=Level.MUST, spec=spec("server/utilities/completion"), eras=MODERN,
       tags=["completion"],
       fix="Return completion.values as an array of at most 100 strings (set hasMore/total for the "
           "rest).")
async def complete(ctx: AuditContext) -> None:
    if not await ctx.has_capability("completions"):
        ctx.skip("the server declares no completions capability")
    prompts = [p for p in await ctx.items("prompts/list") if p.get("arguments")]
    if not prompts:
        ctx.skip("no prompt with arguments to complete")
    prompt = prompts[0]
    argument = as_dict(prompt["arguments"][0]).get("name")
    exchange = await ctx.request("completion/complete", {
        "ref": {"type": "ref/prompt", "name": prompt.get("name")},
        "argument": {"name": argument, "value": ""}}, label=f"complete {prompt.get('name')}")
    result = expect_result(ctx, exchange)
    values = as_dict(result.get("completion")).get("values")
    ctx.expect(isinstance(values, list) and len(values) <= 100
               and all(isinstance(v, str) for v in values),
               f"completion.values is not a list of at most 100 strings: {values!r:.200}")
