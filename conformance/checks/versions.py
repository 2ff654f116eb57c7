"""Protocol version negotiation (basic/versioning.mdx, streamable-http.mdx)."""

from __future__ import annotations

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_error
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.transport import RecordedExchange

MODERN = [wire.MODERN]
UNKNOWN = "1900-01-01"


@check("version.unsupported", title="an unsupported version is -32022 with the supported list",
       requirement="“If the server does not implement the requested protocol version (whether the "
                   "version is unknown to the server, or is a known version the server has chosen "
                   "not to support), it MUST respond with 400 Bad Request and an "
                   "UnsupportedProtocolVersionError listing its supported versions.” "
                   "(basic/transports/streamable-http, Protocol Version Header)",
       level=Level.MUST, spec=spec("basic/versioning", "protocol-version-negotiation"),
       eras=MODERN, tags=["versions", "errors"],
       fix="Answer a version you do not serve with HTTP 400 and error -32022 whose data.supported "
           "lists exactly the versions server/discover advertises and data.requested echoes the "
           "request.")
async def unsupported_version(ctx: AuditContext) -> None:
    discovered = await ctx.discover()
    exchange = await ctx.request("server/discover", meta=wire.meta(version=UNKNOWN),
                                 headers={"MCP-Protocol-Version": UNKNOWN},
                                 label=f"server/discover naming {UNKNOWN}")
    expect_error(ctx, exchange, -32022, 400)
    data = as_dict((exchange.error or {}).get("data"))
    supported = data.get("supported")
    ctx.expect(isinstance(supported, list) and supported,
               f"error.data.supported is not a non-empty list: {supported!r}")
    ctx.expect(data.get("requested") == UNKNOWN,
               f"error.data.requested is {data.get('requested')!r}, not {UNKNOWN!r}")
    advertised = set(discovered.get("supportedVersions") or [])
    extra = [v for v in supported or [] if v not in advertised]
    ctx.expect(not extra, f"data.supported names {extra}, which server/discover does not list")


async def implements(ctx: AuditContext, version: str) -> RecordedExchange | None:
    """The ``initialize`` exchange that shows the server implements the 2025-era
    ``version`` (answered with that version), or ``None``. The session it may open is
    ended again (HTTP DELETE)."""
    async def probe() -> RecordedExchange:
        body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {},
                           "clientInfo": dict(wire.SUITE_CLIENT)}}
        exchange = await ctx.send(body, headers=wire.legacy_headers(), era=wire.LEGACY,
                                  label=f"initialize naming {version} (does the server "
                                        "implement it?)")
        session = exchange.response_headers.get("mcp-session-id")
        if session and ctx.http and exchange.result is not None:
            await ctx.send(b"", headers={"Mcp-Session-Id": session,
                                         "MCP-Protocol-Version": version},
                           http_method="DELETE", era=wire.LEGACY, label="end that session")
        return exchange

    exchange: RecordedExchange = await ctx.session.once(f"implements:{version}", probe)
    if exchange not in ctx.evidence:
        ctx.evidence.append(exchange)
    answered = (exchange.result or {}).get("protocolVersion")
    return exchange if answered == version else None


def served_as_modern(exchange: RecordedExchange) -> bool:
    """A result in the 2026-07-28 shape (``resultType`` is new in that revision)."""
    return isinstance((exchange.result or {}).get("resultType"), str)


@check("version.legacy-in-meta", title="a request naming a 2025 version is not served as 2026",
       requirement="“If the server does not implement the requested version (whether the "
                   "version is unknown to the server, or is a known version the server has "
                   "chosen not to support), it MUST respond with an "
                   "UnsupportedProtocolVersionError listing the versions it does support” "
                   "(basic/versioning, Protocol Version Negotiation). A request naming "
                   "2025-11-25 in _meta is answered -32022 by a server that does not "
                   "implement 2025-11-25, and as 2025-11-25 traffic by one that does; never "
                   "served as 2026-07-28.",
       level=Level.MUST, spec=spec("basic/versioning", "protocol-version-negotiation"),
       eras=MODERN, tags=["versions"],
       fix="Check the requested version before dispatch: answer -32022 with "
           "data.supported for a version you do not serve per request, and never serve a "
           "request naming 2025-11-25 with 2026-07-28 semantics.")
async def legacy_in_meta(ctx: AuditContext) -> None:
    exchange = await ctx.request("tools/list", meta=wire.meta(version=wire.LEGACY),
                                 headers={"MCP-Protocol-Version": wire.LEGACY},
                                 label="tools/list with _meta naming 2025-11-25",
                                 era=wire.LEGACY)
    if exchange.code == -32022:
        return
    if served_as_modern(exchange):
        ctx.fail(f"a request naming {wire.LEGACY} was served as {wire.MODERN} "
                 f"({exchange.describe()})", exchange)
    if await implements(ctx, wire.LEGACY) is not None:
        ctx.note(f"answered as {wire.LEGACY} traffic ({exchange.describe()}), which this "
                 "server implements")
        return
    ctx.fail(f"the server does not implement {wire.LEGACY} (initialize was not answered with "
             f"it), so a request naming it must be -32022, got {exchange.describe()}", exchange)


@check("version.header-missing", title="a request without MCP-Protocol-Version is refused",
       requirement="“A server that supports clients implementing protocol versions earlier "
                   "than 2025-06-18 (which did not define the MCP-Protocol-Version header) MAY "
                   "treat a request that omits the header as protocol version 2025-03-26. A "
                   "server that does not support such clients MUST reject a request without "
                   "the header per Server Validation.” (basic/transports/streamable-http, "
                   "Protocol Version Header) Server Validation: 400 with -32020.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "protocol-version-header"),
       eras=MODERN, tags=["versions", "headers"], needs=["http"],
       fix="Reject a POST without MCP-Protocol-Version with HTTP 400 and JSON-RPC error "
           "-32020, unless you serve 2025-03-26 clients and treat such requests as "
           "2025-03-26.")
async def header_missing(ctx: AuditContext) -> None:
    exchange = await ctx.request("tools/list", headers={"MCP-Protocol-Version": None},
                                 label="tools/list without MCP-Protocol-Version",
                                 era=wire.LEGACY)
    if exchange.code == -32020 and exchange.status == 400:
        return
    if served_as_modern(exchange):
        ctx.fail("a request without MCP-Protocol-Version was served as 2026-07-28 "
                 f"({exchange.describe()})", exchange)
    if await implements(ctx, "2025-03-26") is not None:
        ctx.skip("the server supports 2025-03-26 clients (initialize naming 2025-03-26 was "
                 "answered with it), so it MAY treat a request without the header as "
                 f"2025-03-26, as it did: {exchange.describe()}")
    expect_error(ctx, exchange, -32020, 400)


@check("version.header-mismatch", title="header and _meta versions must agree",
       requirement="“The header value MUST match the io.modelcontextprotocol/protocolVersion field "
                   "carried in the request body's _meta. If the values do not match, the server "
                   "MUST reject the request with 400 Bad Request and a HeaderMismatch JSON-RPC "
                   "error” (basic/transports/streamable-http, Protocol Version Header)",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "protocol-version-header"),
       eras=MODERN, tags=["versions", "headers"], needs=["http"],
       fix="Compare MCP-Protocol-Version with _meta protocolVersion and answer a mismatch with "
           "HTTP 400 and -32020.")
async def header_mismatch(ctx: AuditContext) -> None:
    exchange = await ctx.request("server/discover", meta=wire.meta(version=UNKNOWN),
                                 headers={"MCP-Protocol-Version": wire.MODERN},
                                 label=f"header {wire.MODERN}, _meta {UNKNOWN}")
    expect_error(ctx, exchange, -32020, 400)
