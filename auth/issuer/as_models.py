"""The authorization server's records: signing keys, clients, codes, refresh tokens.

Plain data, plus ``ClientModel``, the view of a ``RegisteredClient`` that authlib's machinery
asks questions of (which redirect URIs, which authentication method, which grants).
"""

from __future__ import annotations

import re
import secrets
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import jwt
from authlib.oauth2.rfc7591 import InvalidRedirectURIError
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from mcpcore.auth.terms import TOKEN_EXCHANGE

SECRET_METHODS = frozenset({"client_secret_basic", "client_secret_post"})
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
#: The grants a client that registered itself may use unless the operator allows more:
#: the interactive ones, where a person signs in and approves (RFC 7591 §5).
INTERACTIVE_GRANTS = ("authorization_code", "refresh_token")


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
class RegisteredClient:
    """A registered client.

    ``secret`` for ``client_secret_basic``/``_post``, ``public_key`` (or ``jwks``) for
    ``private_key_jwt``, neither for a public client (``none``, PKCE only).
    ``auth_method`` pins one method (default: what the client holds decides; a secret
    then works with either ``client_secret_basic`` or ``client_secret_post``).
    ``scope`` (space-separated) caps the scopes it may get; empty means no cap.
    ``redirect_uris`` are matched as exact strings, except that after a loopback IP
    literal (``127.0.0.1``, ``[::1]``; not ``localhost``) any port matches (RFC 8252
    §7.3). ``self_registered`` marks a client that registered itself (RFC 7591, or a
    client ID metadata document): it gets only the scopes the server's
    ``registration_scopes`` allow.
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
    #: Registered itself (``/register`` or a client ID metadata document), not by the
    #: operator: capped by the server's ``registration_scopes``.
    self_registered: bool = False

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
    #: Set when the code is redeemed: the token family it produced. The record stays
    #: until it expires, so a replay is recognised and revokes that family (RFC 6749
    #: §4.1.2).
    family: str | None = None

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
    #: The tokens that descend from one authorization (RFC 9700 §4.14.2): rotation keeps
    #: the family, a replayed code or a reused rotated-out refresh token revokes it.
    family: str = ""

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


#: RFC 3986 §2: the characters a URI is made of (``%`` only to start a percent-encoding).
_URI_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~:/?#[]@!$&'()*+,;=%")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
#: A loopback IP literal after ``http://``, and its port if any (RFC 8252 §7.3).
_LOOPBACK_AUTHORITY = re.compile(r"http://(?:127\.0\.0\.1|\[::1\])(:[0-9]{1,5})?(?=[/?]|\Z)")


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` may not be a redirect URI, whatever is registered; ``None`` if it may.

    Checked before any lookup, so that what this server compares is what a browser
    will follow: no character outside RFC 3986 §2 (a ``\\`` is ``/`` to a browser's
    URL parser but part of the userinfo to Python's, a space or a control character
    is stripped or kept depending on the parser), no fragment (RFC 6749 §3.1.2), no
    userinfo and no percent-encoding in the authority (RFC 9700 §4.1.3), an absolute URI.
    """
    if len(uri) > 2048:
        return "redirect_uri is too long"
    if any(c not in _URI_CHARACTERS for c in uri):
        return "redirect_uri holds a character a URI may not hold (RFC 3986 section 2)"
    if _PERCENT.search(uri):
        return "redirect_uri holds a malformed percent-encoding"
    if "#" in uri:
        return "redirect_uri may not have a fragment (RFC 6749 section 3.1.2)"
    scheme, separator, rest = uri.partition("://")
    authority = re.split(r"[/?]", rest, maxsplit=1)[0]
    if not separator or not scheme or not authority:
        return "redirect_uri must be an absolute URI with a host"
    if "@" in authority or "%" in authority:
        return "redirect_uri may not carry userinfo or percent-encoding in its authority"
    if ("[" in uri or "]" in uri) and not re.fullmatch(r"\[[0-9A-Fa-f:.]+\](:[0-9]*)?",
                                                        authority):
        return "redirect_uri holds brackets outside an IPv6 host"
    _, colon, port = authority.rpartition("]")[2].partition(":")
    if colon and not (port.isascii() and port.isdigit() and len(port) <= 5
                      and 0 < int(port) < 65536):
        return "redirect_uri has a port that is not a number from 1 to 65535"
    return None


def _without_loopback_port(uri: str) -> str | None:
    """``uri`` with the port after its loopback IP literal removed; ``None`` if it does not
    start with ``http://127.0.0.1`` or ``http://[::1]`` (then only exact equality counts)."""
    match = _LOOPBACK_AUTHORITY.match(uri)
    if match is None:
        return None
    port = match.group(1)
    if port is None:
        return uri
    if not 0 < int(port[1:]) < 65536:
        return None
    return uri[:match.start(1)] + uri[match.end(1):]


def redirect_uri_matches(registered: str, requested: str) -> bool:
    """RFC 8252 §7.3 with RFC 9700 §4.1.3: the same string, except that the port after a
    loopback IP literal may differ (a native app's loopback listener picks its port)."""
    if requested == registered:
        return True
    portless = _without_loopback_port(registered)
    return portless is not None and portless == _without_loopback_port(requested)


class ClientModel:
    """authlib's view of a ``RegisteredClient`` (the ``ClientMixin`` methods it calls)."""

    def __init__(self, client: RegisteredClient) -> None:
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
        return redirect_uri_problem(redirect_uri) is None and any(
            redirect_uri_matches(uri, redirect_uri) for uri in self.client.redirect_uris)

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
    """Redirect URIs to register must be https, or http on a loopback host (RFC 8252
    §7.3, OAuth 2.1 §2.3.1), and pass ``redirect_uri_problem``."""
    problem = redirect_uri_problem(uri)
    if problem is not None:
        raise InvalidRedirectURIError(problem)
    parts = urlsplit(uri)
    if not parts.hostname:
        raise InvalidRedirectURIError("redirect_uri must be an absolute URI with a host")
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return
    raise InvalidRedirectURIError("redirect_uri must be https or a loopback http URI")


__all__ = [
    "AUTH_METHODS",
    "INTERACTIVE_GRANTS",
    "LOOPBACK_HOSTS",
    "SECRET_METHODS",
    "ClientModel",
    "PublishesKeys",
    "RecordedRequest",
    "RegisteredClient",
    "SigningKey",
    "check_redirect_uri",
    "redirect_uri_matches",
    "redirect_uri_problem",
]
