"""The 2026-07-28 wire: stateless requests, each complete in itself.

Every request carries, in ``params._meta``, the protocol version, the capabilities the
client declares and its client info (basic/index "_meta"); over HTTP the standard headers
mirror the body (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``; streamable-http
"Standard Headers"); ``Mcp-Param-*`` come from the caller (``client.py`` knows the
tools). A ``-32022`` naming a version we speak is retried once with a new id, even when it
names the version we sent (versioning "Protocol Version Negotiation": the client SHOULD
select a mutually supported version and retry).

Over HTTP each request is one POST whose response (JSON, or an SSE stream of
notifications ending with the response) belongs to it alone. Over stdio requests share
one pipe, routed by ``wire.Pending``. Leaving a request early cancels it: HTTP closes
its stream, stdio sends ``notifications/cancelled`` (patterns/cancellation).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, Final

from mcpcore.client.errors import (
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
)
from mcpcore.client.http import HttpTransport
from mcpcore.client.stdio import StdioTransport
from mcpcore.client.wire import (
    Answerer,
    MessageHandler,
    Pending,
    Reply,
    answers,
    encode_message,
    error_response,
    is_notification,
    is_request,
    is_response,
    request_message,
    result_of,
)
from mcpcore.headers import NAME_PARAMS, HeaderValueError, encode_header_value
from mcpcore.meta import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION
from mcpcore.timing import SYSTEM_CLOCK, Clock
from mcpcore.versions import MODERN

log = logging.getLogger("mcpcore.client")

#: Protocol versions the stateless wire speaks, preferred first.
MODERN_VERSIONS: Final = (MODERN,)
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
METHOD_NOT_FOUND: Final = -32601
#: Server requests (which 2026-07-28 does not have) refused with an error over stdio; a
#: server that sends more is not reading its answers: the rest are ignored (logged), so
#: that it cannot fill the pipe's write buffer with them.
MAX_REFUSALS: Final = 1000


class ModernWire:
    """Stateless requests over an ``HttpTransport`` or a ``StdioTransport``.

    ``on_unclaimed`` receives notifications no request claims (stdio only; HTTP
    notifications always travel on their request's stream).
    """

    era: Final = "modern"

    def __init__(
        self,
        transport: HttpTransport | StdioTransport,
        *,
        ids: itertools.count[int],
        capabilities: dict[str, Any],
        client_info: dict[str, Any],
        on_unclaimed: Callable[[dict[str, Any]], None],
        version: str = MODERN,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.transport = transport
        #: What request timeouts are measured on (``mcpcore.timing``).
        self.clock = clock
        self.protocol_version = version
        self.capabilities = capabilities
        self.client_info = client_info
        #: Added to every request's ``_meta`` as ``logLevel`` when set.
        self.log_level: str | None = None
        self._ids = ids
        self._on_unclaimed = on_unclaimed
        self._pending = Pending()
        self._is_http = isinstance(transport, HttpTransport)
        self._refused = 0

    def attach(self) -> None:
        """Take over the stdio pipe's incoming messages (no-op over HTTP)."""
        if isinstance(self.transport, StdioTransport):
            self.transport.on_message = self._route
            self.transport.on_close = self._pending.fail_all

    async def close(self) -> None:
        self._pending.fail_all()

    # -- building requests ------------------------------------------------------------------
    def message(
        self, method: str, params: Mapping[str, Any], extra_headers: Mapping[str, str]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """A request with a new id and full ``_meta``, and the HTTP headers mirroring it."""
        meta: dict[str, Any] = {
            PROTOCOL_VERSION: self.protocol_version,
            CLIENT_CAPABILITIES: self.capabilities,
            CLIENT_INFO: self.client_info,
        }
        if self.log_level is not None:
            meta[LOG_LEVEL] = self.log_level
        own = params.get("_meta")
        if isinstance(own, Mapping):
            meta.update(own)
        body = {**params, "_meta": meta}
        message = request_message(next(self._ids), method, body)
        if not self._is_http:
            return message, {}
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": str(meta[PROTOCOL_VERSION]),
            "Mcp-Method": method,
        }
        field = NAME_PARAMS.get(method)
        name = body.get(field) if field is not None else None
        if isinstance(name, str):
            try:
                headers["Mcp-Name"] = encode_header_value(name)
            except HeaderValueError as exc:
                raise LocalProtocolError(f"{method}: cannot send Mcp-Name: {exc}") from None
        if extra_headers:
            headers.update(extra_headers)
        return message, headers

    def renegotiate(self, exc: RemoteProtocolError) -> bool:
        """On -32022, switch to a version both sides speak; ``False`` if there is none."""
        if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
            return False
        supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
        if not isinstance(supported, list):
            return False
        for version in MODERN_VERSIONS:
            if version in supported:
                if version != self.protocol_version:
                    log.info("server asked for protocol version %s; switching", version)
                self.protocol_version = version
                return True
        return False

    # -- requests ---------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        headers: Mapping[str, str],
        on_message: MessageHandler | None,
        timeout: float | None,
        on_request: Answerer | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its ``result`` (errors raise). ``on_request`` is
        the 2025 wire's (a 2026-07-28 server sends no requests): ignored here."""
        retried = False
        while True:
            message, http_headers = self.message(method, params, headers)
            if self._is_http:
                reply = await self._post(message, http_headers, on_message, timeout)
            else:
                reply = await self._pipe(message, on_message, timeout)
            try:
                return result_of(reply, method)
            except RemoteProtocolError as exc:
                if retried or not self.renegotiate(exc):
                    raise
                retried = True

    async def _post(self, message: dict[str, Any], headers: dict[str, str],
                    on_message: MessageHandler | None, timeout: float | None) -> Reply:
        assert isinstance(self.transport, HttpTransport)
        method = message["method"]
        try:
            async with self.clock.timeout(timeout), self.transport.exchange(
                    "POST", body=encode_message(message), headers=headers, timeout=timeout,
                    what=method) as exchange:
                async for value in exchange.messages():
                    if not isinstance(value, dict):
                        raise RemoteProtocolError(
                            f"{method}: a JSON-RPC batch on a 2026-07-28 stream",
                            http_status=exchange.status)
                    if is_response(value):
                        if not answers(value, message["id"]):
                            raise RemoteProtocolError(
                                f"{method}: response id {value.get('id')!r} does not match "
                                f"request id {message['id']!r}", http_status=exchange.status)
                        return Reply(value, exchange.status)
                    if is_notification(value):
                        if on_message is not None:
                            await on_message(value)
                    else:
                        # 2026-07-28 servers send no requests (streamable-http "Sending
                        # Messages to the Server"): nothing to answer on this stream.
                        log.warning("ignoring a non-notification on a response stream: %.200r",
                                    value)
                status = exchange.status
        except TimeoutError:
            raise RequestTimeout(f"{method}: no response within {timeout} s") from None
        if status in (202, 204):
            raise RemoteProtocolError(
                f"{method}: the server answered HTTP {status} and no response",
                http_status=status)
        raise RemoteProtocolError(f"{method}: the stream ended before the response",
                                  http_status=status)

    async def _pipe(self, message: dict[str, Any], on_message: MessageHandler | None,
                    timeout: float | None) -> Reply:
        assert isinstance(self.transport, StdioTransport)
        return await pipe_request(self.transport, self._pending, message, on_message, timeout,
                                  self.clock)

    async def stream(
        self, method: str, params: Mapping[str, Any]
    ) -> AsyncGenerator[dict[str, Any] | Reply, None]:
        """A long-lived request (``subscriptions/listen``): each notification for it, then
        its ``Reply`` if the server ends it. The first item is the request message (so
        the caller learns its id). Leaving the iteration cancels it."""
        message, headers = self.message(method, params, {})
        yield message
        if isinstance(self.transport, HttpTransport):
            async with self.transport.exchange(
                    "POST", body=encode_message(message), headers=headers, timeout=None,
                    what=method) as exchange:
                async for value in exchange.messages():
                    if not isinstance(value, dict):
                        continue
                    if is_response(value):
                        if answers(value, message["id"]):
                            yield Reply(value, exchange.status)
                            return
                    elif is_notification(value):
                        yield value
            return
        transport = self.transport
        inbox = self._pending.open(message, stream=True)
        finished = False
        try:
            await transport.write(message)
            while True:
                item = await inbox.next(self._closed)
                finished = isinstance(item, Reply)
                yield item
                if finished:
                    return
        finally:
            self._pending.discard(message["id"])
            if not finished:
                transport.write_nowait(_cancelled(message["id"], "the client stopped listening"))

    def _closed(self) -> str:
        reason = getattr(self.transport, "closed_reason", None)
        return f"stdio server unavailable: {reason or 'closed'}"

    def _route(self, value: object) -> None:
        if not isinstance(value, dict):
            log.warning("ignoring a JSON-RPC batch on a 2026-07-28 stdio pipe")
            return
        if is_response(value):
            if not self._pending.response(value):
                log.warning("response for unknown request id %.80r", value.get("id"))
        elif is_notification(value):
            if not self._pending.notification(value):
                self._on_unclaimed(value)
        elif is_request(value) and isinstance(self.transport, StdioTransport):
            # 2026-07-28 servers ask through MRTR results, never requests (stdio page):
            # answer so a confused server does not wait forever (up to MAX_REFUSALS).
            self._refused += 1
            if self._refused > MAX_REFUSALS:
                if self._refused == MAX_REFUSALS + 1:
                    log.warning("the server sent more than %d requests; ignoring the rest",
                                MAX_REFUSALS)
                return
            self.transport.write_nowait(error_response(
                value["id"], METHOD_NOT_FOUND,
                f"{value['method']} is not a client method in protocol version "
                f"{self.protocol_version}"))


async def pipe_request(
    transport: StdioTransport,
    pending: Pending,
    message: dict[str, Any],
    on_message: MessageHandler | None,
    timeout: float | None,
    clock: Clock = SYSTEM_CLOCK,
    on_request: Answerer | None = None,
) -> Reply:
    """Write a request to the pipe and wait for its response in ``pending``; a request
    abandoned (timeout, cancellation) is cancelled with ``notifications/cancelled``.
    ``timeout`` is measured on ``clock``; ``on_request`` answers the server requests
    that belong to it (2025 era: ``Pending.answerer``)."""
    request_id = message["id"]
    inbox = pending.open(message, answer=on_request)
    answered = False
    try:
        async with clock.timeout(timeout):
            await transport.write(message)
            while True:
                item = await inbox.next(
                    lambda: f"stdio server unavailable: {transport.closed_reason}")
                if isinstance(item, Reply):
                    answered = True
                    return item
                if on_message is not None:
                    await on_message(item)
    except TimeoutError:
        raise RequestTimeout(f"{message['method']}: no response within {timeout} s") from None
    finally:
        pending.discard(request_id)
        if not answered:
            transport.write_nowait(_cancelled(request_id, "the client stopped waiting"))


def _cancelled(request_id: object, reason: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason}}


__all__ = ["MODERN_VERSIONS", "ModernWire", "pipe_request"]
