"""Which era a server speaks: the ``mode="auto"`` probe, and the cache of its verdicts.

The rules (2026-07-28 basic/versioning, "Backward Compatibility with Initialization-Based
Versions"; the stdio and Streamable HTTP pages' "Backward Compatibility" sections): probe
with ``server/discover`` at 2026-07-28. A ``DiscoverResult`` listing 2026-07-28, or a
recognised modern error (``-32020``, ``-32021``, ``-32022`` naming a version we speak, or
``-32601`` with HTTP 404), means a modern server. Any other error, or no answer within
the probe's timeout, means a legacy one, and the client falls back to ``initialize``; so
does a ``-32022`` or a ``DiscoverResult`` that lists only 2025 versions. A modern server
sharing no version with us is an ``EraNegotiationError``. 401/403 are not an era
verdict: the ``HttpError`` propagates, as does a connection that fails outright.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from mcpcore import types
from mcpcore.client.errors import (
    EraNegotiationError,
    HttpError,
    RemoteProtocolError,
    RequestTimeout,
)
from mcpcore.client.modern import ModernWire
from mcpcore.client.wire import typed_result
from mcpcore.meta import SERVER_INFO
from mcpcore.versions import LEGACY, MODERN

Mode = Literal["auto", "legacy", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
Era = Literal["modern", "legacy"]
#: Errors only a modern server sends, when they answer the probe.
MODERN_ERRORS: Final = frozenset({-32020, -32021, -32022})
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
METHOD_NOT_FOUND: Final = -32601


class EraCache:
    """Which era each server spoke, by endpoint URL (HTTP) or command line (stdio).

    The spec asks clients to cache the verdict for the server's lifetime (versioning,
    "Backward Compatibility"); a process-wide instance is the default. Pass
    ``era_cache=None`` to probe every time, or your own instance to scope it.
    """

    def __init__(self) -> None:
        self._eras: dict[str, Era] = {}

    def get(self, key: str) -> Era | None:
        return self._eras.get(key)

    def set(self, key: str, era: Era) -> None:
        self._eras[key] = era

    def forget(self, key: str) -> None:
        self._eras.pop(key, None)


DEFAULT_ERA_CACHE: Final = EraCache()


async def probe(wire: ModernWire, timeout: float, attempts: list[tuple[str, str]]
                ) -> tuple[Era, types.DiscoverResult | None]:
    """Send the probe on ``wire``; the era, and the ``DiscoverResult`` if one came.
    What the server answered, when it was not modern, is appended to ``attempts``."""
    what = f"server/discover at {MODERN}"
    try:
        result = await wire.request("server/discover", {}, headers={}, on_message=None,
                                    timeout=timeout)
    except HttpError as exc:
        if exc.status in (401, 403):
            raise
        attempts.append((what, describe(exc)))
        return "legacy", None
    except RemoteProtocolError as exc:
        attempts.append((what, describe(exc)))
        if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
            supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
            if isinstance(supported, list) and any(v in LEGACY for v in supported):
                return "legacy", None  # modern-shaped, but it speaks a 2025 version with us
            raise EraNegotiationError(
                "the server speaks only protocol versions this client does not",
                attempts=attempts, code=exc.code, data=exc.data,
                http_status=exc.http_status) from None
        if exc.code in MODERN_ERRORS or (
                exc.code == METHOD_NOT_FOUND and exc.http_status == 404):
            return "modern", None  # modern, without server/discover or unhappy with the
            # probe for a reason the caller will meet again on its own requests
        return "legacy", None
    except RequestTimeout as exc:
        attempts.append((what, f"no answer ({exc})"))
        return "legacy", None
    try:
        info = typed_result(result, types.DiscoverResult, "server/discover")
    except RemoteProtocolError as exc:
        attempts.append((what, describe(exc)))
        return "legacy", None
    if MODERN in info.supported_versions:
        return "modern", info
    attempts.append((what, f"supportedVersions {info.supported_versions}"))
    if any(v in LEGACY for v in info.supported_versions):
        return "legacy", None
    raise EraNegotiationError("the server lists no protocol version this client speaks",
                              attempts=attempts)


def discover_from_initialize(result: dict[str, Any]) -> types.DiscoverResult:
    """The ``DiscoverResult`` a 2025-era ``InitializeResult`` amounts to."""
    built: dict[str, Any] = {
        "supportedVersions": [result.get("protocolVersion")],
        "capabilities": result.get("capabilities") or {},
        "ttlMs": 0, "cacheScope": "private",
    }
    if isinstance(result.get("instructions"), str):
        built["instructions"] = result["instructions"]
    if isinstance(result.get("serverInfo"), dict):
        built["_meta"] = {SERVER_INFO: result["serverInfo"]}
    return typed_result(built, types.DiscoverResult, "initialize")


def describe(exc: BaseException) -> str:
    """One line for ``attempts``: the error's type and text."""
    return f"{type(exc).__name__}: {exc}"


__all__ = ["DEFAULT_ERA_CACHE", "Era", "EraCache", "Mode", "discover_from_initialize",
           "probe"]
