"""JSON-RPC envelope, methods and error codes (basic/index.mdx, 2026-07-28)."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_error, expect_result
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]
ERRORS = spec("basic", "error-codes")
#: Requests removed in 2026-07-28: unknown methods now (changelog.mdx, Major changes).
REMOVED = ("initialize", "ping", "logging/setLevel", "resources/subscribe",
           "resources/unsubscribe")


@check("methods.unknown", title="an unknown method is -32601 (HTTP 404)",
       requirement="“If the server does not implement the requested RPC method, it MUST respond "
                   "with 404 Not Found and a JSON-RPC error with code -32601 (Method not found).” "
                   "(basic/transports/streamable-http, Protocol Version Header)",
       level=Level.MUST, spec=ERRORS, eras=MODERN, tags=["errors", "status"],
       fix="Answer a method you do not implement with HTTP 404 and JSON-RPC error -32601.")
async def unknown_method(ctx: AuditContext) -> None:
    exchange = await ctx.request("conformance/no-such-method", label="unknown method")
    expect_error(ctx, exchange, -32601, 404)


@check("methods.removed", title="methods removed in 2026-07-28 are unknown",
       requirement="“If the server does not implement the requested RPC method, it MUST respond "
                   "with 404 Not Found and a JSON-RPC error with code -32601 (Method not found).” "
                   "(basic/transports/streamable-http); the changelog removes “the "
                   "initialize/notifications/initialized handshake”, and ping, logging/setLevel "
                   "and resources/(un)subscribe are not 2026-07-28 methods.",
       level=Level.MUST, spec=spec("changelog", "major-changes"), eras=MODERN,
       tags=["errors", "status"],
       fix="On the modern path treat initialize, ping, logging/setLevel and "
           "resources/(un)subscribe carrying 2026-07-28 _meta as unknown methods (404, -32601).")
async def removed_methods(ctx: AuditContext) -> None:
    for method in REMOVED:
        params: dict[str, Any] = {"uri": "test://x"} if "subscribe" in method else (
            {"level": "info"} if method == "logging/setLevel" else {})
        if method == "initialize":
            params = {"protocolVersion": wire.MODERN, "capabilities": {},
                      "clientInfo": dict(wire.SUITE_CLIENT)}
        exchange = await ctx.request(method, params, label=f"{method} with modern _meta")
        expect_error(ctx, exchange, -32601, 404)


@check("methods.capability-gated", title="capabilities match the methods served",
       requirement="“Servers that support tools MUST declare the tools capability” (server/tools), "
                   "likewise resources and prompts; a list method of an undeclared feature is a "
                   "method the server does not implement: “it MUST respond with 404 Not Found and "
                   "a JSON-RPC error with code -32601” (basic/transports/streamable-http).",
       level=Level.MUST, spec=spec("server/tools", "capabilities"), eras=MODERN,
       tags=["discovery", "errors"],
       fix="Declare every feature you serve in capabilities, and answer the methods of undeclared "
           "features with 404 and -32601.")
async def capability_gated(ctx: AuditContext) -> None:
    capabilities = await ctx.capabilities()
    for method, capability in (("tools/list", "tools"), ("prompts/list", "prompts"),
                               ("resources/list", "resources")):
        exchange = await ctx.request(method, label=f"{method} ({capability} "
                                     f"{'declared' if capability in capabilities else 'absent'})")
        if capability in capabilities:
            expect_result(ctx, exchange, f"{method} although {capability} is declared")
        else:
            expect_error(ctx, exchange, -32601, 404, f"{method} without {capability} declared")


@check("errors.id-echo", title="error responses echo the request id",
       requirement="“Error responses MUST include the same ID as the request they correspond to "
                   "(except in error cases where the ID could not be read due a malformed "
                   "request).” (basic/index, Error Responses)",
       level=Level.MUST, spec=spec("basic", "error-responses"), eras=MODERN, tags=["errors"],
       fix="Echo the request's id, with its JSON type, in every error response.")
async def id_echo(ctx: AuditContext) -> None:
    for request_id in ("conformance-id-7", 7007):
        exchange = await ctx.request("conformance/no-such-method", id=request_id,
                                     label=f"unknown method with id {request_id!r}")
        expect_alive(ctx, exchange)
        response = exchange.response or {}
        ctx.expect("error" in response, f"no error response ({exchange.describe()})")
        got = response.get("id")
        ctx.expect(got == request_id and type(got) is type(request_id),
                   f"error response id is {got!r}, request id was {request_id!r}")


@check("jsonrpc.parse-error", title="malformed JSON is a parse error",
       requirement="“All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 "
                   "specification.” (basic/index) JSON-RPC 2.0 answers invalid JSON with error "
                   "-32700 and a null id; Streamable HTTP answers a refused request with a 4xx "
                   "status.",
       level=Level.MUST, spec=ERRORS, eras=MODERN, tags=["errors", "jsonrpc"],
       fix="Catch JSON decoding errors before dispatch and answer HTTP 400 with error -32700 and "
           "no id.")
async def parse_error(ctx: AuditContext) -> None:
    for raw in (b'{"jsonrpc": "2.0", "id": 1, "method": ', b"\xff\xfe not json"):
        headers = wire.standard_headers({"method": "tools/list", "params": {}})
        exchange = await ctx.send(raw, headers=headers, label=f"malformed body {raw[:20]!r}")
        expect_error(ctx, exchange, -32700, 400, "malformed JSON")
        ctx.expect(exchange.response is None or exchange.response.get("id") is None,
                   "a parse error response names an id although none could be read")


@check("jsonrpc.invalid-request", title="a broken request object is -32600",
       requirement="“All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 "
                   "specification.” (basic/index) JSON-RPC 2.0 names -32600 for an invalid Request "
                   "object; which code, and HTTP 400, is not restated by MCP, so a different "
                   "refusal is a warning.",
       level=Level.SHOULD, spec=ERRORS, eras=MODERN, tags=["errors", "jsonrpc"],
       fix="Answer a JSON value that is not a valid request (no method, null id, jsonrpc other "
           "than \"2.0\") with HTTP 400 and -32600.")
async def invalid_request(ctx: AuditContext) -> None:
    probes: dict[str, dict[str, Any]] = {
        "no method": {"jsonrpc": "2.0", "id": 31, "params": {"_meta": wire.meta()}},
        "id null": {"jsonrpc": "2.0", "id": None, "method": "tools/list",
                    "params": {"_meta": wire.meta()}},
        "jsonrpc 1.0": {"jsonrpc": "1.0", "id": 33, "method": "tools/list",
                        "params": {"_meta": wire.meta()}},
    }
    for label, body in probes.items():
        headers = wire.standard_headers({"method": "tools/list", "params": body.get("params")})
        exchange = await ctx.send(body, headers=headers, label=f"invalid request: {label}",
                                  request_id=body.get("id"))
        expect_error(ctx, exchange, -32600, 400, label)


@check("jsonrpc.no-batch", title="JSON-RPC batches are refused",
       requirement="“The body of the HTTP POST MUST be a single JSON-RPC request or notification.” "
                   "(basic/transports/streamable-http, Sending Messages) A batch is not processed.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "sending-messages"),
       eras=MODERN, tags=["jsonrpc"],
       fix="Refuse a JSON array body with HTTP 400 and a JSON-RPC error; never process its "
           "entries.")
async def no_batch(ctx: AuditContext) -> None:
    batch = [wire.request("tools/list", id=41), wire.request("tools/list", id=42)]
    headers = wire.standard_headers(batch[0])
    exchange = await ctx.send(batch, headers=headers, label="a batch of two requests")
    expect_alive(ctx, exchange)
    served = [m for m in exchange.messages if "result" in m]
    ctx.expect(not served, f"the batch was processed ({len(served)} results)")
    ctx.expect(exchange.error is not None, f"no JSON-RPC error for a batch ({exchange.describe()})")
    if ctx.http:
        ctx.expect(exchange.status == 400, f"HTTP {exchange.status} for a batch, not 400")
