"""How a client authenticates at a token endpoint (RFC 6749 §2.3, RFC 7523 §2.2).

One small class per ``token_endpoint_auth_method`` (RFC 7591 §2), each with
``apply(form, headers, audience=issuer)``: it adds its credentials to the form body or the
headers of one token request, and nothing else, so a request never carries two methods
at once (the suite classifies a Basic header plus a body secret as Basic; RFC 6749 §2.3
forbids more than one method per request).

* ``ClientSecretBasic``: ``Authorization: Basic base64(urlencode(id) ":" urlencode(secret))``
  (RFC 6749 §2.3.1 form-encodes both parts before base64; authlib's client helper does
  not, which is why this module exists instead of using it), and ``client_id`` in the
  body too: RFC 6749 §3.2.1 lets an authenticated client send it, and authorization
  servers on the official Python SDK's handlers (FastMCP's among them) refuse a Basic
  request without it (``invalid_client``, "Missing client_id"). The secret is never in
  the body: that would be a second method;
* ``ClientSecretPost``: ``client_id`` and ``client_secret`` in the body;
* ``NoClientAuth`` (``none``): a public client sends only its ``client_id``;
* ``PrivateKeyJwt``: a signed assertion whose ``aud`` is the authorization server's
  **issuer** identifier (RFC 7523 §3 lets the issuer identify the AS; the MCP client
  credentials extension and the conformance suite require it, not the token endpoint).

Secrets and keys never appear in a ``repr``.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote_plus

import jwt

from mcpcore.auth.terms import JWT_BEARER_ASSERTION


class ClientAuth(Protocol):
    """Adds one client-authentication method to a token request."""

    @property
    def client_id(self) -> str: ...

    #: The RFC 7591 ``token_endpoint_auth_method`` name.
    @property
    def method(self) -> str: ...

    def apply(self, form: dict[str, str], headers: dict[str, str], *, audience: str) -> None: ...


def basic_credentials(client_id: str, secret: str) -> str:
    """The ``Authorization`` value of HTTP Basic client authentication (RFC 6749 §2.3.1):
    id and secret each form-encoded (``application/x-www-form-urlencoded``), joined by a
    colon, base64. The one copy: token requests and RFC 7662 introspection both use it.

    >>> basic_credentials("my client", "p:w/d")
    'Basic bXkrY2xpZW50OnAlM0F3JTJGZA=='
    """
    pair = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return "Basic " + base64.b64encode(pair).decode()


@dataclass(frozen=True)
class ClientSecretBasic:
    """``client_secret_basic``."""

    client_id: str
    secret: str = field(repr=False)

    @property
    def method(self) -> str:
        return "client_secret_basic"

    def apply(self, form: dict[str, str], headers: dict[str, str], *, audience: str) -> None:
        headers["authorization"] = basic_credentials(self.client_id, self.secret)
        form["client_id"] = self.client_id  # identification only (module docstring)


@dataclass(frozen=True)
class ClientSecretPost:
    """``client_secret_post``."""

    client_id: str
    secret: str = field(repr=False)

    @property
    def method(self) -> str:
        return "client_secret_post"

    def apply(self, form: dict[str, str], headers: dict[str, str], *, audience: str) -> None:
        form["client_id"], form["client_secret"] = self.client_id, self.secret


@dataclass(frozen=True)
class NoClientAuth:
    """``none``: a public client identifies itself and proves nothing (PKCE does)."""

    client_id: str

    @property
    def method(self) -> str:
        return "none"

    def apply(self, form: dict[str, str], headers: dict[str, str], *, audience: str) -> None:
        form["client_id"] = self.client_id


@dataclass(frozen=True)
class PrivateKeyJwt:
    """``private_key_jwt``: an RFC 7523 §2.2 assertion, ``aud`` = the AS issuer."""

    client_id: str
    private_key: Any = field(repr=False)
    alg: str = "ES256"
    kid: str | None = None
    lifetime: int = 60
    clock: Callable[[], float] = time.time

    @property
    def method(self) -> str:
        return "private_key_jwt"

    def assertion(self, audience: str) -> str:
        """A fresh signed assertion (new ``jti`` each time) for ``audience``."""
        now = int(self.clock())
        claims = {
            "iss": self.client_id,
            "sub": self.client_id,
            "aud": audience,
            "iat": now,
            "exp": now + self.lifetime,
            "jti": secrets.token_urlsafe(16),
        }
        headers = {"kid": self.kid} if self.kid else None
        return jwt.encode(claims, self.private_key, algorithm=self.alg, headers=headers)

    def apply(self, form: dict[str, str], headers: dict[str, str], *, audience: str) -> None:
        form["client_id"] = self.client_id
        form["client_assertion_type"] = JWT_BEARER_ASSERTION
        form["client_assertion"] = self.assertion(audience)


__all__ = [
    "ClientAuth",
    "ClientSecretBasic",
    "ClientSecretPost",
    "NoClientAuth",
    "PrivateKeyJwt",
    "basic_credentials",
]
