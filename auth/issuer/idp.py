"""A local enterprise IdP for examples and tests: ID tokens in, ID-JAGs out. Loopback only.

It plays the enterprise IdP of the MCP Enterprise-Managed Authorization extension
(EMA §4; draft-ietf-oauth-identity-assertion-authz-grant §4.3) and refuses what a real
one must refuse. It is not an identity provider to deploy: sign-in is ``id_token()``,
a method call, and it only serves a loopback issuer.

* ``GET /.well-known/oauth-authorization-server`` (and ``/.well-known/openid-
  configuration``): RFC 8414 metadata with ``identity_chaining_requested_token_types_
  supported: [id-jag]``;
* ``GET /jwks``: its public keys (``Cache-Control`` settable, keys rotatable);
* ``POST /token``: RFC 8693 token exchange, in this order:

  1. client authentication, ``client_secret_basic`` or ``client_secret_post``, always
     (EMA §7.7: a stolen ID token alone must buy nothing) → ``invalid_client`` (401);
  2. ``grant_type`` token-exchange → ``unsupported_grant_type``; each parameter at most
     once, ``requested_token_type`` id-jag, ``subject_token_type`` id_token, ``audience``
     present → ``invalid_request``;
  3. the subject token is an ID token this IdP issued (signature, ``typ`` not an
     ID-JAG, ``iss``, not expired) *to the authenticated client* (``aud``, draft
     §4.3.3) → ``invalid_grant``;
  4. ``audience`` is the authorization server of ``resource`` under an access rule, and
     the client has a ``client_id`` at that authorization server (EMA §7.6.1) →
     ``invalid_target``;
  5. the rule lets this client and this user through → ``access_denied``;
  6. scopes: what was asked for, narrowed to what the rules allow; asking only for
     scopes no rule allows → ``invalid_scope``;

  then a short-lived ID-JAG (``typ: oauth-id-jag+jwt``, ``aud`` = the audience,
  ``client_id`` = the client's id at that authorization server, ``resource``,
  ``scope``, a fresh ``jti``), with ``Cache-Control: no-store``.

Every request is recorded in ``requests`` (in memory) so a test can assert what a client
sent.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpcore.asgi_types import Receive, Scope, Send
from mcpcore.auth import jws
from mcpcore.auth.errors import (
    AccessDenied,
    InvalidClient,
    InvalidGrant,
    InvalidScope,
    InvalidTarget,
    InvalidTokenRequest,
    TokenEndpointError,
    UnsupportedGrantType,
)
from mcpcore.auth.issuer.as_models import PublishesKeys, SigningKey
from mcpcore.auth.terms import ID_JAG_TOKEN_TYPE, ID_JAG_TYP, ID_TOKEN_TYPE, TOKEN_EXCHANGE

_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
_MAX_FORM = 64 * 1024
_LEEWAY = 30


@dataclass(frozen=True)
class IdpClient:
    """A client registered at the IdP (for sign-in and token exchange).

    ``as_client_ids`` maps each MCP authorization server (its issuer) to this client's
    ``client_id`` *there*: the IdP puts that into the ID-JAG (draft §5).
    """

    client_id: str
    secret: str = field(repr=False)
    as_client_ids: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AccessRule:
    """The enterprise's policy: ``clients`` (IdP client ids) may get ID-JAGs for
    ``resource`` at ``audience`` (its authorization server) for ``users``, with at most
    ``scopes``. None: anyone."""

    audience: str
    resource: str
    scopes: frozenset[str] = frozenset()
    clients: frozenset[str] | None = None
    users: frozenset[str] | None = None


@dataclass
class IdpRequest:
    method: str
    path: str
    headers: dict[str, str]
    form: dict[str, list[str]]


class LocalIdentityProvider(PublishesKeys):
    """An ASGI enterprise IdP on a loopback issuer (see the module docstring).

    >>> idp = LocalIdentityProvider(
    ...     "http://127.0.0.1:9100",
    ...     clients=[IdpClient("chat", "s3cret", {"http://127.0.0.1:9000": "chat-app"})],
    ...     rules=[AccessRule("http://127.0.0.1:9000", "http://127.0.0.1:8000/mcp",
    ...                       frozenset({"files:read"}))])
    >>> token = idp.id_token("alice", client_id="chat")
    """

    def __init__(
        self,
        issuer: str,
        *,
        clients: Sequence[IdpClient] = (),
        rules: Sequence[AccessRule] = (),
        keys: Sequence[SigningKey] | None = None,
        tenant: str | None = None,
        id_jag_ttl: int = 300,
        clock: Callable[[], float] = time.time,
    ) -> None:
        parts = urlsplit(issuer)
        if parts.scheme not in ("http", "https") or parts.hostname not in _LOOPBACK_HOSTS:
            raise ValueError("the local IdP serves a loopback issuer only")
        if parts.query or parts.fragment:
            raise ValueError("the issuer has no query or fragment (RFC 8414 §2)")
        self.issuer = issuer
        self.clients = {c.client_id: c for c in clients}
        self.rules = list(rules)
        self.keys: list[SigningKey] = list(keys) if keys else [SigningKey.generate("ES256")]
        self.tenant = tenant
        self.id_jag_ttl = id_jag_ttl
        self.clock = clock
        self.jwks_cache_control = "max-age=300"
        self.requests: list[IdpRequest] = []
        prefix = parts.path.rstrip("/")
        self.app = Starlette(routes=[
            Route("/.well-known/oauth-authorization-server" + prefix, self._metadata_route),
            Route("/.well-known/openid-configuration" + prefix, self._metadata_route),
            Route(prefix + "/.well-known/openid-configuration", self._metadata_route),
            Route(prefix + "/jwks", self._jwks_route),
            Route(prefix + "/token", self._token_route, methods=["POST"]),
        ])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    # -- metadata and keys ----------------------------------------------------------

    @property
    def token_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/token"

    @property
    def jwks_uri(self) -> str:
        return self.issuer.rstrip("/") + "/jwks"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "token_endpoint": self.token_endpoint,
            "jwks_uri": self.jwks_uri,
            "grant_types_supported": [TOKEN_EXCHANGE],
            "identity_chaining_requested_token_types_supported": [ID_JAG_TOKEN_TYPE],
            "token_endpoint_auth_methods_supported": [
                "client_secret_basic", "client_secret_post"],
            "id_token_signing_alg_values_supported": sorted({k.alg for k in self.keys}),
            "response_types_supported": [],
        }

    # -- what the IdP signs ---------------------------------------------------------

    def id_token(self, subject: str, *, client_id: str, ttl: int = 3600, **claims: Any) -> str:
        """Sign the user in to ``client_id``: an OpenID Connect ID token for it."""
        now = int(self.clock())
        body = {"iss": self.issuer, "sub": subject, "aud": client_id, "iat": now,
                "exp": now + ttl, "auth_time": now, **claims}
        return self.keys[0].sign(body, {"typ": "JWT"})

    def mint_id_jag(
        self,
        *,
        key: SigningKey | None = None,
        headers: Mapping[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """Sign an ID-JAG with exactly these claims (``iss``, ``iat``, ``exp`` and ``jti``
        filled in unless given; a value of None drops the claim). For tests that need a
        grant the token endpoint would never issue."""
        now = int(self.clock())
        body: dict[str, Any] = {"iss": self.issuer, "iat": now, "exp": now + self.id_jag_ttl,
                                "jti": secrets.token_urlsafe(16), **claims}
        body = {k: v for k, v in body.items() if v is not None}
        return (key or self.keys[0]).sign(body, {"typ": ID_JAG_TYP, **(headers or {})})

    # -- routes ---------------------------------------------------------------------

    async def _metadata_route(self, request: Request) -> Response:
        return JSONResponse(self.metadata())

    async def _jwks_route(self, request: Request) -> Response:
        return JSONResponse(self.jwks(), headers={"cache-control": self.jwks_cache_control})

    async def _token_route(self, request: Request) -> Response:
        headers = {"cache-control": "no-store", "pragma": "no-cache"}
        try:
            form = await _read_form(request)
            self.requests.append(IdpRequest(
                request.method, request.url.path, dict(request.headers), form))
            body = self._exchange(request.headers.get("authorization"), form)
        except TokenEndpointError as exc:
            if isinstance(exc, InvalidClient):
                headers["www-authenticate"] = 'Basic realm="idp"'
            return JSONResponse(
                {"error": exc.error, "error_description": exc.description},
                status_code=exc.status, headers=headers)
        return JSONResponse(body, headers=headers)

    # -- token exchange -------------------------------------------------------------

    def _authenticate(self, authorization: str | None, form: Mapping[str, list[str]]) -> IdpClient:
        if authorization is not None:
            if "client_secret" in form:
                raise InvalidTokenRequest("two client authentication methods")
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() != "basic":
                raise InvalidClient("unsupported client authentication")
            try:
                pair = base64.b64decode(value, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                raise InvalidClient("malformed Basic credentials") from None
            raw_id, _, raw_secret = pair.partition(":")
            client_id, secret = unquote_plus(raw_id), unquote_plus(raw_secret)
        else:
            client_id = _one(form, "client_id") or ""
            secret = _one(form, "client_secret") or ""
        client = self.clients.get(client_id)
        if client is None or not secrets.compare_digest(client.secret.encode(), secret.encode()):
            raise InvalidClient("unknown client or wrong secret")
        return client

    def _exchange(self, authorization: str | None, form: Mapping[str, list[str]]
                  ) -> dict[str, Any]:
        client = self._authenticate(authorization, form)
        if _one(form, "grant_type") != TOKEN_EXCHANGE:
            raise UnsupportedGrantType("only token exchange is served here")
        if _one(form, "requested_token_type") != ID_JAG_TOKEN_TYPE:
            raise InvalidTokenRequest("only ID-JAGs are issued here")
        if _one(form, "subject_token_type") != ID_TOKEN_TYPE:
            raise InvalidTokenRequest("the subject token must be an ID token")
        audience = _one(form, "audience")
        if not audience:
            raise InvalidTokenRequest("audience is required")
        subject_token = _one(form, "subject_token")
        if not subject_token:
            raise InvalidTokenRequest("subject_token is required")
        subject = self._verify_id_token(subject_token, client)
        resource = _one(form, "resource")
        pairs = [r for r in self.rules if r.audience == audience]
        if resource is None and len({r.resource for r in pairs}) == 1:
            resource = pairs[0].resource
        pairs = [r for r in pairs if r.resource == resource]
        as_client_id = client.as_client_ids.get(audience)
        if not pairs or as_client_id is None:
            raise InvalidTarget("no such authorization server for that resource")
        allowed = [r for r in pairs
                   if (r.clients is None or client.client_id in r.clients)
                   and (r.users is None or subject["sub"] in r.users)]
        if not allowed:
            raise AccessDenied("policy does not let this user use this client there")
        permitted = frozenset().union(*(r.scopes for r in allowed))
        asked = frozenset((_one(form, "scope") or "").split())
        granted = asked & permitted
        if asked and not granted:
            raise InvalidScope("none of the requested scopes is allowed")
        now = int(self.clock())
        claims: dict[str, Any] = {
            "sub": subject["sub"], "aud": audience, "client_id": as_client_id,
            "resource": resource, "iat": now, "exp": now + self.id_jag_ttl,
        }
        if granted:
            claims["scope"] = " ".join(sorted(granted))
        if self.tenant is not None:
            claims["tenant"] = self.tenant
        for name in ("auth_time", "acr", "amr"):
            if name in subject:
                claims[name] = subject[name]
        body: dict[str, Any] = {
            "issued_token_type": ID_JAG_TOKEN_TYPE,
            "access_token": self.mint_id_jag(**claims),
            "token_type": "N_A",
            "expires_in": self.id_jag_ttl,
        }
        if granted:
            body["scope"] = claims["scope"]
        return body

    def _verify_id_token(self, token: str, client: IdpClient) -> dict[str, Any]:
        try:
            parsed = jws.parse_compact(token)
        except jws.MalformedJws:
            raise InvalidGrant("the subject token is not a JWT") from None
        header, claims = parsed.header, parsed.payload
        if str(header.get("typ", "JWT")).lower() not in ("jwt", "application/jwt"):
            raise InvalidGrant("the subject token is not an ID token")
        key = next((k for k in self.keys if k.kid == header.get("kid")), None)
        if key is None or header.get("alg") != key.alg or not jws.verify(
                parsed, key.alg, key.public_key):
            raise InvalidGrant("the subject token's signature is not ours")
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if claims.get("iss") != self.issuer or client.client_id not in audiences:
            raise InvalidGrant("the ID token was not issued to this client")
        if len(audiences) > 1 and claims.get("azp") != client.client_id:
            raise InvalidGrant("the ID token was not issued to this client")
        exp = claims.get("exp")
        if not isinstance(exp, int | float) or exp + _LEEWAY <= self.clock():
            raise InvalidGrant("the ID token expired")
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise InvalidGrant("the ID token has no subject")
        return claims


def _one(form: Mapping[str, list[str]], name: str) -> str | None:
    values = form.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise InvalidTokenRequest(f"{name} is repeated")
    return values[0]


async def _read_form(request: Request) -> dict[str, list[str]]:
    if request.headers.get("content-type", "").split(";")[0].strip() != (
            "application/x-www-form-urlencoded"):
        raise InvalidTokenRequest("the body must be form-encoded")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM:
            raise InvalidTokenRequest("the body is too large")
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, strict_parsing=bool(body))
    except (UnicodeDecodeError, ValueError):
        raise InvalidTokenRequest("the body is not a form") from None
    form: dict[str, list[str]] = {}
    for name, value in pairs:
        form.setdefault(name, []).append(value)
    return form


__all__ = ["AccessRule", "IdpClient", "IdpRequest", "LocalIdentityProvider"]
