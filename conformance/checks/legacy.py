"""The 2025-era wire, where the server speaks it: handshake, sessions, ping, GET/DELETE
(2025-11-25 basic/lifecycle.mdx, basic/transports.mdx, basic/utilities/ping.mdx)."""

from __future__ import annotations

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_result
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.legacy import LegacySession, shared_session
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check

LEGACY = [wire.LEGACY]
LIFECYCLE = spec("basic/lifecycle", "initialization", wire.LEGACY)
SESSIONS = spec("basic/transports", "session-management", wire.LEGACY)


@check("legacy.initialize", title="initialize negotiates 2025-11-25",
       requirement="“If the server supports the requested protocol version, it MUST respond with "
                   "the same version.” and “The server MUST respond with its own capabilities and "
                   "information” (2025-11-25 basic/lifecycle)",
       level=Level.MUST, spec=LIFECYCLE, eras=LEGACY, tags=["legacy", "lifecycle"],
       fix="Answer initialize naming 2025-11-25 with protocolVersion 2025-11-25, capabilities and "
           "serverInfo {name, version}.")
async def initialize(ctx: AuditContext) -> None:
    session = await shared_session(ctx)
    result = session.result
    ctx.expect(result.get("protocolVersion") == wire.LEGACY,
               f"protocolVersion {result.get('protocolVersion')!r}, asked for {wire.LEGACY}")
    ctx.expect(isinstance(result.get("capabilities"), dict), "no capabilities object")
    info = as_dict(result.get("serverInfo"))
    ctx.expect(isinstance(info.get("name"), str) and isinstance(info.get("version"), str),
               f"serverInfo lacks name/version: {info or None!r}")


@check("legacy.version-fallback", title="an unknown version gets a legacy version back",
       requirement="“Otherwise, the server MUST respond with another protocol version it "
                   "supports.” (2025-11-25 basic/lifecycle, Version Negotiation) 2026-07-28 has no "
                   "handshake, so it is not such a version.",
       level=Level.MUST, spec=spec("basic/lifecycle", "version-negotiation", wire.LEGACY),
       eras=LEGACY, tags=["legacy", "lifecycle", "versions"], needs=["http"],
       fix="Answer initialize with an unknown version with the latest 2025-era version you support "
           "(or an error), never 2026-07-28.")
async def version_fallback(ctx: AuditContext) -> None:
    body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "initialize",
            "params": {"protocolVersion": "2099-01-01", "capabilities": {},
                       "clientInfo": dict(wire.SUITE_CLIENT)}}
    exchange = await ctx.send(body, headers=wire.legacy_headers(),
                              label="initialize naming 2099-01-01")
    expect_alive(ctx, exchange)
    if exchange.error is not None:
        return
    version = (exchange.result or {}).get("protocolVersion")
    ctx.expect(version in wire.LEGACY_VERSIONS,
               f"answered with protocolVersion {version!r}, not a 2025-era version")


@check("legacy.session-id", title="session ids are visible ASCII",
       requirement="“The session ID MUST only contain visible ASCII characters (ranging from 0x21 "
                   "to 0x7E).” (2025-11-25 basic/transports, Session Management)",
       level=Level.MUST, spec=SESSIONS, eras=LEGACY, tags=["legacy", "sessions"],
       needs=["http"],
       fix="Mint session ids from visible ASCII only (e.g. a UUID or base64url of random bytes).")
async def session_id(ctx: AuditContext) -> None:
    session = await shared_session(ctx)
    if session.session_id is None:
        ctx.skip("the server issues no session ids")
    bad = [c for c in session.session_id if not 0x21 <= ord(c) <= 0x7E]
    ctx.expect(not bad, f"Mcp-Session-Id has characters outside 0x21-0x7E: {bad!r}")


@check("legacy.initialized-202", title="notifications/initialized is accepted with 202",
       requirement="“If the server accepts the input, the server MUST return HTTP status code 202 "
                   "Accepted with no body.” (2025-11-25 basic/transports, Sending Messages to the "
                   "Server)",
       level=Level.MUST, spec=spec("basic/transports", "sending-messages-to-the-server",
                                   wire.LEGACY),
       eras=LEGACY, tags=["legacy", "lifecycle"], needs=["http"],
       fix="Answer an accepted notification (notifications/initialized) with 202 and an empty "
           "body.")
async def initialized_202(ctx: AuditContext) -> None:
    session = await LegacySession.open(ctx, initialized=False)
    exchange = await session.notify(ctx, "notifications/initialized")
    ctx.expect(exchange.status == 202 and not exchange.body.strip(),
               f"expected 202 with no body, got {exchange.describe()}")


@check("legacy.ping", title="ping answers an empty result",
       requirement="“The receiver MUST respond promptly with an empty response” (2025-11-25 "
                   "basic/utilities/ping)",
       level=Level.MUST, spec=spec("basic/utilities/ping", "behavior-requirements", wire.LEGACY),
       eras=LEGACY, tags=["legacy"],
       fix="Answer ping with result {}.")
async def ping(ctx: AuditContext) -> None:
    session = await shared_session(ctx)
    exchange = await session.request(ctx, "ping")
    result = expect_result(ctx, exchange, "ping")
    ctx.expect(result == {}, f"ping result is {result!r}, not {{}}")


@check("legacy.tools-list", title="the session serves tools/list",
       requirement="“Servers that support tools MUST declare the tools capability” and respond to "
                   "tools/list with the available tools (2025-11-25 server/tools); “All messages "
                   "between MCP clients and servers MUST follow the JSON-RPC 2.0 specification”.",
       level=Level.MUST, spec=spec("server/tools", "listing-tools", wire.LEGACY),
       eras=LEGACY, tags=["legacy", "tools"],
       fix="Serve tools/list inside a 2025 session with a tools array.")
async def tools_list(ctx: AuditContext) -> None:
    session = await shared_session(ctx)
    if "tools" not in as_dict(session.result.get("capabilities")):
        ctx.skip("the session declares no tools capability")
    exchange = await session.request(ctx, "tools/list")
    result = expect_result(ctx, exchange, "tools/list")
    ctx.expect(isinstance(result.get("tools"), list), "no tools array")


@check("legacy.ended-session", title="a session ended by DELETE answers 404",
       requirement="“The server MAY terminate the session at any time, after which it MUST respond "
                   "to requests containing that session ID with HTTP 404 Not Found.” (2025-11-25 "
                   "basic/transports, Session Management) A DELETE answered 2xx ended the "
                   "session.",
       level=Level.MUST, spec=SESSIONS, eras=LEGACY, tags=["legacy", "sessions"],
       needs=["http"],
       fix="Forget a session once DELETE ends it (or the server ends it) and answer any later "
           "request carrying its Mcp-Session-Id with HTTP 404.")
async def ended_session(ctx: AuditContext) -> None:
    ended = await LegacySession.open(ctx)
    if ended.session_id is None:
        ctx.skip("the server issues no session ids")
    gone = await ended.delete(ctx)
    if gone.status is None or not 200 <= gone.status < 300:
        ctx.skip(f"DELETE did not end the session ({gone.describe()}), and the suite has no "
                 "other way to make the server terminate one (legacy.delete judges the DELETE)")
    after = await ended.request(ctx, "ping", label="ping after DELETE")
    ctx.expect(after.status == 404, f"a session ended by DELETE (answered HTTP {gone.status}) "
               f"still answers {after.describe()}, not 404", after)


@check("legacy.unknown-session", title="a session id the server never issued is 404",
       requirement="The spec's 404 rule is for sessions the server ended: “The server MAY "
                   "terminate the session at any time, after which it MUST respond to requests "
                   "containing that session ID with HTTP 404 Not Found.”; no sentence covers an id "
                   "it never issued. 404 is the answer a client can act on (“When a client "
                   "receives HTTP 404 in response to a request containing an MCP-Session-Id, it "
                   "MUST start a new session”, 2025-11-25 basic/transports, Session Management), "
                   "and a server that lost its sessions (a restart) cannot tell the two apart, so "
                   "another answer is a warning.",
       level=Level.SHOULD, spec=SESSIONS, eras=LEGACY, tags=["legacy", "sessions"],
       needs=["http"],
       fix="Answer a request whose Mcp-Session-Id you do not know (never issued, expired, or lost "
           "in a restart) with HTTP 404, so the client starts a new session.")
async def unknown_session(ctx: AuditContext) -> None:
    session = await shared_session(ctx)
    if session.session_id is None:
        ctx.skip("the server issues no session ids")
    body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "tools/list"}
    exchange = await ctx.send(body, headers=wire.legacy_headers(
        session.version, "conformance-never-issued-session"), label="tools/list, unknown session")
    ctx.expect(exchange.status == 404, f"a session id the server never issued: expected 404, "
               f"got {exchange.describe()}")


@check("legacy.delete", title="DELETE ends the session or is refused with 405",
       requirement="“The server MAY respond to this request with HTTP 405 Method Not Allowed, "
                   "indicating that the server does not allow clients to terminate sessions.” "
                   "(2025-11-25 basic/transports, Session Management) DELETE otherwise ends the "
                   "session; a 5xx or other answer is a warning.",
       level=Level.MAY, spec=SESSIONS, eras=LEGACY, tags=["legacy", "sessions"],
       needs=["http"],
       fix="Answer DELETE with the session id by ending the session (2xx), or with 405 if clients "
           "may not end sessions.")
async def delete(ctx: AuditContext) -> None:
    session = await LegacySession.open(ctx)
    if session.session_id is None:
        ctx.skip("the server issues no session ids")
    gone = await session.delete(ctx)
    expect_alive(ctx, gone, "DELETE")
    if gone.status == 405:
        ctx.note("the server does not let clients end sessions (405)")
        return
    ctx.expect(gone.status is not None and 200 <= gone.status < 300,
               f"DELETE answered {gone.describe()}")


@check("legacy.no-session", title="a request without the session id is refused",
       requirement="“Servers that require a session ID SHOULD respond to requests without an "
                   "MCP-Session-Id header (other than initialization) with HTTP 400 Bad Request.” "
                   "(2025-11-25 basic/transports, Session Management)",
       level=Level.SHOULD, spec=SESSIONS, eras=LEGACY, tags=["legacy", "sessions"],
       needs=["http"],
       fix="Answer a request without Mcp-Session-Id (other than initialize) with HTTP 400.")
async def no_session(ctx: AuditContext) -> None:
    session = await shared_session(ctx)
    if session.session_id is None:
        ctx.skip("the server issues no session ids")
    body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "tools/list"}
    exchange = await ctx.send(body, headers=wire.legacy_headers(session.version),
                              label="tools/list without Mcp-Session-Id")
    ctx.expect(exchange.status == 400, f"expected 400, got {exchange.describe()}")


@check("legacy.get-stream", title="GET opens the session's stream or is 405",
       requirement="“The server MUST either return Content-Type: text/event-stream in response to "
                   "this HTTP GET, or else return HTTP 405 Method Not Allowed, indicating that the "
                   "server does not offer an SSE stream at this endpoint.” (2025-11-25 "
                   "basic/transports)",
       level=Level.MUST, spec=spec("basic/transports", "listening-for-messages-from-the-server",
                                   wire.LEGACY),
       eras=LEGACY, tags=["legacy", "sessions"], needs=["http"],
       fix="Answer GET with the session id with an SSE stream, or 405.")
async def get_stream(ctx: AuditContext) -> None:
    session = await shared_session(ctx)
    if session.session_id is None:
        ctx.skip("the server issues no session ids")
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session.session_id,
               "MCP-Protocol-Version": session.version}
    async with ctx.transport.stream(b"", headers=headers, http_method="GET",
                                    label="GET the session stream") as stream:
        exchange = stream.exchange
    ctx.keep(exchange)
    if exchange.failure:
        ctx.fail(exchange.failure)
    if exchange.status == 405:
        return
    ctx.expect(exchange.status == 200 and exchange.content_type == "text/event-stream",
               f"expected an SSE stream or 405, got HTTP {exchange.status} "
               f"{exchange.content_type!r}")


@check("legacy.no-batch", title="2025-11-25 sessions refuse batches",
       requirement="“The body of the POST request MUST be a single JSON-RPC request, notification, "
                   "or response.” (2025-11-25 basic/transports) The MUST binds the client; a "
                   "server that still processes batches (2025-03-26 allowed them) gets a warning.",
       level=Level.SHOULD, spec=spec("basic/transports", "sending-messages-to-the-server",
                                     wire.LEGACY),
       eras=LEGACY, tags=["legacy", "jsonrpc"],
       fix="Refuse JSON arrays in 2025-06-18 and later sessions with HTTP 400.")
async def no_batch(ctx: AuditContext) -> None:
    session = await shared_session(ctx)
    batch = [{"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "ping"},
             {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "ping"}]
    exchange = await ctx.send(batch, headers=session.headers(), label="a batch of two pings")
    expect_alive(ctx, exchange)
    served = [m for m in exchange.messages if "result" in m]
    ctx.expect(not served, f"the batch was processed ({len(served)} results)")
