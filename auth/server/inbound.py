"""The inbound bearer token, held so that it can be *refused*, not forwarded.

The middleware stores the raw token of the current request in a context variable,
wrapped in ``InboundToken`` (whose ``repr``/``str`` never show it). Two readers exist:
the passthrough guard, which refuses any outbound request carrying it, and token
exchange, which sends it as ``subject_token`` to the STS (the one party allowed to see
it). The engine and handlers never need it: they get a ``Principal``.
"""

from __future__ import annotations

from contextvars import ContextVar

from mcpcore.auth.redaction import fingerprint


class InboundToken:
    """A bearer token received from the client. ``reveal()`` is the only way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"InboundToken({fingerprint(self._value)})"

    __str__ = __repr__

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("an inbound token cannot be pickled")


_current: ContextVar[InboundToken | None] = ContextVar("mcpcore_auth_inbound", default=None)


def current_inbound_token() -> InboundToken | None:
    """The token of the request being handled in this context, if any."""
    return _current.get()


__all__ = ["InboundToken", "current_inbound_token"]
