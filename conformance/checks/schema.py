"""Every message received, validated against the official schema of its era."""

from __future__ import annotations

from mcpcore.conformance import wire
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check


@check("wire.schema-valid", title="every message matches the official schema",
       requirement="“All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 "
                   "specification.” (basic/index) and the revision's schema (schema.ts is the "
                   "source of truth; e.g. request ids “MUST NOT be null”). Each exchange is judged "
                   "by the schema of its era.",
       level=Level.MUST, spec=spec("basic", "schema"), tags=["schema"], final=True,
       fix="Validate what you send against the official schema of the revision in use; in "
           "particular never write \"id\": null in an error response (omit the id when it "
           "could not be read).")
async def schema_valid(ctx: AuditContext) -> None:
    from mcpcore.conformance.checks.security import provoke

    await provoke(ctx)   # the malformed requests of security.error-leakage, answered
    if ctx.session.modern:
        await ctx.discover()
        for method in wire.LISTS:
            await ctx.items(method)
    else:
        from mcpcore.conformance.legacy import shared_session

        session = await shared_session(ctx)
        await session.request(ctx, "tools/list")
    exchanges = list(ctx.session.exchanges)
    bad = [e for e in exchanges if e.problems]
    seen = sum(len(e.messages) for e in exchanges)
    other = [e for e in exchanges if e.era not in (None, ctx.era)]
    for exchange in bad[:5]:
        ctx.evidence.append(exchange)
    if other:
        ctx.note(f"{sum(len(e.messages) for e in other)} message(s) answering "
                 f"{len(other)} probe(s) of another era were validated against that era's "
                 "schema")
    ctx.note(f"{seen} messages validated")
    if bad:
        first = bad[0]
        ctx.fail(f"{sum(len(e.problems) for e in bad)} schema problem(s) in {len(bad)} of "
                 f"{len(exchanges)} exchanges; first, in {first.label!r}: "
                 f"{first.problems[0]}", first)
