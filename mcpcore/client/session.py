"""``Client``: a stateless MCP 2026-07-28 client over any ``Transport``.

Every request is complete in itself (R1.14): ``params._meta`` carries the protocol
version, the capabilities the user declared and the client info (R2.3, R2.4); over HTTP
the headers mirror the body (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, and
``Mcp-Param-*`` from the called tool's ``x-mcp-header`` annotations, R5.11-R5.18).

What else lives here:

- version negotiation: a ``-32022`` naming a version we speak is retried once, with a new
  id, even when it names the version we sent (the official ``request-metadata`` scenario
  rejects the first request whatever it says);
- the MRTR loop of ``call_tool``/``read_resource``/``get_prompt`` (R7.9-R7.13): answer
  ``inputRequests`` through the user's resolvers, echo ``requestState`` verbatim (or
  omit it), retry with a new id, give up after ``max_rounds`` with a local error; retry
  results are never cached (R7.16);
- a cache of tool definitions, filled by ``list_tools``, for ``Mcp-Param-*``; tools whose
  annotations break the rules are dropped from lists with a warning (R5.17: clients MUST);
- typed results, from ``mcpcore.types``.

What must not: sockets and framing (``transport.py``). The client never dereferences a
``$ref`` in a tool schema and never fetches anything but the MCP endpoint (SEP-2106).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import EllipsisType, TracebackType
from typing import IO, Any, Final, TypeVar

import httpx
import msgspec

from mcpcore import types
from mcpcore.client.errors import LocalProtocolError, RemoteProtocolError
from mcpcore.client.transport import (
    HttpTransport,
    MessageHandler,
    Reply,
    StdioTransport,
    Transport,
    is_response,
)
from mcpcore.headers import (
    HeaderAnnotationError,
    HeaderParam,
    HeaderValueError,
    check_header_params,
    client_header_values,
    encode_header_value,
)
from mcpcore.meta import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    LOG_LEVELS,
    PROGRESS_TOKEN,
    PROTOCOL_VERSION,
)
from mcpcore.versions import MODERN

log = logging.getLogger("mcpcore.client")

#: Protocol versions this client speaks, preferred first.
SUPPORTED_VERSIONS: Final = (MODERN,)
CLIENT_NAME: Final = "mcpcore-client"
CLIENT_VERSION: Final = "0.1.0"
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

Answer = Mapping[str, Any] | msgspec.Struct
ElicitHandler = Callable[[dict[str, Any]], Answer | Awaitable[Answer]]
SampleHandler = Callable[[dict[str, Any]], Answer | Awaitable[Answer]]
RootsHandler = Callable[[], Answer | Awaitable[Answer]]
NotificationHandler = Callable[[types.Notification], Awaitable[None] | None]

_R = TypeVar("_R")
_CACHEABLE: Final = (
    types.DiscoverResult, types.ListToolsResult, types.ListResourcesResult,
    types.ListResourceTemplatesResult, types.ListPromptsResult, types.ReadResourceResult,
)


@dataclass(frozen=True, slots=True)
class _CachedTool:
    tool: types.Tool
    header_params: tuple[HeaderParam, ...]


class Client:
    """A stateless MCP client. Open it with ``async with``; every method is a request.

    Over HTTP::

        async with Client.http("http://127.0.0.1:8000/mcp") as client:
            info = await client.discover()
            async for tool in client.iter_tools():
                print(tool.name)
            result = await client.call_tool("add", {"a": 2, "b": 3})

    Over stdio::

        async with Client.stdio(["python", "-m", "examples.everything", "--stdio"]) as c:
            print((await c.call_tool("test_simple_text")).content[0].text)

    Options (also accepted by ``http`` and ``stdio``):

    - ``client_info``: sent as ``_meta[io.modelcontextprotocol/clientInfo]``
      (default ``{"name": "mcpcore-client", "version": ...}``);
    - ``capabilities``: what the client declares (JSON objects, e.g.
      ``{"elicitation": {}}``); when omitted, derived from the resolvers given:
      ``on_elicit`` → ``elicitation``, ``on_sample`` → ``sampling``, ``on_roots`` →
      ``roots``;
    - ``on_elicit(params)``, ``on_sample(params)``, ``on_roots()``: MRTR resolvers, sync
      or async, returning an ``ElicitResult``/``CreateMessageResult``/``ListRootsResult``
      (a dict or the ``mcpcore.types`` Struct);
    - ``on_notification(notification)``: notifications that no call-level handler takes;
    - ``max_rounds`` (10): MRTR rounds answered before ``LocalProtocolError``;
    - ``timeout`` (60 s): per request, ``None`` for none.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_info: Mapping[str, Any] | types.Implementation | None = None,
        capabilities: Mapping[str, Any] | types.ClientCapabilities | None = None,
        on_elicit: ElicitHandler | None = None,
        on_sample: SampleHandler | None = None,
        on_roots: RootsHandler | None = None,
        on_notification: NotificationHandler | None = None,
        max_rounds: int = 10,
        timeout: float | None = 60.0,
        protocol_version: str = MODERN,
    ) -> None:
        if protocol_version not in SUPPORTED_VERSIONS:
            raise LocalProtocolError(
                f"protocol version {protocol_version!r} is not supported by this client "
                f"(supported: {', '.join(SUPPORTED_VERSIONS)})")
        if max_rounds < 0:
            raise LocalProtocolError("max_rounds must be >= 0")
        self.transport = transport
        self.on_elicit = on_elicit
        self.on_sample = on_sample
        self.on_roots = on_roots
        self.on_notification = on_notification
        self.max_rounds = max_rounds
        self.timeout = timeout
        self.client_info = _json_object(
            client_info if client_info is not None
            else {"name": CLIENT_NAME, "version": CLIENT_VERSION}, "client_info")
        if capabilities is None:
            derived: dict[str, Any] = {}
            if on_elicit is not None:
                derived["elicitation"] = {}
            if on_sample is not None:
                derived["sampling"] = {}
            if on_roots is not None:
                derived["roots"] = {}
            capabilities = derived
        self.capabilities = _json_object(capabilities, "capabilities")
        for name, value in self.capabilities.items():
            if not isinstance(value, dict):
                raise LocalProtocolError(
                    f"capability {name!r} must be a JSON object (e.g. {{}}), not {value!r}")
        self._version = protocol_version
        self._ids = itertools.count(1)
        self._tools: dict[str, _CachedTool] = {}
        self._dropped: dict[str, str] = {}
        #: The last ``server/discover`` result, if ``discover`` was called.
        self.server: types.DiscoverResult | None = None
        if isinstance(transport, StdioTransport) and transport.on_stray is None:
            transport.on_stray = self._stray

    # -- construction and lifetime ---------------------------------------------------------
    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        auth: httpx.Auth | None = None,
        **options: Any,
    ) -> Client:
        """A client for a Streamable HTTP endpoint (``http://host:port/mcp``).

        ``headers`` go on every POST (e.g. ``Authorization``); ``http_client`` is an
        ``httpx.AsyncClient`` of your own (it is not closed for you); ``auth`` is an
        ``httpx.Auth`` run on every request (``mcpcore.auth.OAuth`` for MCP authorization).

        >>> client = Client.http("http://127.0.0.1:8000/mcp", timeout=5)
        """
        return cls(HttpTransport(url, headers=headers, http_client=http_client, auth=auth),
                   **options)

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: int | IO[Any] | None = None,
        **options: Any,
    ) -> Client:
        """A client for a server subprocess speaking stdio; ``command`` is its argv.

        >>> client = Client.stdio(["python", "-m", "examples.everything", "--stdio"])
        """
        return cls(StdioTransport(command, env=env, cwd=cwd, stderr=stderr), **options)

    async def __aenter__(self) -> Client:
        await self.transport.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the transport (HTTP connections, or the server process)."""
        await self.transport.close()

    @property
    def protocol_version(self) -> str:
        """The version requests declare (may change once after a ``-32022``)."""
        return self._version

    # -- requests ---------------------------------------------------------------------------
    async def discover(self) -> types.DiscoverResult:
        """``server/discover``: versions, capabilities, instructions, server info.

        >>> info = await client.discover()               # doctest: +SKIP
        >>> info.capabilities.tools is not msgspec.UNSET  # doctest: +SKIP
        True
        """
        result = await self.request("server/discover", {})
        self.server = _convert(result, types.DiscoverResult, "server/discover")
        return self.server

    async def list_tools(self, cursor: str | None = None) -> types.ListToolsResult:
        """One page of ``tools/list``. Tools with invalid ``x-mcp-header`` annotations are
        left out (and logged); the rest are cached for ``Mcp-Param-*`` headers."""
        result = await self.request("tools/list", _cursor(cursor))
        raw_tools = result.get("tools")
        if not isinstance(raw_tools, list):
            raise RemoteProtocolError("tools/list result has no tools array")
        kept = [tool for entry in raw_tools if (tool := self._admit_tool(entry)) is not None]
        page = _convert({**result, "tools": []}, types.ListToolsResult, "tools/list")
        page.tools = kept
        return page

    async def iter_tools(self) -> AsyncIterator[types.Tool]:
        """Every tool, following ``nextCursor`` across pages.

        >>> names = [t.name async for t in client.iter_tools()]   # doctest: +SKIP
        """
        async for page in self._pages(self.list_tools):
            for tool in page.tools:
                yield tool

    async def list_resources(self, cursor: str | None = None) -> types.ListResourcesResult:
        """One page of ``resources/list``."""
        result = await self.request("resources/list", _cursor(cursor))
        return _convert(result, types.ListResourcesResult, "resources/list")

    async def iter_resources(self) -> AsyncIterator[types.Resource]:
        """Every resource, across pages."""
        async for page in self._pages(self.list_resources):
            for resource in page.resources:
                yield resource

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> types.ListResourceTemplatesResult:
        """One page of ``resources/templates/list``."""
        result = await self.request("resources/templates/list", _cursor(cursor))
        return _convert(result, types.ListResourceTemplatesResult, "resources/templates/list")

    async def iter_resource_templates(self) -> AsyncIterator[types.ResourceTemplate]:
        """Every resource template, across pages."""
        async for page in self._pages(self.list_resource_templates):
            for template in page.resource_templates:
                yield template

    async def list_prompts(self, cursor: str | None = None) -> types.ListPromptsResult:
        """One page of ``prompts/list``."""
        result = await self.request("prompts/list", _cursor(cursor))
        return _convert(result, types.ListPromptsResult, "prompts/list")

    async def iter_prompts(self) -> AsyncIterator[types.Prompt]:
        """Every prompt, across pages."""
        async for page in self._pages(self.list_prompts):
            for prompt in page.prompts:
                yield prompt

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
        """``tools/call``, answering ``input_required`` rounds through the resolvers.

        ``on_notification`` receives the call's notifications (progress, log) before the
        result; passing it asks for progress with a fresh ``progressToken`` unless you
        give one. ``log_level`` asks for log messages at that level and above.
        A tool error is a normal result with ``is_error=True``; protocol errors raise
        ``RemoteProtocolError``.

        >>> result = await client.call_tool("add", {"a": 2, "b": 3})   # doctest: +SKIP
        >>> result.content[0].text                                      # doctest: +SKIP
        '5'
        """
        if not isinstance(name, str):
            raise LocalProtocolError("tool name must be a string")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            if not isinstance(arguments, Mapping):
                raise LocalProtocolError("tool arguments must be a mapping")
            params["arguments"] = dict(arguments)
        headers = await self._param_headers(name, params.get("arguments") or {})
        result = await self._with_input(
            "tools/call", params, headers=headers, on_notification=on_notification,
            progress_token=progress_token, log_level=log_level, timeout=timeout)
        return _convert(result, types.CallToolResult, "tools/call")

    async def read_resource(
        self,
        uri: str,
        *,
        on_notification: NotificationHandler | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        timeout: float | EllipsisType | None = ...,
    ) -> types.ReadResourceResult:
        """``resources/read`` (with MRTR rounds if the server asks for input).

        >>> contents = (await client.read_resource("test://static-text")).contents  # doctest: +SKIP
        """
        result = await self._with_input(
            "resources/read", {"uri": uri}, headers={}, on_notification=on_notification,
            progress_token=progress_token, log_level=log_level, timeout=timeout)
        return _convert(result, types.ReadResourceResult, "resources/read")

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
        """``prompts/get`` (with MRTR rounds if the server asks for input).

        >>> result = await client.get_prompt("greet", {"name": "Ada"})  # doctest: +SKIP
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        result = await self._with_input(
            "prompts/get", params, headers={}, on_notification=on_notification,
            progress_token=progress_token, log_level=log_level, timeout=timeout)
        return _convert(result, types.GetPromptResult, "prompts/get")

    async def complete(
        self,
        ref: Mapping[str, Any] | types.PromptReference | types.ResourceTemplateReference,
        argument: Mapping[str, str] | types.CompletionArgument,
        context: Mapping[str, str] | types.CompletionContext | None = None,
    ) -> types.CompleteResult:
        """``completion/complete``. ``context`` is the other arguments' values (a mapping
        of name to value) or a ``CompletionContext``.

        >>> await client.complete({"type": "ref/prompt", "name": "greet"},
        ...                       {"name": "lang", "value": "py"})      # doctest: +SKIP
        """
        params: dict[str, Any] = {
            "ref": _json_object(ref, "ref"),
            "argument": _json_object(argument, "argument"),
        }
        if isinstance(context, types.CompletionContext):
            params["context"] = _json_object(context, "context")
        elif context is not None:
            params["context"] = {"arguments": dict(context)}
        result = await self.request("completion/complete", params)
        return _convert(result, types.CompleteResult, "completion/complete")

    def listen(
        self, notifications: Mapping[str, Any] | types.SubscriptionFilter
    ) -> Subscription:
        """Open ``subscriptions/listen``: an async iterator of the stream's notifications.

        The acknowledgement comes first (also kept as ``.acknowledged``). Iteration ends
        when the server ends the stream gracefully; leaving the loop, ``aclose()`` or the
        ``async with`` block cancels the subscription (HTTP: the stream is closed).

        >>> async with client.listen({"toolsListChanged": True}) as sub:   # doctest: +SKIP
        ...     async for note in sub:
        ...         print(note.method)
        """
        return Subscription(self, _json_object(notifications, "notifications"))

    async def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        on_notification: NotificationHandler | None = None,
        timeout: float | EllipsisType | None = ...,
    ) -> dict[str, Any]:
        """Send one request (``_meta`` and headers added) and return its raw ``result``.

        The escape hatch for methods without a helper (extensions). No MRTR loop here.
        ``params`` may hold a ``_meta`` of its own; its keys are merged over ours.

        >>> await client.request("tools/list", {})                    # doctest: +SKIP
        {'resultType': 'complete', 'tools': [...], 'ttlMs': 0, 'cacheScope': 'private'}
        """
        retried = False
        while True:
            message, http_headers = self._message(method, params, headers or {})
            reply = await self.transport.request(
                message, headers=http_headers,
                on_message=self._deliver(on_notification),
                timeout=self.timeout if isinstance(timeout, EllipsisType) else timeout)
            try:
                return _result(reply, method)
            except RemoteProtocolError as exc:
                if retried or not self._renegotiate(exc):
                    raise
                retried = True

    # -- internals --------------------------------------------------------------------------
    def _message(
        self, method: str, params: Mapping[str, Any], extra_headers: Mapping[str, str]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """A request with a new id and full ``_meta``, and the HTTP headers mirroring it."""
        meta: dict[str, Any] = {
            PROTOCOL_VERSION: self._version,
            CLIENT_CAPABILITIES: self.capabilities,
            CLIENT_INFO: self.client_info,
        }
        own = params.get("_meta")
        if isinstance(own, Mapping):
            meta.update(own)
        body = {**params, "_meta": meta}
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": body}
        if not self.transport.uses_headers:
            return message, {}
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": str(meta[PROTOCOL_VERSION]),
            "Mcp-Method": method,
        }
        name = _name_of(method, body)
        if name is not None:
            try:
                headers["Mcp-Name"] = encode_header_value(name)
            except HeaderValueError as exc:
                raise LocalProtocolError(f"{method}: cannot send Mcp-Name: {exc}") from None
        headers.update(extra_headers)
        return message, headers

    def _renegotiate(self, exc: RemoteProtocolError) -> bool:
        """On -32022, switch to a version both sides speak; ``False`` if there is none."""
        if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
            return False
        supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
        if not isinstance(supported, list):
            return False
        for version in SUPPORTED_VERSIONS:
            if version in supported:
                if version != self._version:
                    log.info("server asked for protocol version %s; switching", version)
                self._version = version
                return True
        return False

    def _deliver(self, handler: NotificationHandler | None) -> MessageHandler | None:
        handler = handler or self.on_notification
        if handler is None:
            return None
        chosen = handler

        async def deliver(message: dict[str, Any]) -> None:
            note = _notification(message)
            if note is not None:
                outcome = chosen(note)
                if inspect.isawaitable(outcome):
                    await outcome

        return deliver

    async def _stray(self, message: dict[str, Any]) -> None:
        if self.on_notification is None:
            return
        note = _notification(message)
        if note is not None:
            outcome = self.on_notification(note)
            if inspect.isawaitable(outcome):
                await outcome

    def _admit_tool(self, entry: object) -> types.Tool | None:
        """Validate one ``tools/list`` entry; cache and return it, or drop it (logged)."""
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(name, str):
            log.warning("dropping a malformed tools/list entry: %.200r", entry)
            return None
        try:
            header_params = check_header_params(entry.get("inputSchema"))
        except HeaderAnnotationError as exc:
            log.warning("dropping tool %r: invalid x-mcp-header annotations: %s", name, exc)
            self._tools.pop(name, None)
            self._dropped[name] = str(exc)
            return None
        try:
            tool = msgspec.convert(entry, types.Tool)
        except msgspec.ValidationError as exc:
            log.warning("dropping tool %r: not a valid Tool: %s", name, exc)
            return None
        self._tools[name] = _CachedTool(tool, header_params)
        self._dropped.pop(name, None)
        return tool

    async def _param_headers(self, name: str, arguments: Mapping[str, Any]) -> dict[str, str]:
        """``Mcp-Param-*`` for a call; lists the tools first if ``name`` is not cached."""
        if not self.transport.uses_headers:
            return {}
        if name not in self._tools and name not in self._dropped:
            try:
                async for _ in self.iter_tools():
                    pass
            except RemoteProtocolError as exc:
                # No definitions, no Mcp-Param-* headers: let the call itself find out.
                log.warning("tools/list before tools/call %s failed: %s", name, exc)
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
    ) -> dict[str, Any]:
        """The MRTR loop (R7.9): answer ``input_required`` until ``complete``."""
        meta: dict[str, Any] = {}
        if progress_token is None and on_notification is not None:
            progress_token = f"mcpcore-{next(self._ids)}"
        if progress_token is not None:
            meta[PROGRESS_TOKEN] = progress_token
        if log_level is not None:
            if log_level not in LOG_LEVELS:
                raise LocalProtocolError(
                    f"log_level must be one of {', '.join(LOG_LEVELS)}, not {log_level!r}")
            meta[LOG_LEVEL] = log_level
        original = {**params, "_meta": meta} if meta else dict(params)
        attempt = original
        rounds = 0
        while True:
            result = await self.request(method, attempt, headers=headers,
                                        on_notification=on_notification, timeout=timeout)
            kind = result.get("resultType", "complete")  # absent: a legacy "complete" (R8.1)
            if kind == "complete":
                return result
            if kind != "input_required":
                raise RemoteProtocolError(f"{method}: unknown resultType {kind!r}")
            rounds += 1
            if rounds > self.max_rounds:
                raise LocalProtocolError(
                    f"{method}: the server still needs input after {self.max_rounds} "
                    "rounds (max_rounds); giving up")
            requests = result.get("inputRequests")
            state = result.get("requestState")
            if requests is not None and not isinstance(requests, dict):
                raise RemoteProtocolError(f"{method}: inputRequests is not an object")
            if state is not None and not isinstance(state, str):
                raise RemoteProtocolError(f"{method}: requestState is not a string")
            if not requests and state is None:
                raise RemoteProtocolError(
                    f"{method}: input_required result without inputRequests or requestState")
            # The retry is the original request plus this round's answers only (T12).
            attempt = dict(original)
            if requests:
                attempt["inputResponses"] = await self._resolve(method, requests)
            if state is not None:
                attempt["requestState"] = state  # verbatim, never parsed (R7.9)

    async def _resolve(self, method: str, requests: dict[str, Any]) -> dict[str, Any]:
        keys = list(requests)
        answers = await asyncio.gather(*(self._answer(method, k, requests[k]) for k in keys))
        return dict(zip(keys, answers, strict=True))

    async def _answer(self, method: str, key: str, request: object) -> dict[str, Any]:
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise RemoteProtocolError(f"{method}: inputRequests[{key!r}] is not an input request")
        kind = request["method"]
        params = request.get("params")
        params = dict(params) if isinstance(params, dict) else {}
        outcome: object
        if kind == "elicitation/create":
            if self.on_elicit is None:
                raise LocalProtocolError(
                    f"{method}: the server asks for elicitation/create (key {key!r}) "
                    "but the client has no on_elicit resolver")
            outcome = self.on_elicit(params)
        elif kind == "sampling/createMessage":
            if self.on_sample is None:
                raise LocalProtocolError(
                    f"{method}: the server asks for sampling/createMessage (key {key!r}) "
                    "but the client has no on_sample resolver")
            outcome = self.on_sample(params)
        elif kind == "roots/list":
            if self.on_roots is None:
                raise LocalProtocolError(
                    f"{method}: the server asks for roots/list (key {key!r}) "
                    "but the client has no on_roots resolver")
            outcome = self.on_roots()
        else:
            raise LocalProtocolError(
                f"{method}: no resolver for input request {kind!r} (key {key!r})")
        if inspect.isawaitable(outcome):
            outcome = await outcome
        answer = _json_object(outcome, f"the {kind} resolver's answer")
        answer.pop("resultType", None)  # inputResponses carry bare results (T11)
        return answer

    async def _pages(
        self, fetch: Callable[[str | None], Awaitable[_R]]
    ) -> AsyncIterator[_R]:
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await fetch(cursor)
            yield page
            next_cursor = getattr(page, "next_cursor", msgspec.UNSET)
            if not isinstance(next_cursor, str):
                return
            if next_cursor in seen:
                raise RemoteProtocolError(f"pagination loops: cursor {next_cursor!r} repeats")
            seen.add(next_cursor)
            cursor = next_cursor


class Subscription:
    """A ``subscriptions/listen`` stream; see ``Client.listen``.

    >>> async with client.listen({"resourceSubscriptions": ["test://a"]}) as sub:  # doctest: +SKIP
    ...     first = await anext(sub)     # notifications/subscriptions/acknowledged
    """

    def __init__(self, client: Client, notifications: dict[str, Any]) -> None:
        self._client = client
        self._filter = notifications
        self._iterator: AsyncGenerator[types.Notification, None] | None = None
        #: The filter the server agreed to honour, once acknowledged.
        self.acknowledged: types.SubscriptionFilter | None = None
        #: The listen request's id, which tags the stream's notifications.
        self.subscription_id: int | str | None = None
        #: The graceful ``SubscriptionsListenResult``, if the server ended the stream.
        self.result: dict[str, Any] | None = None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> types.Notification:
        if self._iterator is None:
            self._iterator = self._run()
        return await self._iterator.__anext__()

    async def aclose(self) -> None:
        """Cancel the subscription (close the stream)."""
        iterator, self._iterator = self._iterator, None
        if iterator is not None:
            await iterator.aclose()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _run(self) -> AsyncGenerator[types.Notification, None]:
        client = self._client
        retried = False
        while True:
            message, headers = client._message(
                "subscriptions/listen", {"notifications": self._filter}, {})
            self.subscription_id = message["id"]
            renegotiate = False
            stream = client.transport.stream(message, headers=headers)
            try:
                async for reply in stream:
                    if is_response(reply.message):
                        try:
                            self.result = _result(reply, "subscriptions/listen")
                        except RemoteProtocolError as exc:
                            if (retried or self.acknowledged is not None
                                    or not client._renegotiate(exc)):
                                raise
                            renegotiate = retried = True
                        break
                    note = _notification(reply.message)
                    if note is None:
                        continue
                    if note.method == "notifications/subscriptions/acknowledged":
                        self.acknowledged = _acknowledged(note)
                    yield note
            finally:
                await stream.aclose()
            if not renegotiate:
                return


# -- helpers ----------------------------------------------------------------------------


def _json_object(value: object, what: str) -> dict[str, Any]:
    """A plain dict from a mapping or a msgspec Struct (camelCase keys)."""
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if not isinstance(value, Mapping):
        raise LocalProtocolError(f"{what} must be a JSON object, not {type(value).__name__}")
    return dict(value)


def _cursor(cursor: str | None) -> dict[str, Any]:
    return {} if cursor is None else {"cursor": cursor}


def _name_of(method: str, params: Mapping[str, Any]) -> str | None:
    """The ``Mcp-Name`` source (R5.11)."""
    if method in ("tools/call", "prompts/get"):
        value = params.get("name")
    elif method == "resources/read":
        value = params.get("uri")
    else:
        return None
    return value if isinstance(value, str) else None


def _result(reply: Reply, method: str) -> dict[str, Any]:
    """The ``result`` of a response, or its error as ``RemoteProtocolError``."""
    message = reply.message
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict):
            raise RemoteProtocolError(f"{method}: malformed error response",
                                      http_status=reply.http_status)
        code = error.get("code")
        text = error.get("message")
        raise RemoteProtocolError(
            text if isinstance(text, str) and text else f"{method} failed",
            code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            data=error.get("data"), http_status=reply.http_status)
    result = message.get("result")
    if not isinstance(result, dict):
        raise RemoteProtocolError(f"{method}: the result is not an object",
                                  http_status=reply.http_status)
    return result


def _convert(result: dict[str, Any], kind: type[_R], method: str) -> _R:
    """Typed view of a result. A cacheable result without ``ttlMs``/``cacheScope`` (an
    older or sloppy server) is read as "do not cache": ``0``/``"private"``."""
    if issubclass(kind, _CACHEABLE):
        result = {"ttlMs": 0, "cacheScope": "private", **result}
    try:
        return msgspec.convert(result, kind)
    except msgspec.ValidationError as exc:
        raise RemoteProtocolError(f"{method}: invalid result: {exc}") from None


def _notification(message: dict[str, Any]) -> types.Notification | None:
    try:
        return msgspec.convert(message, types.Notification)
    except msgspec.ValidationError:
        log.warning("ignoring a malformed notification: %.200r", message)
        return None


def _acknowledged(note: types.Notification) -> types.SubscriptionFilter | None:
    params = note.params if isinstance(note.params, dict) else {}
    try:
        return msgspec.convert(params.get("notifications") or {}, types.SubscriptionFilter)
    except msgspec.ValidationError:
        return None


__all__ = [
    "SUPPORTED_VERSIONS",
    "Client",
    "ElicitHandler",
    "NotificationHandler",
    "RootsHandler",
    "SampleHandler",
    "Subscription",
]
