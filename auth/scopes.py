"""Scopes: parsing them from tokens, expanding a hierarchy, and what a request needs.

A scope map keys either a JSON-RPC method (``"resources/read"``) or a method plus a
name (``"tools/call:delete_file"``, ``"prompts/get:summarise"``); both apply, together
with the scopes every request needs. A broader scope implies narrower ones through the
configured hierarchy (the spec's "Step-Up Authorization Flow"), e.g.
``{"files:write": {"files:read"}}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: Methods whose ``params.name`` selects the thing being used.
NAMED_METHODS = frozenset({"tools/call", "prompts/get"})


def parse_scopes(claims: Mapping[str, object]) -> frozenset[str]:
    """Scopes from ``scope`` (space-separated string) or ``scp`` (array of strings)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, str):
        return frozenset(scp.split())
    if isinstance(scp, list):
        return frozenset(s for s in scp if isinstance(s, str) and s)
    return frozenset()


def expand(scopes: Iterable[str], hierarchy: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """Everything ``scopes`` grant, following the hierarchy transitively.

    >>> sorted(expand({"files:admin"}, {"files:admin": frozenset({"files:write"}),
    ...                                 "files:write": frozenset({"files:read"})}))
    ['files:admin', 'files:read', 'files:write']
    """
    granted = set(scopes)
    todo = list(granted)
    while todo:
        for implied in hierarchy.get(todo.pop(), ()):
            if implied not in granted:
                granted.add(implied)
                todo.append(implied)
    return frozenset(granted)


def required_for(
    calls: Iterable[tuple[str, str | None]],
    base: frozenset[str],
    scope_map: Mapping[str, frozenset[str]],
) -> frozenset[str]:
    """Scopes needed by a request made of ``(method, name)`` calls (a batch has several)."""
    needed = set(base)
    for method, name in calls:
        needed |= scope_map.get(method, frozenset())
        if name is not None:
            needed |= scope_map.get(f"{method}:{name}", frozenset())
    return frozenset(needed)


__all__ = ["NAMED_METHODS", "expand", "parse_scopes", "required_for"]
