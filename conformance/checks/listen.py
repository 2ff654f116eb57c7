"""``subscriptions/listen`` (basic/patterns/subscriptions.mdx, 2026-07-28)."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check

MODERN = [wire.MODERN]
ACK = "notifications/subscriptions/acknowledged"
#: Filter fields and the server capability each needs to be honoured.
FIELDS = {"toolsListChanged": ("tools", "listChanged"),
          "promptsListChanged": ("prompts", "listChanged"),
          "resourcesListChanged": ("resources", "listChanged")}


async def _first(ctx: AuditContext, notifications: dict[str, Any],
                 request_id: Any) -> dict[str, Any] | None:
    async with ctx.listen(notifications, id=request_id) as stream:
        first = await stream.next(5.0)
        if first is None and stream.exchange.failure is None:
            stream.exchange.failure = "no message within 5 s"
        return first


def not_served(first: dict[str, Any] | None, stream: Any) -> bool:
    """The listen request was answered "no such method": JSON-RPC -32601 (HTTP 404 on
    Streamable HTTP), or a bare HTTP 404 without a JSON-RPC body."""
    if first is not None:
        return as_dict(first.get("error")).get("code") == -32601
    return stream.status == 404 and not stream.messages


@check("listen.acknowledged", title="subscriptions/listen is acknowledged first",
       requirement="“The server MUST send notifications/subscriptions/acknowledged as the first "
                   "message carrying the subscription's ID in _meta under "
                   "io.modelcontextprotocol/subscriptionId, and MUST NOT send any notification on "
                   "the subscription before it.” (basic/patterns/subscriptions, Acknowledgment) "
                   "A server that does not serve subscriptions/listen (-32601) skips this check; "
                   "listen.served judges whether its capabilities oblige it to.",
       level=Level.MUST, spec=spec("basic/patterns/subscriptions", "acknowledgment"),
       eras=MODERN, tags=["listen"],
       fix="Send the acknowledgement first on every subscriptions/listen stream, tagged with "
           "the listen request's id (same JSON type).")
async def acknowledged(ctx: AuditContext) -> None:
    for request_id in ("listen-conformance-1", 9001):
        first = await _first(ctx, {"toolsListChanged": True}, request_id)
        stream = ctx.evidence[-1]
        if not_served(first, stream):
            ctx.skip(f"the server does not serve subscriptions/listen ({stream.describe()}); "
                     "no sentence of 2026-07-28 makes listen mandatory, so the acknowledgement "
                     "rule has nothing to apply to (listen.served judges whether declared "
                     "listChanged/subscribe capabilities call for it)")
        if first is None:
            ctx.fail(f"listen id {request_id!r}: no message ({stream.describe()})")
        if "error" in first:
            ctx.fail(f"listen id {request_id!r} answered with error "
                     f"{as_dict(first['error']).get('code')}: "
                     f"{as_dict(first['error']).get('message')!r} instead of the "
                     "acknowledgement")
        ctx.expect(first.get("method") == ACK,
                   f"the first message is {first.get('method') or 'a response'}, not {ACK}")
        tag = as_dict(as_dict(first.get("params")).get("_meta")).get(wire.SUBSCRIPTION_ID)
        ctx.expect(tag == request_id and type(tag) is type(request_id),
                   f"subscriptionId is {tag!r}, listen id was {request_id!r}")


#: Capability flag → the listen filter field that asks for what it promises.
PROMISES = {("tools", "listChanged"): "toolsListChanged",
            ("prompts", "listChanged"): "promptsListChanged",
            ("resources", "listChanged"): "resourcesListChanged",
            ("resources", "subscribe"): "resourceSubscriptions"}


@check("listen.served", title="a server declaring listChanged or subscribe serves listen",
       requirement="“When the list of available tools changes, servers that declared the "
                   "listChanged capability SHOULD send a notification to clients that have "
                   "opened a subscriptions/listen stream with toolsListChanged: true” "
                   "(server/tools, List Changed Notification; server/prompts alike); “When "
                   "the list of available resources changes, servers that declared the "
                   "listChanged capability SHOULD send a notification” and subscribe is "
                   "“whether the server supports resource-specific update notifications for "
                   "resources requested through subscriptions/listen using the "
                   "resourceSubscriptions filter.” (server/resources). Listen is where those "
                   "notifications go, so answering it -32601 is a warning.",
       level=Level.SHOULD, spec=spec("server/tools", "list-changed-notification"),
       eras=MODERN, tags=["listen"],
       fix="Serve subscriptions/listen (acknowledge, then deliver the list_changed and "
           "resources/updated notifications asked for), or stop declaring listChanged and "
           "resources.subscribe.")
async def served(ctx: AuditContext) -> None:
    capabilities = await ctx.capabilities()
    declared = {f"{feature}.{flag}": field for (feature, flag), field in PROMISES.items()
                if as_dict(capabilities.get(feature)).get(flag) is True}
    if not declared:
        ctx.skip("the server declares no listChanged or resources.subscribe capability, so "
                 "nothing it promises is delivered on subscriptions/listen")
    asked: dict[str, Any] = {field: True for field in declared.values()
                             if field != "resourceSubscriptions"}
    if "resourceSubscriptions" in declared.values():
        uris = [r.get("uri") for r in await ctx.items("resources/list")
                if isinstance(r.get("uri"), str)]
        asked["resourceSubscriptions"] = uris[:1] or ["test://conformance/watched"]
    first = await _first(ctx, asked, "listen-conformance-served")
    stream = ctx.evidence[-1]
    if not_served(first, stream):
        ctx.fail(f"the server declares {', '.join(sorted(declared))} but answers "
                 f"subscriptions/listen as an unknown method ({stream.describe()}): a client "
                 "has nowhere to receive the notifications those capabilities promise",
                 stream)
    if first is None or first.get("method") != ACK:
        ctx.skip("subscriptions/listen is served but not acknowledged; listen.acknowledged "
                 f"judges that ({stream.describe()})")
    ctx.note(f"listen is served for {', '.join(sorted(declared))}")


@check("listen.honoured-subset", title="the acknowledgement lists only what is honoured",
       requirement="“The server MUST NOT send” event types the client did not ask for "
                   "(basic/patterns/subscriptions); the acknowledgement's notifications is the "
                   "subset of the requested filter the server will deliver, which cannot include "
                   "features whose capability it lacks.",
       level=Level.MUST, spec=spec("basic/patterns/subscriptions", "acknowledgment"),
       eras=MODERN, tags=["listen"],
       fix="Acknowledge only the requested notification types you will deliver, and none whose "
           "capability (listChanged, resources.subscribe) you do not declare.")
async def honoured_subset(ctx: AuditContext) -> None:
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


#: Acknowledged filter field → the notification it lets through.
DELIVERS = {"toolsListChanged": "notifications/tools/list_changed",
            "promptsListChanged": "notifications/prompts/list_changed",
            "resourcesListChanged": "notifications/resources/list_changed"}
#: How long the listeners watch (the trigger, if any, runs at the start).
WINDOW = 2.0


def _unrequested(message: dict[str, Any], asked: dict[str, Any], granted: dict[str, Any],
                 request_id: Any) -> str | None:
    """Why ``message`` should not be on a stream that ``asked`` for a filter and was
    acknowledged with ``granted`` (only what is in both may arrive)."""
    method = message.get("method")
    if not isinstance(method, str) or "id" in message:
        return None  # a response ends the stream; requests are another check's business
    params = as_dict(message.get("params"))
    tag = as_dict(params.get("_meta")).get(wire.SUBSCRIPTION_ID)
    allowed = {DELIVERS[k] for k, v in granted.items()
               if k in DELIVERS and v is True and asked.get(k) is True}
    uris = granted.get("resourceSubscriptions")
    if method == "notifications/resources/updated" and isinstance(uris, list) and \
            params.get("uri") in uris and params.get("uri") in (asked.get(
                "resourceSubscriptions") or []):
        allowed.add(method)
    if method not in allowed:
        return f"{method} arrived on a stream that asked only for {sorted(asked)}"
    if tag != request_id:
        return f"{method} carries subscriptionId {tag!r}, not {request_id!r}"
    return None


@check("listen.only-requested", title="a listener gets only the notifications it asked for",
       requirement="“The server MUST NOT send notification types the client has not "
                   "explicitly requested.” (basic/patterns/subscriptions.mdx, Opening a "
                   "Stream)",
       level=Level.MUST, spec=spec("basic/patterns/subscriptions", "opening-a-stream"),
       eras=MODERN, tags=["listen"],
       fix="Deliver on each subscriptions/listen stream only the notification types its "
           "filter asked for and the acknowledgement granted, each tagged with the "
           "stream's subscriptionId; log and progress notifications never go there.")
async def only_requested(ctx: AuditContext) -> None:
    # Two listeners with disjoint filters watch for a while (a listen_trigger from the
    # audit settings, if any, is called meanwhile). Nothing arriving tests nothing: skip.
    filters = {"listen-only-tools": {"toolsListChanged": True},
               "listen-only-prompts": {"promptsListChanged": True}}
    trigger = as_dict(ctx.options.audit.get("listen_trigger"))
    seen: dict[str, list[dict[str, Any]]] = {key: [] for key in filters}
    granted: dict[str, dict[str, Any]] = {}
    acknowledged = {key: asyncio.Event() for key in filters}

    async def watch(request_id: str, stream: Any) -> None:
        loop = asyncio.get_running_loop()
        try:
            first = await stream.next(5.0)
            if first is None or first.get("method") != ACK:
                return
            granted[request_id] = as_dict(as_dict(first.get("params")).get("notifications"))
        finally:
            acknowledged[request_id].set()
        deadline = loop.time() + WINDOW
        while (left := deadline - loop.time()) > 0:
            message = await stream.next(left)
            if message is None:
                return
            seen[request_id].append(message)

    async with ctx.listen(filters["listen-only-tools"], id="listen-only-tools") as tools, \
            ctx.listen(filters["listen-only-prompts"], id="listen-only-prompts") as prompts:
        watching = asyncio.gather(watch("listen-only-tools", tools),
                                  watch("listen-only-prompts", prompts))
        triggered = None
        if isinstance(trigger.get("name"), str):
            for event in acknowledged.values():   # both listeners are in place first
                await event.wait()
            triggered = await ctx.request("tools/call", {
                "name": trigger["name"], "arguments": as_dict(trigger.get("arguments"))},
                label=f"{trigger['name']} (listen_trigger)")
        await watching
    if not granted:
        ctx.skip("no listener was acknowledged (see listen.acknowledged)")
    for request_id, messages in seen.items():
        for message in messages:
            problem = _unrequested(message, filters[request_id], granted.get(request_id, {}),
                                   request_id)
            if problem:
                ctx.fail(f"listener {request_id!r}: {problem}")
    arrived = sum(len(m) for m in seen.values())
    if not arrived:
        how = (f"listen_trigger {trigger['name']} answered {triggered.describe()}"
               if triggered is not None and triggered.result is None else
               "name a tool that changes a list in listen_trigger in the audit settings")
        ctx.skip(f"no notification arrived within {WINDOW:g} s, so the filters were not "
                 f"exercised ({how})")
    ctx.note(f"{arrived} notification(s) arrived, each one asked for")
