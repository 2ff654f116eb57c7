"""``resultType`` and cache hints (basic/index.mdx, server/utilities/caching.mdx)."""

from __future__ import annotations

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_result
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]


async def _basic_probes(ctx: AuditContext) -> None:
    """Make sure the run has some results to judge, whatever else was selected."""
    await ctx.discover()
    for method in wire.LISTS:
        await ctx.items(method)


@check("results.result-type", title="every result carries resultType",
       requirement="“The result MUST include a resultType field to indicate the type of the "
                   "result.” (basic/index, Result Responses) Probes of another era are judged by "
                   "that era's rules.",
       level=Level.MUST, spec=spec("basic", "result-responses"), eras=MODERN,
       tags=["results"], final=True,
       fix="Put resultType on every result: 'complete', or 'input_required' where MRTR allows it.")
async def result_type(ctx: AuditContext) -> None:
    await _basic_probes(ctx)
    bad = []
    other = 0
    for exchange in ctx.session.exchanges:
        if exchange.era not in (None, ctx.era):
            other += 1    # a probe of another era: judged by that era's rules
            continue
        for message in exchange.messages:
            result = message.get("result")
            if "method" in message or not isinstance(result, dict):
                continue
            kind = result.get("resultType")
            if kind == "complete" or (kind == "input_required" and exchange.method in (
                    "tools/call", "resources/read", "prompts/get")):
                continue
            bad.append(exchange)
            ctx.evidence.append(exchange)
            break
    if other:
        ctx.note(f"{other} exchange(s) of probes speaking another era were not judged here")
    ctx.expect(not bad, f"{len(bad)} result(s) without a valid resultType, first: "
               f"{bad[0].label if bad else ''} → {bad[0].describe() if bad else ''}",
               bad[0] if bad else None)


@check("cache.hints", title="cacheable results carry ttlMs and cacheScope",
       requirement="“Servers MUST include caching hints on results with resultType: \"complete\" "
                   "returned by” the cacheable methods, and “Servers MUST provide a ttlMs value "
                   "that is >= 0.” (server/utilities/caching)",
       level=Level.MUST, spec=spec("server/utilities/caching", "cacheable-results"),
       eras=MODERN, tags=["results", "caching"],
       fix="Add ttlMs (an integer >= 0) and cacheScope ('public' or 'private') to complete results "
           "of server/discover, the list methods and resources/read.")
async def cache_hints(ctx: AuditContext) -> None:
    exchanges = [await ctx.request("server/discover", label="server/discover")]
    for method in wire.LISTS:
        pages = await ctx.pages(method) if await ctx.has_capability(
            wire.CAPABILITY_OF[method]) else []
        exchanges.extend(pages[:1])
    for resource in (await ctx.items("resources/list"))[:1]:
        exchanges.append(await ctx.request("resources/read", {"uri": resource.get("uri")}))
    for exchange in exchanges:
        if exchange not in ctx.evidence:
            ctx.evidence.append(exchange)
        result = expect_result(ctx, exchange)
        if result.get("resultType") == "input_required":
            continue
        ttl, scope = result.get("ttlMs"), result.get("cacheScope")
        ctx.expect(isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0,
                   f"{exchange.label}: ttlMs is {ttl!r}, not an integer >= 0")
        ctx.expect(scope in ("public", "private"),
                   f"{exchange.label}: cacheScope is {scope!r}")


@check("cache.scope-consistent", title="every page of a list has the same cacheScope",
       requirement="“Servers MUST apply the same cacheScope to all response pages for a given "
                   "list” (server/utilities/caching, Interaction with Pagination)",
       level=Level.MUST, spec=spec("server/utilities/caching", "interaction-with-pagination"),
       eras=MODERN, tags=["caching", "pagination"],
       fix="Decide cacheScope per list, not per page, and repeat it on every page.")
async def scope_consistent(ctx: AuditContext) -> None:
    multi = False
    for method in wire.LISTS:
        if not await ctx.has_capability(wire.CAPABILITY_OF[method]):
            continue
        pages = await ctx.pages(method)
        ctx.evidence.extend(p for p in pages if p not in ctx.evidence)
        scopes = {str((p.result or {}).get("cacheScope")) for p in pages}
        multi = multi or len(pages) > 1
        ctx.expect(len(scopes) <= 1, f"{method}: pages carry cacheScope {sorted(scopes)}")
    if not multi:
        ctx.skip("every list fits on one page: there are no two pages to compare")
