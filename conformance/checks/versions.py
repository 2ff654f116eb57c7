"""Protocol version negotiation (basic/versioning.mdx, streamable-http.mdx)."""

from __future__ import annotations

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_error
from mcpcore.conformance.context import Context
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]
UNKNOWN = "1900-01-01"


@check("version.unsupported", title="an unsupported version is -32022 with the supported list",
       requirement="A request naming a version the server does not support is answered "
                   "-32022 with data.supported (every supported version) and data.requested; "
                   "HTTP 400.",
       level=Level.MUST, spec=spec("basic/versioning", "protocol-version-negotiation"),
       eras=MODERN, tags=["versions", "errors"])
async def unsupported_version(ctx: Context) -> None:
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


@check("version.legacy-in-meta", title="a modern request naming a 2025 version is refused",
       requirement="Legacy versions are negotiated only by initialize: a _meta request "
                   "naming 2025-11-25 is not served as 2026-07-28 (expect -32022).",
       level=Level.SHOULD, spec=spec("basic/versioning", "protocol-version-negotiation"),
       eras=MODERN, tags=["versions"])
async def legacy_in_meta(ctx: Context) -> None:
    exchange = await ctx.request("tools/list", meta=wire.meta(version=wire.LEGACY),
                                 headers={"MCP-Protocol-Version": wire.LEGACY},
                                 label="tools/list with _meta naming 2025-11-25")
    ctx.expect(exchange.error is not None,
               f"served as if {wire.LEGACY} were a per-request version ({exchange.describe()})")


@check("version.header-missing", title="a request without MCP-Protocol-Version is refused",
       requirement="MCP-Protocol-Version is required on every POST; without it the server "
                   "answers 400 with -32020.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "server-validation"),
       eras=MODERN, tags=["versions", "headers"], needs=["http"])
async def header_missing(ctx: Context) -> None:
    exchange = await ctx.request("tools/list", headers={"MCP-Protocol-Version": None},
                                 label="tools/list without MCP-Protocol-Version")
    expect_error(ctx, exchange, -32020, 400)


@check("version.header-mismatch", title="header and _meta versions must agree",
       requirement="MCP-Protocol-Version must equal _meta protocolVersion; otherwise 400 "
                   "with -32020.",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "protocol-version-header"),
       eras=MODERN, tags=["versions", "headers"], needs=["http"])
async def header_mismatch(ctx: Context) -> None:
    exchange = await ctx.request("server/discover", meta=wire.meta(version=UNKNOWN),
                                 headers={"MCP-Protocol-Version": wire.MODERN},
                                 label=f"header {wire.MODERN}, _meta {UNKNOWN}")
    expect_error(ctx, exchange, -32020, 400)
