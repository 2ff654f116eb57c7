"""The ASGI type aliases (ASGI 3.0 specification, "HTTP" and "Lifespan" scopes): the one
copy that the transports, ``mcpcore.auth`` and ``mcpcore.conformance`` all use.

Imports nothing of the package, so every room may import it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[ASGIMessage]]
Send = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
#: Response or request headers as ASGI carries them: (lower-case name, value) byte pairs.
RawHeaders = Sequence[tuple[bytes, bytes]]

__all__ = ["ASGIApp", "ASGIMessage", "RawHeaders", "Receive", "Scope", "Send"]
