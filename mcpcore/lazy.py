"""Names a package exports but loads on first use (PEP 562 module ``__getattr__``).

A package whose ``__init__`` should stay cheap maps each exported name to the module that
defines it and hands the map to ``lazy_exports``::

    __getattr__, __dir__ = lazy_exports(__name__, {"TaskManager": "mcpcore.tasks.manager"})

A name loads its module on first use and is then kept in the package's namespace, so
later look-ups skip ``__getattr__``. ``missing(name)`` may give the message of the
``AttributeError`` for a name the map does not hold (a moved name says where it went).
``mcpcore/__init__.py`` keeps its own three lines: the room rules let it import none of
the package's modules, this one included.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str], *,
                 missing: Callable[[str], str | None] | None = None
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose names live in ``homes``
    (name → defining module)."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            message = missing(name) if missing is not None else None
            raise AttributeError(message or f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home), name)
        vars(sys.modules[package])[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
