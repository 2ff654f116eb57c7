"""What a check sees: its ``AuditContext`` (send, record, judge) and the ``EraSession`` that all
checks of one era share (the transport, the schema validator, cached discovery).

A check never touches the transport directly: ``AuditContext.request`` builds the body, sends
it, validates every message that came back against the era's schema, and keeps the
exchange as evidence for the report.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, NoReturn

from mcpcore.conformance import wire
from mcpcore.conformance.model import Check, CheckFailed, CheckSkipped, as_dict
from mcpcore.conformance.target import Target
from mcpcore.conformance.transport import RecordedExchange, Stream, Transport
from mcpcore.conformance.validate import Validator, validator

#: Sentinel: "fill this in the usual way".
AUTO: Any = object()
#: Statuses whose bodies the HTTP or auth layer writes (RFC 6750 errors, plain texts), not
#: MCP: their JSON is not validated against the MCP schema.
_NOT_MCP = frozenset({401, 403, 405, 406, 413, 415})
#: Pages a list is followed for before the suite calls it endless.
MAX_PAGES = 200


@dataclass
class Options:
    """Run-wide knobs a check may read."""

    request_timeout: float = 10.0
    fuzz_examples: int = 0
    fuzz_seconds: float = 50.0
    fuzz_seed: int | None = None
    audit: Mapping[str, Any] = field(default_factory=dict)   #: the audit pack's settings
    max_items: int = 25                  #: per list, how many items are exercised


class EraSession:
    """State shared by every check of one era on one target."""

    def __init__(self, target: Target, era: str, transport: Transport,
                 options: Options | None = None) -> None:
        self.target = target
        self.era = era
        self.transport = transport
        self.options = options or Options()
        self.validator: Validator = validator(era)
        self.exchanges: list[RecordedExchange] = []
        self._ids = itertools.count(1)
        self._memo: dict[str, asyncio.Task[Any]] = {}
        #: Transports a check opened besides the shared one (closed at the end).
        self.extra_transports: list[Transport] = []

    @property
    def modern(self) -> bool:
        return self.era == wire.MODERN

    def next_id(self) -> int:
        return next(self._ids)

    async def once(self, key: str, factory: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``factory`` once per session; every caller gets its result."""
        task = self._memo.get(key)
        if task is None:
            task = asyncio.ensure_future(factory())
            self._memo[key] = task
        return await asyncio.shield(task)

    def record(self, exchange: RecordedExchange) -> None:
        oauth_error = exchange.status == 400 and any(
            isinstance(m.get("error"), str) and "jsonrpc" not in m for m in exchange.messages)
        if exchange.http_method in ("POST", "") and exchange.status not in _NOT_MCP \
                and not oauth_error:  # RFC 6750 §3.1 invalid_request comes from the auth layer
            # A probe of another era is judged by that era's schema.
            judge = validator(exchange.era) if exchange.era not in (None, self.era) \
                else self.validator
            for message in exchange.messages:
                exchange.problems.extend(judge.check(message, exchange.method))
        self.exchanges.append(exchange)

    async def aclose(self) -> None:
        for task in self._memo.values():
            if not task.done():
                task.cancel()
        for transport in self.extra_transports:
            await transport.aclose()
        await self.transport.aclose()


class AuditContext:
    """One check's view of the run; see the module docstring."""

    def __init__(self, session: EraSession, check: Check) -> None:
        self.session = session
        self.check = check
        self.evidence: list[RecordedExchange] = []
        self.notes: list[str] = []
        self.blamed: RecordedExchange | None = None     #: set by ``blame`` (or ``fail(exchange=)``)
        self.last: RecordedExchange | None = None       #: the last exchange this check sent

    # -- facts -------------------------------------------------------------------------
    @property
    def era(self) -> str:
        return self.session.era

    @property
    def target(self) -> Target:
        return self.session.target

    @property
    def options(self) -> Options:
        return self.session.options

    @property
    def transport(self) -> Transport:
        return self.session.transport

    @property
    def http(self) -> bool:
        return self.transport.kind == "http"

    # -- verdicts ----------------------------------------------------------------------
    def fail(self, message: str, exchange: RecordedExchange | None = None) -> NoReturn:
        """The server broke the rule; ``exchange`` (default: the last one this check
        sent) is the evidence reports show first."""
        if exchange is not None:
            self.blame(exchange)
        raise CheckFailed(message)

    def skip(self, reason: str) -> NoReturn:
        raise CheckSkipped(reason)

    def expect(self, condition: object, message: str,
               exchange: RecordedExchange | None = None) -> None:
        if not condition:
            self.fail(message, exchange)

    def blame(self, exchange: RecordedExchange) -> None:
        """Mark ``exchange`` as the one the verdict rests on (kept as evidence)."""
        if exchange not in self.evidence:
            self.evidence.append(exchange)
        self.blamed = exchange

    @property
    def decisive(self) -> RecordedExchange | None:
        """The exchange a failure rests on: the blamed one, else the last one sent."""
        return self.blamed or self.last

    def note(self, message: str) -> None:
        """A remark for the report that does not change the verdict."""
        self.notes.append(message)

    # -- sending -----------------------------------------------------------------------
    def keep(self, exchange: RecordedExchange) -> RecordedExchange:
        self.session.record(exchange)
        self.evidence.append(exchange)
        self.last = exchange
        return exchange

    async def request(self, method: str, params: Mapping[str, Any] | None = None, *,
                      id: Any = AUTO, meta: Any = AUTO, headers: Mapping[str, Any] | None = None,
                      label: str = "", timeout: float | None = None, auth: bool = True,
                      header_props: Mapping[str, str] | None = None,
                      on_message: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
                      verbatim: bool = False, era: str | None = None) -> RecordedExchange:
        """Send a modern request built the standard way, then apply ``headers``
        (a value ``None`` removes that header). ``meta=None`` sends no ``_meta``;
        ``era`` names another era whose rules judge the answer."""
        request_id = self.session.next_id() if id is AUTO else id
        body_params = dict(params or {})
        if meta is AUTO:
            body_params.setdefault("_meta", wire.meta())
        elif meta is not None:
            body_params["_meta"] = dict(meta)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body_params}
        sent = wire.standard_headers(body, header_props=header_props)
        return await self.send(body, headers=_override(sent, headers), request_id=request_id,
                               label=label or method, timeout=timeout, auth=auth,
                               method=method, on_message=on_message, verbatim=verbatim,
                               era=era)

    async def send(self, body: Any, *, headers: Mapping[str, Any] | None = None,
                   request_id: Any = None, label: str = "", timeout: float | None = None,
                   auth: bool = True, method: str | None = None, http_method: str = "POST",
                   url: str | None = None,
                   on_message: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
                   verbatim: bool = False, era: str | None = None) -> RecordedExchange:
        """Send ``body`` (a JSON value, or ``bytes`` as they are) with exactly
        ``headers`` (plus the target's credentials unless ``auth`` is false); ``era``
        names another era whose rules judge the answer."""
        raw = body if isinstance(body, bytes) else wire.encode(body)
        if method is None and isinstance(body, dict):
            method = body.get("method") if isinstance(body.get("method"), str) else None
        if request_id is None and isinstance(body, dict) and "method" in body:
            request_id = body.get("id")
        sent = dict(headers or {})
        if not auth:
            sent["Authorization"] = None
        exchange = await self.transport.send(
            raw, headers=sent, http_method=http_method, request_id=request_id,
            timeout=timeout or self.options.request_timeout, label=label or (method or ""),
            url=url, on_message=on_message, verbatim=verbatim)
        exchange.method = method
        exchange.era = era
        return self.keep(exchange)

    @asynccontextmanager
    async def listen(self, notifications: Mapping[str, Any], *, id: Any = AUTO,
                     meta: Any = AUTO) -> AsyncIterator[Stream]:
        """Open ``subscriptions/listen`` with this filter; closing the block ends it."""
        request_id = self.session.next_id() if id is AUTO else id
        params: dict[str, Any] = {"notifications": dict(notifications)}
        params["_meta"] = wire.meta() if meta is AUTO else meta
        body = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
                "params": params}
        async with self.transport.stream(
            wire.encode(body), headers=wire.standard_headers(body), request_id=request_id,
            label="subscriptions/listen",
        ) as stream:
            stream.exchange.method = "subscriptions/listen"
            try:
                yield stream
            finally:
                self.keep(stream.exchange)

    # -- what the server offers (modern era; cached per session) ------------------------
    async def discover(self) -> dict[str, Any]:
        """The ``server/discover`` result; skips the check if the server has none."""
        async def probe() -> RecordedExchange:
            return await self.request("server/discover", label="discovery")

        exchange: RecordedExchange = await self.session.once("discover", probe)
        if exchange not in self.evidence:
            self.evidence.append(exchange)
        if exchange.result is None:
            self.skip(f"server/discover did not answer with a result ({exchange.describe()})")
        return exchange.result

    async def capabilities(self) -> dict[str, Any]:
        return as_dict((await self.discover()).get("capabilities"))

    async def has_capability(self, name: str) -> bool:
        return name in await self.capabilities()

    async def items(self, method: str) -> list[dict[str, Any]]:
        """Every item of a paginated list (``[]`` when its capability is not declared)."""
        capability = wire.CAPABILITY_OF.get(method)
        if capability and not await self.has_capability(capability):
            return []
        pages = await self.pages(method)
        key = wire.LISTS[method]
        out: list[dict[str, Any]] = []
        for page in pages:
            for item in (page.result or {}).get(key) or []:
                if isinstance(item, dict):
                    out.append(item)
        return out

    async def pages(self, method: str) -> list[RecordedExchange]:
        """The exchanges of following ``nextCursor`` from the first page to the end."""
        async def walk() -> list[RecordedExchange]:
            pages: list[RecordedExchange] = []
            cursor: Any = None
            seen: set[str] = set()
            for _ in range(MAX_PAGES):
                params = {"cursor": cursor} if cursor is not None else {}
                page = await self.request(method, params, label=f"{method} page {len(pages) + 1}")
                pages.append(page)
                cursor = (page.result or {}).get("nextCursor")
                if cursor is None or not isinstance(cursor, str) or cursor in seen:
                    break
                seen.add(cursor)
            return pages

        pages: list[RecordedExchange] = await self.session.once(f"pages:{method}", walk)
        return pages

    async def tools(self) -> list[dict[str, Any]]:
        return await self.items("tools/list")

    async def read_only_tools(self) -> list[dict[str, Any]]:
        """Tools whose annotations say ``readOnlyHint: true`` (safe to call)."""
        return [t for t in await self.tools()
                if as_dict(t.get("annotations")).get("readOnlyHint") is True]

    async def safe_named_request(self) -> tuple[str, dict[str, Any], dict[str, str]] | None:
        """A request that carries ``Mcp-Name`` and is safe to send: a resource read, a
        read-only tool called with valid arguments, or a prompt without required
        arguments. ``(method, params, x-mcp-header properties)``."""
        from mcpcore.conformance.schema_values import example_arguments

        for resource in (await self.items("resources/list"))[:1]:
            if isinstance(resource.get("uri"), str):
                return "resources/read", {"uri": resource["uri"]}, {}
        for tool in await self.read_only_tools():
            arguments = example_arguments(tool.get("inputSchema"))
            if arguments is not None and not wire.header_params(tool.get("inputSchema")):
                return "tools/call", {"name": tool["name"], "arguments": arguments}, {}
        for prompt in await self.items("prompts/list"):
            if not any(as_dict(a).get("required") for a in prompt.get("arguments") or []):
                return "prompts/get", {"name": prompt.get("name")}, {}
        return None


def _override(headers: Mapping[str, str], changes: Mapping[str, Any] | None) -> dict[str, Any]:
    """``headers`` with ``changes`` applied case-insensitively (``None`` removes)."""
    out: dict[str, Any] = dict(headers)
    for key, value in (changes or {}).items():
        for existing in [k for k in out if k.lower() == key.lower()]:
            del out[existing]
        out[key] = value
    return out



__all__ = ["AUTO", "AuditContext", "EraSession", "Options"]
