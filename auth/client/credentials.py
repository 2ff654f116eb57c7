"""What the OAuth client keeps: client registrations per issuer, tokens per (issuer,
resource), in memory unless the caller supplies a store.

Registrations are keyed by the authorization server's **issuer**, never by the MCP
server (the spec's client-registration page, "Authorization Server Binding"): when a
resource moves to another authorization server, the old ``client_id`` is never shown to
the new one. Tokens are keyed by (issuer, resource): a token from one authorization
server is never sent to a resource another one protects.

``TokenSet`` and ``ClientInfo`` never show a token, secret or key in their ``repr``; a
store that writes to disk must keep refresh tokens and secrets confidential (the spec's
"Refresh Tokens" section): that is the store's job, not this module's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from mcpcore.auth.client_auth import (
    ClientAuth,
    ClientSecretBasic,
    ClientSecretPost,
    NoClientAuth,
    PrivateKeyJwt,
)
from mcpcore.auth.redaction import fingerprint

#: Seconds before ``expires_at`` at which a token counts as expired (clock skew, latency).
EXPIRY_MARGIN = 30.0


@dataclass(frozen=True, slots=True)
class TokenSet:
    """An access token for one resource from one issuer."""

    access_token: str = field(repr=False)
    issuer: str
    resource: str
    token_type: str = "Bearer"
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)

    def expired(self, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at - EXPIRY_MARGIN

    @property
    def is_dpop(self) -> bool:
        return self.token_type.lower() == "dpop"

    def __repr__(self) -> str:
        return (
            f"TokenSet({fingerprint(self.access_token)}, {self.token_type}, issuer="
            f"{self.issuer!r}, resource={self.resource!r}, scopes={sorted(self.scopes)!r}, "
            f"refresh={'yes' if self.refresh_token else 'no'})"
        )


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """A client registration at one authorization server.

    ``source`` says where it came from: ``"static"`` (pre-registered), ``"cimd"`` (a
    client ID metadata document URL) or ``"dcr"`` (dynamic registration, RFC 7591).
    ``auth_method`` is the ``token_endpoint_auth_method`` agreed with the server, or
    None to choose from its metadata (``choose_client_auth``).
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    auth_method: str | None = None
    private_key: Any = field(default=None, repr=False)
    signing_alg: str = "ES256"
    key_id: str | None = None
    source: str = "static"
    #: The issuer this registration belongs to (None: not bound yet; see ``bind``).
    issuer: str | None = None

    def bind(self, issuer: str) -> ClientInfo:
        return replace(self, issuer=issuer)


def choose_client_auth(info: ClientInfo, supported: tuple[str, ...]) -> ClientAuth:
    """How ``info`` authenticates at a token endpoint whose metadata lists ``supported``.

    The agreed method wins (from registration or configuration); otherwise a private
    key means ``private_key_jwt``, no secret means ``none``, and a secret uses
    ``client_secret_basic`` if listed (RFC 8414 §2: the default when the list is
    absent), else ``client_secret_post``.
    """
    method = info.auth_method
    if method is None:
        if info.private_key is not None:
            method = "private_key_jwt"
        elif info.client_secret is None:
            method = "none"
        elif "client_secret_basic" in supported:
            method = "client_secret_basic"
        elif "client_secret_post" in supported:
            method = "client_secret_post"
        elif "none" in supported:
            method = "none"
        else:
            method = "client_secret_basic"
    if method == "client_secret_basic" and info.client_secret is not None:
        return ClientSecretBasic(info.client_id, info.client_secret)
    if method == "client_secret_post" and info.client_secret is not None:
        return ClientSecretPost(info.client_id, info.client_secret)
    if method == "private_key_jwt" and info.private_key is not None:
        return PrivateKeyJwt(info.client_id, info.private_key, alg=info.signing_alg,
                             kid=info.key_id)
    return NoClientAuth(info.client_id)


class CredentialStore(Protocol):
    """Where registrations and tokens live (``MemoryCredentialStore`` by default)."""

    def client(self, issuer: str) -> ClientInfo | None: ...

    def save_client(self, issuer: str, info: ClientInfo) -> None: ...

    def token(self, issuer: str, resource: str) -> TokenSet | None: ...

    def save_token(self, token: TokenSet) -> None: ...

    def forget_token(self, issuer: str, resource: str) -> None: ...


class MemoryCredentialStore:
    """Keeps everything in this process only."""

    def __init__(self) -> None:
        self._clients: dict[str, ClientInfo] = {}
        self._tokens: dict[tuple[str, str], TokenSet] = {}

    def client(self, issuer: str) -> ClientInfo | None:
        return self._clients.get(issuer)

    def save_client(self, issuer: str, info: ClientInfo) -> None:
        self._clients[issuer] = info.bind(issuer)

    def token(self, issuer: str, resource: str) -> TokenSet | None:
        return self._tokens.get((issuer, resource))

    def save_token(self, token: TokenSet) -> None:
        self._tokens[(token.issuer, token.resource)] = token

    def forget_token(self, issuer: str, resource: str) -> None:
        self._tokens.pop((issuer, resource), None)

    def __repr__(self) -> str:
        return f"MemoryCredentialStore(clients={sorted(self._clients)}, tokens={len(self._tokens)})"


__all__ = [
    "EXPIRY_MARGIN",
    "ClientInfo",
    "CredentialStore",
    "MemoryCredentialStore",
    "TokenSet",
    "choose_client_auth",
]
