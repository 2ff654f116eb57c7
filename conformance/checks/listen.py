"""``subscriptions/listen`` (basic/patterns/subscriptions.mdx, 2026-07-28)."""

from __future__ import annotations

from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.context import Context
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]
ACK = "notifications/subscriptions/acknowledged"
#: Filter fields and the server capability each needs to be honoured.
FIELDS = {"toolsListChanged": ("tools", "listChanged"),
          "promptsListChanged": ("prompts", "listChanged"),
          "resourcesListChanged": ("resources", "listChanged")}


async def _first(ctx: Context, notifications: dict[str, Any],
                 request_id: Any) -> dict[str, Any] | None:
    async with ctx.listen(notifications, id=request_id) as stream:
        first = await stream.next(5.0)
        if first is None and stream.exchange.failure is None:
            stream.exchange.failure = "no message within 5 s"
        return first


@check("listen.acknowledged", title="subscriptions/listen is acknowledged first",
       requirement="“The server MUST send notifications/subscriptions/acknowledged as the first "
                   "message carrying the subscription's ID in _meta under "
                   "io.modelcontextprotocol/subscriptionId, and MUST NOT send any notification on "
                   "the subscription before it.” (basic/patterns/subscriptions, Acknowledgment)",
       level=Level.MUST, spec=spec("basic/patterns/subscriptions", "acknowledgment"),
       eras=MODERN, tags=["listen"],
       fix="Implement subscriptions/listen and send the acknowledgement first, tagged with the "
           "listen request's id (same JSON type).")
async def acknowledged(ctx: Context) -> None:
    for request_id in ("listen-conformance-1", 9001):
        first = await _first(ctx, {"toolsListChanged": True}, request_id)
        stream = ctx.evidence[-1]
        if first is None:
            ctx.fail(f"listen id {request_id!r}: no message ({stream.describe()})")
        if "error" in first:
            ctx.fail(f"listen id {request_id!r} answered with error "
                     f"{as_dict(first['error']).get('code')}: "
                     f"{as_dict(first['error']).get('message')!r} (subscriptions/listen is "
                     "mandatory in 2026-07-28)")
        ctx.expect(first.get("method") == ACK,
                   f"the first message is {first.get('method') or 'a response'}, not {ACK}")
        tag = as_dict(as_dict(first.get("params")).get("_meta")).get(wire.SUBSCRIPTION_ID)
        ctx.expect(tag == request_id and type(tag) is type(request_id),
                   f"subscriptionId is {tag!r}, listen id was {request_id!r}")


@check("listen.honoured-subset", title="the acknowledgement lists only what is honoured",
       requirement="“The server MUST NOT send” event types the client did not ask for "
                   "(basic/patterns/subscriptions); the acknowledgement's notifications is the "
                   "subset of the requested filter the server will deliver, which cannot include "
                   "features whose capability it lacks.",
       level=Level.MUST, spec=spec("basic/patterns/subscriptions", "acknowledgment"),
       eras=MODERN, tags=["listen"],
       fix="Acknowledge only the requested notification types you will deliver, and none whose "
           "capability (listChanged, resources.subscribe) you do not declare.")
async def honoured_subset(ctx: Context) -> None:
    capabilities = await ctx.capabilities()
    asked: dict[str, Any] = {name: True for name in FIELDS}
    asked["resourceSubscriptions"] = ["test://conformance/watched"]
    first = await _first(ctx, asked, "listen-conformance-subset")
    if first is None or first.get("method") != ACK:
        ctx.skip("no acknowledgement to inspect (see listen.acknowledged)")
    granted = as_dict(as_dict(first.get("params")).get("notifications"))
    ctx.expect("notifications" in as_dict(first.get("params")),
               "the acknowledgement has no notifications object")
    for name, value in granted.items():
        ctx.expect(name in asked, f"the acknowledgement grants {name!r}, never asked for")
        if name in FIELDS and value:
            feature, flag = FIELDS[name]
            ctx.expect(as_dict(capabilities.get(feature)).get(flag) is True,
                       f"{name} acknowledged although {feature}.{flag} is not declared")
    if granted.get("resourceSubscriptions"):
        ctx.expect(as_dict(capabilities.get("resources")).get("subscribe") is True,
                   "resourceSubscriptions acknowledged without resources.subscribe")
