"""mcpcore.pagination: opaque self-contained cursors and cache hints."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.errors import ErrorCode, InvalidCursor
from mcpcore.pagination import CacheHint, SealedCursors, decode_cursor, encode_cursor, paginate


@given(kind=st.sampled_from(["tools", "prompts", "resources", "templates"]),
       offset=st.integers(0, 2**40))
def test_cursor_round_trip(kind: str, offset: int) -> None:
    cursor = encode_cursor(kind, offset)
    assert cursor.isascii() and "=" not in cursor
    assert decode_cursor(cursor, kind) == offset


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.mark.parametrize("cursor", [
    encode_cursor("prompts", 2),          # minted for another list
    "",
    "garbage!",
    "é",
    "====",
    b64(b"not json"),
    b64(b'{"kind":"tools","offset":1}'),
    b64(b'["tools"]'),
    b64(b'["tools",1,2]'),
    b64(b'["tools",-1]'),
    b64(b'["tools",1.0]'),
    b64(b'["tools",true]'),
    b64(b'["tools","1"]'),
    b64(b'[null,1]'),
])
def test_foreign_or_garbage_cursor_is_invalid_params(cursor: str) -> None:
    with pytest.raises(InvalidCursor) as info:
        decode_cursor(cursor, "tools")
    assert info.value.code == ErrorCode.INVALID_PARAMS
    assert info.value.http_status == 200  # an ordinary JSON-RPC error


@pytest.mark.parametrize(("size", "page", "pages"), [
    (0, 3, [[]]),
    (1, 3, [[0]]),
    (3, 3, [[0, 1, 2]]),
    (4, 3, [[0, 1, 2], [3]]),
    (7, 2, [[0, 1], [2, 3], [4, 5], [6]]),
])
def test_paginate_walks_every_item_once(size: int, page: int, pages: list[list[int]]) -> None:
    items = list(range(size))
    seen: list[list[int]] = []
    cursor = None
    while True:
        chunk, cursor = paginate(items, cursor, "tools", page)
        seen.append(list(chunk))
        if cursor is None:
            break
    assert seen == pages


def test_cursor_past_the_end_is_invalid() -> None:
    with pytest.raises(InvalidCursor):
        paginate([1, 2], encode_cursor("tools", 3), "tools", 1)
    assert paginate([1, 2], encode_cursor("tools", 2), "tools", 1) == ([], None)


@pytest.mark.parametrize(("ttl", "scope"), [(-1, "public"), (1.5, "public"), (1, "shared")])
def test_bad_cache_hint(ttl: object, scope: str) -> None:
    with pytest.raises(ValueError):
        CacheHint(ttl_ms=ttl, scope=scope)  # type: ignore[arg-type]


def test_cache_hint_applies_integers() -> None:
    assert CacheHint(5, "public").apply({"x": 1}) == {"x": 1, "ttlMs": 5, "cacheScope": "public"}
    assert CacheHint().apply({}) == {"ttlMs": 0, "cacheScope": "private"}


# -- sealed cursors ------------------------------------------------------------------------
def _sealed(now: list[float] | None = None) -> SealedCursors:
    from mcpcore.sealing import KeyRing, Sealer

    clock = (lambda: now[0]) if now is not None else None
    ring = KeyRing([("k1", bytes(range(32)))])
    sealer = Sealer(ring, ttl_seconds=60, **({"clock": clock} if clock else {}))
    return SealedCursors(lambda: sealer)


def test_sealed_cursors_walk_a_list() -> None:
    cursors, items = _sealed(), [f"item{i}" for i in range(5)]
    seen, cursor = [], None
    while True:
        page, cursor = paginate(items, cursor, "tools", 2, cursors, "|alice")
        seen.extend(page)
        if cursor is None:
            break
        assert "item" not in cursor and "[" not in cursor  # opaque: nothing to read
    assert seen == items


@pytest.mark.parametrize(("change", "why"), [
    ("tamper", "failed authentication"),
    ("principal", "different principal"),
    ("kind", "different method"),
    ("list", "the list changed since it was issued"),
    ("expired", "expired"),
])
def test_sealed_cursors_refuse_what_they_were_not_issued_for(change: str, why: str) -> None:
    now = [1000.0]
    cursors, items = _sealed(now), ["a", "b", "c"]
    _, cursor = paginate(items, None, "tools", 1, cursors, "|alice")
    assert cursor is not None
    principal, kind = "|alice", "tools"
    if change == "tamper":
        cursor = cursor[:-6] + ("A" if cursor[-6] != "A" else "B") + cursor[-5:]
    elif change == "principal":
        principal = "|mallory"
    elif change == "kind":
        kind = "prompts"
    elif change == "list":
        items = ["a", "b", "c", "d"]
    else:
        now[0] += 61
    with pytest.raises(InvalidCursor, match=why) as refused:
        paginate(items, cursor, kind, 1, cursors, principal)
    assert refused.value.code == -32602
    # A plain cursor forged by hand is refused too.
    with pytest.raises(InvalidCursor):
        paginate(items, encode_cursor("tools", 1), "tools", 1, cursors, "|alice")
