"""Who is calling: the authenticated principal a transport hands the engine.

The engine never authenticates; ``auth/`` (or any ASGI middleware) does, and stores a
``Principal`` in the ASGI scope under ``PRINCIPAL_SCOPE_KEY``. The HTTP transport reads
it from there for every request (no caching per connection); stdio takes its identity
from the environment and uses ``ANONYMOUS`` unless configured otherwise. Middleware may
also leave an ``Authorize`` check under ``CALL_SCOPES_KEY``, which the endpoint runs
once it has decoded each call (so the middleware need not read the body).

Sealed MRTR state and the policy layer bind to ``Principal.key``: issuer plus subject,
never anything the client asserts in ``_meta``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PRINCIPAL_SCOPE_KEY = "mcpcore.principal"
#: Where middleware that knows what each call needs (``BearerAuthMiddleware`` with a
#: ``scope_map``) puts an ``Authorize`` check for the MCP endpoint to run per call.
CALL_SCOPES_KEY = "mcpcore.call_scopes"

#: ``authorize(method, name)``: raise (``InsufficientScope``) unless the caller may make
#: this call; ``name`` is the tool or prompt name, else ``None``.
Authorize = Callable[[str, "str | None"], None]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller.

    >>> Principal(subject="alice", issuer="https://idp.example", scopes=frozenset({"mcp"}))
    ... # doctest: +ELLIPSIS
    Principal(subject='alice', ...)
    """

    subject: str
    issuer: str | None = None
    tenant: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    #: RFC 8693 ``act`` chain, outermost actor first (subjects of the acting parties).
    actors: tuple[str, ...] = ()
    #: "jwt", "introspection", "anonymous", or a deployment-specific name.
    auth_method: str = "anonymous"
    token_id: str | None = None
    #: Validated claims, for policy rules that need more than the fields above.
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        """Stable identity for binding sealed state and audit events."""
        return f"{self.issuer or ''}|{self.subject}"

    @property
    def is_anonymous(self) -> bool:
        return self.auth_method == "anonymous"

    def has_scopes(self, required: frozenset[str] | set[str]) -> bool:
        return set(required) <= self.scopes


ANONYMOUS = Principal(subject="anonymous")

def expand_scopes(scopes: Iterable[str], hierarchy: Mapping[str, Iterable[str]]
                  ) -> frozenset[str]:
    """Everything ``scopes`` grant, following a hierarchy (a broader scope implies the
    narrower ones it lists) transitively: the one copy that the policy engine and the
    resource server's scope check (``mcpcore.auth``) both use.

    >>> sorted(expand_scopes({"files:admin"}, {"files:admin": {"files:write"},
    ...                                        "files:write": {"files:read"}}))
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


__all__ = ["ANONYMOUS", "CALL_SCOPES_KEY", "PRINCIPAL_SCOPE_KEY", "Authorize", "Principal",
           "expand_scopes"]
