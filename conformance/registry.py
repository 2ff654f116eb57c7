"""Where checks are registered, and how a run picks them (by id, tag or glob).

A check module declares its checks with the ``@check(...)`` decorator; importing
``mcpcore.conformance.checks`` imports every module and so fills ``REGISTRY``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable

from mcpcore.conformance.model import NEEDS, PACKS, Check, CheckFn, Level
from mcpcore.conformance.wire import ERAS

#: Every registered check by id, in registration order.
REGISTRY: dict[str, Check] = {}


def check(id: str, *, title: str, requirement: str, level: Level | str, spec: str,
          eras: Iterable[str] = ERAS, tags: Iterable[str] = (), needs: Iterable[str] = (),
          pack: str = "core", final: bool = False,
          fix: str = "") -> Callable[[CheckFn], CheckFn]:
    """Register the decorated coroutine as a check; see docs/conformance.md, "Adding a
    check"."""
    needed = frozenset(needs)
    if needed - NEEDS:
        raise ValueError(f"{id}: unknown needs {sorted(needed - NEEDS)}")
    if pack not in PACKS:
        raise ValueError(f"{id}: unknown pack {pack!r}")
    era_set = frozenset(eras)
    if not era_set or era_set - set(ERAS):
        raise ValueError(f"{id}: eras must be among {ERAS}")

    def register(fn: CheckFn) -> CheckFn:
        if id in REGISTRY:
            raise ValueError(f"check id {id!r} registered twice")
        REGISTRY[id] = Check(id=id, title=title, requirement=requirement, level=Level(level),
                             spec=spec, eras=era_set, run=fn, tags=frozenset(tags),
                             needs=needed, pack=pack, final=final, fix=fix)
        return fn

    return register


def all_checks() -> list[Check]:
    """Every check of every pack (imports the check modules on first use)."""
    import mcpcore.conformance.checks  # noqa: F401 - fills REGISTRY

    return list(REGISTRY.values())


def select(checks: Iterable[Check], include: Iterable[str] = (),
           exclude: Iterable[str] = ()) -> list[Check]:
    """Checks matching any ``include`` pattern (all when empty) and no ``exclude`` one.

    A pattern is a check id, a glob over ids (``headers.*``), a tag (``security``), or a
    level (``MUST``)."""
    def matches(item: Check, pattern: str) -> bool:
        return (pattern in item.tags or pattern == item.level.value or pattern == item.pack
                or fnmatch.fnmatchcase(item.id, pattern))

    wanted, unwanted = list(include), list(exclude)
    return [c for c in checks
            if (not wanted or any(matches(c, p) for p in wanted))
            and not any(matches(c, p) for p in unwanted)]


def unknown_patterns(checks: Iterable[Check], patterns: Iterable[str]) -> list[str]:
    """Patterns that match no check (so a typo on the command line is an error)."""
    items = list(checks)
    return [p for p in patterns if not select(items, [p])]


__all__ = ["REGISTRY", "all_checks", "check", "select", "unknown_patterns"]
