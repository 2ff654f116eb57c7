"""The HTTP layer of Streamable HTTP: Origin/Host, methods, sessions, bodies."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_result
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.transport import RecordedExchange

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
async def origin(ctx: AuditContext) -> None:
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


async def _initialize(ctx: AuditContext, label: str, headers: dict[str, Any] | None = None,
                      params: dict[str, Any] | None = None) -> RecordedExchange:
    """A 2025-era ``initialize`` (needs no session) with extra ``headers`` / ``params``."""
    body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "initialize",
            "params": {"protocolVersion": ctx.era, "capabilities": {},
                       "clientInfo": dict(wire.SUITE_CLIENT), **(params or {})}}
    return await ctx.send(body, label=label, headers={**wire.legacy_headers(),
                                                      **(headers or {})}, timeout=30)


@check("http.host-rebinding", title="a foreign Host is refused (DNS rebinding)",
       requirement="“Servers MUST validate the Origin header on all incoming connections to "
                   "prevent DNS rebinding attacks.” (basic/transports/streamable-http, Security "
                   "Warning) The spec names no Host rule; validating Host is the standard "
                   "rebinding defence for requests that carry no Origin (a same-origin GET, a "
                   "non-browser client), so this probe sends a foreign Host and no Origin, with "
                   "the server's own Host as control, and a miss is a warning.",
       level=Level.SHOULD, spec=SECURITY, tags=["http", "security"], needs=["http", "loopback"],
       fix="Check the Host header of every request against the names the server answers to "
           "(localhost, 127.0.0.1, [::1] and the configured ones) and refuse others with 4xx, "
           "whether or not an Origin header is present.")
async def host_rebinding(ctx: AuditContext) -> None:
    # One thing varies: Host. A foreign Origin would be refused by the Origin check
    # (http.origin) and hide a server that never looks at Host.
    own = ctx.target.authority

    async def probe(host: str, label: str) -> RecordedExchange:
        headers: dict[str, Any] = {"Host": host, "Origin": None}
        if ctx.session.modern:
            return await ctx.request("server/discover", label=label, headers=headers)
        return await _initialize(ctx, label, headers)

    evil = await probe("evil.example.com", "Host evil.example.com, no Origin")
    ctx.expect(evil.status is not None and 400 <= evil.status < 500,
               f"Host evil.example.com (no Origin) was not refused ({evil.describe()})")
    good = await probe(own, f"Host {own}, no Origin")
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
async def get_delete(ctx: AuditContext) -> None:
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
async def no_session_id(ctx: AuditContext) -> None:
    exchange = await ctx.request("tools/list" if await ctx.has_capability("tools")
                                 else "server/discover",
                                 headers={"Mcp-Session-Id": "conformance-not-a-session"},
                                 label="a modern request carrying a stray Mcp-Session-Id")
    expect_result(ctx, exchange, "a modern request with a stray Mcp-Session-Id")
    ctx.expect("mcp-session-id" not in exchange.response_headers,
               "the response carries Mcp-Session-Id")


#: Where the body-limit probe puts its padding: an extension key of _meta, which a server
#: ignores (basic/index.mdx, "_meta"), so only the size can make it refuse.
PADDING_KEY = "io.github.mcpcore.conformance/padding"
#: Words of a refusal that is about size (for a server that answers 400, not 413).
SIZE_WORDS = ("too large", "too big", "exceeds", "size", "limit", "length")


async def _padded(ctx: AuditContext, size: int, label: str) -> RecordedExchange:
    """A request the server accepts when small: ``server/discover`` (or a 2025-era
    ``initialize``) whose ``_meta`` carries ``size`` bytes of padding."""
    if ctx.session.modern:
        meta = {**wire.meta(), PADDING_KEY: "x" * size}
        return await ctx.request("server/discover", meta=meta, label=label, timeout=30)
    return await _initialize(ctx, label, params={"_meta": {PADDING_KEY: "x" * size}})


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
async def body_limit(ctx: AuditContext) -> None:
    # The big request is one the server would serve if it were small (the control), so
    # a refusal can only be about size; a padded cursor or an unknown method would be
    # refused for being invalid, whatever the server's size limit.
    control = await _padded(ctx, 1024, "the same request with 1 KiB of padding (control)")
    if control.failure or control.status is None or control.status >= 300:
        ctx.skip(f"the server refuses the small padded request too ({control.describe()}), "
                 "so a refusal of the big one would say nothing about size")
    exchange = await _padded(ctx, OVERSIZED, "the same request with 12 MiB of padding")
    if exchange.failure and "dropped" in exchange.failure:
        ctx.note("the server closed the connection instead of answering")
    else:
        expect_alive(ctx, exchange)
        ctx.expect(exchange.result is None and exchange.status is not None
                   and 400 <= exchange.status < 500,
                   f"a 12 MiB body was processed ({exchange.describe()})")
        said = (exchange.text or "").lower()
        if exchange.status != 413 and not any(word in said for word in SIZE_WORDS):
            ctx.note(f"refused with {exchange.status}, not 413, and without naming the size")
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
async def content_type(ctx: AuditContext) -> None:
    body = wire.request("tools/list")
    headers = {**wire.standard_headers(body), "Content-Type": "text/plain"}
    exchange = await ctx.send(body, headers=headers, label="POST with Content-Type text/plain")
    expect_alive(ctx, exchange)
    ctx.expect(exchange.status is not None and 400 <= exchange.status < 500,
               f"expected a 4xx status, got {exchange.describe()}")
