"""The standard request headers (basic/transports/streamable-http.mdx, 2026-07-28):
``Mcp-Method``, ``Mcp-Name`` (with the Base64 sentinel) and ``Mcp-Param-*``."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_error
from mcpcore.conformance.context import Context
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.schema_values import example_arguments

MODERN = [wire.MODERN]
VALIDATION = spec("basic/transports/streamable-http", "server-validation")
COMMON: dict[str, Any] = {"eras": MODERN, "tags": ["headers"], "needs": ["http"]}


def _accepted(ctx: Context, exchange: Any, what: str) -> None:
    if exchange.failure or exchange.status is None or exchange.status >= 400 or (
            exchange.error is not None and exchange.code in (-32020, -32600, -32602)):
        ctx.fail(f"{what}: refused ({exchange.describe()})")


@check("headers.method-required", title="Mcp-Method is required",
       requirement="A POST without Mcp-Method is rejected with 400 and -32020.",
       level=Level.MUST, spec=VALIDATION, **COMMON)
async def method_required(ctx: Context) -> None:
    exchange = await ctx.request("tools/list", headers={"Mcp-Method": None},
                                 label="tools/list without Mcp-Method")
    expect_error(ctx, exchange, -32020, 400)


@check("headers.method-match", title="Mcp-Method must equal the body method",
       requirement="An Mcp-Method that differs from the body's method (values are "
                   "case-sensitive) is rejected with 400 and -32020.",
       level=Level.MUST, spec=VALIDATION, **COMMON)
async def method_match(ctx: Context) -> None:
    for value in ("prompts/list", "TOOLS/LIST"):
        exchange = await ctx.request("tools/list", headers={"Mcp-Method": value},
                                     label=f"tools/list with Mcp-Method: {value}")
        expect_error(ctx, exchange, -32020, 400)


@check("headers.name-case-insensitive", title="header names are case-insensitive",
       requirement="Header names compare case-insensitively: mcp-method and MCP-METHOD are "
                   "the same header.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "case-sensitivity"),
       **COMMON)
async def name_case(ctx: Context) -> None:
    for name in ("mcp-method", "MCP-METHOD"):
        exchange = await ctx.request("tools/list", headers={"Mcp-Method": None,
                                                            name: "tools/list"},
                                     label=f"tools/list with header {name}")
        _accepted(ctx, exchange, f"header spelled {name}")


async def _named(ctx: Context) -> tuple[str, dict[str, Any], dict[str, str]]:
    found = await ctx.safe_named_request()
    if found is None:
        ctx.skip("no resource, read-only tool or argument-free prompt to address by name")
    return found


@check("headers.name-required", title="Mcp-Name is required where the body names a target",
       requirement="tools/call, resources/read and prompts/get without Mcp-Name are rejected "
                   "with 400 and -32020.",
       level=Level.MUST, spec=VALIDATION, **COMMON)
async def name_required(ctx: Context) -> None:
    method, params, props = await _named(ctx)
    exchange = await ctx.request(method, params, headers={"Mcp-Name": None},
                                 header_props=props, label=f"{method} without Mcp-Name")
    expect_error(ctx, exchange, -32020, 400)


@check("headers.name-match", title="Mcp-Name must equal the body's name or URI",
       requirement="An Mcp-Name that differs from params.name / params.uri is rejected with "
                   "400 and -32020.",
       level=Level.MUST, spec=VALIDATION, **COMMON)
async def name_match(ctx: Context) -> None:
    method, params, props = await _named(ctx)
    exchange = await ctx.request(method, params, headers={"Mcp-Name": "wrong-name-x9"},
                                 header_props=props, label=f"{method} with a wrong Mcp-Name")
    expect_error(ctx, exchange, -32020, 400)


@check("headers.name-whitespace", title="whitespace around header values is ignored",
       requirement="Optional whitespace around a field value is not part of it (RFC 9110 "
                   "§5.5): Mcp-Name '  name  ' matches 'name'.",
       level=Level.SHOULD, spec=spec("basic/transports/streamable-http", "case-sensitivity"),
       **COMMON)
async def name_whitespace(ctx: Context) -> None:
    method, params, props = await _named(ctx)
    value = params.get("uri") or params.get("name")
    exchange = await ctx.request(method, params, headers={"Mcp-Name": f"  {value}  "},
                                 header_props=props, label=f"{method} with padded Mcp-Name",
                                 verbatim=True)
    _accepted(ctx, exchange, "padded Mcp-Name")


@check("headers.name-base64", title="the Base64 sentinel form is decoded",
       requirement="Servers decode =?base64?…?= in Mcp-Name before comparing it with the body.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "value-encoding"),
       **COMMON)
async def name_base64(ctx: Context) -> None:
    method, params, props = await _named(ctx)
    value = str(params.get("uri") or params.get("name"))
    exchange = await ctx.request(method, params, headers={"Mcp-Name": wire.sentinel(value)},
                                 header_props=props, label=f"{method} with a Base64 Mcp-Name")
    _accepted(ctx, exchange, "Base64-encoded Mcp-Name")
    bad = await ctx.request(method, params, headers={"Mcp-Name": wire.sentinel("other-x9")},
                            header_props=props, label=f"{method} with a Base64 wrong name")
    expect_error(ctx, bad, -32020, 400, "Base64 Mcp-Name of another name")


async def _header_tool(ctx: Context) -> tuple[dict[str, Any], dict[str, Any], str, str]:
    """A read-only tool with an ``x-mcp-header`` string or integer property, and valid
    arguments for it: ``(tool, arguments, property, header suffix)``."""
    for tool in await ctx.read_only_tools():
        schema = tool.get("inputSchema")
        props = wire.header_params(schema)
        arguments = example_arguments(schema)
        if not props or arguments is None:
            continue
        for prop, suffix in props.items():
            if isinstance(arguments.get(prop), str):
                return tool, arguments, prop, suffix
    ctx.skip("no read-only tool with an x-mcp-header string parameter")


@check("headers.param-required", title="Mcp-Param-* must accompany x-mcp-header arguments",
       requirement="For a tool whose inputSchema marks a property with x-mcp-header, a call "
                   "whose arguments hold a value but lack the Mcp-Param-<Name> header is "
                   "rejected with 400 and -32020.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http",
                                   "server-behavior-for-custom-headers"), **COMMON)
async def param_required(ctx: Context) -> None:
    tool, arguments, _, suffix = await _header_tool(ctx)
    props = wire.header_params(tool["inputSchema"])
    params = {"name": tool["name"], "arguments": arguments}
    good = await ctx.request("tools/call", params, header_props=props,
                             label=f"{tool['name']} with Mcp-Param-{suffix}")
    _accepted(ctx, good, f"call with a correct Mcp-Param-{suffix}")
    missing = await ctx.request("tools/call", params, header_props=props,
                                headers={f"Mcp-Param-{suffix}": None},
                                label=f"{tool['name']} without Mcp-Param-{suffix}")
    expect_error(ctx, missing, -32020, 400)


@check("headers.param-match", title="Mcp-Param-* must equal the argument",
       requirement="An Mcp-Param-<Name> header whose (decoded) value differs from the "
                   "argument is rejected with 400 and -32020; a valid Base64 sentinel is "
                   "decoded first, a malformed one is rejected.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "value-encoding"),
       **COMMON)
async def param_match(ctx: Context) -> None:
    tool, arguments, prop, suffix = await _header_tool(ctx)
    props = wire.header_params(tool["inputSchema"])
    params = {"name": tool["name"], "arguments": arguments}
    value = str(arguments[prop])
    encoded = await ctx.request("tools/call", params, header_props=props,
                                headers={f"Mcp-Param-{suffix}": wire.sentinel(value)},
                                label=f"{tool['name']} with a Base64 Mcp-Param-{suffix}")
    _accepted(ctx, encoded, "Base64-encoded Mcp-Param value")
    for label, header in (("a different value", value + "-other"),
                          ("a malformed Base64 sentinel", "=?base64?!!!?=")):
        exchange = await ctx.request("tools/call", params, header_props=props,
                                     headers={f"Mcp-Param-{suffix}": header},
                                     label=f"{tool['name']} with {label} in Mcp-Param-{suffix}")
        expect_error(ctx, exchange, -32020, 400, label)


@check("headers.notification-free", title="notifications need no Mcp-Method",
       requirement="A notification POST is accepted with 202 and an empty body; it needs no "
                   "Mcp-Method header.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "sending-messages"),
       **COMMON)
async def notification_free(ctx: Context) -> None:
    body = wire.notification("notifications/cancelled",
                             {"requestId": "nothing-in-flight", "reason": "conformance"})
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": wire.MODERN}
    exchange = await ctx.send(body, headers=headers, label="notification without Mcp-Method")
    ctx.expect(exchange.status == 202 and not exchange.body.strip(),
               f"expected 202 with an empty body, got {exchange.describe()}")
