"""The engine ``Server`` the federated catalog is served through: every route, every era.

The gateway is not a second request path. Each catalog snapshot (``catalog.py``) is
installed into an ordinary ``Server`` as registries of forwarding entries
(``add_raw``: the upstream's definition, renamed, and a handler that forwards the raw
arguments to the owner and relays its result), swapped in at once
(``Server.install``). So the engine routes ``tools/list``, ``tools/call``,
``resources/list``, ``resources/templates/list``, ``resources/read``,
``prompts/list``, ``prompts/get`` and ``completion/complete`` as for any server: its
validation, pagination, MRTR strategy, policy gate, observers, and both eras through
the transports (the 2025 legacy shim included). ``server/discover`` and
``initialize`` describe the gateway itself: it always offers tools, resources,
prompts and completions, whatever its upstreams offer at the moment.

What forwarding does: ``tools/call`` goes through the upstream's client
(``call_tool_round``: its ``Mcp-Param-*`` headers), and an upstream that asks for input
mid-call has its questions relayed to the caller, whatever era each speaks
(``bridge.py``); the result is checked against the
spec's ``CallToolResult`` and relayed (its ``resultType`` and cache hints dropped: the
engine shapes the result for the downstream's era). Progress and log notifications of
the upstream call are passed on to the downstream request when it asked for progress;
a downstream request cancelled (or hung up on) cancels the upstream one (the client's:
``notifications/cancelled`` to a 2025 upstream, the stream closed for a modern one).
``resources/read`` and ``prompts/get`` are relayed the same way, an upstream's
questions in them too, whatever its era (``bridge.py``); ``completion/complete`` has
no rounds.

Lists: the snapshot, paged by the engine (``page_size``) with sealed cursors
(``mcpcore.pagination.SealedCursors``: bound to the caller and the list's content), and
cache hints
``private``: the gateway's lists will depend on who asks once policy filters them, and
a shared cache must never replay them (caching.mdx). Reads are private too (the
engine's default).

The catalog is refreshed every ``config.refresh`` seconds (every upstream listed), and
when an upstream comes back (a stdio upstream restarted, an upstream down at start
reached) or announces a list change (that upstream alone listed again, the others'
last listings kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

import httpx
import msgspec

from mcpcore import types
from mcpcore.client.legacy import Backoff
from mcpcore.context import Context
from mcpcore.errors import ResourceNotFound, ServiceUnavailable
from mcpcore.gateway.bridge import Notify, Parking, Relay
from mcpcore.gateway.catalog import Entry, Snapshot, compile_catalog, served_name
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig, resolve_secrets
from mcpcore.gateway.credentials import Credential, caller_of, credential_for
from mcpcore.gateway.errors import (
    MAX_RELAYED_DATA,
    MAX_RELAYED_MESSAGE,
    UpstreamError,
    UpstreamRejected,
    bounded_data,
    cut,
)
from mcpcore.gateway.fanout import CatalogFanout
from mcpcore.gateway.handoff import Handoff
from mcpcore.gateway.pinning import LEGACY_LOCK_VERSION, LockError, Pins
from mcpcore.gateway.policy import gateway_policy, tool_category
from mcpcore.gateway.quarantine import Quarantine, QuarantinedTool
from mcpcore.gateway.search import ToolSearch
from mcpcore.gateway.tasks import GatewayTasks
from mcpcore.gateway.updates import ResourceUpdates
from mcpcore.gateway.upstreams import Listing, Upstream
from mcpcore.gateway.watch import audit_quarantine
from mcpcore.outcome import AnsweredWith
from mcpcore.pagination import CacheHint, SealedCursors
from mcpcore.policy import Policy, RateLimiter
from mcpcore.prompts import CompletionRegistry, PromptRegistry
from mcpcore.resources import ResourceRegistry
from mcpcore.server import Server
from mcpcore.stores.base import Store
from mcpcore.subscriptions import ListKind
from mcpcore.timing import SYSTEM_CLOCK, Clock
from mcpcore.tools import ToolRegistry
from mcpcore.transports.asgi import ASGIApp, Receive, Scope, Send
from mcpcore.transports.error_reply import send_error

log = logging.getLogger("mcpcore.gateway")

#: An upstream's list-change notification → the list it names.
_LIST_KINDS: Final[dict[str, ListKind]] = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources"}
#: Seconds between two refreshes an upstream's list changes cause (at most).
CHANGE_REFRESH_INTERVAL: Final = 1.0
#: Lists and reads: never shared between callers (module docstring).
GATEWAY_LIST_CACHE: Final = CacheHint(ttl_ms=0, scope="private")
#: What an upstream's result loses before it is relayed (the engine shapes its own).
_SHAPED_KEYS: Final = ("resultType", "ttlMs", "cacheScope")
_SHAPED_DEFAULTS: Final = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}

#: An upstream's "resource not found": -32602 (2026-07-28, and 2025-11-25 servers that
#: follow it), -32002 (the 2025 revisions' own code).
NOT_FOUND_CODES: Final = frozenset({-32602, -32002})

class Gateway:
    """The gateway's upstreams, catalog and ``server`` (the engine ``Server`` to serve
    with ``StreamableHTTP`` or ``serve_stdio``).

    >>> gateway = Gateway(config)                        # doctest: +SKIP
    >>> await gateway.start()                            # doctest: +SKIP
    >>> app = StreamableHTTP(gateway.server)             # doctest: +SKIP

    ``http_clients``: an ``httpx.AsyncClient`` per upstream name (tests put one in front
    of an in-process app). ``clock``: what the upstreams' timeouts, breakers and restart
    delays, and the refresh interval, run on. ``policy``: the policy every routed
    call goes through (default: ``config.policy``'s rule file, ``gateway_policy``); one
    given must gate every routed method (``gateway_policy(config, ruleset=...)``).
    """

    def __init__(self, config: GatewayConfig, *, clock: Clock = SYSTEM_CLOCK,
                 http_clients: Mapping[str, httpx.AsyncClient] | None = None,
                 page_size: int = 100, backoff: Backoff | None = None,
                 environ: Mapping[str, str] | None = None,
                 policy: Policy | None = None, store: Store | None = None) -> None:
        names = [u.name for u in config.upstreams]
        if len(set(names)) != len(names):
            raise ValueError("upstream names must be unique")
        environ = os.environ if environ is None else environ
        # Every secret and env_from variable it names, read now: one missing is a
        # GatewayConfigError (a ValueError) before anything starts.
        secrets = resolve_secrets(config, environ)
        #: The fleet's shared Store (``store``, else ``config.store_url``'s Redis; None:
        #: one instance, in memory). The gateway closes one it opened itself.
        self._own_store = store is None and config.store_url is not None
        if self._own_store:
            from mcpcore.stores.redis import RedisStore

            assert config.store_url is not None
            store = RedisStore.from_url(secrets.value(config.store_url))
        self.store = store
        # The rule file, read now: a bad one (RuleFileError, a ValueError) stops the start.
        # Its rate limits hold for the whole fleet when the Store is Redis (one counter
        # per principal, upstream and tool on the shared Redis), else per process.
        if policy is None:
            policy = gateway_policy(config, limiter=_fleet_limiter(store))
        if policy is not None and not policy.gates_every_route:
            raise ValueError("the gateway's policy must gate every routed method: build it "
                             "with mcpcore.gateway.policy.gateway_policy")
        #: Every routed call's policy (docs/gateway.md, "Policy"); None: none configured.
        self.policy = policy
        self.config = config
        self.clock = clock
        self.server = Server(config.name, config.version, page_size=page_size,
                             list_cache=GATEWAY_LIST_CACHE,
                             instructions=f"A gateway over {len(names)} MCP servers.",
                             policy=policy, store=store)
        self.server.offered = frozenset({"tools", "resources", "prompts", "completions",
                                          "tasks"})
        # Its lists are other servers' catalogs, changing under the caller: cursors are
        # sealed with the server's key ring (MCPCORE_STATE_KEYS; one for a fleet).
        self.server.cursors = SealedCursors(self.server.mrtr.get_sealer)
        clients = http_clients or {}
        #: Each upstream's credential (``credentials.py``: never the caller's token).
        #: Token lifetimes are measured on ``clock`` too; with a shared Store the
        #: callers' tokens are shared by the fleet, sealed with the server's key ring.
        self.credentials: dict[str, Credential | None] = {
            u.name: credential_for(u, secrets, clock=clock.monotonic, store=store,
                                   sealer=self.server.mrtr.get_sealer)
            for u in config.upstreams}
        self.upstreams: dict[str, Upstream] = {
            u.name: Upstream(u, clock=clock, http_client=clients.get(u.name),
                             on_restart=self._came_back,
                             on_list_changed=self._list_changed, backoff=backoff,
                             child_env=secrets.child_env.get(u.name), environ=environ,
                             credential=self.credentials[u.name])
            for u in config.upstreams}
        #: Pinned tool definitions (``config.pins``; docs/gateway-pinning.md): each
        #: refresh screens every upstream's tools; a changed or new one is held.
        self.quarantine = _quarantine(config)
        if self.quarantine is not None and policy is not None:
            # Each tool held back or released: one audit event (docs/gateway.md,
            # "Observability").
            audit_quarantine(self.quarantine, policy)
        #: Upstream calls waiting for their callers' answers (2025 upstreams), and the
        #: relay of every upstream's questions to the caller (docs/gateway.md,
        #: "Bridging the eras").
        self.parking = Parking(clock=clock)
        #: With a shared Store, a retry landing on another instance reaches the call
        #: parked here, and this instance the calls parked elsewhere (handoff.py).
        self.handoff = None if store is None else Handoff(
            store, self.parking, self.server.mrtr.get_sealer, clock=clock)
        self.relay = Relay(self.parking, self.handoff)
        #: The upstreams' tasks under the gateway's own ids (tasks.py; docs/gateway.md,
        #: "Calls"): the server's tasks extension.
        self.tasks = GatewayTasks(self.server.subscriptions, self.server.tools,
                                  self.upstreams, lambda: self.server.mrtr.get_sealer(),
                                  policy)
        self.server.tasks = self.tasks
        #: ``search_tools`` over the catalog (``config.search_tools``; search.py).
        self.search = ToolSearch(self.server) if config.search_tools else None
        #: Upstream resource subscriptions while downstream listeners want them
        #: (updates.py; docs/gateway.md, "Calls").
        self.updates = ResourceUpdates(self.upstreams, lambda: self.server.resources,
                                       self.server.notify_resource_updated, clock=clock)
        self.server.subscriptions.interest = self.updates
        #: The catalog served (None until the first refresh).
        self.snapshot: Snapshot | None = None
        self._refreshing = asyncio.Lock()
        #: Each upstream's last listing, served while it cannot be listed (``_listing``).
        self._listed: dict[str, Listing] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self._changes: asyncio.Task[None] | None = None
        #: Lists upstreams (or other instances) said changed since the last refresh
        #: they caused; ``_pending``: such a refresh is due (a lock file change names
        #: no list); ``_local``: something here, not another instance, asked for it.
        self._changed_kinds: set[ListKind] = set()
        self._pending = False
        self._local = False
        #: The upstreams that refresh lists again (None: every one): an upstream's
        #: list change re-lists that upstream alone, the others keep their listing.
        self._relist: set[str] | None = set()
        #: Each upstream's last screen through the quarantine: its listing and the
        #: pins it was screened against, what was admitted and held (reused while both
        #: are the same objects: a re-listing of one upstream screens only it).
        self._screens: dict[str, tuple[Listing, Pins, Listing, list[QuarantinedTool]]] = {}
        #: Each list's digest as served (fanout.py's words carry them).
        self._digests: dict[str, str] = {}
        #: The word between a fleet's instances: a change one sees, all refresh for
        #: (fanout.py); only with a shared Store.
        self.fanout = (CatalogFanout(store, config.name, self._peer_changed, clock=clock)
                       if store is not None else None)
        #: The lists the last catalog swap announced (their contents changed).
        self._announced: list[ListKind] = []
        self._closed = False

    # -- lifetime -------------------------------------------------------------------------
    async def start(self) -> None:
        """Open every upstream (one attempt each, at once; a down one is retried in the
        background), compile the first catalog, and refresh it every
        ``config.refresh`` seconds."""
        await asyncio.gather(*(u.start() for u in self.upstreams.values()))
        await self.refresh()
        if self.fanout is not None:
            await self.fanout.start()
        if self._ticker is None:
            self._ticker = asyncio.ensure_future(self._tick())

    async def aclose(self) -> None:
        """Stop refreshing and close every upstream (stdio processes stopped)."""
        self._closed = True
        if self.fanout is not None:
            await self.fanout.aclose()
        for task in [*self._tasks, *([self._ticker] if self._ticker else [])]:
            task.cancel()
        for task in [*self._tasks, *([self._ticker] if self._ticker else [])]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.handoff is not None:
            await self.handoff.aclose()
        await self.parking.aclose()
        await self.updates.aclose()
        await asyncio.gather(*(u.aclose() for u in self.upstreams.values()),
                             return_exceptions=True)
        await asyncio.gather(*(c.aclose() for c in self.credentials.values()
                               if c is not None), return_exceptions=True)
        await self.server.aclose()
        if self._own_store and self.store is not None:
            await self.store.close()

    @property
    def ready(self) -> bool:
        """Whether a catalog has been built (once is enough: then it is served)."""
        return self.snapshot is not None

    @property
    def holding(self) -> int:
        """Calls a retry through another instance of the fleet may still reach here:
        the calls parked on this instance and the rounds it answers for forwarders (0
        without a Store: then no other instance can reach them)."""
        if self.handoff is None:
            return 0
        return len(self.parking.parks) + self.handoff.handling

    def health(self) -> dict[str, Any]:
        """Per-upstream health (``/readyz``'s body), with the number of its tools held
        in quarantine when tool definitions are pinned."""
        health = {name: u.health().to_json() for name, u in self.upstreams.items()}
        if self.quarantine is not None:
            for name, entry in health.items():
                entry["quarantinedTools"] = self.quarantine.counts.held.get(name, 0)
        return health

    async def _tick(self) -> None:
        while not self._closed:
            await self.clock.sleep(self.config.refresh)
            try:
                await self.refresh()
            except Exception:
                log.exception("refreshing the catalog failed; the last one is served")
            else:
                await self._tell_fleet(None)

    def _list_changed(self, upstream: Upstream, method: str) -> None:
        """An upstream said one of its lists changed: refresh the catalog soon, then
        pass the word on to the gateway's own listeners (the engine tells them of each
        list whose contents changed; a list the upstream announced whose served contents
        look the same is announced all the same: what changed may be what the gateway
        cannot see, and a listener re-reads at worst). A flood of changes costs one
        refresh per ``CHANGE_REFRESH_INTERVAL`` at most, and re-lists only the upstreams
        that announced (the others keep their last listing): a noisy upstream costs its
        own listing, not every upstream's."""
        if self._closed:
            return
        kind = _LIST_KINDS.get(method)
        if kind is not None:
            self._changed_kinds.add(kind)
        self._local = True
        self._refresh_soon({upstream.name})

    def _peer_changed(self, kinds: frozenset[str], digests: dict[str, str],
                      upstreams: frozenset[str] = frozenset()) -> None:
        """Another instance saw ``kinds`` change (fanout.py), at ``upstreams`` (empty:
        it did not say): refresh as for an upstream's word, re-listing those upstreams
        (every one if it did not say, or names one this instance does not have; none
        for a lock file change alone: the listings are screened again), without
        announcing it again, unless this instance serves those lists as they are there
        already."""
        if self._closed:
            return
        stale = {k for k in kinds
                 if k == "pins" or digests.get(k) != self._digests.get(k)}
        if not stale:
            return
        self._changed_kinds.update(k for k in _LIST_KINDS.values() if k in stale)
        if stale == {"pins"}:
            self._refresh_soon(set())
        else:
            known = bool(upstreams) and upstreams <= set(self.upstreams)
            self._refresh_soon(set(upstreams) if known else None)

    def _refresh_soon(self, upstreams: set[str] | None) -> None:
        """A refresh soon, re-listing ``upstreams`` (None: every one) with those of
        the other changes since the last one."""
        if upstreams is None or self._relist is None:
            self._relist = None
        else:
            self._relist |= upstreams
        self._pending = True
        if self._changes is None or self._changes.done():
            self._changes = asyncio.ensure_future(self._refresh_changes())
            self._tasks.add(self._changes)
            self._changes.add_done_callback(self._tasks.discard)

    async def _refresh_changes(self) -> None:
        while self._pending and not self._closed:
            kinds, self._changed_kinds = self._changed_kinds, set()
            relist, self._relist = self._relist, set()
            local, self._local, self._pending = self._local, False, False
            try:
                await self.refresh(relist)
            except Exception:
                log.exception("refreshing the catalog failed; the last one is served")
            else:
                if local:
                    await self._tell_fleet(relist)
            for kind in sorted(kinds - set(self._announced)):
                await self.server.notify_list_changed(kind)
            await self.clock.sleep(CHANGE_REFRESH_INTERVAL)

    def _came_back(self, upstream: Upstream) -> None:
        if self._closed:
            return
        task = asyncio.ensure_future(self._refresh_and_tell(upstream.name))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _refresh_and_tell(self, upstream: str) -> None:
        await self.refresh([upstream])  # the one back: the others are as they were
        await self._tell_fleet({upstream})

    async def _tell_fleet(self, upstreams: set[str] | None) -> None:
        """After a refresh this instance made of its own accord, re-listing
        ``upstreams`` (None: every one): the lists whose served contents changed, told
        to the fleet's other instances (fanout.py)."""
        if self.fanout is not None and self._announced:
            await self.fanout.announce(self._announced, self._digests,
                                       upstreams=None if upstreams is None
                                       else sorted(upstreams))

    # -- the catalog ----------------------------------------------------------------------
    async def refresh(self, upstreams: Iterable[str] | None = None) -> Snapshot:
        """List every upstream (at once), or only ``upstreams`` (the others keep their
        last listing; every one before the first catalog), compile a new catalog and
        serve it. An upstream that cannot be listed keeps its last listing, or drops
        out if it has none (log line: ``_listing``); the others are served."""
        async with self._refreshing:
            names = list(self.upstreams)
            chosen = set(names if upstreams is None or self.snapshot is None
                         else upstreams)
            relisted = [n for n in names if n in chosen]
            fresh = dict(zip(relisted, await asyncio.gather(
                *(self._listing(self.upstreams[n]) for n in relisted)), strict=True))
            screened = {n: fresh[n] if n in fresh else self._listed.get(n) for n in names}
            held: list[QuarantinedTool] = []
            if self.quarantine is not None:
                self.quarantine.reload()  # a lock `approve` rewrote since
                for name, listing in screened.items():
                    if listing is not None:
                        screened[name], kept_back = self._screen(name, listing)
                        held.extend(kept_back)
            # A held tool keeps its name: a later upstream's of that name must not
            # take the calls meant for it (catalog.py).
            held_names: dict[str, list[str]] = {}
            for tool in held:
                held_names.setdefault(tool.upstream, []).append(tool.name)
            if self.quarantine is not None:
                # Not listed yet (down since the start): its pinned tools' names are its
                # own all the same (catalog.py).
                for name, listing in screened.items():
                    if listing is None:
                        held_names.setdefault(name, []).extend(
                            self.quarantine.pins.tools(name))
            # A name served keeps its owner while the owner lists it (catalog.py).
            snapshot = compile_catalog(self.config, screened, held_names, self.snapshot)
            self._install(snapshot, held)
            self.snapshot = snapshot
            if self.fanout is not None:
                self._digests = _digests(snapshot)
            return snapshot

    def _screen(self, name: str, listing: Listing) -> tuple[Listing, list[QuarantinedTool]]:
        """``listing`` through the quarantine: what is admitted, and the tools held."""
        assert self.quarantine is not None
        pins = self.quarantine.pins
        last = self._screens.get(name)
        if last is not None and last[0] is listing and last[1] is pins:
            return last[2], last[3]
        admitted, held = self.quarantine.screen(name, listing.tools)
        served = dataclasses.replace(listing, tools=admitted)
        self._screens[name] = (listing, pins, served, held)
        return served, held

    async def _listing(self, upstream: Upstream) -> Listing | None:
        """What ``upstream`` lists now; if it cannot be listed, what it listed last
        (its calls then get the typed error of the moment, not "unknown tool", and a
        flapping upstream does not churn the lists), or None: it drops out."""
        try:
            listing = await upstream.listing()
        except Exception as exc:  # typed errors, or a bug
            kept = self._listed.get(upstream.name)
            log.warning("upstream %s %s: %s", upstream.name,
                        "drops out of the catalog" if kept is None else
                        "cannot be listed; its last listing is kept", exc,
                        extra={"upstream": upstream.name})
            return kept
        self._listed[upstream.name] = listing
        return listing

    def _install(self, snapshot: Snapshot, held: list[QuarantinedTool]) -> None:
        tools, resources = ToolRegistry(), ResourceRegistry()
        prompts, completions = PromptRegistry(), CompletionRegistry()
        configs = {u.name: u for u in self.config.upstreams}
        # The gateway's own search tool first: it keeps its name (search.py).
        catalog_tools = (snapshot.tools if self.search is None
                         else self.search.install(tools, snapshot.tools))
        for entry in catalog_tools:
            _add(self._tool_adder(tools, configs[entry.upstream], entry), entry,
                 self._tool(entry))
        for tool in held:
            # Left out of the list, but a call by its name gets why (not "unknown").
            name = served_name(self.config, configs[tool.upstream], tool.name)
            if tools.find(name) is None:
                _add(functools.partial(tools.add_raw, listed=False, upstream=tool.upstream),
                     Entry(name, tool.upstream, tool.name,
                           {"name": name, "inputSchema": {"type": "object"}}),
                     _refusal(tool, name))
        for entry in (*snapshot.resources, *snapshot.templates):
            _add(functools.partial(resources.add_raw, upstream=entry.upstream), entry,
                 self._reader(entry))
        # Completions are asked as the caller (the completer gets the request's
        # context): an upstream acting as the caller gets the caller's own credential.
        completing = set(snapshot.completions)
        for entry in snapshot.prompts:
            if _add(functools.partial(prompts.add_raw, upstream=entry.upstream), entry,
                    self._prompt(entry)) and \
                    entry.upstream in completing:
                completions.add("ref/prompt", entry.name,
                                self._completer(entry, {"type": "ref/prompt",
                                                        "name": entry.original}))
        for entry in snapshot.templates:
            if entry.upstream in completing:
                completions.add("ref/resource", entry.name,
                                self._completer(entry, {"type": "ref/resource",
                                                        "uri": entry.original}))
        if self.search is not None:
            self.search.index(tools)
        self._announced = self.server.install(tools=tools, resources=resources,
                                              prompts=prompts, completions=completions)

    def _tool_adder(self, tools: ToolRegistry, upstream: UpstreamConfig, entry: Entry
                    ) -> Callable[..., Any]:
        """``tools.add_raw`` with what the policy knows of ``entry``: its upstream, its
        category and external flag (``tool_category``), and for an alias the served
        name it stands for (rules written for that name hold for the alias too)."""
        category, external = tool_category(upstream, entry.original,
                                           entry.definition.get("annotations"))
        served = served_name(self.config, upstream, entry.original)
        return functools.partial(tools.add_raw, category=category, external=external,
                                 upstream=entry.upstream,
                                 policy_name=served if served != entry.name else None)

    # -- forwarding -------------------------------------------------------------------------
    def _tool(self, entry: Entry) -> Callable[[dict[str, Any], Context],
                                              Awaitable[dict[str, Any]]]:
        upstream, original = self.upstreams[entry.upstream], entry.original

        async def forward(arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
            relay = _relay(ctx)

            # Its questions mid-call, if it asks any, relayed to the caller (bridge.py).
            result = await self.relay.call_tool(upstream, original, arguments, ctx, relay)
            if result.get("resultType") == "task":  # made a task: the caller's handle
                raise AnsweredWith(self.tasks.created(upstream.name, entry.name, result, ctx))
            return _relayed(upstream, result, types.CallToolResult, "tools/call")

        return forward

    def _reader(self, entry: Entry) -> Callable[[str, Context], Awaitable[dict[str, Any]]]:
        upstream = self.upstreams[entry.upstream]

        async def read(uri: str, ctx: Context) -> dict[str, Any]:
            try:
                # Its questions, if it asks any, relayed to the caller (bridge.py).
                result = await self.relay.request(upstream, "resources/read", uri,
                                                  {"uri": uri}, ctx, _relay(ctx))
            except UpstreamRejected as exc:
                if exc.code in NOT_FOUND_CODES:
                    # Not found in either era's code: the engine's own error, which the
                    # transports shape for the caller's era.
                    raise ResourceNotFound(uri) from None
                raise
            return _relayed(upstream, result, types.ReadResourceResult, "resources/read")

        return read

    def _prompt(self, entry: Entry) -> Callable[[dict[str, str], Context],
                                                Awaitable[dict[str, Any]]]:
        upstream, original = self.upstreams[entry.upstream], entry.original

        async def get(arguments: dict[str, str], ctx: Context) -> dict[str, Any]:
            params = {"name": original, "arguments": arguments}
            # Its questions, if it asks any, relayed to the caller (bridge.py).
            result = await self.relay.request(upstream, "prompts/get", original, params,
                                              ctx, _relay(ctx))
            return _relayed(upstream, result, types.GetPromptResult, "prompts/get")

        return get

    def _completer(self, entry: Entry, ref: dict[str, Any]
                   ) -> Callable[[str, str, dict[str, str], Context], Awaitable[list[str]]]:
        upstream = self.upstreams[entry.upstream]

        async def complete(argument: str, value: str, context: dict[str, str],
                           ctx: Context) -> list[str]:
            params: dict[str, Any] = {"ref": ref,
                                      "argument": {"name": argument, "value": value}}
            if context:
                params["context"] = {"arguments": context}
            result = await upstream.call(
                "completion/complete",
                lambda client: client.request("completion/complete", params),
                caller=caller_of(ctx))
            checked = _relayed(upstream, result, types.CompleteResult, "completion/complete")
            return [str(v) for v in checked["completion"]["values"]]

        return complete


def _digests(snapshot: Snapshot) -> dict[str, str]:
    """What each list serves, as a digest (two instances serving the same agree)."""
    def digest(entries: Any) -> str:
        encoded = msgspec.json.encode([(e.name, e.upstream, e.definition) for e in entries])
        return hashlib.sha256(encoded).hexdigest()

    return {"tools": digest(snapshot.tools), "prompts": digest(snapshot.prompts),
            "resources": digest((*snapshot.resources, *snapshot.templates))}


def _fleet_limiter(store: Store | None) -> RateLimiter | None:
    """The policy's rate limiter on the fleet's Redis (None: the per-process default).
    A ``RedisStore`` exists only once its module is imported: otherwise redis (an
    extra) is not imported for nothing."""
    redis_stores = sys.modules.get("mcpcore.stores.redis")
    if redis_stores is None or not isinstance(store, redis_stores.RedisStore):
        return None
    from mcpcore.stores.redis_ratelimit import RedisRateLimiter

    return RedisRateLimiter(store)


def _quarantine(config: GatewayConfig) -> Quarantine | None:
    """The quarantine of ``config.pins``; without a lock file yet every tool is new
    (held unless ``admit_new_tools``), with a warning saying what to run."""
    if config.pins is None:
        return None
    try:
        pins = Pins.load(config.pins)
    except LockError as exc:
        if os.path.exists(config.pins):
            raise  # a damaged lock stops the gateway: it never serves unpinned tools
        log.warning("%s; every tool is new until `mcpcore gateway pin` writes it", exc)
        pins = Pins()
    if pins.legacy:
        log.warning("%s is a version %d lock file: tools' _meta is not pinned (a changed "
                    "_meta is not quarantined); upgrade it with `mcpcore gateway pin CONFIG "
                    "--upgrade`", config.pins, LEGACY_LOCK_VERSION)
    return Quarantine(pins, lock_path=config.pins, admit_new_tools=config.admit_new_tools)


def _refusal(tool: QuarantinedTool, name: str
             ) -> Callable[[dict[str, Any], Context], Awaitable[dict[str, Any]]]:
    async def refuse(arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
        raise tool.error(name)

    return refuse


def _add(add: Callable[..., Any], entry: Entry, handler: Any) -> bool:
    """Add one entry to a registry; one the registry refuses is skipped (logged)."""
    try:
        add(entry.definition, handler)
    except (ValueError, TypeError) as exc:  # UsageError is a TypeError
        log.warning("upstream %s: %.200r is skipped: %s", entry.upstream, entry.name, exc,
                    extra={"upstream": entry.upstream})
        return False
    return True


def _relay(ctx: Context) -> Notify | None:
    """Pass an upstream call's progress and log notifications on to the downstream
    request (``None``: it asked for neither), bounded like relayed errors: a message
    cut to ``MAX_RELAYED_MESSAGE`` characters, log data beyond ``MAX_RELAYED_DATA``
    bytes left out."""
    if ctx.meta.progress_token is None and ctx.meta.log_level is None:
        return None

    async def notify(note: types.Notification) -> None:
        params = note.params if isinstance(note.params, dict) else {}
        with contextlib.suppress(ValueError, TypeError):  # out of order, or malformed
            if note.method == "notifications/progress":
                progress = params.get("progress")
                total = params.get("total")
                message = params.get("message")
                if isinstance(progress, int | float) and not isinstance(progress, bool):
                    await ctx.report_progress(
                        progress, total if isinstance(total, int | float) else None,
                        cut(message, MAX_RELAYED_MESSAGE) if isinstance(message, str)
                        else None)
            elif note.method == "notifications/message":
                level = params.get("level")
                logger = params.get("logger")
                data = bounded_data(params.get("data"))
                if isinstance(level, str):
                    await ctx.log(level, data if data is not None else
                                  f"(a log message over {MAX_RELAYED_DATA} bytes, left out)",
                                  cut(logger, 200) if isinstance(logger, str) else None)

    return notify


def _relayed(upstream: Upstream, result: dict[str, Any], spec_type: type[Any],
             method: str) -> dict[str, Any]:
    """An upstream's result, checked against the spec's type, without the keys the
    engine shapes itself; ``UpstreamError`` if it is not one."""
    kind = result.get("resultType", "complete")
    if kind != "complete":
        raise UpstreamError(upstream.name, "unsupported",
                            f"{method}: the upstream answered {str(kind)[:40]!r}, which "
                            "the gateway does not relay")
    relayed = {k: v for k, v in result.items() if k not in _SHAPED_KEYS}
    try:
        # The engine adds what it shapes; a 2025 upstream's result has none of it.
        msgspec.convert({**relayed, **_SHAPED_DEFAULTS}, spec_type)
    except msgspec.ValidationError as exc:
        raise UpstreamError(upstream.name, "invalid_response",
                            f"{method}: not a valid {spec_type.__name__}: {exc}") from None
    return relayed


class GatewayLifespan:
    """ASGI: ``app`` (the gateway's ``StreamableHTTP``) whose lifespan starts the
    gateway (in the background: ``/readyz`` says when its catalog is built) and closes
    it on shutdown. ``.app`` is the wrapped app (``serving.find_drain`` follows it).

    A request that comes before the first catalog is built (a balancer that sends as
    soon as the port accepts) waits for it, at most ``STARTING_WAIT`` seconds, else is
    answered 503 with ``Retry-After`` (nothing ran): never "unknown tool" for a tool
    the catalog is about to hold. ``settle()``: how ``mcpcore.serving.run`` waits, in
    a graceful stop, for the calls parked here (``Gateway.holding``)."""

    #: Seconds a request waits for the first catalog before its 503.
    STARTING_WAIT: Final = 10.0

    def __init__(self, app: ASGIApp, gateway: Gateway) -> None:
        self.app = app
        self.gateway = gateway
        self._starting: asyncio.Task[None] | None = None

    @property
    def checks_call_scopes(self) -> bool:
        """The wrapped app's: whether it checks each call's scopes itself (then the
        bearer middleware in front does not buffer and parse the body first)."""
        return getattr(self.app, "checks_call_scopes", False) is True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            if self._starting is not None and not self.gateway.ready:
                await self._until_started(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._starting = asyncio.ensure_future(self.gateway.start())
                self._starting.add_done_callback(_started)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._starting is not None and not self._starting.done():
                    self._starting.cancel()
                await self.gateway.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _until_started(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self._starting is not None
        await asyncio.wait((self._starting,), timeout=self.STARTING_WAIT)
        if self.gateway.ready:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            await send_error(send, ServiceUnavailable(
                "the gateway is starting: its catalog is not built yet"))

    async def settle(self) -> None:
        """Return once no call is parked here and no forwarded round is being answered
        (``Gateway.holding``); the caller bounds the wait (``--graceful-timeout``).
        Until then the instance's inbox and liveness stay, so a retry of a call parked
        here, sent to any other instance, still reaches it through the Store."""
        holding = self.gateway.holding
        if holding:
            log.info("waiting for %d calls parked on this instance before stopping",
                     holding)
        while self.gateway.holding:
            await asyncio.sleep(_SETTLE_POLL)


#: Seconds between two looks at the calls a stopping instance holds.
_SETTLE_POLL: Final = 0.1


def _started(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the gateway failed to start: %s", task.exception())


__all__ = ["GATEWAY_LIST_CACHE", "Gateway", "GatewayLifespan"]
