"""The authorization server's records: signing keys, clients, codes, refresh tokens.

Plain data, plus ``ClientModel``, the view of a ``Client`` that authlib's machinery
asks questions of (which redirect URIs, which authentication method, which grants).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import jwt
from authlib.oauth2.rfc7591 import InvalidRedirectURIError
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SECRET_METHODS = frozenset({"client_secret_basic", "client_secret_post"})
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class SigningKey:
    """A private signing key with its ``kid`` and ``alg``."""

    kid: str
    alg: str
    private_key: Any = field(repr=False)

    @classmethod
    def generate(cls, alg: str = "RS256", kid: str | None = None) -> SigningKey:
        key: Any
        if alg.startswith(("RS", "PS")):
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif alg == "ES256":
            key = ec.generate_private_key(ec.SECP256R1())
        elif alg == "EdDSA":
            key = ed25519.Ed25519PrivateKey.generate()
        else:
            raise ValueError(f"unsupported algorithm {alg}")
        return cls(kid or f"{alg.lower()}-{secrets.token_hex(4)}", alg, key)

    @property
    def public_key(self) -> Any:
        return self.private_key.public_key()

    def public_jwk(self) -> dict[str, Any]:
        algorithm = jwt.get_algorithm_by_name(self.alg)
        jwk: dict[str, Any] = dict(algorithm.to_jwk(self.public_key, as_dict=True))
        jwk.update(kid=self.kid, alg=self.alg, use="sig")
        return jwk

    def sign(self, claims: Mapping[str, Any], headers: Mapping[str, Any] | None = None) -> str:
        all_headers = {"kid": self.kid, "typ": "at+jwt", **(headers or {})}
        return jwt.encode(dict(claims), self.private_key, algorithm=self.alg, headers=all_headers)


def public_jwk(public_key: Any) -> dict[str, Any]:
    for alg in ("ES256", "RS256", "EdDSA"):
        try:
            return dict(jwt.get_algorithm_by_name(alg).to_jwk(public_key, as_dict=True))
        except Exception:  # not this key type
            continue
    raise ValueError("unsupported public key type")


class PublishesKeys:
    """An issuer's signing keys: ``keys[0]`` signs, and every key in ``keys`` is in its
    JWKS, so tokens signed before a rotation still verify (RFC 7517 §5; RFC 8414 §2,
    ``jwks_uri``). Shared by the local authorization server and the local IdP."""

    keys: list[SigningKey]

    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.public_jwk() for k in self.keys]}

    def rotate(self, new_key: SigningKey | None = None, *, keep_old: bool = True) -> SigningKey:
        """Sign with ``new_key`` (a new key of the same algorithm if none) from now on;
        the old keys stay published unless ``keep_old=False``."""
        key = new_key or SigningKey.generate(self.keys[0].alg)
        self.keys = [key, *self.keys] if keep_old else [key]
        return key


@dataclass(frozen=True)
class Client:
    """A registered client.

    ``secret`` for ``client_secret_basic``/``_post``, ``public_key`` (or ``jwks``) for
    ``private_key_jwt``, neither for a public client (``none``, PKCE only).
    ``auth_method`` pins one method (default: what the client holds decides; a secret
    then works with either ``client_secret_basic`` or ``client_secret_post``).
    ``scope`` (space-separated) caps the scopes it may get; empty means no cap.
    ``redirect_uris`` are matched exactly, except that a loopback IP literal matches any
    port (RFC 8252 §7.3).
    """

    client_id: str
    secret: str | None = field(default=None, repr=False)
    public_key: Any = field(default=None, repr=False)
    scope: str = ""
    redirect_uris: tuple[str, ...] = ()
    grant_types: tuple[str, ...] = (
        "authorization_code", "refresh_token", "client_credentials", TOKEN_EXCHANGE)
    auth_method: str | None = None
    name: str | None = None
    jwks: Mapping[str, Any] | None = field(default=None, repr=False)
    #: RFC 9449 §5.2 ``dpop_bound_access_tokens``: refuse token requests without a proof.
    dpop_bound: bool = False

    @property
    def method(self) -> str:
        if self.auth_method is not None:
            return self.auth_method
        if self.public_key is not None or self.jwks is not None:
            return "private_key_jwt"
        return "client_secret_basic" if self.secret is not None else "none"


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: bytes = b""


@dataclass
class CodeRecord:
    client_id: str
    redirect_uri: str
    scope: str
    subject: str
    resource: str
    code_challenge: str | None
    code_challenge_method: str | None
    expires_at: float

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass
class RefreshRecord:
    client_id: str
    subject: str
    scope: str
    resource: str
    jkt: str | None
    expires_at: float
    clock: Callable[[], float]

    def check_client(self, client: Any) -> bool:
        return bool(client.get_client_id() == self.client_id)

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return int(self.expires_at - self.clock())

    def is_expired(self) -> bool:
        return self.clock() >= self.expires_at

    def is_revoked(self) -> bool:
        return False


@dataclass
class OpaqueRecord:
    claims: dict[str, Any]
    clock: Callable[[], float]

    def is_expired(self) -> bool:
        return bool(self.claims["exp"] <= self.clock())

    def is_revoked(self) -> bool:
        return False

    def get_scope(self) -> str:
        return str(self.claims.get("scope", ""))


@dataclass(frozen=True)
class User:
    subject: str

    def get_user_id(self) -> str:
        return self.subject


def _loopback_match(registered: str, requested: str) -> bool:
    a, b = urlsplit(registered), urlsplit(requested)
    return (
        a.scheme == b.scheme == "http"
        and a.hostname in ("127.0.0.1", "::1")
        and a.hostname == b.hostname
        and a.path == b.path
        and a.query == b.query
    )


class ClientModel:
    """authlib's view of a ``Client`` (the ``ClientMixin`` methods it calls)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def get_client_id(self) -> str:
        return self.client.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.client.redirect_uris
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        requested = (scope or "").split()
        if not self.client.scope:
            return " ".join(requested)
        allowed = set(self.client.scope.split())
        return " ".join(s for s in requested if s in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return any(
            redirect_uri == uri or _loopback_match(uri, redirect_uri)
            for uri in self.client.redirect_uris
        )

    def check_client_secret(self, client_secret: str) -> bool:
        secret = self.client.secret
        return secret is not None and secrets.compare_digest(secret, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if self.client.auth_method is None and self.client.secret is not None:
            return method in SECRET_METHODS  # either secret method, one per request
        return method == self.client.method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code" and "authorization_code" in self.client.grant_types

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.client.grant_types


def check_redirect_uri(uri: str, application_type: str) -> None:
    """Redirect URIs must be https, or http on a loopback host (RFC 8252 §7.3, OAuth 2.1
    §2.3.1); no fragments."""
    parts = urlsplit(uri)
    if parts.fragment or not parts.hostname:
        raise InvalidRedirectURIError("redirect_uri must be absolute without a fragment")
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return
    raise InvalidRedirectURIError("redirect_uri must be https or a loopback http URI")


__all__ = [
    "ACCESS_TOKEN_TYPE",
    "AUTH_METHODS",
    "LOOPBACK_HOSTS",
    "SECRET_METHODS",
    "TOKEN_EXCHANGE",
    "Client",
    "ClientModel",
    "PublishesKeys",
    "RecordedRequest",
    "SigningKey",
    "check_redirect_uri",
]
