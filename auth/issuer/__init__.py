"""The issuer room: the compact OAuth 2.1 authorization server and the test IdP.

What an operator runs to *issue* tokens, not what an MCP server needs to accept them
(``mcpcore.auth``) nor what a client needs to get them (``mcpcore.auth``'s client API)::

    from mcpcore.auth.issuer import LocalAuthorizationServer

    server = LocalAuthorizationServer("https://as.example.com")

It is the only part of ``mcpcore.auth`` built on Starlette, authlib and joserfc, which
the ``issuer`` extra installs (``pip install 'mcpcore[issuer]'``); without them,
importing anything here raises ``MissingExtra`` naming that extra. Every name loads on
first use (PEP 562).
"""

from importlib.util import find_spec
from typing import TYPE_CHECKING

from mcpcore.errors import MissingExtra
from mcpcore.lazy import lazy_exports as _lazy_exports

# The issuer extra's distributions, by import name (pyproject.toml, [project.optional-
# dependencies] issuer). Checked once, here, so that every module of this room fails the
# same way, with the command that fixes it, instead of a bare ModuleNotFoundError.
_NEEDS = ("starlette", "authlib", "joserfc")
_missing = [name for name in _NEEDS if find_spec(name) is None]
if _missing:
    raise MissingExtra("mcpcore.auth.issuer (the authorization server and test IdP)",
                       "issuer", _missing)

if TYPE_CHECKING:
    from mcpcore.auth.issuer.authorization_server import (
        LocalAuthorizationServer,
        RegisteredClient,
        SigningKey,
        approve_as,
    )
    from mcpcore.auth.issuer.ema import (
        EmaConfig,
        IdJagGrantType,
        IdJagValidator,
        access_token_claims,
    )
    from mcpcore.auth.issuer.idjag import (
        EmaClient,
        IdJagGrant,
        IdJagPolicy,
        TrustedIdp,
        verify_id_jag,
    )
    from mcpcore.auth.issuer.idp import AccessRule, IdpClient, LocalIdentityProvider

#: Where each public name lives; ``__getattr__`` imports it from there on first use.
_HOMES: dict[str, str] = {
    "RegisteredClient": "mcpcore.auth.issuer.authorization_server",
    "LocalAuthorizationServer": "mcpcore.auth.issuer.authorization_server",
    "SigningKey": "mcpcore.auth.issuer.authorization_server",
    "approve_as": "mcpcore.auth.issuer.authorization_server",
    "EmaConfig": "mcpcore.auth.issuer.ema",
    "IdJagGrantType": "mcpcore.auth.issuer.ema",
    "IdJagValidator": "mcpcore.auth.issuer.ema",
    "access_token_claims": "mcpcore.auth.issuer.ema",
    "EmaClient": "mcpcore.auth.issuer.idjag",
    "IdJagGrant": "mcpcore.auth.issuer.idjag",
    "IdJagPolicy": "mcpcore.auth.issuer.idjag",
    "TrustedIdp": "mcpcore.auth.issuer.idjag",
    "verify_id_jag": "mcpcore.auth.issuer.idjag",
    "AccessRule": "mcpcore.auth.issuer.idp",
    "IdpClient": "mcpcore.auth.issuer.idp",
    "LocalIdentityProvider": "mcpcore.auth.issuer.idp",
}


__getattr__, __dir__ = _lazy_exports(__name__, _HOMES)


__all__ = [
    "AccessRule",
    "EmaClient",
    "EmaConfig",
    "IdJagGrant",
    "IdJagGrantType",
    "IdJagPolicy",
    "IdJagValidator",
    "IdpClient",
    "LocalAuthorizationServer",
    "LocalIdentityProvider",
    "RegisteredClient",
    "SigningKey",
    "TrustedIdp",
    "access_token_claims",
    "approve_as",
    "verify_id_jag",
]
