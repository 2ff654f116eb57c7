"""Pagination of the four list methods (server/utilities/pagination.mdx)."""

from __future__ import annotations

import json

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_error
from mcpcore.conformance.context import MAX_PAGES, AuditContext
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]
PAGINATION = spec("server/utilities/pagination")
IDENTITY = {"tools/list": "name", "prompts/list": "name", "resources/list": "uri",
            "resources/templates/list": "uriTemplate"}


async def _declared(ctx: AuditContext) -> list[str]:
    methods = [m for m in wire.LISTS if await ctx.has_capability(wire.CAPABILITY_OF[m])]
    if not methods:
        ctx.skip("the server declares no listable feature")
    return methods


@check("pagination.complete", title="following nextCursor lists everything once",
       requirement="“Servers that declare the tools capability MUST respond to tools/list requests "
                   "with the set of tools currently available to the requesting client.” "
                   "(server/tools; resources and prompts alike) Following nextCursor must reach "
                   "the end of that set, each item once.",
       level=Level.MUST, spec=PAGINATION, eras=MODERN, tags=["pagination"],
       fix="Make cursors advance through a stable ordering and omit nextCursor on the last page; "
           "never repeat an item or a cursor.")
async def complete(ctx: AuditContext) -> None:
    for method in await _declared(ctx):
        pages = await ctx.pages(method)
        ctx.evidence.extend(p for p in pages if p not in ctx.evidence)
        for page in pages:
            ctx.expect(page.result is not None, f"{page.label}: {page.describe()}")
            items = (page.result or {}).get(wire.LISTS[method])
            ctx.expect(isinstance(items, list), f"{page.label}: no {wire.LISTS[method]} array")
        last = pages[-1].result or {}
        ctx.expect("nextCursor" not in last or len(pages) < MAX_PAGES,
                   f"{method}: still paginating after {MAX_PAGES} pages")
        if isinstance(last.get("nextCursor"), str):
            ctx.fail(f"{method}: page {len(pages)} repeats an earlier cursor (endless list)")
        key = IDENTITY[method]
        seen: set[str] = set()
        for item in await ctx.items(method):
            ident = json.dumps(item.get(key))
            ctx.expect(ident not in seen, f"{method}: {key} {ident} appears twice")
            seen.add(ident)


@check("pagination.invalid-cursor", title="an invalid cursor is -32602",
       requirement="“Invalid cursors SHOULD result in an error with code -32602 (Invalid params).” "
                   "(server/utilities/pagination, Error Handling)",
       level=Level.SHOULD, spec=spec("server/utilities/pagination", "error-handling"),
       eras=MODERN, tags=["pagination", "errors"],
       fix="Reject a cursor you did not issue with -32602 instead of serving the first page.")
async def invalid_cursor(ctx: AuditContext) -> None:
    for method in await _declared(ctx):
        exchange = await ctx.request(method, {"cursor": "conformance-not-a-cursor=="},
                                     label=f"{method} with a forged cursor")
        expect_alive(ctx, exchange)
        expect_error(ctx, exchange, -32602)
