"""A compact OAuth 2.1 authorization server for MCP, on Starlette, with authlib's grants.

It is the server ``examples/`` and the tests use, and small enough to read in one
sitting; a small deployment can run it (``python -m mcpcore.auth.issuer.authorization_server``)
once it plugs in how its users sign in (``resource_owner``). Endpoints, under the
issuer's path:

* ``GET /.well-known/oauth-authorization-server<issuer path>``: RFC 8414 metadata, with
  ``authorization_response_iss_parameter_supported`` (RFC 9207 §3),
  ``code_challenge_methods_supported: ["S256"]``, ``client_id_metadata_document_supported``
  and ``dpop_signing_alg_values_supported``;
* ``GET /authorize``: the authorization-code grant with PKCE **S256 required**, ``state``
  echoed, ``resource`` (RFC 8707) bound to the code, and ``iss`` on every redirect,
  errors included (RFC 9207 §2);
* ``POST /token``: ``authorization_code``, ``refresh_token`` (rotated on every use),
  ``client_credentials``, RFC 8693 token exchange, the JWT-bearer grant with ID-JAGs
  when ``id_jag`` is given (Enterprise-Managed Authorization: ``auth/issuer/ema.py`` checks the
  grant, this module authenticates the client first and mints the token), plus any
  grant registered with ``register_grant``. RegisteredClient authentication:
  ``client_secret_basic``, ``client_secret_post``, ``private_key_jwt`` (RFC 7523, ``aud``
  = the issuer or the token endpoint, ``jti`` single-use) and ``none`` for public
  clients. A ``DPoP`` proof (RFC 9449 §5) binds the token to the client's key
  (``cnf.jkt``, ``token_type: DPoP``); nonces on request;
* ``POST /register``: dynamic client registration (RFC 7591); a client that registers
  itself (here or by a metadata document) gets only the interactive grants and no
  scope unless the operator allows more (``registration_grant_types``,
  ``registration_scopes``);
* client ID metadata documents: an https ``client_id`` is fetched (guarded: no private
  addresses, bounded size and time, no redirects), must name itself, and its
  ``redirect_uris`` bind the flow;
* ``GET /jwks`` and ``POST /introspect`` (RFC 7662).

Access tokens are JWTs (``typ: at+jwt``, RFC 9068) with ``aud`` = the resource: exactly
what ``BearerAuthMiddleware`` accepts. authlib does the grant and client-authentication
machinery (request validation, PKCE, client assertions, registration, introspection;
adapted in ``auth/issuer/as_grants.py``); the records live in ``auth/issuer/as_models.py``; this
module has the routes, storage, token minting, the resource binding, DPoP and ``iss``.

Redirect URIs are compared as exact strings (only the port after a loopback IP literal
may differ, RFC 8252 §7.3); parameters appear once and in RFC 6749 Appendix A syntax; a
replayed code or rotated-out refresh token revokes the tokens of its grant; every answer
but the metadata and the JWKS is ``Cache-Control: no-store``.

Every request is recorded in ``requests`` so a test can assert what was sent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import jwt
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    JsonRequest,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpcore.asgi_types import Receive, Scope, Send
from mcpcore.auth.dpop import DPoPNonces, DPoPPolicy, DPoPVerifier
from mcpcore.auth.errors import InvalidDPoPProof, TokenEndpointError, UseDPoPNonce
from mcpcore.auth.issuer.as_grants import (
    InvalidTargetError,
    IssuesTokens,
    JsonBody,
    OAuthRequest,
    register_authlib,
)
from mcpcore.auth.issuer.as_models import (
    AUTH_METHODS,
    INTERACTIVE_GRANTS,
    LOOPBACK_HOSTS,
    SECRET_METHODS,
    CodeRecord,
    PublishesKeys,
    RecordedRequest,
    RefreshRecord,
    RegisteredClient,
    SigningKey,
    User,
    check_redirect_uri,
    redirect_uri_problem,
)
from mcpcore.auth.issuer.ema import IdJagGrantType, access_token_claims
from mcpcore.auth.terms import (
    ID_JAG_GRANT_PROFILE,
    JWT_BEARER_ASSERTION,
    JWT_BEARER_GRANT,
    TOKEN_EXCHANGE,
)
from mcpcore.auth.urls import NetworkPolicy, check_url, read_limited, safe_async_client
from mcpcore.stores.memory import MemoryStore

_MAX_FORM = 64 * 1024
#: How many codes, rotated-out refresh tokens and issued access tokens are remembered
#: (each also until it expires): memory stays bounded whatever the request rate.
_MAX_REMEMBERED = 10_000
#: Parameters a token request may repeat (RFC 8707 §2, RFC 8693 §2.1); every other one
#: appears at most once (RFC 6749 §3.1, §3.2).
_REPEATABLE = frozenset({"resource", "audience"})
#: RFC 6749 Appendix A (and RFC 7636 §4.1-4.2): the syntax of the parameters this server
#: reads. A value outside it is ``invalid_request`` before anything else looks at it (no
#: lookup, no redirect, and never an error description that cannot be written).
_VSCHARS = r"[\x20-\x7e]"
_SCOPE = r"[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*"
_SYNTAX = {name: re.compile(pattern) for name, pattern in {
    "response_type": r"[A-Za-z0-9_]+(?: [A-Za-z0-9_]+)*",
    "grant_type": r"[A-Za-z0-9._:/-]+",
    "client_id": _VSCHARS + "*",
    "client_secret": _VSCHARS + "*",
    "state": _VSCHARS + "+",
    "code": _VSCHARS + "+",
    "refresh_token": _VSCHARS + "+",
    "scope": f"(?:{_SCOPE})?",
    "code_challenge": r"[A-Za-z0-9._~-]{43,128}",
    "code_challenge_method": r"[A-Za-z0-9._~-]+",
    "code_verifier": r"[A-Za-z0-9._~-]{43,128}",
    "resource": r"[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+",
}.items()}
#: EMA §7.5.1: confidential clients only (``none`` is not a way to present an ID-JAG).
_ID_JAG_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


ResourceOwner = Callable[[Request, RegisteredClient, str], Awaitable[str | Response | None]]


def approve_as(subject: str) -> ResourceOwner:
    """Approve every authorization request as ``subject``, without asking anyone.

    For tests, demos and the conformance suite only: a real deployment signs users in
    (return a login ``Response``) and asks for consent before returning their subject.
    """

    async def approve(request: Request, client: RegisteredClient, scope: str) -> str:
        return subject

    return approve


class _Refused(Exception):
    def __init__(self, status: int, error: str, description: str = "",
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(error)
        self.status, self.error, self.description = status, error, description
        self.headers = dict(headers or {})


class LocalAuthorizationServer(PublishesKeys):
    """An ASGI authorization server; see the module docstring.

    >>> server = LocalAuthorizationServer("http://127.0.0.1:9000",
    ...                                   resources=["http://127.0.0.1:8000/mcp"])
    >>> token = server.mint(sub="alice", aud="http://127.0.0.1:8000/mcp", scope="mcp")
    """

    def __init__(
        self,
        issuer: str,
        *,
        keys: Sequence[SigningKey] | None = None,
        clients: Sequence[RegisteredClient] = (),
        resources: Sequence[str] = (),
        exchangeable_audiences: Sequence[str] = (),
        scopes_supported: Sequence[str] | None = None,
        resource_owner: ResourceOwner | None = None,
        dynamic_registration: bool = True,
        client_metadata_documents: bool = True,
        registration_grant_types: Sequence[str] = INTERACTIVE_GRANTS,
        registration_scopes: Sequence[str] = (),
        network: NetworkPolicy | None = None,
        dpop_algorithms: Sequence[str] = ("ES256", "RS256", "PS256", "EdDSA"),
        dpop_nonces: bool = False,
        token_ttl: int = 300,
        refresh_ttl: int = 86_400,
        code_ttl: int = 60,
        id_jag: IdJagGrantType | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        issuer_parts = urlsplit(issuer)
        if issuer_parts.scheme != "https" and not (
            issuer_parts.scheme == "http" and issuer_parts.hostname in LOOPBACK_HOSTS
        ):
            raise ValueError("the issuer must be https (plain http only on loopback)")
        if issuer_parts.query or issuer_parts.fragment:
            raise ValueError("the issuer has no query or fragment (RFC 8414 §2)")
        self.issuer = issuer
        self.keys: list[SigningKey] = list(keys) if keys else [SigningKey.generate("RS256")]
        self.clients = {c.client_id: c for c in clients}
        #: Audiences tokens may name (RFC 8707 ``resource``); empty: any absolute URI.
        self.resources = list(resources)
        #: Tokens with one of these audiences may be exchanged (the MCP resource).
        self.exchangeable_audiences = set(exchangeable_audiences)
        self.scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.resource_owner = resource_owner
        self.dynamic_registration = dynamic_registration
        self.client_metadata_documents = client_metadata_documents
        #: The grants a client that registered itself may use (RFC 7591 §5: anyone may
        #: register; by default only the interactive grants, where a person approves).
        self.registration_grant_types = tuple(registration_grant_types)
        #: The scopes a client that registered itself may be granted (default: none).
        self.registration_scopes = frozenset(registration_scopes)
        self.network = network or NetworkPolicy()
        self.token_ttl, self.refresh_ttl, self.code_ttl = token_ttl, refresh_ttl, code_ttl
        self.clock = clock
        self.requests: list[RecordedRequest] = []
        self.jwks_cache_control = "max-age=300"
        self.fail_token_endpoint: int | None = None
        self._opaque: dict[str, dict[str, Any]] = {}
        self._codes: dict[str, CodeRecord] = {}
        self._refresh: dict[str, RefreshRecord] = {}
        #: Rotated-out refresh token -> (client_id, family, until): reuse revokes the family.
        self._rotated: dict[str, tuple[str, str, float]] = {}
        #: Access token ``jti`` -> (family, exp), for tokens of a code or refresh grant.
        self._family_of: dict[str, tuple[str, float]] = {}
        #: Revoked family -> until when its access tokens could still be alive.
        self._revoked_families: dict[str, float] = {}
        self._seen: dict[str, float] = {}
        self._documents: dict[str, tuple[RegisteredClient, float]] = {}
        self._prefix = urlsplit(issuer).path.rstrip("/")
        self._dpop_algorithms = tuple(dpop_algorithms)
        self.dpop = DPoPVerifier(
            store=MemoryStore(), policy=DPoPPolicy(algorithms=frozenset(dpop_algorithms)),
            nonces=DPoPNonces(secrets.token_bytes(32), clock=clock) if dpop_nonces else None,
            clock=clock,
        )
        self._authlib = register_authlib(self)
        self._grant_types = ["authorization_code", "refresh_token", "client_credentials",
                             TOKEN_EXCHANGE]
        #: The ID-JAG grant (EMA), if this server accepts them.
        self.id_jag = id_jag
        if id_jag is not None:
            ema = id_jag.validator.config
            if ema.issuer != issuer:
                raise ValueError("the EMA configuration names another issuer")
            if self.resources and not set(ema.resources) <= set(self.resources):
                raise ValueError("the EMA configuration names resources this server lacks")
            self._grant_types.append(JWT_BEARER_GRANT)
        self.app = Starlette(lifespan=self._lifespan, routes=[
            Route(self.metadata_path, self._metadata_route, methods=["GET"]),
            Route(self._prefix + "/jwks", self._jwks_route, methods=["GET"]),
            Route(self._prefix + "/authorize", self._authorize_route, methods=["GET"]),
            Route(self._prefix + "/token", self._token_route, methods=["POST"]),
            Route(self._prefix + "/register", self._register_route, methods=["POST"]),
            Route(self._prefix + "/introspect", self._introspect_route, methods=["POST"]),
        ])

    # -- endpoints and metadata -------------------------------------------------------

    @property
    def jwks_uri(self) -> str:
        return self.issuer.rstrip("/") + "/jwks"

    @property
    def token_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/token"

    @property
    def authorization_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/authorize"

    @property
    def registration_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/register"

    @property
    def introspection_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/introspect"

    @property
    def metadata_path(self) -> str:
        return "/.well-known/oauth-authorization-server" + self._prefix

    def register_grant(self, grant: type[Any], extensions: Sequence[Any] | None = None,
                       *, advertise: str | None = None) -> None:
        """Add a token-endpoint grant (an authlib grant class with ``IssuesTokens`` mixed
        in) and list ``advertise`` in the metadata's ``grant_types_supported``."""
        self._authlib.register_grant(grant, list(extensions or []))
        if advertise and advertise not in self._grant_types:
            self._grant_types.append(advertise)

    def metadata(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.authorization_endpoint,
            "token_endpoint": self.token_endpoint,
            "jwks_uri": self.jwks_uri,
            "introspection_endpoint": self.introspection_endpoint,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": list(self._grant_types),
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256", "EdDSA"],
            "introspection_endpoint_auth_methods_supported": [
                "client_secret_basic", "client_secret_post", "private_key_jwt"],
            "dpop_signing_alg_values_supported": list(self._dpop_algorithms),
            "client_id_metadata_document_supported": self.client_metadata_documents,
        }
        if self.id_jag is not None:  # EMA §6; the ID-JAG draft's AS metadata
            doc["authorization_grant_profiles_supported"] = [ID_JAG_GRANT_PROFILE]
        if self.dynamic_registration:
            doc["registration_endpoint"] = self.registration_endpoint
        if self.scopes_supported is not None:
            doc["scopes_supported"] = list(self.scopes_supported)
        return doc

    # -- minting -----------------------------------------------------------------------

    def mint(
        self,
        *,
        sub: str,
        aud: str | list[str],
        scope: str = "",
        ttl: int | None = None,
        key: SigningKey | None = None,
        headers: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> str:
        """Sign an access token. ``extra`` claims override the defaults (``iss=...``)."""
        now = int(self.clock())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": sub,
            "aud": aud,
            "iat": now,
            "exp": now + (self.token_ttl if ttl is None else ttl),
            "jti": secrets.token_urlsafe(16),
        }
        if scope:
            claims["scope"] = scope
        claims.update(extra)
        return (key or self.keys[0]).sign(claims, headers)

    def mint_opaque(self, *, sub: str, aud: str, scope: str = "", ttl: int | None = None) -> str:
        token = secrets.token_urlsafe(32)
        now = int(self.clock())
        self._opaque[token] = {
            "iss": self.issuer,
            "sub": sub,
            "aud": aud,
            "scope": scope,
            "iat": now,
            "exp": now + (self.token_ttl if ttl is None else ttl),
            "client_id": "test-client",
        }
        return token

    def revoke(self, token: str) -> None:
        self._opaque.pop(token, None)
        self._refresh.pop(token, None)

    def _issue(self, client: RegisteredClient, *, subject: str, scope: str, resource: str,
               jkt: str | None, refresh: bool, extra: Mapping[str, Any],
               family: str | None = None) -> dict[str, Any]:
        """Mint an access token (and a refresh token if ``refresh``). ``family`` names
        the authorization the tokens descend from (a redeemed code, a refresh chain), so
        that a replay can revoke them all (RFC 6749 §4.1.2, RFC 9700 §4.14.2)."""
        claims: dict[str, Any] = {"client_id": client.client_id, **extra}
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
        now = self.clock()
        jti = secrets.token_urlsafe(16)
        token: dict[str, Any] = {
            "access_token": self.mint(sub=subject, aud=resource, scope=scope, jti=jti,
                                      **claims),
            "token_type": "DPoP" if jkt is not None else "Bearer",
            "expires_in": self.token_ttl,
        }
        if scope:
            token["scope"] = scope
        if family is None and refresh:
            family = secrets.token_urlsafe(12)
        if family is not None:
            _remember(self._family_of, jti, (family, now + self.token_ttl), now)
        if refresh:
            assert family is not None
            value = secrets.token_urlsafe(32)
            self._refresh[value] = RefreshRecord(
                client.client_id, subject, scope, resource,
                jkt if client.method == "none" else None,  # RFC 9449 §5: public clients
                now + self.refresh_ttl, self.clock, family,
            )
            token["refresh_token"] = value
        return token

    def remember_code(self, code: str, record: CodeRecord) -> None:
        _remember(self._codes, code, record, self.clock())

    def revoke_family(self, family: str) -> None:
        """Revoke every token that descends from one authorization: its refresh tokens
        are forgotten, and its access tokens are refused by introspection and token
        exchange until they expire (a resource server that checks JWTs locally accepts
        them until ``exp``: keep ``token_ttl`` short)."""
        for value, record in list(self._refresh.items()):
            if record.family == family:
                del self._refresh[value]
        _remember(self._revoked_families, family, self.clock() + self.token_ttl, self.clock())

    def rotated_out(self, value: str, record: RefreshRecord) -> None:
        """``value`` was exchanged for a new refresh token: forget it, but remember that
        it was, so that its reuse revokes the family (RFC 9700 §4.14.2)."""
        self._refresh.pop(value, None)
        _remember(self._rotated, value, (record.client_id, record.family, record.expires_at),
                  self.clock())

    def reused_refresh_token(self, value: str, client_id: str) -> bool:
        """Whether ``value`` is a rotated-out refresh token of ``client_id``; if so its
        family is revoked."""
        rotated = self._rotated.get(value)
        if rotated is None or rotated[0] != client_id or rotated[2] <= self.clock():
            return False
        self.revoke_family(rotated[1])
        return True

    def is_revoked(self, claims: Mapping[str, Any]) -> bool:
        """Whether an access token this server issued belongs to a revoked family."""
        entry = self._family_of.get(str(claims.get("jti", "")))
        if entry is None:
            return False
        until = self._revoked_families.get(entry[0])
        return until is not None and until > self.clock()

    def check_scope(self, scope: str | None, *, self_registered: bool) -> None:
        """Refuse (``invalid_scope``) scopes this server does not advertise, when it
        advertises some (RFC 6749 §3.3, RFC 8414 ``scopes_supported``), and scopes
        beyond ``registration_scopes`` for a client that registered itself."""
        requested = set((scope or "").split())
        if self.scopes_supported is not None:
            unknown = requested - set(self.scopes_supported)
            if unknown:
                raise InvalidScopeError(
                    f"unknown scope {_printable(' '.join(sorted(unknown)))} "
                    "(not in scopes_supported)")
        if self_registered:
            beyond = requested - self.registration_scopes
            if beyond:
                raise InvalidScopeError(
                    f"a client that registered itself may not be granted "
                    f"{_printable(' '.join(sorted(beyond)))}; the operator allows it with "
                    "LocalAuthorizationServer(registration_scopes=[...])")

    def _first_use(self, key: str, expires: float) -> bool:
        now = self.clock()
        if len(self._seen) > 10_000:
            self._seen = {k: v for k, v in self._seen.items() if v > now}
        if key in self._seen and self._seen[key] > now:
            return False
        self._seen[key] = max(expires, now + 60)
        return True

    def requested_resource(self, form: Mapping[str, str]) -> str:
        """The ``resource`` (or ``audience``) of a token request, checked against the
        configured resources; the only one when there is exactly one and none was asked."""
        resource = form.get("resource") or form.get("audience") or self._default_resource()
        if not resource:
            raise InvalidRequestError("resource is required")
        self._check_resource(resource)
        return resource

    def _default_resource(self) -> str | None:
        return self.resources[0] if len(self.resources) == 1 else None

    def _check_resource(self, resource: str) -> None:
        parts = urlsplit(resource)
        if not parts.scheme or not parts.netloc or parts.fragment or "#" in resource:
            raise InvalidTargetError("resource must be an absolute URI without a fragment")
        if self.resources and resource not in self.resources:
            raise InvalidTargetError("unknown resource")

    def _verify_own(self, token: str) -> dict[str, Any]:
        claims = self.own_token_claims(token)
        if claims is None:
            raise InvalidGrantError("the subject token is not valid")
        return claims

    def own_token_claims(self, token: str) -> dict[str, Any] | None:
        """The claims of an access token this server signed, unexpired and not revoked;
        ``None`` otherwise."""
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = next(k for k in self.keys if k.kid == kid)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.public_key,
                algorithms=[key.alg],
                issuer=self.issuer,
                options={"verify_aud": False, "require": ["exp", "sub", "aud"]},
            )
        except (jwt.InvalidTokenError, StopIteration):
            return None
        return None if self.is_revoked(claims) else claims

    # -- clients, including client ID metadata documents -----------------------------------

    def _client(self, client_id: str) -> RegisteredClient | None:
        client = self.clients.get(client_id)
        if client is not None:
            return client
        cached = self._documents.get(client_id)
        if cached is not None and cached[1] > self.clock():
            return cached[0]
        return None

    def _is_document_url(self, client_id: str) -> bool:
        if not self.client_metadata_documents or client_id in self.clients:
            return False
        parts = urlsplit(client_id)
        return parts.scheme in ("https", "http") and bool(parts.hostname) and parts.path not in (
            "", "/")

    async def _load_document(self, client_id: str) -> None:
        """Fetch and validate a client ID metadata document into the cache (guarded:
        the URL checks of ``auth/urls.py``, 5 s, 16 KiB, no redirects)."""
        if not self._is_document_url(client_id) or self._client(client_id) is not None:
            return
        try:
            check_url(client_id, self.network)
            async with (
                safe_async_client(self.network, timeout=5.0) as http,
                asyncio.timeout(5.0),
                http.stream("GET", client_id, headers={"accept": "application/json"}) as response,
            ):
                body = await read_limited(response, 16 * 1024)
                status, cache = response.status_code, response.headers.get("cache-control")
        except Exception:
            raise InvalidClientError(description="the client metadata document is unreachable"
                                     ) from None
        if status != 200:
            raise InvalidClientError(description="the client metadata document is unavailable")
        doc = _json_object(body)
        uris = doc.get("redirect_uris") if isinstance(doc, dict) else None
        if (
            not isinstance(doc, dict)
            or doc.get("client_id") != client_id
            or not isinstance(uris, list)
            or not uris
            or not all(isinstance(u, str) for u in uris)
        ):
            raise InvalidClientError(description="the client metadata document is invalid")
        method = doc.get("token_endpoint_auth_method", "none")
        if method in SECRET_METHODS or method not in AUTH_METHODS:  # no shared secrets
            raise InvalidClientError(description="unsupported token_endpoint_auth_method")
        jwks = doc.get("jwks") if isinstance(doc.get("jwks"), dict) else None
        if method == "private_key_jwt" and jwks is None:
            raise InvalidClientError(description="private_key_jwt needs jwks")
        try:
            for uri in uris:
                check_redirect_uri(uri, "native")
        except OAuth2Error:
            raise InvalidClientError(description="the client metadata document has an "
                                     "unusable redirect_uri") from None
        grant_types = doc.get("grant_types") or ["authorization_code"]
        if not isinstance(grant_types, list):
            raise InvalidClientError(description="the client metadata document is invalid")
        # Anyone can publish a document: it gets what a self-registered client gets.
        client = RegisteredClient(
            client_id, redirect_uris=tuple(uris), auth_method=method, jwks=jwks,
            grant_types=tuple(g for g in grant_types if g in self.registration_grant_types),
            name=doc.get("client_name") if isinstance(doc.get("client_name"), str) else None,
            self_registered=True)
        self._documents[client_id] = (client, self.clock() + _max_age(cache))

    # -- ASGI ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        await self.aclose()

    async def aclose(self) -> None:
        """Release what this server opened (the IdPs' key-set clients)."""
        if self.id_jag is not None:
            await self.id_jag.validator.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _no_store(send)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > _MAX_FORM:
                await JSONResponse({"error": "invalid_request"}, 413)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.requests.append(RecordedRequest(
            scope["method"], scope["path"], headers, body, scope.get("query_string", b"")))
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()  # type: ignore[return-value]
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    def _response(value: object) -> Response:
        assert isinstance(value, Response)
        return value

    @staticmethod
    def _error(exc: _Refused) -> Response:
        body: dict[str, str] = {"error": exc.error}
        if exc.description:
            body["error_description"] = exc.description
        return JSONResponse(body, exc.status, headers={"cache-control": "no-store", **exc.headers})

    async def _metadata_route(self, request: Request) -> Response:
        return JSONResponse(self.metadata(), headers={"cache-control": "public, max-age=300"})

    async def _jwks_route(self, request: Request) -> Response:
        return JSONResponse(self.jwks(), headers={"cache-control": self.jwks_cache_control})

    def _oauth_request(self, request: Request, form: Sequence[tuple[str, str]]) -> OAuthRequest:
        # The URI authlib sees is built from the configured issuer, never from ``Host``.
        uri = _origin(self.issuer) + request.url.path
        return OAuthRequest(request.method, uri, request.headers,
                            parse_qsl(request.url.query, keep_blank_values=True), form)

    async def _form(self, request: Request) -> list[tuple[str, str]]:
        """The parameters of a ``POST`` (token, introspection): the form body alone, each
        name at most once. A query string is refused, not merged: credentials do not
        belong in URLs (RFC 6749 §2.3.1, §3.2), and one request has one reading."""
        if request.url.query:
            raise _Refused(400, "invalid_request",
                           "parameters belong in the request body, not the URL")
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/x-www-form-urlencoded":
            raise _Refused(400, "invalid_request", "the body must be form-encoded")
        try:
            form = parse_qsl((await request.body()).decode("utf-8"), keep_blank_values=True,
                             strict_parsing=False)
        except UnicodeDecodeError:
            raise _Refused(400, "invalid_request", "the body is not UTF-8") from None
        _check_parameters(form)
        return form

    def _with_iss(self, response: Response) -> Response:
        """RFC 9207 §2: ``iss`` on every authorization response redirect, errors too."""
        location = response.headers.get("location")
        if response.status_code in (302, 303) and location:
            parts = urlsplit(location)
            query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                     if k != "iss"]
            query.append(("iss", self.issuer))
            response.headers["location"] = urlunsplit(parts._replace(query=urlencode(query)))
            response.headers["cache-control"] = "no-store"
        return response

    async def _authorize_route(self, request: Request) -> Response:
        oauth = self._oauth_request(request, [])
        data = oauth.payload.data
        client_id = data.get("client_id", "")
        try:
            # Before any lookup, and never redirected: a malformed request, or a
            # redirect_uri that parsers read differently (RFC 9700 §4.1.3).
            _check_parameters(parse_qsl(request.url.query, keep_blank_values=True))
            problem = redirect_uri_problem(data["redirect_uri"]) if "redirect_uri" in data \
                else None
            if problem is not None:
                raise _Refused(400, "invalid_request", problem)
        except _Refused as exc:
            return self._error(exc)
        try:
            await self._load_document(client_id)
            grant = self._authlib.get_consent_grant(oauth)
        except OAuth2Error as error:
            # authlib sets redirect_uri only once client and redirect_uri are validated
            # (RFC 6749 §4.1.2.1): otherwise the error is shown here, never redirected.
            return self._with_iss(self._response(
                self._authlib.handle_error_response(oauth, error)))
        client: RegisteredClient = grant.request.client.client
        try:
            resource = data.get("resource") or self._default_resource()
            if not resource:
                raise InvalidRequestError("resource is required", state=data.get("state"))
            self._check_resource(resource)
        except OAuth2Error as error:
            error.redirect_uri, error.state = grant.redirect_uri, data.get("state")
            return self._with_iss(self._response(
                self._authlib.handle_error_response(oauth, error)))
        oauth.resource = resource
        owner = self.resource_owner
        decision = await owner(request, client, oauth.scope or "") if owner is not None else None
        if isinstance(decision, Response):
            return decision  # a login or consent page
        user = User(decision) if decision else None
        response = self._authlib.create_authorization_response(oauth, grant_user=user,
                                                               grant=grant)
        return self._with_iss(response)

    async def _token_route(self, request: Request) -> Response:
        try:
            if self.fail_token_endpoint is not None:
                raise _Refused(self.fail_token_endpoint, "server_error")
            form = await self._form(request)
            fields = dict(form)  # each name once (``_form``), but for the resource
            if request.headers.get("authorization", "").lower().startswith("basic ") and (
                "client_secret" in fields or "client_assertion" in fields
            ):
                raise _Refused(400, "invalid_request", "one client authentication method only")
            if fields.get("client_assertion") and (
                fields.get("client_assertion_type") != JWT_BEARER_ASSERTION
            ):
                raise _Refused(400, "invalid_request", "unsupported client_assertion_type")
            oauth = self._oauth_request(request, form)
            # ``dpop_bound`` is enforced once the client is authenticated, whichever way
            # (``AuthlibServer.authenticate_client``), for every grant.
            oauth.dpop_jkt = await self._dpop_proof(request)
            await self._load_document(fields.get("client_id", ""))
            if self.id_jag is not None and fields.get("grant_type") == JWT_BEARER_GRANT:
                return await self._id_jag_grant(oauth, form)
        except _Refused as exc:
            return self._error(exc)
        except OAuth2Error as error:
            return self._response(self._authlib.handle_error_response(None, error))
        response = self._response(self._authlib.create_token_response(oauth))
        response.headers["cache-control"] = "no-store"
        return response

    async def _id_jag_grant(self, oauth: OAuthRequest, form: Sequence[tuple[str, str]]
                            ) -> Response:
        """The JWT-bearer grant with an ID-JAG (EMA §5): the client authenticates as it
        registered here (authlib's methods; a failure is ``invalid_client``), must be
        allowed the grant, then ``IdJagGrantType`` checks the assertion (every check of
        ``auth/issuer/idjag.py``, ``jti`` once through the store; all async, hence here and not
        in an authlib grant). The token is bound to the ID-JAG's resource, carries the
        subject, tenant and client, and comes with no refresh token."""
        assert self.id_jag is not None  # EMA §7.3 (never in a URL): ``_form`` refuses queries
        model = self._authlib.authenticate_client(oauth, _ID_JAG_AUTH_METHODS, "token")
        client: RegisteredClient = model.client
        try:
            if not model.check_grant_type(JWT_BEARER_GRANT):
                raise _Refused(400, "unauthorized_client", "this client may not use ID-JAGs")
            body: dict[str, list[str]] = {}
            for name, value in form:
                body.setdefault(name, []).append(value)
            grant = await self.id_jag.accept(body, client_id=client.client_id)
        except TokenEndpointError as exc:
            return self._error(_Refused(exc.status, exc.error, exc.description))
        claims = access_token_claims(grant, tenant_claim=self.id_jag.validator.config.tenant_claim)
        extra = {k: v for k, v in claims.items() if k not in ("sub", "aud", "scope", "client_id")}
        token = self._issue(client, subject=grant.subject, scope=claims.get("scope", ""),
                            resource=grant.resource, jkt=oauth.dpop_jkt, refresh=False,
                            extra=extra)
        return JSONResponse(token, headers={"cache-control": "no-store", "pragma": "no-cache"})

    async def _dpop_proof(self, request: Request) -> str | None:
        proofs = request.headers.getlist("dpop")
        if not proofs:
            return None
        if len(proofs) > 1 or "," in proofs[0]:
            raise _Refused(400, "invalid_dpop_proof", "one DPoP proof per request")
        try:
            verified = await self.dpop.verify(proofs[0], method="POST", url=self.token_endpoint)
        except UseDPoPNonce as exc:
            raise _Refused(400, "use_dpop_nonce", "a DPoP nonce is required",
                           {"dpop-nonce": exc.nonce or ""}) from None
        except InvalidDPoPProof as exc:
            raise _Refused(400, "invalid_dpop_proof", exc.description) from None
        return verified.jkt

    async def _register_route(self, request: Request) -> Response:
        if not self.dynamic_registration:
            return self._error(_Refused(404, "not_found"))
        data = _json_object(await request.body())
        if data is None:
            return self._error(_Refused(400, "invalid_client_metadata",
                                        "not a JSON object with each member once"))
        json_request = JsonRequest(request.method, str(request.url), request.headers)
        json_request.payload = JsonBody(data)
        try:
            response = self._response(
                self._authlib.create_endpoint_response("client_registration", json_request))
        except OAuth2Error as error:
            return self._response(self._authlib.handle_error_response(None, error))
        response.headers["cache-control"] = "no-store"
        return response

    async def _introspect_route(self, request: Request) -> Response:
        try:
            form = await self._form(request)
        except _Refused as exc:
            return self._error(exc)
        return self._response(self._authlib.create_endpoint_response(
            "introspection", self._oauth_request(request, form)))


def _no_store(send: Send) -> Send:
    """Every answer of this server is ``Cache-Control: no-store`` unless its route says
    otherwise (metadata and JWKS are public): tokens, codes in ``Location``, errors, the
    413 of the body limit, Starlette's 404 and 405 (RFC 6749 §5.1, RFC 9700 §4.16)."""

    async def send_no_store(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            if not any(name.lower() == b"cache-control" for name, _ in headers):
                headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
        await send(message)

    return send_no_store


def _check_parameters(pairs: Sequence[tuple[str, str]]) -> None:
    """RFC 6749 §3.1/§3.2: a parameter appears at most once (``invalid_request``), but
    ``resource`` (RFC 8707 §2) and ``audience`` (RFC 8693 §2.1), which may repeat; this
    server issues a token for one audience, so more than one is ``invalid_target``."""
    seen: set[str] = set()
    for name, value in pairs:
        if name in seen and name not in _REPEATABLE:
            raise _Refused(400, "invalid_request", f"{_printable(name)} appears more than once")
        seen.add(name)
        syntax = _SYNTAX.get(name)
        if syntax is not None and not syntax.fullmatch(value):
            raise _Refused(400, "invalid_request", f"{name} is malformed (RFC 6749 Appendix A)")
    if len({value for name, value in pairs if name in _REPEATABLE}) > 1:
        raise _Refused(400, "invalid_target", "one resource per request: tokens here have "
                       "one audience")


def _printable(text: str) -> str:
    """``text`` as an ``error_description`` may hold it (RFC 6749 §5.2: printable ASCII
    but ``"`` and ``\\``), at most 64 characters."""
    return "".join(c if " " <= c <= "~" and c not in "\"\\" else "?" for c in text[:64])


def _json_object(body: bytes) -> dict[str, Any] | None:
    """A JSON object whose members each appear once (RFC 8259 §4: a duplicate name is
    read differently by different parsers), or ``None``."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for name, member in pairs:
            if name in value:
                raise ValueError("duplicate member")
            value[name] = member
        return value

    try:
        data = json.loads(body, object_pairs_hook=unique)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _expiry(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, tuple):
        return float(value[-1])
    return float(value.expires_at)


def _remember(memory: dict[str, Any], key: str, value: Any, now: float) -> None:
    """Put ``key`` in ``memory`` (values: an expiry, a tuple ending in one, or a record
    with ``expires_at``). Past ``_MAX_REMEMBERED`` entries the expired ones go, then the
    oldest, down to nine tenths, so the sweep runs once per many insertions."""
    memory[key] = value
    if len(memory) <= _MAX_REMEMBERED:
        return
    for stale in [k for k, v in memory.items() if _expiry(v) <= now]:
        del memory[stale]
    while len(memory) > _MAX_REMEMBERED - _MAX_REMEMBERED // 10:
        del memory[next(iter(memory))]


def _max_age(cache_control: str | None) -> float:
    for part in (cache_control or "").split(","):
        name, _, value = part.strip().partition("=")
        if name.lower() == "max-age" and value.isdigit():
            return float(min(max(int(value), 60), 86_400))
    return 300.0


def configure(parser: argparse.ArgumentParser) -> None:
    """``mcpcore authorization-server``'s flags (see ``mcpcore.cli``)."""
    parser.add_argument("--host", default="127.0.0.1")
    from mcpcore.cli import port_number

    parser.add_argument("--port", type=port_number, default=9000)
    parser.add_argument("--resource", action="append",
                        help="an MCP server tokens are for (repeatable; default "
                             "http://127.0.0.1:8000/mcp)")
    parser.add_argument("--scope", default="mcp", help="scopes to advertise (space-separated)")
    parser.add_argument("--approve-as", default="demo-user",
                        help="approve every authorization as this user (demo mode)")
    parser.add_argument("--client-secret-env", metavar="VAR",
                        help="read demo-client's secret from $VAR (default: a random one, "
                             "printed)")


def run(args: argparse.Namespace) -> int:
    """``mcpcore authorization-server``: serve a demo AS until interrupted."""
    import sys

    import uvicorn

    from mcpcore.serving import ListenError, listen

    secret = secrets.token_urlsafe(24)
    if args.client_secret_env:
        secret = os.environ.get(args.client_secret_env, "")
        if len(secret) < 16:
            print(f"mcpcore authorization-server: ${args.client_secret_env} must hold "
                  "demo-client's secret (16 characters or more)", file=sys.stderr)
            return 2
    try:  # bound before anything is printed: a port in use is one line, status 2
        sock = listen(args.host, args.port)
    except ListenError as exc:
        print(f"mcpcore authorization-server: {exc}", file=sys.stderr)
        return 2

    issuer = f"http://{args.host}:{sock.getsockname()[1]}"  # --port 0: the port it got
    resources = args.resource or ["http://127.0.0.1:8000/mcp"]
    server = LocalAuthorizationServer(
        issuer,
        clients=[
            RegisteredClient("demo-client", secret=secret,
                             grant_types=("client_credentials", TOKEN_EXCHANGE)),
            RegisteredClient("demo-public", redirect_uris=("http://127.0.0.1/callback",),
                   grant_types=("authorization_code", "refresh_token")),
        ],
        resources=resources,
        exchangeable_audiences=resources,
        scopes_supported=args.scope.split(),
        registration_scopes=args.scope.split(),  # demo mode: self-registered clients too
        resource_owner=approve_as(args.approve_as),
        network=NetworkPolicy(allow_loopback=True),
    )
    print(f"issuer:          {issuer}")
    print(f"metadata:        {issuer}{server.metadata_path}")
    print("public client:   demo-public (PKCE, redirect http://127.0.0.1:<any port>/callback)")
    shown = f"${args.client_secret_env}" if args.client_secret_env else secret
    print(f"machine client:  demo-client / {shown} (client_credentials, token exchange "
          "of tokens for the resources)")
    print(f"approving as:    {args.approve_as} (demo mode: nobody is asked)")
    uvicorn.Server(uvicorn.Config(server, log_level="warning")).run(sockets=[sock])
    return 0


__all__ = [
    "IssuesTokens",
    "LocalAuthorizationServer",
    "RecordedRequest",
    "RegisteredClient",
    "ResourceOwner",
    "SigningKey",
    "approve_as",
]
