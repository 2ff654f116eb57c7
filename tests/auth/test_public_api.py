"""``mcpcore.auth.__all__`` lists exactly the public names, and each resolves."""

from __future__ import annotations

from types import ModuleType

import mcpcore.auth as auth


def test_all_lists_every_public_name() -> None:
    exported = {
        name
        for name, value in vars(auth).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }
    assert exported == set(auth.__all__)


def test_all_is_sorted_and_unique() -> None:
    assert len(auth.__all__) == len(set(auth.__all__))
    assert list(auth.__all__) == sorted(auth.__all__, key=lambda n: (n[0].islower(), n))
