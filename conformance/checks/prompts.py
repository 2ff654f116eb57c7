"""Prompts and completion (server/prompts.mdx, server/utilities/completion.mdx)."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_error, expect_result
from mcpcore.conformance.context import Context
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]


async def _prompts(ctx: Context) -> list[dict[str, Any]]:
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
       requirement="prompts/get of a listed prompt, with its required arguments, returns "
                   "messages whose entries have a role (user or assistant) and content.",
       level=Level.MUST, spec=spec("server/prompts", "getting-a-prompt"), eras=MODERN,
       tags=["prompts"])
async def get(ctx: Context) -> None:
    for prompt in (await _prompts(ctx))[: ctx.options.max_items]:
        name = prompt.get("name")
        exchange = await ctx.request("prompts/get", {"name": name, "arguments": _arguments(prompt)},
                                     label=f"prompts/get {name}")
        result = expect_result(ctx, exchange, f"prompts/get {name}")
        if result.get("resultType") == "input_required":
            continue
        messages = result.get("messages")
        ctx.expect(isinstance(messages, list), f"{name}: no messages array")
        for message in messages or []:
            message = as_dict(message)
            ctx.expect(message.get("role") in ("user", "assistant"),
                       f"{name}: message role {message.get('role')!r}")
            ctx.expect(isinstance(message.get("content"), dict), f"{name}: message lacks content")


@check("prompts.errors", title="unknown prompts and missing arguments are -32602",
       requirement="prompts/get of an unknown prompt, or without a required argument, is "
                   "answered with -32602.",
       level=Level.SHOULD, spec=spec("server/prompts", "error-handling"), eras=MODERN,
       tags=["prompts", "errors"])
async def errors(ctx: Context) -> None:
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
       requirement="With the completions capability, completion/complete for a prompt "
                   "argument returns completion.values, an array of at most 100 strings.",
       level=Level.MUST, spec=spec("server/utilities/completion"), eras=MODERN,
       tags=["completion"])
async def complete(ctx: Context) -> None:
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
