"""The HTTP layer of Streamable HTTP: Origin/Host, methods, sessions, bodies."""

from __future__ import annotations

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_result
from mcpcore.conformance.context import Context
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.transport import Exchange

SECURITY = spec("basic/transports/streamable-http", "security--endpoint")
#: Larger than any sane limit (the reference default is 4 MiB), small enough to send.
OVERSIZED = 12 * 1024 * 1024


@check("http.origin", title="a foreign Origin is refused with 403",
       requirement="“Servers MUST validate the Origin header on all incoming connections to "
                   "prevent DNS rebinding attacks. If the Origin header is present and invalid, "
                   "servers MUST respond with HTTP 403 Forbidden.” "
                   "(basic/transports/streamable-http, Security Warning; 2025-11-25 "
                   "basic/transports alike)",
       level=Level.MUST, spec=SECURITY, tags=["http", "security"], needs=["http"],
       fix="Check Origin against an allow-list (your own origins) and answer any other present "
           "Origin with 403.")
async def origin(ctx: Context) -> None:
    if ctx.session.modern:
        exchange = await ctx.request("server/discover",
                                     headers={"Origin": "http://evil.example.com"},
                                     label="server/discover from http://evil.example.com")
    else:
        body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "initialize",
                "params": {"protocolVersion": ctx.era, "capabilities": {},
                           "clientInfo": dict(wire.SUITE_CLIENT)}}
        exchange = await ctx.send(body, headers={**wire.legacy_headers(),
                                                 "Origin": "http://evil.example.com"},
                                  label="initialize from http://evil.example.com")
    ctx.expect(exchange.status == 403, f"expected 403, got {exchange.describe()}")


@check("http.host-rebinding", title="a foreign Host is refused (DNS rebinding)",
       requirement="“Servers MUST validate the Origin header on all incoming connections to "
                   "prevent DNS rebinding attacks.” (basic/transports/streamable-http, Security "
                   "Warning) A local server that serves a foreign Host (and Origin) is open to DNS "
                   "rebinding.",
       level=Level.MUST, spec=SECURITY, tags=["http", "security"], needs=["http", "loopback"],
       fix="On a local server, accept only your own Host names (127.0.0.1, localhost, [::1] with "
           "the port) and Origins; refuse others with 403 or 421.")
async def host_rebinding(ctx: Context) -> None:
    own = ctx.target.authority

    async def probe(host: str, origin_value: str, label: str) -> Exchange:
        if ctx.session.modern:
            return await ctx.request("server/discover", label=label,
                                     headers={"Host": host, "Origin": origin_value})
        body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "initialize",
                "params": {"protocolVersion": ctx.era, "capabilities": {},
                           "clientInfo": dict(wire.SUITE_CLIENT)}}
        return await ctx.send(body, label=label, headers={
            **wire.legacy_headers(), "Host": host, "Origin": origin_value})
    evil = await probe("evil.example.com", "http://evil.example.com", "Host evil.example.com")
    ctx.expect(evil.status is not None and 400 <= evil.status < 500,
               f"Host evil.example.com was not refused ({evil.describe()})")
    good = await probe(own, f"http://{own}", f"Host {own}")
    ctx.expect(good.status is not None and good.status < 300,
               f"the server's own Host {own} was refused ({good.describe()})")


@check("http.get-delete", title="GET and DELETE without a session are 405",
       requirement="“A server that supports only this revision and receives such traffic from an "
                   "older client SHOULD respond as follows: HTTP GET or DELETE to the MCP "
                   "endpoint: respond with 405 Method Not Allowed.” "
                   "(basic/transports/streamable-http, Earlier Streamable HTTP Revisions)",
       level=Level.SHOULD, spec=spec("basic/transports/streamable-http",
                                     "earlier-streamable-http-revisions"),
       eras=[wire.MODERN], tags=["http", "status"], needs=["http"],
       fix="Answer GET and DELETE without a 2025 session with 405 Method Not Allowed.")
async def get_delete(ctx: Context) -> None:
    for method in ("GET", "DELETE"):
        exchange = await ctx.send(b"", headers={"Accept": "text/event-stream",
                                                "MCP-Protocol-Version": wire.MODERN},
                                  http_method=method, label=f"{method} without a session",
                                  timeout=5)
        expect_alive(ctx, exchange)
        ctx.expect(exchange.status == 405, f"{method}: expected 405, got {exchange.describe()}")


@check("http.no-session-id", title="modern requests get no Mcp-Session-Id",
       requirement="“An Mcp-Session-Id header on a request: ignore it, and do not mint or echo "
                   "session IDs.” (basic/transports/streamable-http, Earlier Streamable HTTP "
                   "Revisions; SHOULD)",
       level=Level.SHOULD, spec=spec("basic/transports/streamable-http",
                                     "earlier-streamable-http-revisions"),
       eras=[wire.MODERN], tags=["http"], needs=["http"],
       fix="Ignore Mcp-Session-Id on modern requests and never set it on their responses.")
async def no_session_id(ctx: Context) -> None:
    exchange = await ctx.request("tools/list" if await ctx.has_capability("tools")
                                 else "server/discover",
                                 headers={"Mcp-Session-Id": "conformance-not-a-session"},
                                 label="a modern request carrying a stray Mcp-Session-Id")
    expect_result(ctx, exchange, "a modern request with a stray Mcp-Session-Id")
    ctx.expect("mcp-session-id" not in exchange.response_headers,
               "the response carries Mcp-Session-Id")


@check("http.body-limit", title="an oversized body is refused, not processed or crashed on",
       requirement="No spec sentence sets a body limit; the nearest rule is “Implementations "
                   "SHOULD apply reasonable bounds, such as a maximum schema depth, a cap on the "
                   "total number of subschemas, or a per-validation time budget, to prevent a "
                   "malicious schema from acting as a Denial-of-Service vector against the "
                   "validator.” (basic/index, JSON Schema Usage), so an unbounded body is a "
                   "warning.",
       level=Level.SHOULD, spec=SECURITY, tags=["http", "security", "limits"], needs=["http"],
       fix="Bound request bodies (a few MiB) and answer larger ones with 413 before reading them "
           "whole.")
async def body_limit(ctx: Context) -> None:
    padding = "x" * OVERSIZED
    body = wire.request("tools/list", {"cursor": padding}) if ctx.session.modern else {
        "jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": padding}}
    headers = wire.standard_headers(body) if ctx.session.modern else wire.legacy_headers()
    exchange = await ctx.send(body, headers=headers, label="a 12 MiB request body", timeout=30)
    if exchange.failure and "dropped" in exchange.failure:
        ctx.note("the server closed the connection instead of answering")
    else:
        expect_alive(ctx, exchange)
        ctx.expect(exchange.status is not None and 400 <= exchange.status < 500,
                   f"a 12 MiB body was not refused ({exchange.describe()})")
    after = await ctx.request("server/discover", label="server/discover after the big body") \
        if ctx.session.modern else None
    if after is not None:
        expect_alive(ctx, after, "the server after an oversized body")


@check("http.content-type", title="a non-JSON Content-Type is refused cleanly",
       requirement="“If the body is a JSON-RPC request, the server MUST return either "
                   "Content-Type: application/json (a single JSON object) or Content-Type: "
                   "text/event-stream (an SSE response stream).” "
                   "(basic/transports/streamable-http) The spec says nothing of a POST that is not "
                   "JSON; refusing it cleanly with a 4xx (415) is expected practice, so a 5xx is a "
                   "warning.",
       level=Level.SHOULD, spec=spec("basic/transports/streamable-http", "sending-messages"),
       eras=[wire.MODERN], tags=["http", "status"], needs=["http"],
       fix="Answer a POST whose Content-Type is not application/json with 415 (or another 4xx), "
           "never a 5xx.")
async def content_type(ctx: Context) -> None:
    body = wire.request("tools/list")
    headers = {**wire.standard_headers(body), "Content-Type": "text/plain"}
    exchange = await ctx.send(body, headers=headers, label="POST with Content-Type text/plain")
    expect_alive(ctx, exchange)
    ctx.expect(exchange.status is not None and 400 <= exchange.status < 500,
               f"expected a 4xx status, got {exchange.describe()}")
