"""What can go wrong on the client side, split by who erred, as h11 splits them.

    ClientError
      LocalProtocolError        we, or the caller, erred: bad arguments, a missing
        RequestTimeout          resolver, the round limit, a request that timed out
      RemoteProtocolError       the peer erred: a JSON-RPC error response (``code``,
        HttpError               ``message``, ``data``, ``http_status``) or a reply that is
        SessionExpired          not MCP (``code`` is ``None`` then). ``HttpError``: an HTTP
        EraNegotiationError     failure status (401/403 with the parsed ``WWW-Authenticate``
        ResponseTooLarge        challenges). ``SessionExpired``: a 2025-era session the
        ListingIncomplete       server no longer knows, even after one re-initialize.
                                ``EraNegotiationError``: no protocol era worked; it says
                                what was tried and what the server answered.
                                ``ResponseTooLarge``: a body, event-stream line or event
                                past the client's limit. ``ListingIncomplete``: a paginated
                                list that passed the page, item or time limit, or repeated
                                a cursor.
      TransportError            the connection failed: refused, reset, a stream that broke
                                for good, a server process that exited or missed its
                                heartbeats

Local errors never carry a JSON-RPC code: error codes are what peers send (JSON-RPC 2.0
§5.1), and a purely local failure must not look like the server's answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpcore.auth.challenges import Challenge


class ClientError(Exception):
    """Base of every error the client raises.

    >>> try:
    ...     raise LocalProtocolError("no on_elicit resolver")
    ... except ClientError as exc:
    ...     print(exc)
    no on_elicit resolver
    """


class LocalProtocolError(ClientError):
    """We (or the caller) broke the rules; nothing was wrong with the peer."""


class RequestTimeout(LocalProtocolError):
    """A request got no answer within its timeout (the client gave up waiting)."""


class RemoteProtocolError(ClientError):
    """The peer answered with a JSON-RPC error, or with something that is not MCP.

    ``code``/``message``/``data`` are the JSON-RPC error's members (``code`` is ``None``
    when the peer broke the protocol without an error object, e.g. an HTML 502 page);
    ``http_status`` is the HTTP status (``None`` over stdio).

    >>> err = RemoteProtocolError("Unknown tool: nope", code=-32602, http_status=200)
    >>> err.code, err.message
    (-32602, 'Unknown tool: nope')
    """

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        data: Any = None,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data
        self.http_status = http_status

    def __str__(self) -> str:
        where = f" (HTTP {self.http_status})" if self.http_status not in (None, 200) else ""
        code = f"[{self.code}] " if self.code is not None else ""
        return f"{code}{self.message}{where}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, code={self.code!r}, "
            f"http_status={self.http_status!r})"
        )


class HttpError(RemoteProtocolError):
    """The server answered with an HTTP failure status.

    Raised for 401 and 403 always (with a JSON-RPC ``code`` if the body had one), and for
    any other status >= 400 whose body is not a JSON-RPC error. ``headers`` are the
    response headers (lower-cased names); ``challenges`` the ``WWW-Authenticate`` header
    parsed by ``mcpcore.auth.parse_challenges`` (RFC 9110 §11.6.1), the parser the OAuth
    client uses too. It loads on first use, so an error nobody inspects costs nothing.

    >>> err = HttpError("Unauthorized", status=401, headers={
    ...     "www-authenticate": 'Bearer resource_metadata="https://rs/.well-known/x"'})
    >>> err.status, err.challenge("bearer").params["resource_metadata"]
    (401, 'https://rs/.well-known/x')
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        headers: Mapping[str, str] | None = None,
        code: int | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message, code=code, data=data, http_status=status)
        self.status = status
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}

    @property
    def challenges(self) -> list[Challenge]:
        """Every challenge of the ``WWW-Authenticate`` header (empty if it has none)."""
        value = self.headers.get("www-authenticate")
        if not value:
            return []
        from mcpcore.auth.challenges import parse_challenges

        return parse_challenges(value)

    def challenge(self, scheme: str) -> Challenge | None:
        """The first challenge of ``scheme`` (case-insensitive), if the server sent one."""
        wanted = scheme.lower()
        return next((c for c in self.challenges if c.scheme == wanted), None)


class SessionExpired(RemoteProtocolError):
    """A 2025-era HTTP session ended on the server's side (404 for its session id) and
    one fresh ``initialize`` did not bring it back."""


class EraNegotiationError(RemoteProtocolError):
    """No protocol era worked with this server.

    ``attempts`` lists what was tried, in order, each with what the server answered,
    e.g. ``("server/discover at 2026-07-28", "HTTP 400: [-32000] Bad Request")``.
    """

    def __init__(self, message: str, *, attempts: Sequence[tuple[str, str]],
                 code: int | None = None, data: Any = None,
                 http_status: int | None = None) -> None:
        tried = "; ".join(f"{what}: {answer}" for what, answer in attempts)
        super().__init__(f"{message} (tried {tried})" if tried else message,
                         code=code, data=data, http_status=http_status)
        self.attempts = list(attempts)


class ResponseTooLarge(RemoteProtocolError):
    """The server sent more than the client accepts in one piece: a JSON body larger
    than ``max_body_bytes``, an event-stream line or event larger than its limit, a
    message of more than ``wire.MAX_JSON_VALUES`` JSON values, or more than the
    transport's ``held_bytes`` held by the responses in flight together. ``limit`` is
    the limit broken (in bytes; in JSON values for the count).

    >>> ResponseTooLarge("event-stream event larger than 8 bytes", limit=8).limit
    8
    """

    def __init__(self, message: str, *, limit: int, http_status: int | None = None) -> None:
        super().__init__(message, http_status=http_status)
        self.limit = limit


class ListingIncomplete(RemoteProtocolError):
    """A paginated list (``tools/list``, ``resources/list``, ...) did not end within the
    client's limits: more pages than ``max_pages``, more items than ``max_items``, a
    walk longer than ``list_timeout``, or a cursor the server had already sent."""


class TransportError(ClientError):
    """The connection itself failed (refused, reset, broken stream, server process exited,
    heartbeats missed)."""


__all__ = [
    "ClientError",
    "EraNegotiationError",
    "HttpError",
    "ListingIncomplete",
    "LocalProtocolError",
    "RemoteProtocolError",
    "RequestTimeout",
    "ResponseTooLarge",
    "SessionExpired",
    "TransportError",
]
