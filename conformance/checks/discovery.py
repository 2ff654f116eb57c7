"""``server/discover`` and the per-request ``_meta`` (2026-07-28)."""

from __future__ import annotations

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_error, expect_result
from mcpcore.conformance.context import AuditContext
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
async def discover_result(ctx: AuditContext) -> None:
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
async def discover_server_info(ctx: AuditContext) -> None:
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
async def client_info_optional(ctx: AuditContext) -> None:
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
async def meta_required(ctx: AuditContext) -> None:
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
async def capabilities_not_inferred(ctx: AuditContext) -> None:
    # Black-box: call each tool the suite may call (the mrtr_tools of the settings, the
    # read-only tools) declaring no capabilities. The rule is tested only where a tool
    # needed one: it answered -32021, or asked for input; a tool that needs none tells
    # nothing, so a run where no tool needed any is a skip, not a pass.
    from mcpcore.conformance.checks.common import callable_tools

    calls = await callable_tools(ctx)
    exercised = 0
    for name, arguments in calls:
        exchange = await ctx.request(
            "tools/call", {"name": name, "arguments": arguments},
            meta=wire.meta({}), label=f"tools/call {name} declaring no capabilities")
        result = exchange.result or {}
        asked = as_dict(result.get("inputRequests"))
        if result.get("resultType") == "input_required" and asked:
            methods = sorted({str(as_dict(r).get("method")) for r in asked.values()})
            ctx.fail(f"{name} asked for {methods} although the request declared no "
                     "client capabilities (expected -32021)")
        if exchange.code == -32021:
            exercised += 1
            data = as_dict((exchange.error or {}).get("data"))
            required = data.get("requiredCapabilities")
            ctx.expect(isinstance(required, dict) and required,
                       f"{name}: -32021 whose data.requiredCapabilities is {required!r}, not "
                       "an object naming the missing capabilities")
            ctx.expect(not ctx.http or exchange.status == 400,
                       f"{name}: -32021 with HTTP {exchange.status}, not 400")
    if not calls:
        ctx.skip("no read-only tool callable with generated arguments, and no mrtr_tools "
                 "in the audit settings")
    if not exercised:
        ctx.skip(f"none of the {len(calls)} tool(s) called needed a client capability, so "
                 "the rule was not exercised (name tools that ask for input in mrtr_tools "
                 "in the audit settings)")
    ctx.note(f"{exercised} of {len(calls)} tool(s) needed a capability")
