"""JSON-RPC plumbing both eras share: encoding, message kinds, and the table of requests
in flight that routes each incoming message to the request it belongs to.

No sockets here. ``Pending`` is what a pipe-like channel needs (stdio, or a 2025-era HTTP
session whose responses may arrive on another stream than their request's): responses go
to their request by id, a ``notifications/progress`` to the request whose
``progressToken`` it names, a listen notification to the stream its ``subscriptionId``
names (2026-07-28), and any other notification to the only request in flight, if there is
exactly one, else to nobody (the caller hands it to the client-wide handler).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import msgspec

from mcpcore import trace_context, types
from mcpcore.client.errors import (
    LocalProtocolError,
    RemoteProtocolError,
    ResponseTooLarge,
    TransportError,
)
from mcpcore.meta import PROGRESS_TOKEN, SUBSCRIPTION_ID

log = logging.getLogger("mcpcore.client")

#: Receives one incoming JSON-RPC message (a notification, or a server request).
MessageHandler = Callable[[dict[str, Any]], Awaitable[None]]
#: ``answer(method, params)``: the client's answer to a server request (a result
#: object), raising ``Unanswerable`` when it cannot answer.
Answerer = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

_decoder: Final = msgspec.json.Decoder()
_encoder: Final = msgspec.json.Encoder()

#: The most JSON values one message from the peer may hold (counted as the ``{``,
#: ``[``, ``,`` and ``:`` outside strings: ``json_values``). The byte limits alone do
#: not bound memory: decoded, ``{"a":1},`` (8 bytes) is a dict of about 200 bytes, so
#: a 16 MiB body of them is about 400 MiB of objects. At this count a decoded message
#: stays within a few tens of MiB whatever its shape, far above any MCP message we
#: know (a page of 1,000 tools is about 30,000).
MAX_JSON_VALUES: Final = 500_000
_STRING: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.S)
_MARKS: Final = (b"{", b"[", b",", b":")


@dataclass(frozen=True, slots=True)
class Reply:
    """The response to one request; ``http_status`` is ``None`` over stdio."""

    message: dict[str, Any]
    http_status: int | None = None


def milestone(count: int) -> bool:
    """Is ``count`` worth a log line (1, 10, 100, ...)? For what a flooding peer makes us
    drop: a warning at each power of ten, not one per message.

    >>> [n for n in range(1, 2000) if milestone(n)]
    [1, 10, 100, 1000]
    """
    while count % 10 == 0:
        count //= 10
    return count == 1


def encode_message(message: object) -> bytes:
    """JSON bytes of an outgoing message; ``LocalProtocolError`` if not serialisable."""
    try:
        return _encoder.encode(message)
    except (TypeError, ValueError, OverflowError) as exc:  # msgspec.EncodeError is ValueError
        raise LocalProtocolError(f"cannot encode the request as JSON: {exc}") from None


def json_values(data: bytes | bytearray | str, stop: int | None = None) -> int:
    """How many JSON values ``data`` holds, about: its ``{``, ``[``, ``,`` and ``:``
    outside strings (each container opens with one, each further element follows a
    comma, each member's value a colon). With ``stop``, the count ends as soon as it
    passes ``stop`` (a hostile message is not walked to its end).

    >>> json_values(b'{"a": [1, 2], "b": "x,y:z"}')
    6
    """
    raw = data.encode() if isinstance(data, str) else data
    count = position = 0
    for string in _STRING.finditer(raw):
        begin = string.start()
        count += sum(raw.count(mark, position, begin) for mark in _MARKS)
        position = string.end()
        if stop is not None and count > stop:
            return count
    return count + sum(raw.count(mark, position) for mark in _MARKS)


def _may_be_too_many(data: bytes | bytearray | str) -> bool:
    """Whether ``data`` may hold more than ``MAX_JSON_VALUES`` values (cheap: its marks
    counted strings and all, at C speed)."""
    if len(data) <= MAX_JSON_VALUES:
        return False
    if isinstance(data, str):
        return sum(data.count(mark) for mark in "{[,:") > MAX_JSON_VALUES
    return sum(data.count(mark) for mark in _MARKS) > MAX_JSON_VALUES


def decode_json(data: bytes | bytearray | str, *, http_status: int | None = None
                ) -> object:
    """Any JSON value from the peer, else ``RemoteProtocolError`` (``ResponseTooLarge``
    for one of more than ``MAX_JSON_VALUES`` values: ``json_values``)."""
    if _may_be_too_many(data) and json_values(data, MAX_JSON_VALUES) > MAX_JSON_VALUES:
        raise ResponseTooLarge(f"a message of more than {MAX_JSON_VALUES} JSON values",
                               limit=MAX_JSON_VALUES, http_status=http_status)
    try:
        return _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise RemoteProtocolError(f"server sent invalid JSON: {exc}",
                                  http_status=http_status) from None


def is_response(message: Mapping[str, Any]) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


def is_notification(message: Mapping[str, Any]) -> bool:
    return isinstance(message.get("method"), str) and "id" not in message


def is_request(message: Mapping[str, Any]) -> bool:
    """A server-to-client request: a method and an id (2025-era servers send these)."""
    return isinstance(message.get("method"), str) and "id" in message


def same_id(a: object, b: object) -> bool:
    """JSON-RPC ids match by value and JSON type: ``1`` and ``"1"`` stay distinct."""
    return type(a) is type(b) and a == b


def answers(message: Mapping[str, Any], request_id: object) -> bool:
    """Is this response for ``request_id``? An error without id (the server could not
    read ours) counts as ours."""
    if message.get("id") is None:
        return "error" in message
    return same_id(message["id"], request_id)


def id_key(request_id: object) -> tuple[type, object]:
    return (type(request_id), request_id)


def result_of(reply: Reply, method: str) -> dict[str, Any]:
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


#: Results that carry cache hints (``ttlMs``, ``cacheScope``).
_CACHEABLE: Final = (
    types.DiscoverResult, types.ListToolsResult, types.ListResourcesResult,
    types.ListResourceTemplatesResult, types.ListPromptsResult, types.ReadResourceResult,
)
_R = TypeVar("_R")


def typed_result(result: dict[str, Any], kind: type[_R], method: str) -> _R:
    """The typed view of a result (``RemoteProtocolError`` if it does not fit). A
    cacheable result without ``ttlMs``/``cacheScope`` (a 2025-era or sloppy server) is
    read as "do not cache": ``0``/``"private"``."""
    if issubclass(kind, _CACHEABLE):
        result = {"ttlMs": 0, "cacheScope": "private", **result}
    try:
        return msgspec.convert(result, kind)
    except msgspec.ValidationError as exc:
        raise RemoteProtocolError(f"{method}: invalid result: {exc}") from None


def to_notification(message: dict[str, Any]) -> types.Notification | None:
    """The typed view of a notification; ``None`` (logged) if it is malformed."""
    try:
        return msgspec.convert(message, types.Notification)
    except msgspec.ValidationError:
        log.warning("ignoring a malformed notification: %.200r", message)
        return None


def request_message(request_id: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": with_trace(params)}


def with_trace(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """``params`` with the current W3C trace context in its ``_meta`` (``traceparent``,
    ``tracestate``: SEP-414, the keys that carry it through any transport) when tracing
    is on (``trace_context.propagate``); keys the request's own ``_meta`` has win."""
    carrier: dict[str, str] = {}
    trace_context.propagate(carrier)
    if not carrier:
        return params
    own = params.get("_meta")
    return {**params, "_meta": {**carrier, **own} if isinstance(own, Mapping) else carrier}


def error_response(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


_EOF: Final = object()
#: Notifications waiting in one request's inbox for its reader (progress, logs); past
#: this, newer ones are dropped (logged): the reader's handler fell behind a server that
#: sends faster than it can be heard. The response and failures are never dropped.
MAX_INBOX_NOTIFICATIONS: Final = 1024
#: Notifications that belong to a request (progress, and log messages on stdio, where
#: nothing else ties them to one); the rest (list changes, resource updates, ...) are
#: the client's.
REQUEST_SCOPED: Final = frozenset({"notifications/progress", "notifications/message"})


@dataclass(eq=False)
class Inbox:
    """Where routed messages for one request (or listen stream) wait to be read."""

    request_id: object
    progress_token: object = None
    #: A listen stream: gets only notifications tagged with its subscriptionId.
    stream: bool = False
    #: Who answers the server requests that belong to this request (2025 era), instead
    #: of the client's resolvers; ``None``: the client's.
    answer: Answerer | None = None
    queue: asyncio.Queue[object] = field(default_factory=asyncio.Queue)

    #: Set once the response has been queued.
    answered: bool = False
    #: Notifications queued and not yet read; and how many were dropped past the limit.
    backlog: int = 0
    dropped: int = 0

    def notify(self, message: dict[str, Any]) -> None:
        """Queue a notification for the reader, unless ``MAX_INBOX_NOTIFICATIONS`` wait."""
        if self.backlog >= MAX_INBOX_NOTIFICATIONS:
            self.dropped += 1
            if milestone(self.dropped):
                log.warning("request %r: its reader fell behind; dropping %s (%d so far)",
                            self.request_id, message.get("method"), self.dropped)
            return
        self.backlog += 1
        self.queue.put_nowait(message)

    async def next(self, closed: Callable[[], str]) -> dict[str, Any] | Reply:
        """The next message (a ``Reply`` for the response); raises what a reader failed
        with, or ``TransportError`` (its text from ``closed``) once the channel ends."""
        item = await self.queue.get()
        if item is _EOF:
            raise TransportError(closed())
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, dict):
            self.backlog -= 1
            return item
        assert isinstance(item, Reply)
        return item

    def fail(self, exc: BaseException) -> None:
        """A reader working for this request failed: the request raises ``exc``."""
        self.queue.put_nowait(exc)


class Pending:
    """The requests in flight on one channel, and the routing rules of the module
    docstring."""

    def __init__(self) -> None:
        self._inboxes: dict[tuple[type, object], Inbox] = {}
        self.closed = False

    def __len__(self) -> int:
        return len(self._inboxes)

    def open(self, message: Mapping[str, Any], *, stream: bool = False,
             answer: Answerer | None = None) -> Inbox:
        request_id = message["id"]
        key = id_key(request_id)
        if key in self._inboxes:
            raise LocalProtocolError(f"request id {request_id!r} is already in flight")
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get(PROGRESS_TOKEN) if isinstance(meta, dict) else None
        inbox = Inbox(request_id, progress_token=token, stream=stream, answer=answer)
        if self.closed:
            inbox.queue.put_nowait(_EOF)
        self._inboxes[key] = inbox
        return inbox

    def discard(self, request_id: object) -> None:
        self._inboxes.pop(id_key(request_id), None)

    def response(self, message: dict[str, Any], http_status: int | None = None) -> bool:
        """Hand a response to its request; ``False`` if no request has that id."""
        inbox = self._inboxes.get(id_key(message.get("id")))
        if inbox is None:
            if message.get("id") is None and len(self._inboxes) == 1 and "error" in message:
                inbox = next(iter(self._inboxes.values()))  # an id-less error: the only one
            else:
                return False
        if inbox.answered:
            return True  # a replayed duplicate (stream resumption): already delivered
        inbox.answered = True
        inbox.queue.put_nowait(Reply(message, http_status))
        return True

    def notification(self, message: dict[str, Any]) -> bool:
        """Hand a notification to the request it belongs to; ``False`` if none claims it."""
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        inbox: Inbox | None = None
        if isinstance(meta, dict) and SUBSCRIPTION_ID in meta:
            inbox = self._inboxes.get(id_key(meta[SUBSCRIPTION_ID]))
        elif message.get("method") == "notifications/progress" and PROGRESS_TOKEN in params:
            token = params[PROGRESS_TOKEN]
            inbox = next((i for i in self._inboxes.values()
                          if i.progress_token is not None and same_id(i.progress_token, token)),
                         None)
        elif message.get("method") in REQUEST_SCOPED:
            requests = [i for i in self._inboxes.values() if not i.stream]
            inbox = requests[0] if len(requests) == 1 else None
        if inbox is None:
            return False
        inbox.notify(message)
        return True

    def answerer(self, own: Inbox | None) -> Answerer | None:
        """Who answers a server request (2025 era): the answerer of the request whose
        stream it came on (``own``); one that came elsewhere (a stdio pipe, the HTTP
        GET stream) belongs to a request only if exactly one request in flight takes
        server requests (else it is the client's: ``None``). Never a guess between two
        requests: they may be different users' calls."""
        if own is not None:
            return own.answer
        takers = [i.answer for i in self._inboxes.values() if i.answer is not None]
        return takers[0] if len(takers) == 1 else None

    def fail_waiting(self, exc: BaseException) -> None:
        """Wake every waiting request with ``exc``; the table stays usable."""
        for inbox in self._inboxes.values():
            inbox.fail(exc)

    def fail_all(self) -> None:
        """The channel ended: every waiting request wakes up with a transport error."""
        self.closed = True
        for inbox in self._inboxes.values():
            inbox.queue.put_nowait(_EOF)


__all__ = [
    "MAX_JSON_VALUES",
    "REQUEST_SCOPED",
    "Answerer",
    "Inbox",
    "MessageHandler",
    "Pending",
    "Reply",
    "answers",
    "decode_json",
    "encode_message",
    "error_response",
    "id_key",
    "is_notification",
    "is_request",
    "is_response",
    "json_values",
    "milestone",
    "request_message",
    "result_of",
    "same_id",
    "to_notification",
    "typed_result",
]
