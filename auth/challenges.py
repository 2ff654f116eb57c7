"""``WWW-Authenticate: Bearer`` challenges (RFC 6750 §3, RFC 9728 §5.1).

Every auth-param value is a quoted string; ``scope`` is space-separated and sorted so
that the same request always gets the same challenge (spec 1.06). A request without
credentials gets no ``error`` code (RFC 6750 §3.1); ``offline_access`` never appears.
"""

from __future__ import annotations

from collections.abc import Iterable


def _quote(value: str) -> str:
    # quoted-string (RFC 9110 §5.6.4): escape backslash and double quote, drop controls.
    cleaned = "".join(ch for ch in value if ch >= " " and ch != "\x7f")
    return '"' + cleaned.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bearer_challenge(
    *,
    resource_metadata: str | None = None,
    scopes: Iterable[str] = (),
    error: str | None = None,
    error_description: str | None = None,
) -> str:
    """Build a challenge value.

    >>> bearer_challenge(resource_metadata="https://mcp.example/prm", scopes={"b", "a"})
    'Bearer resource_metadata="https://mcp.example/prm", scope="a b"'
    """
    params: list[str] = []
    if resource_metadata:
        params.append(f"resource_metadata={_quote(resource_metadata)}")
    scope = " ".join(sorted(s for s in set(scopes) if s != "offline_access"))
    if scope:
        params.append(f"scope={_quote(scope)}")
    if error:
        params.append(f"error={_quote(error)}")
        if error_description:
            params.append(f"error_description={_quote(error_description)}")
    return "Bearer " + ", ".join(params) if params else "Bearer"


__all__ = ["bearer_challenge"]
