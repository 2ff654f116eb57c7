"""``server/discover`` and the per-request ``_meta`` (2026-07-28)."""

from __future__ import annotations

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_error, expect_result
from mcpcore.conformance.context import Context
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]


@check("discover.result", title="server/discover answers with versions and capabilities",
       requirement="“Servers MUST implement server/discover.” (basic/versioning) Its "
                   "DiscoverResult carries supportedVersions, capabilities and resultType "
                   "'complete' (schema.ts DiscoverResult).",
       level=Level.MUST, spec=spec("server/discover", "discoverresult"), eras=MODERN,
       tags=["discovery"],
       fix="Implement server/discover: answer with resultType 'complete', supportedVersions "
           "including 2026-07-28, and a capabilities object.")
async def discover_result(ctx: Context) -> None:
    exchange = await ctx.request("server/discover")
    result = expect_result(ctx, exchange, "server/discover")
    versions = result.get("supportedVersions")
    ctx.expect(isinstance(versions, list) and all(isinstance(v, str) for v in versions),
               f"supportedVersions is not a list of strings: {versions!r}")
    assert isinstance(versions, list)
    ctx.expect(wire.MODERN in versions, f"supportedVersions {versions} lacks {wire.MODERN}")
    ctx.expect(isinstance(result.get("capabilities"), dict),
               "capabilities is missing or not an object")
    ctx.expect(result.get("resultType") == "complete",
               f"resultType is {result.get('resultType')!r}, not 'complete'")


@check("discover.server-info", title="results identify the server in _meta",
       requirement="“_meta['io.modelcontextprotocol/serverInfo']: Name and version of the server "
                   "software. Servers SHOULD include this field.” (server/discover, "
                   "DiscoverResult)",
       level=Level.SHOULD, spec=spec("basic", "meta"), eras=MODERN, tags=["discovery"],
       fix="Put io.modelcontextprotocol/serverInfo {name, version} in the _meta of the "
           "server/discover result.")
async def discover_server_info(ctx: Context) -> None:
    result = await ctx.discover()
    info = as_dict(as_dict(result.get("_meta")).get(wire.SERVER_INFO))
    ctx.expect(isinstance(info.get("name"), str) and isinstance(info.get("version"), str),
               f"_meta[{wire.SERVER_INFO!r}] lacks name/version: {info or None!r}")


@check("meta.client-info-optional", title="clientInfo is optional",
       requirement="“A request missing any required field is malformed; the server MUST reject it "
                   "with JSON-RPC error code -32602 (Invalid params).” (basic/index, _meta) "
                   "io.modelcontextprotocol/clientInfo is listed as not required, so a request "
                   "without it is not malformed and is served.",
       level=Level.MUST, spec=spec("basic", "meta"), eras=MODERN, tags=["meta"],
       fix="Treat io.modelcontextprotocol/clientInfo as optional: serve requests that omit it.")
async def client_info_optional(ctx: Context) -> None:
    exchange = await ctx.request("server/discover", meta=wire.meta(without=[wire.CLIENT_INFO]),
                                 label="server/discover without clientInfo")
    expect_result(ctx, exchange)


@check("meta.required", title="a request without the required _meta is refused",
       requirement="“A request missing any required field is malformed; the server MUST reject it "
                   "with JSON-RPC error code -32602 (Invalid params). On HTTP, the response status "
                   "MUST be 400 Bad Request.” (basic/index, _meta)",
       level=Level.MUST, spec=spec("basic", "meta"), eras=MODERN, tags=["meta", "errors"],
       fix="Validate _meta before dispatch: without protocolVersion or clientCapabilities answer "
           "-32602 with HTTP 400.")
async def meta_required(ctx: Context) -> None:
    probes = {
        "no _meta at all": None,
        "_meta without protocolVersion": wire.meta(without=[wire.PROTOCOL_VERSION]),
        "_meta without clientCapabilities": wire.meta(without=[wire.CLIENT_CAPABILITIES]),
    }
    for label, block in probes.items():
        exchange = await ctx.request("server/discover", meta=block, label=label)
        expect_error(ctx, exchange, -32602, 400, label)


@check("meta.capabilities-not-inferred", title="a missing client capability is -32021",
       requirement="“A server MUST NOT rely on capabilities the client has not declared. If "
                   "processing a request requires a capability the client did not include in "
                   "io.modelcontextprotocol/clientCapabilities, the server MUST return a "
                   "MissingRequiredClientCapabilityError (-32021) whose data.requiredCapabilities "
                   "lists the missing capabilities. On HTTP, the response status MUST be 400 Bad "
                   "Request.” (basic/index, _meta)",
       level=Level.MUST, spec=spec("basic", "meta"), eras=MODERN, tags=["meta", "mrtr"],
       fix="Before asking the client for input, check its declared clientCapabilities; if one is "
           "missing, answer -32021 with data.requiredCapabilities and HTTP 400.")
async def capabilities_not_inferred(ctx: Context) -> None:
    # Black-box: call each read-only tool declaring no capabilities; any input_required
    # result must ask only for what was declared (nothing), else the answer is -32021.
    from mcpcore.conformance.schema_values import example_arguments

    tools = await ctx.read_only_tools()
    tried = 0
    for tool in tools[: ctx.options.max_items]:
        arguments = example_arguments(tool.get("inputSchema"))
        if arguments is None or wire.header_params(tool.get("inputSchema")):
            continue
        tried += 1
        exchange = await ctx.request(
            "tools/call", {"name": tool["name"], "arguments": arguments},
            meta=wire.meta({}), label=f"tools/call {tool['name']} declaring no capabilities")
        result = exchange.result or {}
        asked = as_dict(result.get("inputRequests"))
        if result.get("resultType") == "input_required" and asked:
            methods = sorted({str(as_dict(r).get("method")) for r in asked.values()})
            ctx.fail(f"{tool['name']} asked for {methods} although the request declared no "
                     "client capabilities (expected -32021)")
        if exchange.code == -32021:
            data = as_dict((exchange.error or {}).get("data"))
            ctx.expect(isinstance(data.get("requiredCapabilities"), dict),
                       f"{tool['name']}: -32021 without a requiredCapabilities object")
            ctx.expect(not ctx.http or exchange.status == 400,
                       f"{tool['name']}: -32021 with HTTP {exchange.status}, not 400")
    if not tried:
        ctx.skip("no read-only tool callable with generated arguments")
