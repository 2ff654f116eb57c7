"""The standard request headers (basic/transports/streamable-http.mdx, 2026-07-28):
``Mcp-Method``, ``Mcp-Name`` (with the Base64 sentinel) and ``Mcp-Param-*``."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_error
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.schema_values import example_arguments
from mcpcore.headers import NAME_PARAMS

MODERN = [wire.MODERN]
VALIDATION = spec("basic/transports/streamable-http", "server-validation")
COMMON: dict[str, Any] = {"eras": MODERN, "tags": ["headers"], "needs": ["http"]}


def _accepted(ctx: AuditContext, exchange: Any, what: str) -> None:
    if exchange.failure or exchange.status is None or exchange.status >= 400 or (
            exchange.error is not None and exchange.code in (-32020, -32600, -32602)):
        ctx.fail(f"{what}: refused ({exchange.describe()})")


@check("headers.method-required", title="Mcp-Method is required",
       requirement="“Validation failure conditions include: A required standard header "
                   "(MCP-Protocol-Version, Mcp-Method, Mcp-Name) is missing.” and “When rejecting "
                   "a request due to header validation failure, servers MUST return HTTP status "
                   "400 Bad Request and MUST include a JSON-RPC error response” with -32020 "
                   "(basic/transports/streamable-http, Server Validation)",
       level=Level.MUST, spec=VALIDATION, **COMMON,
       fix="Reject a POST without Mcp-Method with HTTP 400 and JSON-RPC error -32020.")
async def method_required(ctx: AuditContext) -> None:
    exchange = await ctx.request("tools/list", headers={"Mcp-Method": None},
                                 label="tools/list without Mcp-Method")
    expect_error(ctx, exchange, -32020, 400)


@check("headers.method-match", title="Mcp-Method must equal the body method",
       requirement="“Servers that process the request body MUST reject requests where the values "
                   "specified in the headers do not match the corresponding values in the request "
                   "body.” (basic/transports/streamable-http, Server Validation); “Header values "
                   "(such as method names) are case-sensitive.”",
       level=Level.MUST, spec=VALIDATION, **COMMON,
       fix="Compare Mcp-Method with the body's method byte for byte and answer a difference with "
           "HTTP 400 and -32020.")
async def method_match(ctx: AuditContext) -> None:
    for value in ("prompts/list", "TOOLS/LIST"):
        exchange = await ctx.request("tools/list", headers={"Mcp-Method": value},
                                     label=f"tools/list with Mcp-Method: {value}")
        expect_error(ctx, exchange, -32020, 400)


@check("headers.name-case-insensitive", title="header names are case-insensitive",
       requirement="“Clients and servers MUST use case-insensitive comparisons for header names.” "
                   "(basic/transports/streamable-http, Case Sensitivity)",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "case-sensitivity"),
       **COMMON,
       fix="Look headers up case-insensitively (mcp-method, MCP-METHOD and Mcp-Method are one "
           "header).")
async def name_case(ctx: AuditContext) -> None:
    for name in ("mcp-method", "MCP-METHOD"):
        exchange = await ctx.request("tools/list", headers={"Mcp-Method": None,
                                                            name: "tools/list"},
                                     label=f"tools/list with header {name}")
        _accepted(ctx, exchange, f"header spelled {name}")


async def _named(ctx: AuditContext) -> tuple[str, dict[str, Any], dict[str, str]]:
    found = await ctx.safe_named_request()
    if found is None:
        ctx.skip("no resource, read-only tool or argument-free prompt to address by name")
    return found


@check("headers.name-required", title="Mcp-Name is required where the body names a target",
       requirement="“Validation failure conditions include: A required standard header "
                   "(MCP-Protocol-Version, Mcp-Method, Mcp-Name) is missing.” "
                   "(basic/transports/streamable-http, Server Validation); Mcp-Name is required "
                   "for tools/call, resources/read and prompts/get.",
       level=Level.MUST, spec=VALIDATION, **COMMON,
       fix="Reject tools/call, resources/read and prompts/get without Mcp-Name with HTTP 400 and "
           "-32020.")
async def name_required(ctx: AuditContext) -> None:
    method, params, props = await _named(ctx)
    exchange = await ctx.request(method, params, headers={"Mcp-Name": None},
                                 header_props=props, label=f"{method} without Mcp-Name")
    expect_error(ctx, exchange, -32020, 400)


@check("headers.name-match", title="Mcp-Name must equal the body's name or URI",
       requirement="“Servers that process the request body MUST reject requests where the values "
                   "specified in the headers do not match the corresponding values in the request "
                   "body.” (basic/transports/streamable-http, Server Validation)",
       level=Level.MUST, spec=VALIDATION, **COMMON,
       fix="Compare Mcp-Name with params.name or params.uri and answer a difference with HTTP 400 "
           "and -32020.")
async def name_match(ctx: AuditContext) -> None:
    method, params, props = await _named(ctx)
    exchange = await ctx.request(method, params, headers={"Mcp-Name": "wrong-name-x9"},
                                 header_props=props, label=f"{method} with a wrong Mcp-Name")
    expect_error(ctx, exchange, -32020, 400)


@check("headers.name-whitespace", title="whitespace around header values is ignored",
       requirement="“Header names (called \"field names\" in RFC 9110) are case-insensitive.” "
                   "(basic/transports/streamable-http, Case Sensitivity); RFC 9110 §5.5 excludes "
                   "optional whitespace around a field value from the value, which the page does "
                   "not restate as a requirement of MCP servers, so a refusal is a warning.",
       level=Level.SHOULD, spec=spec("basic/transports/streamable-http", "case-sensitivity"),
       **COMMON,
       fix="Strip optional whitespace around header values before comparing them with the body "
           "(RFC 9110 §5.5).")
async def name_whitespace(ctx: AuditContext) -> None:
    method, params, props = await _named(ctx)
    value = params.get(NAME_PARAMS[method])
    exchange = await ctx.request(method, params, headers={"Mcp-Name": f"  {value}  "},
                                 header_props=props, label=f"{method} with padded Mcp-Name",
                                 verbatim=True)
    _accepted(ctx, exchange, "padded Mcp-Name")


@check("headers.name-base64", title="the Base64 sentinel form is decoded",
       requirement="“For headers that permit the Base64 sentinel encoding (Mcp-Name and "
                   "Mcp-Param-{Name}), servers MUST decode encoded values (see Value Encoding) "
                   "before comparing them to the body value.” (basic/transports/streamable-http, "
                   "Server Validation)",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "value-encoding"),
       **COMMON,
       fix="Decode =?base64?…?= values of Mcp-Name before comparing them with the body; reject a "
           "decoded value that differs with 400 and -32020.")
async def name_base64(ctx: AuditContext) -> None:
    method, params, props = await _named(ctx)
    value = str(params.get(NAME_PARAMS[method]))
    exchange = await ctx.request(method, params, headers={"Mcp-Name": wire.sentinel(value)},
                                 header_props=props, label=f"{method} with a Base64 Mcp-Name")
    _accepted(ctx, exchange, "Base64-encoded Mcp-Name")
    bad = await ctx.request(method, params, headers={"Mcp-Name": wire.sentinel("other-x9")},
                            header_props=props, label=f"{method} with a Base64 wrong name")
    expect_error(ctx, bad, -32020, 400, "Base64 Mcp-Name of another name")


async def _header_tool(ctx: AuditContext) -> tuple[dict[str, Any], dict[str, Any], str, str]:
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
       requirement="“Client omits header but value is in body | Non-conforming client | Server "
                   "MUST reject the request” (basic/transports/streamable-http, Server Behavior "
                   "for Custom Headers)",
       level=Level.MUST, spec=spec("basic/transports/streamable-http",
                                   "server-behavior-for-custom-headers"), **COMMON,
       fix="For each x-mcp-header property present in the arguments, require its Mcp-Param-<Name> "
           "header; reject its absence with HTTP 400 and -32020.")
async def param_required(ctx: AuditContext) -> None:
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
       requirement="“Any server that processes the message body MUST validate that encoded header "
                   "values, after decoding if Base64-encoded, match the corresponding” values in "
                   "the body, and “Servers MUST reject requests with a recognized Mcp-Param-{Name} "
                   "header that contains invalid characters” (basic/transports/streamable-http)",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "value-encoding"),
       **COMMON,
       fix="Decode Mcp-Param-<Name> (Base64 sentinel included) and compare it with the argument; "
           "reject a mismatch or a malformed sentinel with HTTP 400 and -32020.")
async def param_match(ctx: AuditContext) -> None:
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
       requirement="“If the body is a JSON-RPC notification: If the server accepts it, the server "
                   "MUST return HTTP status code 202 Accepted with no body. If the server cannot "
                   "accept it, it MUST return an HTTP error status code (e.g., 400 Bad Request).” "
                   "(basic/transports/streamable-http, Sending Messages) Mcp-Method is required "
                   "for requests only.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "sending-messages"),
       **COMMON,
       fix="Answer a notification POST with 202 and an empty body, or refuse it with a 4xx status; "
           "never require Mcp-Method on a notification.")
async def notification_free(ctx: AuditContext) -> None:
    body = wire.notification("notifications/cancelled",
                             {"requestId": "nothing-in-flight", "reason": "conformance"})
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": wire.MODERN}
    exchange = await ctx.send(body, headers=headers, label="notification without Mcp-Method")
    if exchange.status is not None and 400 <= exchange.status < 500:
        # A server MAY refuse a notification (this revision defines none on HTTP), but
        # not for want of Mcp-Method: the same notification with the header tells.
        named = await ctx.send(body, headers={**headers, "Mcp-Method": body["method"]},
                               label="the same notification with Mcp-Method")
        if named.status is not None and 400 <= named.status < 500:
            ctx.note(f"the server refuses this notification either way ({exchange.describe()})")
            return
        ctx.fail(f"refused without Mcp-Method ({exchange.describe()}) but accepted with it "
                 f"({named.describe()})", exchange)
    ctx.expect(exchange.status == 202 and not exchange.body.strip(),
               f"expected 202 with an empty body, or an HTTP error status, got "
               f"{exchange.describe()}")
