"""mcpcore.pagination: opaque self-contained cursors and cache hints."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.errors import ErrorCode, InvalidCursor
from mcpcore.pagination import CacheHint, decode_cursor, encode_cursor, paginate


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
