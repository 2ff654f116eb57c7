"""Resources (server/resources.mdx, 2026-07-28)."""

from __future__ import annotations

import base64
import binascii
import re

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_error, expect_result
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]
MISSING = "test://conformance/does-not-exist-7f3a"
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


async def _resources(ctx: AuditContext) -> list[dict[str, object]]:
    if not await ctx.has_capability("resources"):
        ctx.skip("the server declares no resources capability")
    return await ctx.items("resources/list")


@check("resources.read", title="listed resources can be read",
       requirement="“Binary data MUST be properly encoded” (server/resources, Security "
                   "Considerations); ReadResourceResult requires contents, each entry a uri with "
                   "text or a base64 blob (schema.ts TextResourceContents, BlobResourceContents).",
       level=Level.MUST, spec=spec("server/resources", "reading-resources"), eras=MODERN,
       tags=["resources"],
       fix="Return contents entries with uri and either text or a valid base64 blob for every "
           "listed resource.")
async def read(ctx: AuditContext) -> None:
    resources = await _resources(ctx)
    if not resources:
        ctx.skip("resources/list is empty")
    judged, asked, empty = 0, [], []
    for resource in resources[: ctx.options.max_items]:
        uri = resource.get("uri")
        ctx.expect(isinstance(uri, str) and SCHEME.match(uri), f"listed uri {uri!r} is not a URI")
        exchange = await ctx.request("resources/read", {"uri": uri}, label=f"read {uri}")
        result = expect_result(ctx, exchange, f"read {uri}")
        if result.get("resultType") == "input_required":
            asked.append(str(uri))
            continue
        contents = result.get("contents")
        ctx.expect(isinstance(contents, list), f"{uri}: no contents array")
        assert isinstance(contents, list)
        if not contents:
            # Allowed for a resource that exists but has no content (server/resources,
            # Error Handling, calls the empty array ambiguous, not wrong).
            empty.append(str(uri))
            continue
        judged += 1
        for entry in contents:
            entry = as_dict(entry)
            ctx.expect(isinstance(entry.get("uri"), str), f"{uri}: a content entry lacks uri")
            if "blob" in entry:
                try:
                    base64.b64decode(str(entry["blob"]), validate=True)
                except (binascii.Error, ValueError):
                    ctx.fail(f"{uri}: blob is not valid base64")
            else:
                ctx.expect(isinstance(entry.get("text"), str), f"{uri}: neither text nor blob")
    untested = "; ".join(part for part in (
        f"{len(asked)} asked for input (input_required): {', '.join(asked[:5])}"
        if asked else "",
        f"{len(empty)} read as an empty contents array: {', '.join(empty[:5])}"
        if empty else "") if part)
    if not judged:
        ctx.skip(f"no contents entry to judge: {untested}")
    if untested:
        ctx.note(f"{judged} resource(s) read and judged; not judged: {untested}")


@check("resources.not-found", title="reading a missing resource is -32602",
       requirement="“If the requested resource does not exist, servers MUST return a JSON-RPC "
                   "error with code -32602 (Invalid Params).” and “Servers MUST NOT return an "
                   "empty contents array for a non-existent resource.” (server/resources, Error "
                   "Handling)",
       level=Level.MUST, spec=spec("server/resources", "error-handling"), eras=MODERN,
       tags=["resources", "errors"],
       fix="Answer resources/read of an unknown URI with -32602 (data.uri set), never an empty "
           "contents array.")
async def not_found(ctx: AuditContext) -> None:
    await _resources(ctx)
    exchange = await ctx.request("resources/read", {"uri": MISSING}, label="read a missing URI")
    expect_alive(ctx, exchange)
    result = exchange.result
    if result is not None:
        ctx.fail(f"a missing resource answered with a result ({exchange.describe()})")
    expect_error(ctx, exchange, -32602)
    data = as_dict((exchange.error or {}).get("data"))
    if data.get("uri") != MISSING:
        ctx.note(f"error.data.uri is {data.get('uri')!r} (the spec recommends the URI)")


@check("resources.templates", title="resource templates are RFC 6570 templates",
       requirement="“All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 "
                   "specification” and the schema: ResourceTemplate requires name and a "
                   "uriTemplate, “A URI template (according to RFC 6570)” (schema.ts "
                   "ResourceTemplate).",
       level=Level.MUST, spec=spec("server/resources", "resource-templates"), eras=MODERN,
       tags=["resources"],
       fix="Publish templates with a name and a well-formed RFC 6570 uriTemplate.")
async def templates(ctx: AuditContext) -> None:
    await _resources(ctx)
    items = await ctx.items("resources/templates/list")
    if not items:
        ctx.skip("no resource templates")
    for item in items:
        template = item.get("uriTemplate")
        ctx.expect(isinstance(template, str) and template.count("{") == template.count("}"),
                   f"uriTemplate {template!r} is not a URI template")
        ctx.expect(isinstance(item.get("name"), str), f"template {template!r} has no name")
