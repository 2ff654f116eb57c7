"""The engine: registries plus dispatch. The only entry point a transport calls.

``Server.handle`` takes one decoded request plus what the transport knows (principal,
request headers if it has a header layer, a sink for request-scoped notifications) and
returns the result object, or raises an ``McpError``. It validates in the order the spec
and the official suite expect (core R5.16):

    version header present → header version supported → ``_meta`` valid → header equals
    ``_meta`` → ``Mcp-Method``/``Mcp-Name`` → method known and advertised → params →
    tool lookup → ``Mcp-Param-*`` → client capabilities (inside handlers)

Imports msgspec and mcpcore modules only: no sockets, no Starlette.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from mcpcore import meta as meta_keys
from mcpcore.context import Context, Sink
from mcpcore.errors import (
    HeaderMismatch,
    InvalidMeta,
    InvalidParams,
    McpError,
    MethodNotFound,
    UnsupportedProtocolVersion,
)
from mcpcore.headers import HeaderValueError, decode_header_value, header_param_mismatch
from mcpcore.jsonrpc import Request, decode_params
from mcpcore.meta import RequestMeta, parse_request_meta
from mcpcore.mrtr import InputBridge, InputRequired, MrtrConfig, run_bridged, run_with_input
from mcpcore.pagination import CacheHint, paginate
from mcpcore.principal import ANONYMOUS, Principal
from mcpcore.prompts import Completer, CompletionRegistry, PromptRegistry, prompt_result
from mcpcore.resources import ResourceRegistry, read_contents
from mcpcore.signatures import Handler
from mcpcore.stores.base import Store
from mcpcore.subscriptions import Event, ListKind, SubscriptionHub
from mcpcore.tools import Category, ToolDef, ToolError, ToolRegistry, error_result, tool_result
from mcpcore.versions import MODERN

if TYPE_CHECKING:
    from mcpcore.policy import Policy

log = logging.getLogger("mcpcore.server")

F = TypeVar("F", bound=Handler)

#: Default cache hints (configurable per server and per resource). Discovery and lists
#: hold no user data by default; resource contents may, so reads default to private.
DISCOVER_CACHE = CacheHint(ttl_ms=3_600_000, scope="public")
LIST_CACHE = CacheHint(ttl_ms=60_000, scope="public")
READ_CACHE = CacheHint(ttl_ms=0, scope="private")

#: Methods legacy sessions do not have (they negotiate with initialize, listen with GET).
MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})

#: Methods that name a primitive in ``Mcp-Name`` and the params field it must equal.
NAME_FIELDS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


# -- params, decoded once the method is known (unknown fields are ignored) ---------------
class _Envelope(msgspec.Struct):
    _meta: Any = None
    name: Any = None
    uri: Any = None


class _Paginated(msgspec.Struct):
    cursor: str | None = None


class _CallTool(msgspec.Struct, rename="camel"):
    name: str
    arguments: dict[str, Any] | None = None
    input_responses: Any = UNSET
    request_state: Any = UNSET


class _ReadResource(msgspec.Struct, rename="camel"):
    uri: str
    input_responses: Any = UNSET
    request_state: Any = UNSET


class _GetPrompt(msgspec.Struct, rename="camel"):
    name: str
    arguments: dict[str, Any] | None = None
    input_responses: Any = UNSET
    request_state: Any = UNSET


class _Ref(msgspec.Struct):
    type: str
    name: str | None = None
    uri: str | None = None


class _Argument(msgspec.Struct):
    name: str
    value: str


class _CompletionContext(msgspec.Struct):
    arguments: dict[str, str] | None = None


class _Complete(msgspec.Struct):
    ref: _Ref
    argument: _Argument
    context: _CompletionContext | UnsetType = UNSET


Route = Callable[[Request, Context, "Mapping[str, str] | None"], Awaitable[dict[str, Any]]]


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
        self.mrtr = mrtr or MrtrConfig.development()
        #: Gates tools/call (and may filter tools/list); None: no gating at all.
        self.policy = policy
        self.tools = ToolRegistry()
        self.resources = ResourceRegistry()
        self.prompts = PromptRegistry()
        self.tools.on_change = lambda: self._announce("tools")
        self.resources.on_change = lambda: self._announce("resources")
        self.prompts.on_change = lambda: self._announce("prompts")
        self._announcing: set[asyncio.Task[None]] = set()
        self.completions = CompletionRegistry()
        self.supported_versions: tuple[str, ...] = (MODERN,)
        #: Change events for subscriptions/listen; pass a RedisStore to reach listeners
        #: on every instance of a fleet.
        self.subscriptions = SubscriptionHub(store)
        self.list_changed = True
        self.resource_subscribe = True
        info: dict[str, Any] = {"name": name, "version": version}
        if title:
            info["title"] = title
        self.server_info = info
        self._result_meta: dict[str, Any] | None = (
            {meta_keys.SERVER_INFO: info} if server_info_in_results else None
        )
        self._routes: dict[str, Route] = {
            "server/discover": self._discover,
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
            "subscriptions/listen": self._listen,
        }
        self._features: dict[str, str] = {
            "tools/list": "tools", "tools/call": "tools",
            "resources/list": "resources", "resources/templates/list": "resources",
            "resources/read": "resources", "prompts/list": "prompts",
            "prompts/get": "prompts", "completion/complete": "completions",
        }
        self._extra_routes: dict[str, Route] = {}

    # -- registration (decorators) ----------------------------------------------------
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
    ) -> Callable[[F], F]:
        """Register a tool. The schema comes from type hints unless ``input_schema`` is
        given; the description from the docstring unless ``description`` is given.

        ``category``, ``external`` and ``required_scopes`` feed the policy layer
        (docs/policy.md); unset, the category and flag come from ``annotations``."""

        def register(fn: F) -> F:
            self.tools.add(fn, name=name, title=title, description=description,
                           input_schema=input_schema, output_schema=output_schema,
                           annotations=annotations, icons=icons, meta=meta,
                           category=category, external=external,
                           required_scopes=required_scopes)
            return fn

        return register

    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None,
                 size: int | None = None, annotations: Mapping[str, Any] | None = None,
                 icons: Sequence[Mapping[str, Any]] | None = None,
                 meta: Mapping[str, Any] | None = None,
                 cache: CacheHint | None = None) -> Callable[[F], F]:
        """Register a resource with a fixed URI; the function returns its contents."""

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

        def register(fn: F) -> F:
            self.resources.add(fn, uri_template, template=True, name=name, title=title,
                               description=description, mime_type=mime_type,
                               annotations=annotations, icons=icons, meta=meta, cache=cache)
            return fn

        return register

    def prompt(self, name: str | None = None, *, title: str | None = None,
               description: str | None = None,
               arguments: Sequence[Mapping[str, Any]] | None = None,
               icons: Sequence[Mapping[str, Any]] | None = None,
               meta: Mapping[str, Any] | None = None) -> Callable[[F], F]:
        """Register a prompt; parameters without defaults become required arguments."""

        def register(fn: F) -> F:
            self.prompts.add(fn, name=name, title=title, description=description,
                             arguments=arguments, icons=icons, meta=meta)
            return fn

        return register

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

    async def notify_list_changed(self, kind: ListKind) -> None:
        """Tell listeners that the tools, prompts or resources list changed."""
        await self.subscriptions.publish(Event(kind=kind))

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell listeners subscribed to ``uri`` (or a parent of it) that it changed."""
        await self.subscriptions.publish(Event(kind="updated", uri=uri))

    async def aclose(self) -> None:
        """End listen streams gracefully (each gets its result) and release the store."""
        await self.subscriptions.close()

    def add_route(self, method: str, route: Route) -> None:
        """Serve an extra request method (used by mcpcore.subscriptions and extensions)."""
        self._extra_routes[method] = route

    # -- what we advertise --------------------------------------------------------------
    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {}
        if len(self.tools):
            caps["tools"] = {"listChanged": True} if self.list_changed else {}
        if len(self.resources):
            res: dict[str, Any] = {}
            if self.resource_subscribe:
                res["subscribe"] = True
            if self.list_changed:
                res["listChanged"] = True
            caps["resources"] = res
        if len(self.prompts):
            caps["prompts"] = {"listChanged": True} if self.list_changed else {}
        if len(self.completions) or len(self.prompts):
            caps["completions"] = {}
        if self.logging_enabled:
            caps["logging"] = {}
        return caps

    def _enabled(self, feature: str) -> bool:
        if feature == "tools":
            return len(self.tools) > 0
        if feature == "resources":
            return len(self.resources) > 0
        if feature == "prompts":
            return len(self.prompts) > 0
        return len(self.completions) > 0 or len(self.prompts) > 0

    def result(self, body: dict[str, Any], result_type: str = "complete") -> dict[str, Any]:
        """Stamp ``resultType`` and ``serverInfo`` on a result (R1.4, R2.7)."""
        body["resultType"] = result_type
        if self._result_meta is not None:
            existing = body.get("_meta")
            body["_meta"] = ({**existing, **self._result_meta} if isinstance(existing, dict)
                             else self._result_meta)
        return body

    # -- dispatch ----------------------------------------------------------------------
    def route_for(self, method: str) -> Route:
        route = self._routes.get(method)
        if route is not None:
            feature = self._features.get(method)
            if feature is None or self._enabled(feature):
                return route
            raise MethodNotFound(f"Method not found: {method} (capability "
                                 f"{feature!r} is not offered)")
        extra = self._extra_routes.get(method)
        if extra is None:
            raise MethodNotFound.for_method(method)
        return extra

    def check_request(self, request: Request, headers: Mapping[str, str] | None
                      ) -> RequestMeta:
        """Validate version, ``_meta`` and standard headers, in the spec's order."""
        header_version: str | None = None
        if headers is not None:
            raw_version = headers.get("mcp-protocol-version")
            if raw_version is None:
                # Name what we speak: a legacy client that landed here learns to start
                # with initialize (R4.5, R4.6 step 4).
                raise HeaderMismatch(
                    "Missing required MCP-Protocol-Version header (supported: "
                    f"{', '.join(self.supported_versions)}; 2025-era clients start with "
                    "initialize)")
            header_version = raw_version.strip(" \t")
            if header_version not in self.supported_versions:
                raise UnsupportedProtocolVersion(header_version, list(self.supported_versions))
        if request.params is None:
            raise InvalidMeta("Missing params: every request must carry params._meta with "
                              f"{meta_keys.PROTOCOL_VERSION} and "
                              f"{meta_keys.CLIENT_CAPABILITIES}")
        envelope = decode_params(request.params, _Envelope)
        meta = parse_request_meta(envelope._meta)
        if header_version is None:
            if meta.protocol_version not in self.supported_versions:
                raise UnsupportedProtocolVersion(meta.protocol_version,
                                                 list(self.supported_versions))
        elif meta.protocol_version != header_version:
            raise HeaderMismatch(
                "MCP-Protocol-Version header does not match _meta protocolVersion"
            )
        if headers is not None:
            _check_method_headers(request.method, envelope, headers)
        return meta

    async def handle(
        self,
        request: Request,
        *,
        principal: Principal = ANONYMOUS,
        headers: Mapping[str, str] | None = None,
        sink: Sink | None = None,
    ) -> dict[str, Any]:
        """Serve one modern request: the result object, or an ``McpError`` raised.

        ``headers`` (lower-cased names) is given by transports with a header layer
        (Streamable HTTP) and ``None`` otherwise (stdio: everything is in the body).
        """
        meta = self.check_request(request, headers)
        route = self.route_for(request.method)
        ctx = Context(request_id=request.id, method=request.method, meta=meta,
                      principal=principal, sink=sink)
        try:
            return await route(request, ctx, headers)
        finally:
            ctx.close()

    async def handle_legacy(
        self,
        request: Request,
        *,
        meta: RequestMeta,
        principal: Principal = ANONYMOUS,
        sink: Sink | None = None,
        bridge: InputBridge | None = None,
    ) -> dict[str, Any]:
        """Serve one request of a legacy session (the shim supplies ``meta`` from the
        session). Methods that exist only in the modern era are -32601 here."""
        if request.method in MODERN_ONLY:
            raise MethodNotFound.for_method(request.method)
        route = self.route_for(request.method)
        if request.params is None:  # params are optional in the legacy era
            request = Request(request.id, request.method, msgspec.Raw(b"{}"))
        ctx = Context(request_id=request.id, method=request.method, meta=meta,
                      principal=principal, sink=sink)
        ctx.bridge = bridge
        try:
            return await route(request, ctx, None)
        finally:
            ctx.close()

    # -- routes -------------------------------------------------------------------------
    async def _discover(self, request: Request, ctx: Context,
                        headers: Mapping[str, str] | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "supportedVersions": list(self.supported_versions),
            "capabilities": self.capabilities(),
        }
        if self.instructions:
            body["instructions"] = self.instructions
        self.discover_cache.apply(body)
        return self.result(body)

    async def _list(self, request: Request, items: Sequence[dict[str, Any]], kind: str,
                    key: str, cache: CacheHint | None = None) -> dict[str, Any]:
        params = decode_params(request.params, _Paginated)
        page, next_cursor = paginate(items, params.cursor, kind, self.page_size)
        body: dict[str, Any] = {key: list(page)}
        if next_cursor is not None:
            body["nextCursor"] = next_cursor
        (cache or self.list_cache).apply(body)
        return self.result(body)

    async def _list_tools(self, request: Request, ctx: Context,
                          headers: Mapping[str, str] | None) -> dict[str, Any]:
        policy = self.policy
        if policy is not None and policy.filter_tools_list:
            # Per-principal lists are never shareable (5.15, caching.mdx).
            visible = [t.wire for t in self.tools.all() if policy.visible(ctx.principal, t)]
            return await self._list(request, visible, "tools", "tools",
                                    CacheHint(self.list_cache.ttl_ms, "private"))
        return await self._list(request, self.tools.published(), "tools", "tools")

    async def _list_resources(self, request: Request, ctx: Context,
                              headers: Mapping[str, str] | None) -> dict[str, Any]:
        return await self._list(request, self.resources.published(), "resources",
                                "resources")

    async def _list_templates(self, request: Request, ctx: Context,
                              headers: Mapping[str, str] | None) -> dict[str, Any]:
        return await self._list(request, self.resources.published_templates(), "templates",
                                "resourceTemplates")

    async def _list_prompts(self, request: Request, ctx: Context,
                            headers: Mapping[str, str] | None) -> dict[str, Any]:
        return await self._list(request, self.prompts.published(), "prompts", "prompts")

    async def _call_tool(self, request: Request, ctx: Context,
                         headers: Mapping[str, str] | None) -> dict[str, Any]:
        params = decode_params(request.params, _CallTool)
        if self.policy is not None:
            return await self._call_tool_gated(self.policy, request, ctx, params, headers)
        tool = self.tools.get(params.name)
        arguments = params.arguments if params.arguments is not None else {}
        if headers is not None and tool.header_params:
            _check_header_params(tool, arguments, headers)
        kwargs, problem = tool.check_arguments(arguments)
        if kwargs is None:
            return self.result(error_result(problem or "Invalid arguments"))

        return await self._run(request, ctx, params, functools.partial(_invoke, tool, kwargs, ctx))

    async def _call_tool_gated(self, policy: Policy, request: Request, ctx: Context,
                               params: _CallTool, headers: Mapping[str, str] | None
                               ) -> dict[str, Any]:
        """``tools/call`` behind the policy (docs/policy.md): tenant, rules and scopes
        before MRTR state is opened; confirmation and rate limit in the handler round,
        then input validation and the handler; one audit event whatever happens."""
        arguments = params.arguments if params.arguments is not None else {}
        gate = policy.begin(ctx, params.name, arguments)
        try:
            tool = self.tools.get(params.name)
            if headers is not None and tool.header_params:
                _check_header_params(tool, arguments, headers)
            if gate.check(tool).outcome == "deny":
                body = self.result(gate.denied())
            else:
                async def run() -> dict[str, Any]:
                    denial = await gate.admit(tool)
                    if denial is not None:
                        return denial
                    kwargs, problem = tool.check_arguments(arguments)
                    if kwargs is None:
                        return error_result(problem or "Invalid arguments")
                    return await _invoke(tool, kwargs, ctx)

                body = await self._run(request, ctx, params, run)
        except BaseException as exc:
            gate.fail(exc)
            raise
        gate.finish(body)
        return body

    async def _read_resource(self, request: Request, ctx: Context,
                             headers: Mapping[str, str] | None) -> dict[str, Any]:
        params = decode_params(request.params, _ReadResource)
        resource, variables = self.resources.resolve(params.uri)
        context_param = resource.signature.context_param

        async def run() -> dict[str, Any]:
            kwargs: dict[str, Any] = {k: v for k, v in variables.items()
                                      if k in resource.signature.arg_names
                                      or resource.signature.var_keyword}
            if context_param is not None:
                kwargs[context_param] = ctx
            value = (await resource.fn(**kwargs) if resource.signature.is_async
                     else resource.fn(**kwargs))
            body = {"contents": read_contents(resource, params.uri, value)}
            (resource.cache or self.read_cache).apply(body)
            return body

        return await self._run(request, ctx, params, run)

    async def _get_prompt(self, request: Request, ctx: Context,
                          headers: Mapping[str, str] | None) -> dict[str, Any]:
        params = decode_params(request.params, _GetPrompt)
        prompt = self.prompts.get(params.name)
        kwargs = prompt.check_arguments(params.arguments or {})
        context_param = prompt.signature.context_param

        async def run() -> dict[str, Any]:
            call_kwargs = kwargs if context_param is None else {**kwargs, context_param: ctx}
            value = (await prompt.fn(**call_kwargs) if prompt.signature.is_async
                     else prompt.fn(**call_kwargs))
            return dict(prompt_result(value, prompt.description))

        return await self._run(request, ctx, params, run)

    async def _run(self, request: Request, ctx: Context, params: Any,
                   run: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """Run a handler that may ask for input (MRTR) and stamp its result."""
        if ctx.bridge is not None:
            body = await run_bridged(ctx.bridge, ctx, run, max_rounds=self.mrtr.max_rounds)
            return self.result(body)
        body, result_type = await run_with_input(self.mrtr, request, ctx, params, run)
        return self.result(body, result_type)

    async def _listen(self, request: Request, ctx: Context,
                      headers: Mapping[str, str] | None) -> dict[str, Any]:
        return await self.subscriptions.listen(self, request, ctx)

    async def _complete(self, request: Request, ctx: Context,
                        headers: Mapping[str, str] | None) -> dict[str, Any]:
        params = decode_params(request.params, _Complete)
        ref = params.ref
        if ref.type == "ref/prompt":
            if ref.name is None:
                raise InvalidParams("ref/prompt needs a name")
            self.prompts.get(ref.name)  # unknown prompt → -32602
            completer: Completer | None = self.completions.get("ref/prompt", ref.name)
        elif ref.type == "ref/resource":
            if ref.uri is None:
                raise InvalidParams("ref/resource needs a uri")
            completer = self.completions.get("ref/resource", ref.uri)
        else:
            raise InvalidParams(f"Unknown completion reference type {ref.type!r}")
        values: list[str] = []
        if completer is not None:
            context_args = (params.context.arguments or {}) if params.context is not UNSET else {}
            out = completer(params.argument.name, params.argument.value, context_args)
            if isinstance(out, Awaitable):
                out = await out
            values = [str(v) for v in out]
        completion: dict[str, Any] = {"values": values[:100]}
        if len(values) > 100:
            completion["total"] = len(values)
            completion["hasMore"] = True
        return self.result({"completion": completion})


async def _invoke(tool: ToolDef, kwargs: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Run a tool's function with validated arguments; a failure inside it is a tool
    error (``isError``), never a protocol error."""
    context_param = tool.signature.context_param
    call_kwargs = dict(kwargs) if context_param is None else {**kwargs, context_param: ctx}
    try:
        value = (await tool.fn(**call_kwargs) if tool.signature.is_async
                 else tool.fn(**call_kwargs))
    except ToolError as exc:
        return error_result(exc.message, exc.content)
    except (McpError, InputRequired):
        raise
    except Exception:
        # An API or business failure inside the tool: the model sees that the call
        # failed (isError), the operator sees the traceback, the wire sees no
        # internals (R10.6, R9.14).
        log.exception("tool %s failed", tool.name)
        return error_result(f"Tool {tool.name} failed with an internal error")
    return dict(tool_result(tool, value))


def _check_header_params(tool: ToolDef, arguments: Mapping[str, Any],
                         headers: Mapping[str, str]) -> None:
    mismatch = header_param_mismatch(tool.header_params, arguments, headers)
    if mismatch is not None:
        raise HeaderMismatch(mismatch)


def _check_method_headers(method: str, envelope: _Envelope, headers: Mapping[str, str]) -> None:
    """``Mcp-Method`` must equal the body method; ``Mcp-Name`` the primitive's name."""
    header_method = headers.get("mcp-method")
    if header_method is None:
        raise HeaderMismatch("Missing required Mcp-Method header")
    if header_method.strip(" \t") != method:
        raise HeaderMismatch("Mcp-Method header does not match the request body method")
    field = NAME_FIELDS.get(method)
    if field is None:
        return
    header_name = headers.get("mcp-name")
    if header_name is None:
        raise HeaderMismatch("Missing required Mcp-Name header")
    try:
        value = decode_header_value(header_name)
    except HeaderValueError as exc:
        raise HeaderMismatch(f"Invalid Mcp-Name header: {exc}") from None
    if value != getattr(envelope, field):
        raise HeaderMismatch(f"Mcp-Name header does not match params.{field}")


__all__ = ["NAME_FIELDS", "Route", "Server"]
