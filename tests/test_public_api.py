"""``mcpcore.__all__`` lists exactly the public names of ``mcpcore`` (STYLE §6)."""

from __future__ import annotations

import importlib
from types import ModuleType

import mcpcore


def test_all_lists_every_public_name() -> None:
    exported = {name for name, value in vars(mcpcore).items()
                if not name.startswith("_") and not isinstance(value, ModuleType)}
    assert exported == set(mcpcore.__all__) - {"__version__"}


def test_every_name_in_all_resolves_and_is_unique() -> None:
    assert len(mcpcore.__all__) == len(set(mcpcore.__all__))
    for name in mcpcore.__all__:
        assert getattr(mcpcore, name) is not None, name


def test_public_names_come_from_their_home_modules() -> None:
    """Each exported class or function is the one its module defines (no copies)."""
    for name in mcpcore.__all__:
        value = getattr(mcpcore, name)
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and home.startswith("mcpcore."):
            assert getattr(importlib.import_module(home), name) is value, name


def test_version_is_a_string() -> None:
    assert isinstance(mcpcore.__version__, str) and mcpcore.__version__
