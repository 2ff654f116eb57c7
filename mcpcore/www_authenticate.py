"""Building a ``Bearer`` challenge for ``WWW-Authenticate``: the one copy that the
engine's ``InsufficientScope`` and the resource server (``mcpcore.auth``) both use.

Every auth-param value is a quoted-string (RFC 9110 §5.6.4; RFC 6750 §3, RFC 9728 §5.1);
``scope`` is space-separated and sorted so that the same request always gets the same
challenge (the authorization spec's "Server Scope Management" asks for consistency). A
request without credentials gets no ``error`` code (RFC 6750 §3.1); ``offline_access``
never appears (the authorization spec's "Refresh Tokens" section). Parameter order
carries no meaning (RFC 9110 §11.6.1).

Imports nothing of the package, so every room may import it.
"""

from __future__ import annotations

from collections.abc import Iterable


def quoted_string(value: str) -> str:
    """An RFC 9110 §5.6.4 quoted-string: controls dropped, backslash and quote escaped.

    >>> quoted_string('a "b" \\\\ c\\n')
    '"a \\\\"b\\\\" \\\\\\\\ c"'
    """
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
        params.append(f"resource_metadata={quoted_string(resource_metadata)}")
    scope = " ".join(sorted(s for s in set(scopes) if s != "offline_access"))
    if scope:
        params.append(f"scope={quoted_string(scope)}")
    if error:
        params.append(f"error={quoted_string(error)}")
        if error_description:
            params.append(f"error_description={quoted_string(error_description)}")
    return "Bearer " + ", ".join(params) if params else "Bearer"


__all__ = ["bearer_challenge", "quoted_string"]
