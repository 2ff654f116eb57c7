"""``Client``: one API for MCP servers of every era, over Streamable HTTP or stdio.

What lives here: choosing the era when the client opens (``mode``), the public methods and
their typed results (``mcpcore.types``, the same objects whichever era carried them), the
MRTR loop of 2026-07-28 (patterns/mrtr), the caches a server's ``list_changed``
notifications invalidate, the concurrency bound, and delivery of notifications.

What must not: bytes, streams and sessions (``http.py``, ``stdio.py``, ``modern.py``,
``legacy.py``). The client never dereferences a ``$ref`` in a tool schema and never
fetches anything but the MCP endpoint (SEP-2106).

Era selection: ``mode`` pins an era, or ``"auto"`` probes (the rules are in ``era.py``)
and caches the verdict per endpoint or command (``EraCache``).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import EllipsisType, TracebackType
from typing import Any, Final, TypeVar

import httpx
import msgspec

from mcpcore import types
from mcpcore.client.era import (
    DEFAULT_ERA_CACHE,
    Era,
    EraCache,
    Mode,
    describe,
    discover_from_initialize,
    probe,
)
from mcpcore.client.errors import (
    ClientError,
    EraNegotiationError,
    HttpError,
    ListingIncomplete,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
)
from mcpcore.client.http import MAX_BODY_BYTES, HttpTransport
from mcpcore.client.legacy import MAX_ANSWERING, Backoff, LegacyWire
from mcpcore.client.modern import MODERN_VERSIONS, ModernWire
from mcpcore.client.resolvers import (
    CAPABILITY,
    ElicitHandler,
    Resolvers,
    RootsHandler,
    SampleHandler,
    Unanswerable,
    json_object,
)
from mcpcore.client.sse import MAX_EVENT_BYTES
from mcpcore.client.stdio import Stderr, StdioTransport
from mcpcore.client.subscription import Subscription
from mcpcore.client.tasks import ClientTasks, declares_tasks, drive
from mcpcore.client.wire import (
    Answerer,
    MessageHandler,
    milestone,
    to_notification,
    typed_result,
)
from mcpcore.headers import (
    HeaderAnnotationError,
    HeaderParam,
    HeaderValueError,
    check_header_params,
    client_header_values,
)
from mcpcore.meta import LOG_LEVEL_RANK, LOG_LEVELS, PROGRESS_TOKEN
from mcpcore.timing import SYSTEM_CLOCK, Clock
from mcpcore.versions import LEGACY, MODERN

log = logging.getLogger("mcpcore.client")

#: Protocol versions this client speaks, preferred first.
SUPPORTED_VERSIONS: Final = (*MODERN_VERSIONS, *LEGACY)
CLIENT_NAME: Final = "mcpcore-client"
CLIENT_VERSION: Final = "0.1.0"
NotificationHandler = Callable[[types.Notification], Awaitable[None] | None]

_R = TypeVar("_R")
#: Deliveries to an async ``on_notification`` waiting their turn (they run one at a time,
#: in order); past this, a notification is dropped (logged with a count).
MAX_PENDING_NOTIFICATIONS: Final = 256
#: The longest a list is cached on a server's ``ttlMs`` hint (ms): one day.
MAX_LIST_TTL_MS: Final = 86_400_000
#: ``notifications/<kind>/list_changed`` → the list methods whose caches it invalidates.
_INVALIDATES: Final = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


@dataclass(frozen=True, slots=True)
class _CachedTool:
    tool: types.Tool
    header_params: tuple[HeaderParam, ...]


class Client:
    """An MCP client. Open it with ``async with``; every method is a request.

    Over HTTP::

        async with Client.http("http://127.0.0.1:8000/mcp") as client:
            print(client.era, client.protocol_version)     # "modern", "2026-07-28"
            async for tool in client.iter_tools():
                print(tool.name)
            result = await client.call_tool("add", {"a": 2, "b": 3})

    Over stdio::

        async with Client.stdio(["python", "-m", "examples.everything", "--stdio"]) as c:
            print((await c.call_tool("test_simple_text")).content[0].text)

    Options (also accepted by ``http`` and ``stdio``):

    - ``mode``: ``"auto"`` (probe, then fall back; see the module docstring),
      ``"2026-07-28"`` (stateless only), ``"legacy"`` (the 2025 session wire, asking for
      2025-11-25), or one 2025-era version to ask for in ``initialize``;
    - ``client_info``: sent as ``clientInfo`` (default ``mcpcore-client``);
    - ``capabilities``: what the client declares (JSON objects, e.g.
      ``{"elicitation": {}}``); when omitted, derived from the resolvers given;
    - ``on_elicit(params)``, ``on_sample(params)``, ``on_roots()``: answers to the
      server's questions in either era (MRTR input requests, or 2025-era server
      requests), sync or async, returning a dict or the ``mcpcore.types`` Struct;
      ``apply_defaults`` (True): accepted forms get the schema's defaults (SEP-1034);
    - ``on_notification(notification)``: notifications no call-level handler takes;
    - ``timeout`` (60 s): per request, ``None`` for none; ``max_rounds`` (10): MRTR
      rounds answered before ``LocalProtocolError`` (and input rounds of one task);
    - ``task_timeout`` (3600 s): how long ``call_tool`` waits for a task the server
      made of the call (tasks extension) before ``RequestTimeout``; ``None`` for ever;
    - ``max_concurrency`` (16): requests in flight at once; more wait their turn;
    - ``max_pages`` (1000), ``max_items`` (100,000), ``list_timeout`` (120 s): one walk
      of a paginated list (``tools()``, ``iter_tools()``, ...) ends with
      ``ListingIncomplete`` past any of them, or when the server repeats a cursor;
    - ``heartbeat`` (15 s): a ``ping`` on 2025-era sessions at that interval; two missed
      pings reap the session (``None`` turns it off);
    - ``max_answering`` (8): a 2025-era server's requests answered at once (more wait
      their turn, and past those they are dropped: ``mcpcore.client.legacy``); a
      gateway, whose answers wait for its own callers, needs one per call it parks;
    - ``probe_timeout`` (10 s): how long ``mode="auto"`` waits for the probe;
    - ``era_cache``: see ``EraCache``;
    - ``clock`` (``mcpcore.timing.SYSTEM_CLOCK``): what every timeout, the heartbeat, the
      backoff, task polling, list deadlines and the list cache are measured on; a test
      passes a manual clock and advances it instead of waiting.
    """

    def __init__(
        self,
        transport: HttpTransport | StdioTransport,
        *,
        mode: Mode | str = "auto",
        client_info: Mapping[str, Any] | types.Implementation | None = None,
        capabilities: Mapping[str, Any] | types.ClientCapabilities | None = None,
        on_elicit: ElicitHandler | None = None,
        on_sample: SampleHandler | None = None,
        on_roots: RootsHandler | None = None,
        on_notification: NotificationHandler | None = None,
        apply_defaults: bool = True,
        max_rounds: int = 10,
        timeout: float | None = 60.0,
        task_timeout: float | None = 3600.0,
        max_concurrency: int = 16,
        max_pages: int = 1000,
        max_items: int = 100_000,
        list_timeout: float | None = 120.0,
        heartbeat: float | None = 15.0,
        max_answering: int = MAX_ANSWERING,
        probe_timeout: float = 10.0,
        era_cache: EraCache | None = DEFAULT_ERA_CACHE,
        backoff: Backoff | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if mode not in ("auto", "legacy", *SUPPORTED_VERSIONS):
            raise LocalProtocolError(
                f"mode must be 'auto', 'legacy' or one of {', '.join(SUPPORTED_VERSIONS)}, "
                f"not {mode!r}")
        if max_rounds < 0:
            raise LocalProtocolError("max_rounds must be >= 0")
        if max_concurrency < 1:
            raise LocalProtocolError("max_concurrency must be >= 1")
        if max_pages < 1 or max_items < 0:
            raise LocalProtocolError("max_pages must be >= 1 and max_items >= 0")
        if max_answering < 1:
            raise LocalProtocolError("max_answering must be >= 1")
        self.transport = transport
        self.mode = mode
        self.resolvers = Resolvers(on_elicit, on_sample, on_roots, apply_defaults=apply_defaults)
        self.on_notification = on_notification
        self.max_rounds = max_rounds
        self.timeout = timeout
        self.task_timeout = task_timeout
        self.max_pages = max_pages
        self.max_items = max_items
        self.max_answering = max_answering
        self.list_timeout = list_timeout
        self.heartbeat = heartbeat
        self.probe_timeout = probe_timeout
        self.era_cache = era_cache
        self._backoff = backoff
        self.clock = clock
        self.client_info = json_object(
            client_info if client_info is not None
            else {"name": CLIENT_NAME, "version": CLIENT_VERSION}, "client_info")
        if capabilities is None:
            capabilities = self.resolvers.capabilities()
        self.capabilities = json_object(capabilities, "capabilities")
        for name, value in self.capabilities.items():
            if not isinstance(value, dict):
                raise LocalProtocolError(
                    f"capability {name!r} must be a JSON object (e.g. {{}}), not {value!r}")
        self._ids = itertools.count(1)
        self._limit = asyncio.Semaphore(max_concurrency)
        self._wire: ModernWire | LegacyWire | None = None
        self._tools: dict[str, _CachedTool] = {}
        self._dropped: dict[str, str] = {}
        self._lists: dict[str, tuple[float, list[Any]]] = {}
        #: The walk of each list method in flight, shared by everyone who needs it.
        self._walks: dict[str, asyncio.Task[list[Any]]] = {}
        #: The queues of the open 2025-session ``listen()`` subscriptions: each gets the
        #: notifications no request claimed (``Subscription`` adds and removes its own).
        self.listeners: set[asyncio.Queue[types.Notification]] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._deliveries: asyncio.Queue[Awaitable[Any]] = asyncio.Queue(
            MAX_PENDING_NOTIFICATIONS)
        self._deliverer: asyncio.Task[None] | None = None
        #: Notifications dropped because ``on_notification`` or a subscription's reader
        #: could not keep up (see ``MAX_PENDING_NOTIFICATIONS``).
        self.dropped_notifications = 0
        #: The ``server/discover`` result (2026-07-28), or one built from the
        #: ``InitializeResult`` (2025 era): versions, capabilities, instructions, info.
        self.server: types.DiscoverResult | None = None
        #: Each era tried while opening, with what the server answered.
        self.attempts: list[tuple[str, str]] = []

    # -- construction and lifetime ---------------------------------------------------------
    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        auth: httpx.Auth | None = None,
        connect_timeout: float | None = 10.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        held_bytes: int | None = None,
        **options: Any,
    ) -> Client:
        """A client for a Streamable HTTP endpoint (``http://host:port/mcp``).

        ``headers`` go on every request; ``auth`` (an ``httpx.Auth``, e.g. an OAuth flow)
        is applied to every HTTP request the client makes (POST, the 2025-era GET stream,
        DELETE); ``http_client`` is an ``httpx.AsyncClient`` of your own (not closed for
        you). The pool holds ``max_concurrency`` connections plus three: the 2025-era GET
        stream, the answers to the server's requests, the heartbeat.
        ``max_body_bytes`` (64 MiB) bounds a JSON response, ``max_event_bytes`` (16 MiB)
        one event of an event stream; past either, ``ResponseTooLarge``. ``held_bytes``
        bounds what the responses in flight hold together (the bodies being read, the
        events being assembled); the request that would go over gets
        ``ResponseTooLarge`` (default: no bound but each response's).

        >>> client = Client.http("http://127.0.0.1:8000/mcp", timeout=5)
        """
        limit = int(options.get("max_concurrency", 16))
        transport = HttpTransport(url, headers=headers, http_client=http_client, auth=auth,
                                  connect_timeout=connect_timeout, max_connections=limit + 3,
                                  max_body_bytes=max_body_bytes,
                                  max_event_bytes=max_event_bytes, held_bytes=held_bytes,
                                  clock=options.get("clock", SYSTEM_CLOCK))
        return cls(transport, **options)

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: Stderr = "log",
        shutdown_timeout: float = 5.0,
        **options: Any,
    ) -> Client:
        """A client for a server subprocess speaking stdio; ``command`` is its argv.

        The server runs in its own process group; its stderr goes to the
        ``mcpcore.client.stderr`` logger (``stderr="log"``), or to a file, or
        ``subprocess.DEVNULL``, or ``None`` (inherit). See ``StdioTransport``.

        >>> client = Client.stdio(["python", "-m", "examples.everything", "--stdio"])
        """
        return cls(StdioTransport(command, env=env, cwd=cwd, stderr=stderr,
                                  shutdown_timeout=shutdown_timeout), **options)

    async def __aenter__(self) -> Client:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Connect: start the transport and settle the era (``async with`` does this)."""
        await self.transport.open()
        try:
            await self._select_era()
        except BaseException:
            await self._shutdown()
            raise

    async def aclose(self) -> None:
        """End the session (2025 era: DELETE over HTTP), close connections or stop the
        server process. Safe to call twice."""
        await self._shutdown()

    async def _shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        while not self._deliveries.empty():
            outcome = self._deliveries.get_nowait()
            if inspect.iscoroutine(outcome):
                outcome.close()
        try:
            if self._wire is not None:
                await self._wire.close()
        finally:
            await self.transport.close()

    @property
    def era(self) -> Era | None:
        """``"modern"`` (2026-07-28) or ``"legacy"`` (a 2025 session), once open."""
        return None if self._wire is None else self._wire.era

    @property
    def protocol_version(self) -> str | None:
        """The protocol version in use, once open."""
        return None if self._wire is None else self._wire.protocol_version

    @property
    def session_id(self) -> str | None:
        """The 2025-era HTTP session id, if the server assigned one."""
        return self._wire.session_id if isinstance(self._wire, LegacyWire) else None

    # -- era selection ----------------------------------------------------------------------
    def _era_key(self) -> str:
        transport = self.transport
        return transport.url if isinstance(transport, HttpTransport) else transport.origin

    async def _select_era(self) -> None:
        self.attempts = []
        mode = self.mode
        if mode in MODERN_VERSIONS:
            self._modern(mode)
            return
        if mode == "legacy" or mode in LEGACY:
            await self._legacy(LEGACY[0] if mode == "legacy" else mode)
            return
        key = self._era_key()
        cached = self.era_cache.get(key) if self.era_cache is not None else None
        if cached == "modern":
            self._modern(MODERN)
            return
        if cached == "legacy":
            try:
                await self._legacy(LEGACY[0])
                return
            except (RemoteProtocolError, RequestTimeout):
                if self.era_cache is not None:
                    self.era_cache.forget(key)  # re-probe: the cached verdict failed
        era = await self._probe()
        if era == "legacy":
            await self._legacy(LEGACY[0])
        if self.era_cache is not None:
            self.era_cache.set(key, era)

    def _modern(self, version: str) -> ModernWire:
        wire = ModernWire(self.transport, ids=self._ids, capabilities=self.capabilities,
                          client_info=self.client_info, on_unclaimed=self._unclaimed,
                          version=version, clock=self.clock)
        wire.attach()
        self._wire = wire
        return wire

    async def _probe(self) -> Era:
        era, info = await probe(self._modern(MODERN), self.probe_timeout, self.attempts)
        if info is not None:
            self.server = info
        return era

    async def _legacy(self, version: str) -> None:
        wire = LegacyWire(self.transport, ids=self._ids, capabilities=self.capabilities,
                          client_info=self.client_info, answer=self._answer_server,
                          on_unclaimed=self._unclaimed, version=version,
                          heartbeat=self.heartbeat, init_timeout=self.timeout,
                          max_answering=self.max_answering,
                          backoff=self._backoff, clock=self.clock)
        wire.attach()
        self._wire = wire
        try:
            result = await wire.connect()
        except EraNegotiationError as exc:
            raise EraNegotiationError("no protocol era worked with this server",
                                      attempts=[*self.attempts, *exc.attempts]) from None
        except HttpError as exc:
            if exc.status in (401, 403) or not self.attempts:
                raise
            self.attempts.append((f"initialize at {version}", describe(exc)))
            raise EraNegotiationError("no protocol era worked with this server",
                                      attempts=self.attempts, http_status=exc.status) from None
        except (RemoteProtocolError, RequestTimeout) as exc:
            if not self.attempts:
                raise
            self.attempts.append((f"initialize at {version}", describe(exc)))
            raise EraNegotiationError(
                "no protocol era worked with this server", attempts=self.attempts,
                code=getattr(exc, "code", None), data=getattr(exc, "data", None),
                http_status=getattr(exc, "http_status", None)) from None
        self.server = discover_from_initialize(result)

    # -- requests ---------------------------------------------------------------------------
    def wire(self) -> ModernWire | LegacyWire:
        """The open connection's wire (``ModernWire`` or ``LegacyWire``, by era);
        ``LocalProtocolError`` if the client is not open."""
        if self._wire is None:
            raise LocalProtocolError("the client is not open: use `async with Client...`")
        return self._wire

    async def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        on_notification: NotificationHandler | None = None,
        timeout: float | EllipsisType | None = ...,
        on_request: Answerer | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its raw ``result``.

        The escape hatch for methods without a helper (extensions). In 2026-07-28,
        ``_meta`` and headers are added (keys under ``params["_meta"]`` are merged over
        ours) and there is no MRTR loop here; in a 2025 session it is sent as is.
        ``on_request(method, params)``: answers the 2025 server's requests that belong to
        this one (``elicitation/create`` on its stream, say) instead of the resolvers;
        raising ``Unanswerable`` sends the server an error.

        >>> await client.request("tools/list", {})                    # doctest: +SKIP
        {'resultType': 'complete', 'tools': [...], 'ttlMs': 0, 'cacheScope': 'private'}
        """
        wire = self.wire()
        async with self._limit:
            return await wire.request(
                method, params, headers=headers or {},
                on_message=self._deliver(on_notification),
                timeout=self.timeout if isinstance(timeout, EllipsisType) else timeout,
                on_request=on_request)

    async def discover(self) -> types.DiscoverResult:
        """``server/discover``: versions, capabilities, instructions, server info.

        In a 2025 session there is no such method: the answer is built from the
        ``InitializeResult`` (the negotiated version, the server's capabilities,
        ``instructions``, and ``serverInfo`` under ``_meta``).
        """
        if isinstance(self.wire(), LegacyWire):
            assert self.server is not None
            return self.server
        result = await self.request("server/discover", {})
        self.server = typed_result(result, types.DiscoverResult, "server/discover")
        return self.server

    async def ping(self, *, timeout: float | EllipsisType | None = ...) -> None:
        """Check the server answers: ``ping`` in a 2025 session; 2026-07-28 has no
        ``ping``, so a ``server/discover`` round trip stands in."""
        method = "ping" if isinstance(self.wire(), LegacyWire) else "server/discover"
        await self.request(method, {}, timeout=timeout)

    async def list_tools(self, cursor: str | None = None) -> types.ListToolsResult:
        """One page of ``tools/list``. Tools with invalid ``x-mcp-header`` annotations are
        left out (and logged); the rest are cached for ``Mcp-Param-*`` headers."""
        result = await self.request("tools/list", _cursor(cursor))
        raw_tools = result.get("tools")
        if not isinstance(raw_tools, list):
            raise RemoteProtocolError("tools/list result has no tools array")
        kept = [tool for entry in raw_tools if (tool := self._admit_tool(entry)) is not None]
        page = typed_result({**result, "tools": []}, types.ListToolsResult, "tools/list")
        page.tools = kept
        return page

    async def iter_tools(self) -> AsyncIterator[types.Tool]:
        """Every tool, following ``nextCursor`` across pages."""
        async for page in self._pages(self.list_tools, "tools"):
            for tool in page.tools:
                yield tool

    async def list_resources(self, cursor: str | None = None) -> types.ListResourcesResult:
        """One page of ``resources/list``."""
        result = await self.request("resources/list", _cursor(cursor))
        return typed_result(result, types.ListResourcesResult, "resources/list")

    async def iter_resources(self) -> AsyncIterator[types.Resource]:
        """Every resource, across pages."""
        async for page in self._pages(self.list_resources, "resources"):
            for resource in page.resources:
                yield resource

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> types.ListResourceTemplatesResult:
        """One page of ``resources/templates/list``."""
        result = await self.request("resources/templates/list", _cursor(cursor))
        return typed_result(result, types.ListResourceTemplatesResult, "resources/templates/list")

    async def iter_resource_templates(self) -> AsyncIterator[types.ResourceTemplate]:
        """Every resource template, across pages."""
        async for page in self._pages(self.list_resource_templates, "resource_templates"):
            for template in page.resource_templates:
                yield template

    async def list_prompts(self, cursor: str | None = None) -> types.ListPromptsResult:
        """One page of ``prompts/list``."""
        result = await self.request("prompts/list", _cursor(cursor))
        return typed_result(result, types.ListPromptsResult, "prompts/list")

    async def iter_prompts(self) -> AsyncIterator[types.Prompt]:
        """Every prompt, across pages."""
        async for page in self._pages(self.list_prompts, "prompts"):
            for prompt in page.prompts:
                yield prompt

    async def tools(self, *, refresh: bool = False) -> list[types.Tool]:
        """Every tool, cached: for the pages' ``ttlMs`` (2026-07-28), or until the
        server's ``notifications/tools/list_changed`` (2025 era, when it advertises
        ``listChanged``). ``refresh=True`` asks the server again."""
        return await self._cached("tools/list", self.list_tools, "tools", refresh)

    async def resources(self, *, refresh: bool = False) -> list[types.Resource]:
        """Every resource, cached like ``tools()``."""
        return await self._cached("resources/list", self.list_resources, "resources", refresh)

    async def resource_templates(self, *, refresh: bool = False
                                 ) -> list[types.ResourceTemplate]:
        """Every resource template, cached like ``tools()``."""
        return await self._cached("resources/templates/list", self.list_resource_templates,
                                  "resource_templates", refresh)

    async def prompts(self, *, refresh: bool = False) -> list[types.Prompt]:
        """Every prompt, cached like ``tools()``."""
        return await self._cached("prompts/list", self.list_prompts, "prompts", refresh)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        on_notification: NotificationHandler | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        timeout: float | EllipsisType | None = ...,
    ) -> types.CallToolResult:
        """``tools/call``, answering the server's questions through the resolvers.

        ``on_notification`` receives the call's notifications (progress, log) before the
        result; passing it asks for progress with a fresh ``progressToken`` unless you
        give one. ``log_level`` asks for log messages at that level and above
        (2026-07-28; a 2025 session has one level for all, ``set_logging_level``).
        A tool error is a normal result with ``is_error=True``; protocol errors raise
        ``RemoteProtocolError``. If ``capabilities`` declare the tasks extension, a task
        the server makes of the call is waited for (``client.tasks`` for the handle).

        >>> result = await client.call_tool("add", {"a": 2, "b": 3})   # doctest: +SKIP
        >>> result.content[0].text                                      # doctest: +SKIP
        '5'
        """
        result = await self.call_tool_raw(
            name, arguments, on_notification=on_notification, progress_token=progress_token,
            log_level=log_level, timeout=timeout)
        if result.get("resultType") == "task":
            return await drive(self, result)
        return typed_result(result, types.CallToolResult, "tools/call")

    async def call_tool_raw(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        meta: Mapping[str, Any] | None = None,
        on_notification: NotificationHandler | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        timeout: float | EllipsisType | None = ...,
    ) -> dict[str, Any]:
        """``tools/call`` through the MRTR loop: the raw result, a task handle accepted
        when this request declares the tasks extension (``meta`` or ``capabilities``)."""
        params = _tool_params(name, arguments)
        headers = await self._param_headers(
            name, params.get("arguments") or {},
            self.timeout if isinstance(timeout, EllipsisType) else timeout)
        caps = (meta or {}).get("io.modelcontextprotocol/clientCapabilities",
                                self.capabilities)
        return await self._with_input(
            "tools/call", params, headers=headers, on_notification=on_notification,
            progress_token=progress_token, log_level=log_level, timeout=timeout,
            meta=meta, tasks=isinstance(caps, Mapping) and declares_tasks(caps))

    async def call_tool_round(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        meta: Mapping[str, Any] | None = None,
        on_notification: NotificationHandler | None = None,
        on_request: Answerer | None = None,
        log_level: str | None = None,
        timeout: float | EllipsisType | None = ...,
        tasks: bool = False,
    ) -> dict[str, Any]:
        """ONE round of ``tools/call``: nothing answered by the resolvers. The raw
        result: ``complete``, or ``input_required`` (its ``inputRequests`` an object,
        its ``requestState`` a string, checked) for the caller to answer and retry with
        ``input_responses`` and ``request_state`` (sent verbatim), or with ``tasks`` (the
        request declares the tasks extension in ``meta``) a task handle. For who relays
        the server's questions to someone else (``mcpcore.gateway.bridge``); a 2025
        server's requests during the call go to ``on_request`` (``request``)."""
        params = _tool_params(name, arguments)
        if input_responses is not None:
            params["inputResponses"] = dict(input_responses)
        if request_state is not None:
            params["requestState"] = request_state
        headers = await self._param_headers(
            name, params.get("arguments") or {},
            self.timeout if isinstance(timeout, EllipsisType) else timeout)
        on_notification = await self._session_log_level(log_level, on_notification)
        attempt = self._prepare(params, meta, None, on_notification, log_level)
        return await self._round("tools/call", attempt, headers=headers,
                                 on_notification=on_notification, on_request=on_request,
                                 timeout=timeout, tasks=tasks)

    async def read_resource(
        self,
        uri: str,
        *,
        on_notification: NotificationHandler | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        timeout: float | EllipsisType | None = ...,
    ) -> types.ReadResourceResult:
        """``resources/read`` (with MRTR rounds if the server asks for input)."""
        result = await self._with_input(
            "resources/read", {"uri": uri}, headers={}, on_notification=on_notification,
            progress_token=progress_token, log_level=log_level, timeout=timeout)
        return typed_result(result, types.ReadResourceResult, "resources/read")

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        on_notification: NotificationHandler | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        timeout: float | EllipsisType | None = ...,
    ) -> types.GetPromptResult:
        """``prompts/get`` (with MRTR rounds if the server asks for input)."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        result = await self._with_input(
            "prompts/get", params, headers={}, on_notification=on_notification,
            progress_token=progress_token, log_level=log_level, timeout=timeout)
        return typed_result(result, types.GetPromptResult, "prompts/get")

    async def complete(
        self,
        ref: Mapping[str, Any] | types.PromptReference | types.ResourceTemplateReference,
        argument: Mapping[str, str] | types.CompletionArgument,
        context: Mapping[str, str] | types.CompletionContext | None = None,
    ) -> types.CompleteResult:
        """``completion/complete``. ``context`` is the other arguments' values (a mapping
        of name to value) or a ``CompletionContext``."""
        params: dict[str, Any] = {
            "ref": json_object(ref, "ref"),
            "argument": json_object(argument, "argument"),
        }
        if isinstance(context, types.CompletionContext):
            params["context"] = json_object(context, "context")
        elif context is not None:
            params["context"] = {"arguments": dict(context)}
        result = await self.request("completion/complete", params)
        return typed_result(result, types.CompleteResult, "completion/complete")

    async def set_logging_level(self, level: str) -> None:
        """Ask for log messages at ``level`` and above: ``logging/setLevel`` in a 2025
        session; in 2026-07-28 every later request carries ``logLevel`` in ``_meta``."""
        if level not in LOG_LEVELS:
            raise LocalProtocolError(
                f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        wire = self.wire()
        if isinstance(wire, LegacyWire):
            await self.request("logging/setLevel", {"level": level})
        wire.log_level = level

    async def subscribe_resource(self, uri: str) -> None:
        """``resources/subscribe`` (2025 era). In 2026-07-28 use ``listen`` with
        ``resourceSubscriptions``, which works in both eras."""
        await self.request(self._legacy_only("resources/subscribe", "listen"), {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        """``resources/unsubscribe`` (2025 era)."""
        await self.request(self._legacy_only("resources/unsubscribe", "listen"), {"uri": uri})

    async def notify_roots_changed(self) -> None:
        """Tell a 2025-era server the roots changed (``notifications/roots/list_changed``,
        if ``roots.listChanged`` is declared). 2026-07-28 asks for roots per request, so
        there is nothing to send."""
        wire = self.wire()
        roots = self.capabilities.get("roots")
        if isinstance(wire, LegacyWire) and isinstance(roots, dict) and roots.get("listChanged"):
            await wire.notify("notifications/roots/list_changed", None)

    @property
    def tasks(self) -> ClientTasks:
        """The tasks extension: tool calls as tasks, polled, answered, cancelled
        (``mcpcore.client.tasks``, docs/tasks.md)."""
        return ClientTasks(self)

    def listen(
        self, notifications: Mapping[str, Any] | types.SubscriptionFilter
    ) -> Subscription:
        """Subscribe to list changes and resource updates: an async iterator of
        notifications, the acknowledgement first (also kept as ``.acknowledged``).

        2026-07-28: one ``subscriptions/listen`` stream. A 2025 session has no such
        method: the client subscribes to each URI (``resources/subscribe``), filters
        the session's notifications to the ones asked for, acknowledges what the
        server's capabilities allow, and unsubscribes when the iteration ends.

        >>> async with client.listen({"toolsListChanged": True}) as sub:   # doctest: +SKIP
        ...     async for note in sub:
        ...         print(note.method)
        """
        return Subscription(self, json_object(notifications, "notifications"))

    # -- internals --------------------------------------------------------------------------
    def _legacy_only(self, method: str, instead: str) -> str:
        if not isinstance(self.wire(), LegacyWire):
            raise LocalProtocolError(
                f"{method} does not exist in protocol version {self.protocol_version}; "
                f"use client.{instead}(...), which works in both eras")
        return method

    def _deliver(self, handler: NotificationHandler | None) -> MessageHandler | None:
        chosen = handler or self.on_notification
        if chosen is None:
            return None

        async def deliver(message: dict[str, Any]) -> None:
            note = to_notification(message)
            if note is not None:
                outcome = chosen(note)
                if inspect.isawaitable(outcome):
                    await outcome

        return deliver

    def _unclaimed(self, message: dict[str, Any]) -> None:
        """A notification no request claimed: list changes, resource updates, logs."""
        note = to_notification(message)
        if note is None:
            return
        self.invalidate(note.method)
        for queue in self.listeners:
            if queue.full():
                queue.get_nowait()  # the oldest goes: a reader that fell behind
                self._drop_notification("a listen() reader fell behind")
            queue.put_nowait(note)
        if self.on_notification is not None:
            outcome = self.on_notification(note)
            if inspect.isawaitable(outcome):
                self._deliver_later(outcome)

    def _deliver_later(self, outcome: Awaitable[Any]) -> None:
        """Queue an async handler's run; one worker runs them in order (a task per
        notification would let a server flood the loop with them)."""
        try:
            self._deliveries.put_nowait(outcome)
        except asyncio.QueueFull:
            if inspect.iscoroutine(outcome):
                outcome.close()  # never to run: no "never awaited" warning
            self._drop_notification("on_notification fell behind")
            return
        if self._deliverer is None or self._deliverer.done():
            self._deliverer = asyncio.ensure_future(self._deliver_queued())
            self._tasks.add(self._deliverer)
            self._deliverer.add_done_callback(self._tasks.discard)

    async def _deliver_queued(self) -> None:
        while not self._deliveries.empty():
            outcome = self._deliveries.get_nowait()
            try:
                await outcome
            except Exception:
                log.exception("on_notification failed")

    def _drop_notification(self, why: str) -> None:
        self.dropped_notifications += 1
        if milestone(self.dropped_notifications):
            log.warning("dropping a server notification: %s (%d dropped so far)", why,
                        self.dropped_notifications)

    def invalidate(self, method: str) -> None:
        """Drop what a ``notifications/*/list_changed`` makes stale (``method`` names
        the notification); other methods are ignored."""
        for stale in _INVALIDATES.get(method, ()):
            self._lists.pop(stale, None)
            if stale == "tools/list":
                self._tools.clear()
                self._dropped.clear()

    async def _answer_server(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A 2025-era server request, answered only within declared capabilities."""
        capability = CAPABILITY.get(method)
        if capability is None:
            raise Unanswerable(f"{method} is not a client method")
        if capability not in self.capabilities:
            raise Unanswerable(f"{method}: the client did not declare the {capability!r} "
                               "capability")
        return await self.resolvers.answer(method, params)

    async def _cached(self, method: str, fetch: Callable[[str | None], Awaitable[Any]],
                      attribute: str, refresh: bool) -> list[Any]:
        hit = self._lists.get(method)
        if hit is not None and not refresh and hit[0] > self.clock.monotonic():
            return list(hit[1])
        return list(await self._shared_walk(method, fetch, attribute))

    def _admit_tool(self, entry: object) -> types.Tool | None:
        """Validate one ``tools/list`` entry; cache and return it, or drop it (logged).
        Clients MUST drop tools whose ``x-mcp-header`` annotations are invalid
        (2026-07-28 server/tools, "Custom Headers")."""
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(name, str):
            log.warning("dropping a malformed tools/list entry: %.200r", entry)
            return None
        try:
            header_params = check_header_params(entry.get("inputSchema"))
        except HeaderAnnotationError as exc:
            log.warning("dropping tool %r: invalid x-mcp-header annotations: %s", name, exc)
            self._tools.pop(name, None)
            if name not in self._dropped and len(self._dropped) >= self.max_items:
                del self._dropped[next(iter(self._dropped))]
            self._dropped[name] = str(exc)
            return None
        try:
            tool = msgspec.convert(entry, types.Tool)
        except msgspec.ValidationError as exc:
            log.warning("dropping tool %r: not a valid Tool: %s", name, exc)
            return None
        if name not in self._tools and len(self._tools) >= self.max_items:
            del self._tools[next(iter(self._tools))]  # the oldest: the cache stays bounded
        self._tools[name] = _CachedTool(tool, header_params)
        self._dropped.pop(name, None)
        return tool

    async def _param_headers(self, name: str, arguments: Mapping[str, Any],
                             timeout: float | None) -> dict[str, str]:
        """``Mcp-Param-*`` for a call (2026-07-28 over HTTP); lists the tools first if
        ``name`` is not cached."""
        wire = self.wire()
        if not isinstance(wire, ModernWire) or not wire.transport.uses_headers:
            return {}
        if name not in self._tools and name not in self._dropped:
            await self._learn_tools(name, timeout)
        if name in self._dropped:
            raise LocalProtocolError(
                f"tool {name!r} was dropped from the server's list because its "
                f"x-mcp-header annotations are invalid: {self._dropped[name]}")
        cached = self._tools.get(name)
        if cached is None or not cached.header_params:
            return {}  # unknown tool: let the server answer (-32602)
        try:
            return client_header_values(cached.header_params, arguments)
        except HeaderValueError as exc:
            raise LocalProtocolError(f"tools/call {name}: {exc}") from None

    async def _learn_tools(self, name: str, timeout: float | None) -> None:
        """List the tools before calling ``name``, which the client has not seen: the
        walk in flight if there is one (shared by every caller), else a new one. The
        call does not depend on it: the wait ends at the call's own ``timeout`` too, and
        if the walk fails, ends early or takes too long the call is sent anyway, without
        the ``Mcp-Param-*`` headers it would have learnt (a server that requires them
        refuses the call; see docs/client.md)."""
        try:
            async with self.clock.timeout(timeout):
                await self._shared_walk("tools/list", self.list_tools, "tools")
        except TimeoutError:
            log.warning("tools/list before tools/call %s took longer than %s s; "
                        "calling without it", name, timeout)
        except ClientError as exc:
            # No definitions, no Mcp-Param-* headers: let the call itself find out.
            log.warning("tools/list before tools/call %s failed: %s", name, exc)

    async def _shared_walk(self, method: str, fetch: Callable[[str | None], Awaitable[Any]],
                           attribute: str) -> list[Any]:
        """Every item of ``method``, from one walk shared by all concurrent callers
        (single-flight): a caller that is cancelled or gives up leaves the walk running
        for the others; a walk that fails fails its current callers only (the next
        caller starts a new one)."""
        task = self._walks.get(method)
        if task is None:
            task = asyncio.ensure_future(self._walk(method, fetch, attribute))
            self._walks[method] = task
            self._tasks.add(task)

            def finished(done: asyncio.Task[list[Any]]) -> None:
                self._tasks.discard(done)
                if self._walks.get(method) is done:
                    del self._walks[method]
                if not done.cancelled():
                    done.exception()  # retrieved: a walk nobody waits for any more

            task.add_done_callback(finished)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or not current.cancelling()):
                # The walk itself was cancelled (the client is closing), not this caller.
                raise ListingIncomplete(f"{method}: the listing was cancelled") from None
            raise

    async def _walk(self, method: str, fetch: Callable[[str | None], Awaitable[Any]],
                    attribute: str) -> list[Any]:
        """Walk every page of ``method`` (within the walk's limits) and cache the items."""
        now = self.clock.monotonic()
        items: list[Any] = []
        ttl_ms: float = float("inf")
        async for page in self._pages(fetch, attribute):
            items.extend(getattr(page, attribute))
            ttl_ms = min(ttl_ms, getattr(page, "ttl_ms", 0))
        if isinstance(self._wire, LegacyWire):
            kind = method.split("/", 1)[0]
            capability = getattr(self.server.capabilities if self.server else None, kind, None)
            listed = getattr(capability, "list_changed", False) is True
            expires = float("inf") if listed else now  # no notification, no caching
        else:
            # Clamped before dividing: a 400-digit ttlMs is an OverflowError in /.
            expires = now + min(ttl_ms, MAX_LIST_TTL_MS) / 1000
        if expires > now:
            self._lists[method] = (expires, items)
        return items

    async def _session_log_level(self, log_level: str | None,
                                 on_notification: NotificationHandler | None
                                 ) -> NotificationHandler | None:
        """A request's ``log_level`` on a 2025 session, which has one level for all its
        requests: the session's is lowered to it first when it is less verbose
        (``logging/setLevel``, only if the server offers logging; never raised again),
        and the messages of this request below ``log_level`` are not passed to its
        ``on_notification``. In 2026-07-28 the level travels in the request's
        ``_meta`` (``_prepare``): nothing to do here."""
        if log_level is None or log_level not in LOG_LEVEL_RANK:
            return on_notification  # no level, or a bad one (``_prepare`` says so)
        wire = self.wire()
        if not isinstance(wire, LegacyWire):
            return on_notification
        offers = (wire.initialize_result or {}).get("capabilities")
        current = wire.log_level
        if isinstance(offers, dict) and "logging" in offers and (
                current is None or LOG_LEVEL_RANK[current] > LOG_LEVEL_RANK[log_level]):
            await self.request("logging/setLevel", {"level": log_level})
            wire.log_level = log_level
        if on_notification is None:
            return None
        threshold, handler = LOG_LEVEL_RANK[log_level], on_notification

        def at_least(note: types.Notification) -> Any:
            if note.method == "notifications/message" and isinstance(note.params, dict):
                rank = LOG_LEVEL_RANK.get(note.params.get("level"))  # type: ignore[arg-type]
                if rank is not None and rank < threshold:
                    return None
            return handler(note)

        return at_least

    def _prepare(self, params: dict[str, Any], meta: Mapping[str, Any] | None,
                 progress_token: str | int | None,
                 on_notification: NotificationHandler | None,
                 log_level: str | None) -> dict[str, Any]:
        """The request's params with its ``_meta``: ``meta``, the progress token (a
        fresh one when ``on_notification`` listens and none is given), the log level
        (2026-07-28: per request)."""
        meta = dict(meta or {})
        if progress_token is None and on_notification is not None:
            progress_token = f"mcpcore-{next(self._ids)}"
        if progress_token is not None:
            meta[PROGRESS_TOKEN] = progress_token
        if log_level is not None:
            if log_level not in LOG_LEVELS:
                raise LocalProtocolError(
                    f"log_level must be one of {', '.join(LOG_LEVELS)}, not {log_level!r}")
            if isinstance(self.wire(), ModernWire):
                meta["io.modelcontextprotocol/logLevel"] = log_level
        return {**params, "_meta": meta} if meta else dict(params)

    async def _round(
        self,
        method: str,
        attempt: dict[str, Any],
        *,
        headers: Mapping[str, str],
        on_notification: NotificationHandler | None,
        timeout: float | EllipsisType | None,
        tasks: bool,
        on_request: Answerer | None = None,
    ) -> dict[str, Any]:
        """One request of an MRTR flow: its result, ``complete``, a task handle (with
        ``tasks``) or a well-formed ``input_required``; anything else is
        ``RemoteProtocolError``."""
        result = await self.request(method, attempt, headers=headers,
                                    on_notification=on_notification, timeout=timeout,
                                    on_request=on_request)
        kind = result.get("resultType", "complete")  # absent: a 2025-era result
        if kind == "complete" or (kind == "task" and tasks):
            return result
        if kind != "input_required" or isinstance(self.wire(), LegacyWire):
            raise RemoteProtocolError(f"{method}: unknown resultType {kind!r}")
        requests = result.get("inputRequests")
        state = result.get("requestState")
        if requests is not None and not isinstance(requests, dict):
            raise RemoteProtocolError(f"{method}: inputRequests is not an object")
        if state is not None and not isinstance(state, str):
            raise RemoteProtocolError(f"{method}: requestState is not a string")
        if not requests and state is None:
            raise RemoteProtocolError(
                f"{method}: input_required result without inputRequests or requestState")
        return result

    async def _with_input(
        self,
        method: str,
        params: dict[str, Any],
        *,
        headers: Mapping[str, str],
        on_notification: NotificationHandler | None,
        progress_token: str | int | None,
        log_level: str | None,
        timeout: float | EllipsisType | None,
        meta: Mapping[str, Any] | None = None,
        tasks: bool = False,
    ) -> dict[str, Any]:
        """The MRTR loop (patterns/mrtr): answer ``input_required`` until ``complete``
        (or, with ``tasks``, a task handle: ``resultType: "task"``). A 2025-era server
        asks with requests instead (answered by ``legacy.py``), so there the loop runs
        once. ``meta`` is added to the request's ``_meta``."""
        on_notification = await self._session_log_level(log_level, on_notification)
        original = self._prepare(params, meta, progress_token, on_notification, log_level)
        attempt = original
        rounds = 0
        while True:
            result = await self._round(method, attempt, headers=headers,
                                       on_notification=on_notification, timeout=timeout,
                                       tasks=tasks)
            if result.get("resultType") != "input_required":
                return result
            rounds += 1
            if rounds > self.max_rounds:
                raise LocalProtocolError(
                    f"{method}: the server still needs input after {self.max_rounds} "
                    "rounds (max_rounds); giving up")
            requests = result.get("inputRequests")
            state = result.get("requestState")
            # The retry is the original request plus this round's answers only: earlier
            # rounds live in requestState (patterns/mrtr, "Multiple Rounds").
            attempt = dict(original)
            if requests:
                attempt["inputResponses"] = await self.resolvers.answer_round(method, requests)
            if state is not None:
                attempt["requestState"] = state  # verbatim, never parsed

    async def _pages(self, fetch: Callable[[str | None], Awaitable[_R]],
                     attribute: str) -> AsyncIterator[_R]:
        """Each page of one list, following ``nextCursor``, within the walk's limits:
        ``max_pages`` pages, ``max_items`` items (``attribute`` names a page's items),
        one ``list_timeout`` deadline for the whole walk, and no cursor twice (the spec
        leaves pagination to the server: patterns/pagination; a hostile one never ends
        it). The deadline bounds the requests; the caller's own time between pages
        counts towards it but is never interrupted."""
        clock = self.clock
        deadline = None if self.list_timeout is None else clock.monotonic() + self.list_timeout
        cursor: str | None = None
        seen: set[str] = set()
        pages = items = 0
        while True:
            try:
                async with clock.timeout(None if deadline is None
                                         else deadline - clock.monotonic()):
                    page = await fetch(cursor)
            except TimeoutError:
                raise ListingIncomplete(
                    f"the list did not end within {self.list_timeout} s (list_timeout; "
                    f"{pages} pages, {items} items so far)") from None
            pages += 1
            items += len(getattr(page, attribute))
            if items > self.max_items:
                raise ListingIncomplete(
                    f"the list has more than {self.max_items} items (max_items)")
            yield page
            next_cursor = getattr(page, "next_cursor", msgspec.UNSET)
            if not isinstance(next_cursor, str):
                return
            if next_cursor in seen:
                raise ListingIncomplete(f"pagination loops: cursor {next_cursor!r} repeats")
            if pages >= self.max_pages:
                raise ListingIncomplete(
                    f"the list has more than {self.max_pages} pages (max_pages)")
            seen.add(next_cursor)
            cursor = next_cursor


# -- helpers ----------------------------------------------------------------------------


def _cursor(cursor: str | None) -> dict[str, Any]:
    return {} if cursor is None else {"cursor": cursor}


def _tool_params(name: object, arguments: object) -> dict[str, Any]:
    if not isinstance(name, str):
        raise LocalProtocolError("tool name must be a string")
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        if not isinstance(arguments, Mapping):
            raise LocalProtocolError("tool arguments must be a mapping")
        params["arguments"] = dict(arguments)
    return params


__all__ = ["SUPPORTED_VERSIONS", "Client", "NotificationHandler"]
