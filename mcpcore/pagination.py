"""Opaque, self-contained pagination cursors and cache hints for list results.

A cursor encodes which list it belongs to and where the next page starts, so any
instance of a fleet can continue a listing another instance began (no server memory).
Cursors are opaque to clients; a malformed one, or one minted for another list, is
-32602 (pagination.mdx). Lists are served in registration order, which is deterministic.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import msgspec

from mcpcore.errors import InvalidCursor

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


def paginate(
    items: Sequence[T], cursor: str | None, kind: str, page_size: int
) -> tuple[Sequence[T], str | None]:
    """One page of ``items`` and the cursor of the next page (``None`` at the end)."""
    start = 0 if cursor is None else decode_cursor(cursor, kind)
    if start > len(items):
        raise InvalidCursor("Invalid cursor: past the end of the list")
    end = start + page_size
    next_cursor = encode_cursor(kind, end) if end < len(items) else None
    return items[start:end], next_cursor


__all__ = ["CacheHint", "CacheScope", "decode_cursor", "encode_cursor", "paginate"]
