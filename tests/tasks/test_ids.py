"""Task ids, owner digests and input keys."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.tasks.ids import (
    TASK_ID_BYTES,
    input_key,
    is_task_id,
    mint_task_id,
    owner_digest,
    same_owner,
)


def test_task_ids_carry_at_least_128_random_bits() -> None:
    ids = {mint_task_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert TASK_ID_BYTES * 8 >= 128
    for task_id in list(ids)[:50]:
        assert len(base64.urlsafe_b64decode(task_id + "=" * (-len(task_id) % 4))) == 24
        assert is_task_id(task_id)


@pytest.mark.parametrize("value, plausible", [
    ("A" * 32, True),
    ("abc-_" + "x" * 27, True),
    ("A" * 31, False),
    ("A" * 33, False),
    ("A" * 31 + "=", False),
    ("A" * 31 + "/", False),
    ("tasks-conformance-nonexistent-12345", False),
    ("", False),
    ("A" * 31 + "\n", False),
])
def test_only_ids_we_could_have_minted_are_looked_up(value: str, plausible: bool) -> None:
    assert is_task_id(value) is plausible


def test_owners_are_stored_as_digests_and_compared_exactly() -> None:
    digest = owner_digest("https://idp.example|alice")
    assert len(digest) == 64 and "alice" not in digest
    assert same_owner(digest, "https://idp.example|alice")
    assert not same_owner(digest, "https://idp.example|bob")
    assert not same_owner(digest, "|alice")


@pytest.mark.parametrize("seq, hint, key", [
    (1, None, "input-1"),
    (3, "confirm", "confirm-3"),
    (2, "elicitation", "elicitation-2"),
    (7, "a b/c", "a_b_c-7"),
    (9, "x" * 60, "x" * 40 + "-9"),
])
def test_input_keys(seq: int, hint: str | None, key: str) -> None:
    assert input_key(seq, hint) == key


@given(st.lists(st.one_of(st.none(), st.text(max_size=50)), min_size=1, max_size=40))
def test_input_keys_of_distinct_sequence_numbers_never_collide(hints: list[str | None]
                                                              ) -> None:
    keys = [input_key(seq, hint) for seq, hint in enumerate(hints, start=1)]
    assert len(set(keys)) == len(keys)
