"""The engine: registries plus one route table. The only entry point a transport calls.

Two doors into the same routes:

- ``Server.handle(request, principal=, headers=, sink=)`` serves a self-contained
  request of a revision in ``supported_versions`` (2026-07-28). It validates in the order
  the spec and the official suite expect::

    version header present → header version supported → ``_meta`` valid → header equals
    ``_meta`` → ``Mcp-Method``/``Mcp-Name`` → method known and advertised → params →
    tool lookup → ``Mcp-Param-*`` → client capabilities (inside handlers)

  and returns the result object, shaped for its revision (``resultType``, cache hints,
  ``serverInfo``), or raises an ``McpError``.
- ``Server.dispatch(request, meta=, inputs=, ...)`` serves a request whose revision and
  client capabilities the caller already read elsewhere; it returns the route's
  ``Outcome`` unshaped, and handlers ask the client through the ``inputs`` strategy the
  caller gives (``mcpcore.context.InputStrategy``).

Every request's params are decoded once, into its route's Struct (``mcpcore.params``).
Imports msgspec and mcpcore modules only: no sockets, no Starlette.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import msgspec
from msgspec import UNSET

from mcpcore import meta as meta_keys
from mcpcore import observe
from mcpcore.call_gate import OPEN_GATE, CallDenied, CallGate
from mcpcore.context import Context, InputStrategy, Sink
from mcpcore.errors import (
    HeaderMismatch,
    InvalidMeta,
    InvalidParams,
    McpError,
    MethodNotFound,
    UnsupportedProtocolVersion,
    UsageError,
)
from mcpcore.headers import (
    HeaderValueError,
    LenientParams,
    decode_header_value,
    header_param_mismatch,
)
from mcpcore.inputs import Handler, InputRequired
from mcpcore.jsonrpc import Request
from mcpcore.meta import RequestMeta, parse_request_meta
from mcpcore.mrtr import MrtrConfig, SealedRetries
from mcpcore.observe import Headers, Observation, Observer
from mcpcore.outcome import AnsweredWith, Outcome
from mcpcore.pagination import CacheHint, SealedCursors, paginate
from mcpcore.params import (
    CallToolParams,
    CompleteParams,
    GetPromptParams,
    ListenParams,
    PaginatedParams,
    Params,
    ReadResourceParams,
    TaskParams,
    UpdateTaskParams,
)
from mcpcore.principal import ANONYMOUS, Authorize, Principal
from mcpcore.prompts import Completer, CompletionRegistry, PromptRegistry, prompt_result
from mcpcore.resources import ResourceRegistry, read_contents
from mcpcore.signatures import HandlerFunction, invoke, no_op
from mcpcore.stores.base import Store
from mcpcore.subscriptions import Event, ListKind, SubscriptionHub
from mcpcore.tasks.engine import TASK_VERSIONS, ServerTasks
from mcpcore.tasks.wire import TASKS_EXTENSION
from mcpcore.tools import (
    Arguments,
    Category,
    TaskStart,
    TaskSupport,
    ToolDef,
    ToolError,
    ToolRegistry,
    error_result,
    tool_result,
)
from mcpcore.versions import KNOWN, MODERN

if TYPE_CHECKING:
    from mcpcore.policy import Policy
    from mcpcore.tasks.manager import TaskManager

log = logging.getLogger("mcpcore.server")

F = TypeVar("F", bound=HandlerFunction)
R = TypeVar("R")

#: Default cache hints (configurable per server and per resource). Discovery and lists
#: hold no user data by default; resource contents may, so reads default to private.
DISCOVER_CACHE = CacheHint(ttl_ms=3_600_000, scope="public")
LIST_CACHE = CacheHint(ttl_ms=60_000, scope="public")
READ_CACHE = CacheHint(ttl_ms=0, scope="private")

Feature = Literal["tools", "resources", "prompts", "completions", "tasks"]
Serve = Callable[[Any, Context, "Headers | None"], Awaitable[Outcome]]


@dataclass(frozen=True, slots=True)
class Route:
    """One row of the route table: everything the engine knows about a method."""

    method: str
    serve: Serve
    #: The Struct its params decode into, once.
    params: type[Params]
    #: The capability the server must offer for the method to exist (else -32601).
    feature: Feature | None = None
    #: The params field ``Mcp-Name`` must equal (streamable-http.mdx, "Standard Headers").
    name_field: str | None = None
    #: The revisions that define the method.
    versions: frozenset[str] = frozenset(KNOWN)


_decoders: dict[type[msgspec.Struct], msgspec.json.Decoder[Any]] = {}


def _decode(raw: msgspec.Raw | bytes, type_: type[msgspec.Struct]) -> Any:
    """Params into ``type_``; a mismatch is -32602."""
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_)
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        text = str(exc)
        raise InvalidParams(f"Invalid params: {text[:200]}") from None


class Server:
    """An MCP server: register tools, resources and prompts, then serve it.

    >>> server = Server("demo", "1.0.0")
    >>> @server.tool()
    ... def echo(text: str) -> str:
    ...     '''Echo the text back.'''
    ...     return text
    >>> app = StreamableHTTP(server)       # ASGI app; or run_stdio(server)  # doctest: +SKIP
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        page_size: int = 100,
        discover_cache: CacheHint = DISCOVER_CACHE,
        list_cache: CacheHint = LIST_CACHE,
        read_cache: CacheHint = READ_CACHE,
        logging_enabled: bool = True,
        mrtr: MrtrConfig | None = None,
        store: Store | None = None,
        server_info_in_results: bool = True,
        policy: Policy | None = None,
        tasks: TaskManager | None = None,
        tool_timeout: float | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be >= 1")
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.page_size = page_size
        self.discover_cache = discover_cache
        self.list_cache = list_cache
        self.read_cache = read_cache
        self.logging_enabled = logging_enabled
        self._retries = SealedRetries(mrtr or MrtrConfig.development())
        #: Gates tools/call (and may filter tools/list); None: no gating at all.
        self.policy = policy
        #: Seconds a tool handler may run before it is cancelled (None: no limit); a
        #: policy's rule set may set its own default and per-tool values.
        self.tool_timeout = tool_timeout
        #: Sealed list cursors (``mcpcore.pagination.SealedCursors``); None: plain ones.
        self.cursors: SealedCursors | None = None
        #: Watches every request (metrics, traces, request logs: ``mcpcore.observe``).
        self.observer: Observer | None = None
        self.tools = ToolRegistry()
        self.resources = ResourceRegistry()
        self.prompts = PromptRegistry()
        self.tools.on_change = lambda: self._announce("tools")
        self.resources.on_change = lambda: self._announce("resources")
        self.prompts.on_change = lambda: self._announce("prompts")
        self._announcing: set[asyncio.Task[None]] = set()
        self.completions = CompletionRegistry()
        self.supported_versions: tuple[str, ...] = (MODERN,)
        self._subscriptions = hub = SubscriptionHub(store)
        #: The tasks extension (docs/tasks.md): offered while a tool allows tasks.
        self.tasks = ServerTasks(hub, self.tools, tasks)
        self.list_changed = True
        self.resource_subscribe = True
        info: dict[str, Any] = {"name": name, "version": version}
        if title:
            info["title"] = title
        self.server_info = info
        self._result_meta: dict[str, Any] | None = (
            {meta_keys.SERVER_INFO: info} if server_info_in_results else None
        )
        #: Features whose methods exist (and are advertised) even while their
        #: registries are empty: a gateway's federated catalog may be empty for a while.
        self.offered: frozenset[Feature] = frozenset()
        #: The registries (the tools: their names) whose contents make each feature exist.
        self._features: dict[Feature, tuple[Any, ...]] = {
            "tools": (self.tools.names,), "resources": (self.resources,),
            "prompts": (self.prompts,), "completions": (self.completions, self.prompts),
            "tasks": (self.tasks,)}
        modern = frozenset({MODERN})
        self._routes: dict[str, Route] = {route.method: route for route in (
            Route("server/discover", self._discover, Params, versions=modern),
            Route("tools/list", self._list_tools, PaginatedParams, "tools"),
            Route("tools/call", self._call_tool, CallToolParams, "tools", "name"),
            Route("resources/list", self._list_resources, PaginatedParams, "resources"),
            Route("resources/templates/list", self._list_templates, PaginatedParams,
                  "resources"),
            Route("resources/read", self._read_resource, ReadResourceParams, "resources",
                  "uri"),
            Route("prompts/list", self._list_prompts, PaginatedParams, "prompts"),
            Route("prompts/get", self._get_prompt, GetPromptParams, "prompts", "name"),
            Route("completion/complete", self._complete, CompleteParams, "completions"),
            Route("subscriptions/listen", self._listen, ListenParams, versions=modern),
            Route("tasks/get", self._get_task, TaskParams, "tasks", "task_id", modern),
            Route("tasks/update", self._update_task, UpdateTaskParams, "tasks", "task_id",
                  modern),
            Route("tasks/cancel", self._cancel_task, TaskParams, "tasks", "task_id",
                  modern),
        )}

    @property
    def methods(self) -> frozenset[str]:
        """Every method this server routes (in some revision it supports)."""
        return frozenset(self._routes)

    @property
    def mrtr(self) -> MrtrConfig:
        """How MRTR state is sealed (key ring, single use, round limit)."""
        return self._retries.config

    @mrtr.setter
    def mrtr(self, config: MrtrConfig) -> None:
        self._retries = SealedRetries(config)

    # -- registration (decorators) ----------------------------------------------------
    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        category: Category | None = None,
        external: bool | None = None,
        required_scopes: Sequence[str] = (),
        task: TaskSupport = "never",
        task_start: TaskStart = "call",
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        category: Category | None = None,
        external: bool | None = None,
        required_scopes: Sequence[str] = (),
        task: TaskSupport = "never",
        task_start: TaskStart = "call",
    ) -> Callable[[F], F] | F:
        """Register a tool: ``@server.tool()`` or ``@server.tool``. The schema comes from
        type hints unless ``input_schema`` is given; the description from the docstring
        unless ``description`` is given.

        ``category``, ``external`` and ``required_scopes`` feed the policy layer
        (docs/policy.md); unset, the category and flag come from ``annotations``.

        ``task`` (docs/tasks.md): ``"optional"`` makes a call from a client that
        declared the tasks extension a task, ``"required"`` also refuses clients that
        did not (-32021). The task starts before the handler's first line, or, with
        ``task_start="handler"``, when the handler calls ``await ctx.start_task()``."""

        def register(fn: F) -> F:
            self.tools.add(fn, name=None if callable(name) else name, title=title,
                           description=description, input_schema=input_schema,
                           output_schema=output_schema, annotations=annotations,
                           icons=icons, meta=meta, category=category, external=external,
                           required_scopes=required_scopes, task=task,
                           task_start=task_start)
            return fn

        return register(name) if callable(name) else register

    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None,
                 size: int | None = None, annotations: Mapping[str, Any] | None = None,
                 icons: Sequence[Mapping[str, Any]] | None = None,
                 meta: Mapping[str, Any] | None = None,
                 cache: CacheHint | None = None) -> Callable[[F], F]:
        """Register a resource with a fixed URI; the function returns its contents."""
        _needs_uri("resource", uri)

        def register(fn: F) -> F:
            self.resources.add(fn, uri, template=False, name=name, title=title,
                               description=description, mime_type=mime_type, size=size,
                               annotations=annotations, icons=icons, meta=meta, cache=cache)
            return fn

        return register

    def resource_template(self, uri_template: str, *, name: str | None = None,
                          title: str | None = None, description: str | None = None,
                          mime_type: str | None = None,
                          annotations: Mapping[str, Any] | None = None,
                          icons: Sequence[Mapping[str, Any]] | None = None,
                          meta: Mapping[str, Any] | None = None,
                          cache: CacheHint | None = None) -> Callable[[F], F]:
        """Register an RFC 6570 template; the function receives the URI's variables."""
        _needs_uri("resource_template", uri_template)

        def register(fn: F) -> F:
            self.resources.add(fn, uri_template, template=True, name=name, title=title,
                               description=description, mime_type=mime_type,
                               annotations=annotations, icons=icons, meta=meta, cache=cache)
            return fn

        return register

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(self, name: str | None = None, *, title: str | None = None,
               description: str | None = None,
               arguments: Sequence[Mapping[str, Any]] | None = None,
               icons: Sequence[Mapping[str, Any]] | None = None,
               meta: Mapping[str, Any] | None = None) -> Callable[[F], F]: ...

    def prompt(self, name: str | F | None = None, *, title: str | None = None,
               description: str | None = None,
               arguments: Sequence[Mapping[str, Any]] | None = None,
               icons: Sequence[Mapping[str, Any]] | None = None,
               meta: Mapping[str, Any] | None = None) -> Callable[[F], F] | F:
        """Register a prompt (``@server.prompt()`` or ``@server.prompt``); parameters
        without defaults become required arguments."""

        def register(fn: F) -> F:
            self.prompts.add(fn, name=None if callable(name) else name, title=title,
                             description=description, arguments=arguments, icons=icons,
                             meta=meta)
            return fn

        return register(name) if callable(name) else register

    def completion(self, *, prompt: str | None = None,
                   resource_template: str | None = None) -> Callable[[F], F]:
        """Register a completer ``fn(argument, value, context) -> list[str]``."""
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")

        def register(fn: F) -> F:
            if prompt is not None:
                self.completions.add("ref/prompt", prompt, fn)
            else:
                assert resource_template is not None
                self.completions.add("ref/resource", resource_template, fn)
            return fn

        return register

    def install(self, *, tools: ToolRegistry, resources: ResourceRegistry,
                prompts: PromptRegistry, completions: CompletionRegistry) -> list[ListKind]:
        """Replace the registries at once (a gateway's new catalog snapshot, built
        aside): requests that start afterwards see only the new ones, those in flight
        finish with what they found. Listeners hear of each list that changed; those
        lists are returned."""
        pairs: tuple[tuple[ListKind, Any, Any], ...] = (
            ("tools", self.tools, tools), ("resources", self.resources, resources),
            ("prompts", self.prompts, prompts))
        changed = [kind for kind, old, new in pairs if _listing(old) != _listing(new)]
        for registry in (self.tools, self.resources, self.prompts):
            registry.on_change = no_op
        self.tools, self.resources, self.prompts = tools, resources, prompts
        self.completions = completions
        self.tasks.tools = tools
        tools.on_change = lambda: self._announce("tools")
        resources.on_change = lambda: self._announce("resources")
        prompts.on_change = lambda: self._announce("prompts")
        self._features = {
            "tools": (tools.names,), "resources": (resources,), "prompts": (prompts,),
            "completions": (completions, prompts), "tasks": (self.tasks,)}
        for kind in changed:
            self._announce(kind)
        return changed

    def _announce(self, kind: ListKind) -> None:
        """A registry changed: tell listeners, if there can be any (a running loop).

        Registration at import time has no loop and no listeners, so nothing is sent.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self.notify_list_changed(kind))
        self._announcing.add(task)
        task.add_done_callback(self._announced)

    def _announced(self, task: asyncio.Task[None]) -> None:
        self._announcing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("announcing a list change failed: %s", task.exception())

    @property
    def subscriptions(self) -> SubscriptionHub:
        """Change events for subscriptions/listen; pass a RedisStore to reach listeners
        on every instance of a fleet. The tasks extension announces on the same hub
        (replacing it replaces it there too)."""
        return self._subscriptions

    @subscriptions.setter
    def subscriptions(self, hub: SubscriptionHub) -> None:
        self._subscriptions = self.tasks.hub = hub

    async def notify_list_changed(self, kind: ListKind) -> None:
        """Tell listeners that the tools, prompts or resources list changed."""
        await self.subscriptions.publish(Event(kind=kind))

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell listeners subscribed to ``uri`` (or a parent of it) that it changed."""
        await self.subscriptions.publish(Event(kind="updated", uri=uri))

    async def aclose(self) -> None:
        """End listen streams gracefully (each gets its result) and stop the tasks
        running here (they end ``failed``, saying the instance shut down)."""
        await self.subscriptions.close()
        await self.tasks.aclose()

    # -- what we advertise --------------------------------------------------------------
    def capabilities(self, version: str = MODERN) -> dict[str, Any]:
        """What the server advertises to a client speaking ``version``; extensions
        only where the revision defines them (the tasks extension: 2026-07-28)."""
        caps: dict[str, Any] = {}
        offered = self.offered
        if len(self.tools) or "tools" in offered:
            caps["tools"] = {"listChanged": True} if self.list_changed else {}
        if len(self.resources) or "resources" in offered:
            res: dict[str, Any] = {}
            if self.resource_subscribe:
                res["subscribe"] = True
            if self.list_changed:
                res["listChanged"] = True
            caps["resources"] = res
        if len(self.prompts) or "prompts" in offered:
            caps["prompts"] = {"listChanged": True} if self.list_changed else {}
        if len(self.completions) or len(self.prompts) or "completions" in offered:
            caps["completions"] = {}
        if self.logging_enabled:
            caps["logging"] = {}
        if (len(self.tasks) or "tasks" in offered) and version in TASK_VERSIONS:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    def offers(self, feature: Feature) -> bool:
        """Whether the methods of ``feature`` exist on this server (else -32601): any of
        its registries holds something (completions also exist for prompts), or it is
        in ``offered``."""
        # No generator frame: per request.
        return feature in self.offered or any(map(len, self._features[feature]))

    def params_type(self, method: str | None, name: str | None = None
                    ) -> type[Params] | None:
        """The Struct ``method``'s params decode into (``None``: no such route); for a
        ``tools/call`` of tool ``name`` (the ``Mcp-Name`` header) whose arguments only
        its handler reads, one that decodes them too (``ToolDef.direct_params``)."""
        route = self._routes.get(method) if method is not None else None
        if route is None:
            return None
        if name is not None and route.method == "tools/call" and self.policy is None:
            tool = self.tools.find(name)
            if tool is not None and tool.direct_params is not None:
                return tool.direct_params
        return route.params

    # -- the two doors -----------------------------------------------------------------
    def handle(
        self,
        request: Request,
        *,
        principal: Principal = ANONYMOUS,
        headers: Headers | None = None,
        sink: Sink | None = None,
        authorize: Authorize | None = None,
        params: Params | None = None,
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """Serve one self-contained request (``await`` it): the result object, or an
        ``McpError`` raised.

        ``headers`` (lower-cased names) is given by transports with a header layer
        (Streamable HTTP) and ``None`` otherwise (stdio: everything is in the body).
        ``authorize(method, name)`` (from auth middleware) runs once the call is decoded,
        before any handler. ``params``: the request's params already decoded into its
        route's Struct (``params_type``), by a transport that decoded the body in one pass
        (``jsonrpc.decode_request_as``); else they are decoded from ``request.params``.
        """
        # Not itself a coroutine: without an observer the caller awaits ``_handle``'s
        # own coroutine, one frame fewer per request; with one, ``_observed`` (the one
        # observer wrapper, ``dispatch`` uses it too) runs it.
        observer = self.observer
        if observer is None:
            return self._handle(request, principal, headers, sink, authorize, None, params)
        return _observed(observer, request.method, headers,
                         lambda seen: self._handle(request, principal, headers, sink,
                                                   authorize, seen, params),
                         _the_result)

    async def _handle(self, request: Request, principal: Principal, headers: Headers | None,
                      sink: Sink | None, authorize: Authorize | None,
                      seen: Observation | None, params: Any) -> dict[str, Any]:
        if headers is None:
            header_version = None
        else:
            raw_version = headers.get("mcp-protocol-version")
            if raw_version is None:
                # Name what we speak, so the client can tell what it should have sent
                # (streamable-http.mdx, "Protocol Version Header").
                raise HeaderMismatch("Missing required MCP-Protocol-Version header "
                                     f"(supported: {', '.join(self.supported_versions)})")
            header_version = raw_version.strip(" \t")
            if header_version not in self.supported_versions:
                raise UnsupportedProtocolVersion(header_version,
                                                 list(self.supported_versions))
        route = self._routes.get(request.method)
        problem: InvalidParams | None = None
        if params is None:
            if request.params is None:
                raise InvalidMeta("Missing params: every request must carry params._meta "
                                  f"with {meta_keys.PROTOCOL_VERSION} and "
                                  f"{meta_keys.CLIENT_CAPABILITIES}")
            if route is not None:
                try:
                    params = _decode(request.params, route.params)
                except InvalidParams as exc:
                    problem = exc
        elif route is None or not isinstance(params, route.params):
            raise UsageError(f"params for {request.method} must be a "
                             f"{route.params.__name__ if route else 'known method'}")
        # Unknown methods and rejected params still get the earlier checks first.
        checked = params if params is not None else _decode(request.params or b"{}",
                                                            LenientParams)
        meta = parse_request_meta(checked.meta)
        if header_version is None:
            if meta.protocol_version not in self.supported_versions:
                raise UnsupportedProtocolVersion(meta.protocol_version,
                                                 list(self.supported_versions))
        elif meta.protocol_version != header_version:
            raise HeaderMismatch(
                "MCP-Protocol-Version header does not match _meta protocolVersion")
        if headers is not None:
            _check_method_headers(request.method, route, checked, headers)
        route = self._route(request.method, route, meta.protocol_version)
        if problem is not None:
            raise problem
        if authorize is not None:
            authorize(request.method, params.name if route.name_field == "name" else None)
        ctx = Context(request.id, request.method, meta, principal, sink, self._retries)
        if seen is not None:
            seen.started(ctx)
        try:
            outcome = await route.serve(params, ctx, headers)
        finally:
            ctx.close()
        # The 2026-07-28 result, shaped here (its one place): ``resultType``, cache
        # hints when complete, and ``serverInfo`` in ``_meta`` (schema.json ``Result``).
        body = outcome.body
        body["resultType"] = outcome.result_type
        if outcome.cache is not None and outcome.result_type == "complete":
            outcome.cache.apply(body)
        if self._result_meta is not None:
            existing = body.get("_meta")
            body["_meta"] = ({**existing, **self._result_meta} if isinstance(existing, dict)
                             else self._result_meta)
        return body

    async def dispatch(
        self,
        request: Request,
        *,
        meta: RequestMeta,
        inputs: InputStrategy,
        principal: Principal = ANONYMOUS,
        sink: Sink | None = None,
    ) -> Outcome:
        """Serve a request whose revision and client capabilities (``meta``) the caller
        already knows; handlers that ask the client go through ``inputs``.

        No ``_meta`` or header checks: absent params are an empty object, and only the
        request's own ``_meta.progressToken`` is read from it. Returns the unshaped
        ``Outcome``; a method the revision in ``meta`` lacks is -32601.
        """
        route = self._route(request.method, self._routes.get(request.method),
                            meta.protocol_version)
        params = _decode(request.params if request.params is not None else b"{}",
                         route.params)
        token = _progress_token(params.meta)
        if token is not None:
            meta = msgspec.structs.replace(meta, progress_token=token)
        ctx = Context(request.id, request.method, meta, principal, sink, inputs)
        observer = self.observer
        if observer is None:
            try:
                return await route.serve(params, ctx, None)
            finally:
                ctx.close()

        async def served(seen: Observation) -> Outcome:
            seen.started(ctx)
            try:
                return await route.serve(params, ctx, None)
            finally:
                ctx.close()

        return await _observed(observer, request.method, None, served, _outcome_summary)

    def _route(self, method: str, route: Route | None, version: str) -> Route:
        if route is None or version not in route.versions:
            raise MethodNotFound.for_method(method)
        if route.feature is not None and not self.offers(route.feature):
            raise MethodNotFound(f"Method not found: {method} (capability "
                                 f"{route.feature!r} is not offered)")
        return route

    # -- routes -------------------------------------------------------------------------
    async def _discover(self, params: Params, ctx: Context, headers: Headers | None
                        ) -> Outcome:
        body: dict[str, Any] = {
            "supportedVersions": list(self.supported_versions),
            "capabilities": self.capabilities(),
        }
        if self.instructions:
            body["instructions"] = self.instructions
        return Outcome(body, cache=self.discover_cache)

    def _page(self, params: PaginatedParams, items: Sequence[dict[str, Any]], kind: str,
              key: str, ctx: Context, cache: CacheHint | None = None) -> Outcome:
        page, next_cursor = paginate(items, params.cursor, kind, self.page_size,
                                     self.cursors, ctx.principal.key)
        body: dict[str, Any] = {key: list(page)}
        if next_cursor is not None:
            body["nextCursor"] = next_cursor
        return Outcome(body, cache=cache or self.list_cache)

    async def _list_tools(self, params: PaginatedParams, ctx: Context,
                          headers: Headers | None) -> Outcome:
        policy = self.policy
        if policy is not None and policy.filters("tools/list"):
            return self._filtered(params, policy, ctx, [(t, t.wire) for t in
                                                        self.tools.listed()], "tools")
        return self._page(params, self.tools.published(), "tools", "tools", ctx)

    def visible_tools(self, principal: Principal,
                      tools: Sequence[ToolDef] | None = None) -> Sequence[ToolDef]:
        """Those of ``tools`` (default: every listed tool, in ``tools/list``'s order)
        that ``principal``'s ``tools/list`` shows: when the policy filters the list, the
        tools it never lets this principal call are left out (the same test as
        ``tools/list``'s; a gateway's ``search_tools`` finds nothing else)."""
        tools = self.tools.listed() if tools is None else tools
        policy = self.policy
        if policy is None or not policy.filters("tools/list"):
            return tools
        shows = _shows(policy, principal, "tools")
        return [tool for tool in tools if shows(tool)]

    def _filtered(self, params: PaginatedParams, policy: Policy, ctx: Context,
                  items: Sequence[tuple[Any, dict[str, Any]]], kind: str,
                  key: str | None = None) -> Outcome:
        """A page of the list of ``kind`` as this principal may see it: the entries a
        policy never lets it call left out (``Policy.visible``). ``items``: each
        registry entry with its listed definition."""
        shows = _shows(policy, ctx.principal, kind)
        visible = [wire for entry, wire in items if shows(entry)]
        # A list that depends on who asks is never shareable (caching.mdx).
        return self._page(params, visible, kind, key or kind, ctx,
                          CacheHint(self.list_cache.ttl_ms, "private"))

    async def _list_resources(self, params: PaginatedParams, ctx: Context,
                              headers: Headers | None) -> Outcome:
        policy = self.policy
        if policy is not None and policy.filters("resources/list"):
            return self._filtered(params, policy, ctx, self.resources.entries(),
                                  "resources")
        return self._page(params, self.resources.published(), "resources", "resources", ctx)

    async def _list_templates(self, params: PaginatedParams, ctx: Context,
                              headers: Headers | None) -> Outcome:
        policy = self.policy
        if policy is not None and policy.filters("resources/templates/list"):
            return self._filtered(params, policy, ctx, self.resources.entries(templates=True),
                                  "templates", "resourceTemplates")
        return self._page(params, self.resources.published_templates(), "templates",
                          "resourceTemplates", ctx)

    async def _list_prompts(self, params: PaginatedParams, ctx: Context,
                            headers: Headers | None) -> Outcome:
        policy = self.policy
        if policy is not None and policy.filters("prompts/list"):
            return self._filtered(params, policy, ctx, self.prompts.entries(), "prompts")
        return self._page(params, self.prompts.published(), "prompts", "prompts", ctx)

    def _gate(self, ctx: Context, name: str, arguments: Mapping[str, Any]) -> CallGate:
        """The gate of one routed call that names a target (``name``): the policy's
        ``Gate`` when the policy gates ``ctx.method`` (``Policy.methods``), else
        ``OPEN_GATE``. Every routed method goes through here and nowhere else."""
        policy = self.policy
        if policy is None or not policy.gates(ctx.method):
            return OPEN_GATE
        return policy.begin(ctx, name, arguments)

    async def _call_tool(self, params: CallToolParams, ctx: Context,
                         headers: Headers | None) -> Outcome:
        """Every ``tools/call``, in named steps (docs/policy.md, docs/tasks.md):

        1. find the tool (one look-up) and open the call's gate: the policy's ``Gate``,
           or ``OPEN_GATE`` without a policy (``mcpcore.call_gate``);
        2. check the tool exists and its ``Mcp-Param-*`` headers;
        3. ``gate.guard``: tenant, rules, scopes (``CallDenied``: a tool error), and
           the round the gate runs (confirmation, rate limit) around ``_tool_round``,
           the handler's round (arguments → handler under its timeout → result);
        4. that round as an MRTR round (``ctx.inputs``) or a task's work (``tasks``);
        5. ``gate.finish``/``gate.fail``: one audit event, whatever happens (a call that
           became a task has a second when the task ends).

        ``OPEN_GATE``'s ``guard`` and ``finish`` do nothing, so they are skipped when the
        gate is it (an identity test, cheaper than the call); its ``timeouts`` and
        ``fail`` are asked like any gate's.
        """
        found = self.tools.find(params.name)  # one look-up (nothing awaits until used)
        arguments = Arguments.of(params.arguments, found)
        ctx.target = params.name
        # Without a policy, the open gate without a Python call (``_gate``'s answer
        # then; a plain call pays for no step it does not take: docs/performance.md).
        gate = (OPEN_GATE if self.policy is None
                else self._gate(ctx, params.name, arguments.mapping()))
        try:
            tool = found if found is not None else self.tools.get(params.name)  # -32602
            if headers is not None and tool.header_params:
                _check_header_params(tool, arguments.mapping(), headers)
            # The handler's round, bound to this call (a partial of the named step: no
            # closure factory to call).
            run: Handler = functools.partial(self._tool_round, tool, arguments, ctx, gate)
            try:
                if gate is not OPEN_GATE:  # the open gate's guard hands ``run`` back
                    run = gate.guard(tool, run)
            except CallDenied as denied:
                outcome = Outcome(denied.result)
            else:
                # The round as this call runs it: through the request's input strategy
                # (MRTR), or, for a tool registered for tasks, as the tasks extension
                # decides.
                outcome = await (ctx.inputs.run(ctx, params, run) if tool.task == "never"
                                 else self.tasks.call_tool(ctx, params, tool, run, gate))
        except BaseException as exc:
            gate.fail(exc)
            raise
        if gate is not OPEN_GATE:  # the open gate's finish records nothing
            gate.finish(outcome)
        return outcome

    async def _tool_round(self, tool: ToolDef, arguments: Arguments, ctx: Context,
                          gate: CallGate) -> dict[str, Any]:
        """One run of the tool's handler, as a round (MRTR runs it again on a retry):
        arguments → handler (under its timeout) → ``CallToolResult``. A failure of the
        tool is a tool error (``isError``), never a JSON-RPC error."""
        if tool.raw is not None:
            # A definition given as JSON: its handler takes the arguments as sent and
            # returns the CallToolResult as is (ToolRegistry.add_raw).
            work: Awaitable[Any] = tool.raw(arguments.mapping(), ctx)
        else:
            kwargs, problem = tool.bind(arguments)
            if kwargs is None:
                return error_result(problem or "Invalid arguments")
            work = invoke(tool.fn, tool.signature, kwargs, ctx)
        seconds = gate.timeouts.get(tool.name, self.tool_timeout)
        if seconds is not None:
            work = _within(seconds, work)
        try:
            value = await work
        except ToolTimeout:
            # Cancelled: the caller gets a tool error now, never a hung request; the
            # audit event and the metrics say "timeout".
            assert seconds is not None
            log.warning("tool %s overran its %g s timeout", tool.name, seconds)
            gate.timed_out(seconds)
            observe.note_timeout(tool.name, seconds)
            return error_result(f"Tool {tool.name} did not finish within "
                                f"{seconds:g} seconds")
        except ToolError as exc:
            return error_result(exc.message, exc.content)
        except (McpError, InputRequired, AnsweredWith):
            raise
        except Exception:
            # A failure inside the tool: the model sees that the call failed (isError),
            # the operator sees the traceback, the wire sees no internals (tools.mdx,
            # "Error Handling").
            log.exception("tool %s failed", tool.name)
            return error_result(f"Tool {tool.name} failed with an internal error")
        return value if tool.raw is not None else tool_result(tool, value)

    async def _read_resource(self, params: ReadResourceParams, ctx: Context,
                             headers: Headers | None) -> Outcome:
        ctx.target = params.uri
        gate = self._gate(ctx, params.uri, _NO_ARGUMENTS)
        try:
            resource, variables = self.resources.resolve(params.uri)
            signature = resource.signature
            raw = resource.raw

            async def run() -> dict[str, Any]:
                if raw is not None:  # ResourceRegistry.add_raw: its result as is
                    return await raw(params.uri, ctx)
                kwargs = {k: v for k, v in variables.items()
                          if k in signature.arg_names or signature.var_keyword}
                value = await invoke(resource.fn, signature, kwargs, ctx)
                return {"contents": read_contents(resource, params.uri, value)}

            outcome = await ctx.inputs.run(ctx, params, gate.guard(resource, run))
        except BaseException as exc:
            gate.fail(exc)
            raise
        outcome.cache = resource.cache or self.read_cache
        gate.finish(outcome)
        return outcome

    async def _get_prompt(self, params: GetPromptParams, ctx: Context,
                          headers: Headers | None) -> Outcome:
        ctx.target = params.name
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        gate = self._gate(ctx, params.name, arguments)
        try:
            prompt = self.prompts.get(params.name)
            kwargs = prompt.check_arguments(arguments)

            async def run() -> dict[str, Any]:
                if prompt.raw is not None:  # PromptRegistry.add_raw: its result as is
                    return await prompt.raw(dict(kwargs), ctx)
                value = await invoke(prompt.fn, prompt.signature, dict(kwargs), ctx)
                return dict(prompt_result(value, prompt.description))

            outcome = await ctx.inputs.run(ctx, params, gate.guard(prompt, run))
        except BaseException as exc:
            gate.fail(exc)
            raise
        gate.finish(outcome)
        return outcome

    # -- the tasks extension's methods (docs/tasks.md) -------------------------------------
    async def _get_task(self, params: TaskParams, ctx: Context, headers: Headers | None
                        ) -> Outcome:
        return await self._task_request(self.tasks.get, params, ctx, headers)

    async def _update_task(self, params: UpdateTaskParams, ctx: Context,
                           headers: Headers | None) -> Outcome:
        return await self._task_request(self.tasks.update, params, ctx, headers)

    async def _cancel_task(self, params: TaskParams, ctx: Context, headers: Headers | None
                           ) -> Outcome:
        return await self._task_request(self.tasks.cancel, params, ctx, headers)

    async def _task_request(self, method: Serve, params: TaskParams, ctx: Context,
                            headers: Headers | None) -> Outcome:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel``: answered by the tasks
        extension (``self.tasks``: the engine's own, or a gateway's, which relays its
        upstreams' tasks), through the gate (``_gate``) when the extension names the
        task's target (a gateway: the tool whose call made the task; the engine's own
        tasks name none: each is its caller's alone, and its call was gated)."""
        ctx.target = params.task_id
        target = await self.tasks.target(params.task_id, ctx)
        if target is None:
            return await method(params, ctx, headers)
        gate = self._gate(ctx, target.name, _NO_ARGUMENTS)
        try:
            async def run() -> dict[str, Any]:
                return (await method(params, ctx, headers)).body

            outcome = Outcome(await gate.guard(target, run)())
        except BaseException as exc:
            gate.fail(exc)
            raise
        gate.finish(outcome)
        return outcome

    async def _listen(self, params: ListenParams, ctx: Context, headers: Headers | None
                      ) -> Outcome:
        task_ids = params.notifications.task_ids
        # -32021 for taskIds without the extension comes before any stream check.
        watch = self.tasks.watch(ctx, task_ids) if task_ids is not None else None
        return Outcome(await self.subscriptions.listen(params, ctx, self.capabilities(),
                                                       watch, self._gate_subscription))

    async def subscribe(self, ctx: Context, uris: Iterable[str]) -> list[str]:
        """Hold ``uris`` for ``ctx``'s listener (a 2025 session's ``resources/subscribe``;
        a listen stream's ``resourceSubscriptions`` comes here through ``_listen``):
        each through the policy's gate, then the hub's ``interest``. The URIs held, for
        ``subscriptions.release``; all or nothing."""
        return await self.subscriptions.acquire(uris, ctx, self._gate_subscription)

    async def _gate_subscription(self, ctx: Context, uri: str,
                                 acquire: Callable[[], Awaitable[None]]) -> None:
        """One resource subscription through the one seam (``_gate``), judged as a read
        of ``uri`` (``policy.gate.SUBSCRIBING``): one audit event naming the URI and its
        upstream. No round runs around it, so a confirm rule denies it (unless
        ``autonomous``); a denial is ``PolicyDenied``, a URI no resource serves "not
        found". Without a policy that gates reads, ``acquire`` runs as it is."""
        # Its own context: each URI of a listen is its own decision (and rate count).
        ctx = Context(ctx.request_id, ctx.method, ctx.meta, ctx.principal)
        ctx.target = uri
        gate = self._gate(ctx, uri, _NO_ARGUMENTS)
        if gate is OPEN_GATE:
            await acquire()
            return
        try:
            resource = self.resources.resolve(uri)[0]  # ResourceNotFound

            async def hold() -> dict[str, Any]:
                await acquire()
                return {}

            outcome = Outcome(await gate.guard(resource, hold)())
        except BaseException as exc:
            gate.fail(exc)
            raise
        gate.finish(outcome)

    async def _complete(self, params: CompleteParams, ctx: Context,
                        headers: Headers | None) -> Outcome:
        ref = params.ref
        target: str = ref.name or ref.uri or ""
        ctx.target = target
        gate = self._gate(ctx, target, {params.argument.name: params.argument.value})
        try:
            values = await self._completion(params, gate, ctx)
        except BaseException as exc:
            gate.fail(exc)
            raise
        completion: dict[str, Any] = {"values": values[:100]}
        if len(values) > 100:
            completion["total"] = len(values)
            completion["hasMore"] = True
        outcome = Outcome({"completion": completion})
        gate.finish(outcome)
        return outcome

    async def _completion(self, params: CompleteParams, gate: CallGate,
                          ctx: Context) -> list[str]:
        """The completer's values for ``params.ref``, once the gate lets the request
        through (its target: the prompt, or the template; no MRTR round runs here, so a
        confirm rule denies unless it is ``autonomous``). A completer that takes a
        ``Context`` gets ``ctx`` (``CompletionRegistry``)."""
        ref = params.ref
        entry: Any
        if ref.type == "ref/prompt":
            if ref.name is None:
                raise InvalidParams("ref/prompt needs a name")
            entry = self.prompts.get(ref.name)  # unknown prompt → -32602
            key = ref.name
        elif ref.type == "ref/resource":
            if ref.uri is None:
                raise InvalidParams("ref/resource needs a uri")
            entry = self.resources.template(ref.uri)
            key = ref.uri
        else:
            raise InvalidParams(f"Unknown completion reference type {ref.type!r}")
        completions = self.completions
        completer: Completer | None = completions.get(ref.type, key)

        async def run() -> dict[str, Any]:
            values: list[str] = []
            if completer is not None:
                context_args = ((params.context.arguments or {})
                                if params.context is not UNSET else {})
                out = completions.call(ref.type, key, params.argument.name,
                                       params.argument.value, context_args, ctx)
                if isinstance(out, Awaitable):
                    out = await out
                values = [str(v) for v in out]
            return {"values": values}

        if entry is None and gate is not OPEN_GATE:
            # A template nobody registered: the strictest target (destructive, external).
            from mcpcore.policy.engine import ToolPolicy

            entry = ToolPolicy(ref.uri or "")
        result = await gate.guard(entry, run)()
        return list(result["values"])


#: A read names no arguments (the policy's argument digest is over an empty object).
_NO_ARGUMENTS: Mapping[str, Any] = {}


#: The list request of each kind of list entry.
_LISTINGS: dict[str, str] = {"tools": "tools/list", "resources": "resources/list",
                             "templates": "resources/templates/list",
                             "prompts": "prompts/list"}


def _shows(policy: Policy, principal: Principal, kind: str) -> Callable[[Any], bool]:
    """Whether a registry entry of ``kind`` belongs in ``principal``'s filtered list
    (``Policy.visible``): the one test every filtered list, and ``visible_tools``, use."""
    listing = _LISTINGS[kind]
    return lambda entry: policy.visible(principal, _target(entry, kind), listing)


def _target(entry: Any, kind: str) -> Any:
    """A list entry as the policy knows it: a resource by its URI (a template by its URI
    template), anything else by its name."""
    from mcpcore.policy.engine import ToolPolicy  # only a server with a policy gets here

    if kind in ("resources", "templates"):
        return ToolPolicy(entry.uri, entry.category, entry.external, entry.required_scopes,
                          entry.upstream)
    return entry


async def _observed(observer: Observer, method: str, headers: Headers | None,
                    serve: Callable[[Observation], Awaitable[R]],
                    report: Callable[[R], Mapping[str, Any]]) -> R:
    """``serve`` one request watched by ``observer``: begun, current while it runs
    (``observe.CURRENT``), and finished once with ``report(result)`` or the error.
    ``serve`` calls ``started(ctx)`` once the request's context exists."""
    seen = observer.begin(method, headers)
    mark = observe.CURRENT.set(seen)
    try:
        result = await serve(seen)
    except BaseException as exc:
        seen.finished(None, exc)
        raise
    finally:
        observe.CURRENT.reset(mark)
    seen.finished(report(result), None)
    return result


def _the_result(result: dict[str, Any]) -> Mapping[str, Any]:
    """What an observer is told of a shaped result: the result itself."""
    return result


def _outcome_summary(outcome: Outcome) -> Mapping[str, Any]:
    """What an observer is told of an unshaped ``Outcome`` (``dispatch``): its result
    type and whether it is a tool error."""
    return {"resultType": outcome.result_type, "isError": outcome.body.get("isError") is True}


class ToolTimeout(Exception):
    """A tool handler overran its timeout (caught in ``_call_tool``, never sent)."""


async def _within(seconds: float, work: Awaitable[Any]) -> Any:
    """``await work``, cancelled after ``seconds``: then ``ToolTimeout``. A
    ``TimeoutError`` the handler raises itself is not ours and passes through."""
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await work
    except TimeoutError:
        if deadline.expired():
            raise ToolTimeout from None
        raise


def _listing(registry: ToolRegistry | ResourceRegistry | PromptRegistry
             ) -> list[dict[str, Any]]:
    """What a registry publishes (templates too): equal listings, no list change."""
    if isinstance(registry, ResourceRegistry):
        return [*registry.published(), *registry.published_templates()]
    return registry.published()


def _needs_uri(decorator: str, uri: object) -> None:
    if not isinstance(uri, str):
        raise UsageError(f"@server.{decorator} needs the URI first: "
                         f'@server.{decorator}("scheme://...")')


def _progress_token(meta: Any) -> str | int | None:
    token = meta.get(meta_keys.PROGRESS_TOKEN) if isinstance(meta, dict) else None
    if isinstance(token, (str, int)) and not isinstance(token, bool):
        return token
    return None


def _check_header_params(tool: ToolDef, arguments: Mapping[str, Any], headers: Headers) -> None:
    mismatch = header_param_mismatch(tool.header_params, arguments, headers)
    if mismatch is not None:
        raise HeaderMismatch(mismatch)


@functools.lru_cache(maxsize=1024)
def _name_value(header: str) -> str:
    """``decode_header_value`` of an ``Mcp-Name`` header: clients name the same few tools
    over and over, so each value is decoded once (an invalid one raises every time)."""
    return decode_header_value(header)


def _check_method_headers(method: str, route: Route | None, params: Any,
                          headers: Headers) -> None:
    """``Mcp-Method`` must equal the body method; ``Mcp-Name`` the primitive's name."""
    header_method = headers.get("mcp-method")
    if header_method is None:
        raise HeaderMismatch("Missing required Mcp-Method header")
    if header_method.strip(" \t") != method:
        raise HeaderMismatch("Mcp-Method header does not match the request body method")
    field = route.name_field if route is not None else None
    if field is None:
        return
    header_name = headers.get("mcp-name")
    if header_name is None:
        raise HeaderMismatch("Missing required Mcp-Name header")
    try:
        value = _name_value(header_name)
    except HeaderValueError as exc:
        raise HeaderMismatch(f"Invalid Mcp-Name header: {exc}") from None
    if value != getattr(params, field):
        raise HeaderMismatch(f"Mcp-Name header does not match params.{field}")


__all__ = ["Route", "Server"]
