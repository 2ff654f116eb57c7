"""What can go wrong on the client side, split by who erred (STYLE §4, h11's split).

    ClientError
      LocalProtocolError      we, or the caller, erred: bad arguments, a missing MRTR
        RequestTimeout        resolver, the MRTR round limit, a request that timed out
      RemoteProtocolError     the peer erred: a JSON-RPC error response (``code``,
                              ``message``, ``data``, ``http_status``), or a reply that is
                              not valid MCP (``code`` is ``None`` then)
      TransportError          the connection failed: refused, reset, process exited

Local errors never carry a JSON-RPC code: the spec reserves those for peers (R1.13,
"purely local errors ... must not look like peer errors").
"""

from __future__ import annotations

from typing import Any


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
    """A request got no answer within the client's timeout."""


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


class TransportError(ClientError):
    """The connection itself failed (refused, reset, server process exited)."""


__all__ = [
    "ClientError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "RequestTimeout",
    "TransportError",
]
