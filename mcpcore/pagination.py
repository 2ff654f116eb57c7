"""Opaque, self-contained pagination cursors and cache hints for list results.

A cursor encodes which list it belongs to and where the next page starts, so any
instance of a fleet can continue a listing another instance began (no server memory).
Cursors are opaque to clients; a malformed one, or one minted for another list, is
-32602 (pagination.mdx). Lists are served in registration order, which is deterministic.

By default a cursor is plain (base64 JSON): it holds nothing but an offset into a list
the caller may read whole anyway. ``SealedCursors`` seals them instead, with the key
ring of ``mcpcore.sealing``: tamper-evident and unreadable, bound to the caller, the
list and the list's content (a cursor minted before the list changed is refused rather
than skipping or repeating items), and expiring. A gateway uses them: its lists are
other servers' catalogs, and they change under the caller.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import msgspec

from mcpcore.errors import InvalidCursor, InvalidRequestState
from mcpcore.sealing import Sealer, StateBinding, params_digest

T = TypeVar("T")
CacheScope = Literal["public", "private"]


@dataclass(frozen=True, slots=True)
class CacheHint:
    """``ttlMs`` and ``cacheScope`` for a cacheable result (caching.mdx).

    ``"public"`` only for responses without user-specific data: shared gateways may
    replay them to any caller. Access control never relies on it (caching.mdx, "Security
    Considerations").
    """

    ttl_ms: int = 0
    scope: CacheScope = "private"

    def __post_init__(self) -> None:
        if not isinstance(self.ttl_ms, int) or self.ttl_ms < 0:
            raise ValueError("ttl_ms must be an integer >= 0")
        if self.scope not in ("public", "private"):
            raise ValueError('scope must be "public" or "private"')

    def apply(self, result: dict[str, Any]) -> dict[str, Any]:
        result["ttlMs"] = self.ttl_ms
        result["cacheScope"] = self.scope
        return result


def encode_cursor(kind: str, offset: int) -> str:
    raw = msgspec.json.encode([kind, offset])
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str, kind: str) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = msgspec.json.decode(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (binascii.Error, ValueError, msgspec.DecodeError, UnicodeEncodeError):
        raise InvalidCursor("Invalid cursor") from None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or value[0] != kind
        or type(value[1]) is not int
        or value[1] < 0
    ):
        raise InvalidCursor("Invalid cursor") from None
    offset: int = value[1]
    return offset


class SealedCursors:
    """Cursors sealed by ``sealer()`` (module docstring): ``Server.cursors``.

    >>> from mcpcore.sealing import KeyRing
    >>> cursors = SealedCursors(lambda: Sealer(KeyRing([("k1", bytes(32))])))
    >>> items = ["a", "b", "c"]
    >>> page, cursor = paginate(items, None, "tools", 2, cursors, "|alice")
    >>> paginate(items, cursor, "tools", 2, cursors, "|alice")[0]
    ['c']
    """

    def __init__(self, sealer: Callable[[], Sealer]) -> None:
        self._sealer = sealer
        #: The last list of each kind and its digest (lists are served as the same
        #: object until their registry changes, so each is digested once).
        self._versions: dict[str, tuple[Sequence[Any], str]] = {}

    def _binding(self, kind: str, items: Sequence[Any], principal: str) -> StateBinding:
        cached = self._versions.get(kind)
        if cached is None or cached[0] is not items:
            cached = self._versions[kind] = (items, params_digest(kind, {"items": items}))
        return StateBinding(principal, f"cursor/{kind}", cached[1])

    def encode(self, kind: str, offset: int, items: Sequence[Any], principal: str) -> str:
        return self._sealer().seal(self._binding(kind, items, principal), round=0,
                                   data={"offset": offset})

    def decode(self, cursor: str, kind: str, items: Sequence[Any], principal: str) -> int:
        try:
            opened = self._sealer().open(cursor, self._binding(kind, items, principal))
        except InvalidRequestState as exc:
            detail = exc.message
            if "different request" in detail:
                detail = "the list changed since it was issued; list again from the start"
            raise InvalidCursor("Invalid cursor: " + detail.replace(
                "requestState", "the cursor")) from None
        offset = opened.data.get("offset")
        if type(offset) is not int or offset < 0:
            raise InvalidCursor("Invalid cursor")
        return offset


def paginate(
    items: Sequence[T], cursor: str | None, kind: str, page_size: int,
    sealed: SealedCursors | None = None, principal: str = "",
) -> tuple[Sequence[T], str | None]:
    """One page of ``items`` and the cursor of the next page (``None`` at the end):
    plain cursors, or ``sealed`` ones bound to ``principal`` (``Principal.key``)."""
    if cursor is None:
        start = 0
    elif sealed is None:
        start = decode_cursor(cursor, kind)
    else:
        start = sealed.decode(cursor, kind, items, principal)
    if start > len(items):
        raise InvalidCursor("Invalid cursor: past the end of the list")
    end = start + page_size
    next_cursor = None
    if end < len(items):
        next_cursor = (encode_cursor(kind, end) if sealed is None
                       else sealed.encode(kind, end, items, principal))
    return items[start:end], next_cursor


__all__ = ["CacheHint", "CacheScope", "SealedCursors", "decode_cursor", "encode_cursor",
           "paginate"]
