"""Scopes: parsing them from tokens, expanding a hierarchy, and what a request needs.

A scope map keys either a JSON-RPC method (``"resources/read"``) or a method plus a
name (``"tools/call:delete_file"``, ``"prompts/get:summarise"``); both apply, together
with the scopes every request needs. A broader scope implies narrower ones through the
configured hierarchy (the spec's "Step-Up Authorization Flow"), e.g.
``{"files:write": {"files:read"}}``; ``mcpcore.principal.expand_scopes`` follows it (the
policy engine uses the same function).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mcpcore.headers import NAME_PARAMS

#: Methods whose ``params.name`` selects the thing being used (``tools/call``,
#: ``prompts/get``), read off the one table of naming params.
NAMED_METHODS = frozenset(method for method, param in NAME_PARAMS.items() if param == "name")


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


__all__ = ["NAMED_METHODS", "parse_scopes", "required_for"]
