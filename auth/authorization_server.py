"""A compact OAuth 2.1 authorization server for MCP, on Starlette, with authlib's grants.

It is the server ``examples/`` and the tests use, and small enough to read in one
sitting; a small deployment can run it (``python -m mcpcore.auth.authorization_server``)
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
  ``client_credentials``, RFC 8693 token exchange, plus any grant registered with
  ``register_grant`` (how a JWT-bearer/ID-JAG grant plugs in). Client authentication:
  ``client_secret_basic``, ``client_secret_post``, ``private_key_jwt`` (RFC 7523, ``aud``
  = the issuer or the token endpoint, ``jti`` single-use) and ``none`` for public
  clients. A ``DPoP`` proof (RFC 9449 §5) binds the token to the client's key
  (``cnf.jkt``, ``token_type: DPoP``); nonces on request;
* ``POST /register``: dynamic client registration (RFC 7591);
* client ID metadata documents: an https ``client_id`` is fetched (guarded: no private
  addresses, bounded size and time, no redirects), must name itself, and its
  ``redirect_uris`` bind the flow;
* ``GET /jwks`` and ``POST /introspect`` (RFC 7662).

Access tokens are JWTs (``typ: at+jwt``, RFC 9068) with ``aud`` = the resource: exactly
what ``BearerAuthMiddleware`` accepts. authlib does the grant and client-authentication
machinery (request validation, PKCE, client assertions, registration, introspection);
this module supplies storage, token minting, the resource binding, DPoP and ``iss``.

Every request is recorded in ``requests`` so a test can assert what was sent.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import jwt
import msgspec
from authlib.oauth2 import AuthorizationServer as _AuthlibServer
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (
    AccessDeniedError,
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    JsonPayload,
    JsonRequest,
    OAuth2Payload,
    OAuth2Request,
    UnauthorizedClientError,
    grants,
)
from authlib.oauth2.rfc6749.grants.base import BaseGrant, TokenEndpointMixin
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint, InvalidRedirectURIError
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from joserfc.jwk import KeySet, import_key
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpcore.auth.asgi import Receive, Scope, Send
from mcpcore.auth.client_auth import JWT_BEARER_ASSERTION
from mcpcore.auth.dpop import DPoPPolicy, DPoPVerifier
from mcpcore.auth.errors import InvalidDPoPProof, UseDPoPNonce
from mcpcore.auth.urls import NetworkPolicy, check_url, read_limited, safe_async_client
from mcpcore.stores.memory import MemoryStore

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SECRET_METHODS = frozenset({"client_secret_basic", "client_secret_post"})
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
_MAX_FORM = 64 * 1024
_MAX_CLIENTS = 10_000


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


def _public_jwk(public_key: Any) -> dict[str, Any]:
    for alg in ("ES256", "RS256", "EdDSA"):
        try:
            return dict(jwt.get_algorithm_by_name(alg).to_jwk(public_key, as_dict=True))
        except Exception:  # not this key type
            continue
    raise ValueError("unsupported public key type")


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
class _Code:
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
class _Refresh:
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
class _Opaque:
    claims: dict[str, Any]
    clock: Callable[[], float]

    def is_expired(self) -> bool:
        return bool(self.claims["exp"] <= self.clock())

    def is_revoked(self) -> bool:
        return False

    def get_scope(self) -> str:
        return str(self.claims.get("scope", ""))


@dataclass(frozen=True)
class _User:
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


class _ClientModel:
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


# -- authlib glue ----------------------------------------------------------------------


class _Payload(OAuth2Payload):  # type: ignore[misc]
    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        self._data: dict[str, str] = {}
        self._datalist: dict[str, list[str]] = {}
        for key, value in pairs:
            self._data.setdefault(key, value)
            self._datalist.setdefault(key, []).append(value)

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> dict[str, list[str]]:
        return self._datalist


class _Request(OAuth2Request):  # type: ignore[misc]
    """An ``OAuth2Request`` built from what the Starlette route already read."""

    def __init__(self, method: str, uri: str, headers: Mapping[str, str],
                 query: Sequence[tuple[str, str]], form: Sequence[tuple[str, str]]) -> None:
        super().__init__(method, uri, headers=headers)
        self.payload = _Payload([*query, *form])
        self._args = dict(query)
        self._form = dict(form)
        #: Set by the token route when a DPoP proof was verified.
        self.dpop_jkt: str | None = None
        #: Extra access-token claims a grant wants (``act`` for token exchange).
        self.extra_claims: dict[str, Any] = {}

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _JsonPayload(JsonPayload):  # type: ignore[misc]
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class _Authlib(_AuthlibServer):  # type: ignore[misc]
    def __init__(self, owner: LocalAuthorizationServer) -> None:
        super().__init__(scopes_supported=None)
        self.owner = owner

    def query_client(self, client_id: str) -> _ClientModel | None:
        client = self.owner._client(client_id)
        return _ClientModel(client) if client is not None else None

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        return None  # access tokens are self-contained JWTs; refresh tokens kept at mint

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request  # the routes build ``_Request`` themselves

    def create_json_request(self, request: Any) -> JsonRequest:
        return request

    def handle_response(self, status: int, body: Any, headers: Any) -> Response:
        payload = msgspec.json.encode(body) if isinstance(body, dict) else (body or b"")
        response = Response(payload, status_code=status)
        for key, value in headers:
            response.headers[key] = value
        return response

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        return None


class IssuesTokens:
    """Mix into an authlib grant so its ``generate_token`` mints this server's tokens:
    a JWT access token bound to ``_resource()`` (and to the DPoP key, if a proof came
    with the request), plus a refresh token when asked. A plugged-in grant implements
    ``_resource`` (usually ``self.server.owner.requested_resource(self.request.form)``)."""

    request: Any
    server: _Authlib
    GRANT_TYPE: str | None

    def _resource(self) -> str:
        raise NotImplementedError

    def generate_token(self, user: Any = None, scope: str | None = None,
                       grant_type: str | None = None, expires_in: int | None = None,
                       include_refresh_token: bool = True) -> dict[str, Any]:
        client: _ClientModel = self.request.client
        subject = user.get_user_id() if user is not None else client.get_client_id()
        return self.server.owner._issue(
            client.client, subject=subject, scope=scope or "", resource=self._resource(),
            jkt=self.request.dpop_jkt, refresh=include_refresh_token,
            extra=self.request.extra_claims,
        )


class _S256Challenge(CodeChallenge):  # type: ignore[misc]
    """PKCE with S256 only, and required for every client (the spec's security
    considerations; OAuth 2.1 §7.5)."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE code_challenge is required")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256")
        super().validate_code_challenge(grant, redirect_uri)

    def validate_code_verifier(self, grant: Any, result: Any) -> None:
        if not grant.request.form.get("code_verifier"):
            raise InvalidRequestError("Missing 'code_verifier'")
        super().validate_code_verifier(grant, result)


class _AuthorizationCode(IssuesTokens, grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)

    def _resource(self) -> str:
        return str(self.request.authorization_code.resource)

    def save_authorization_code(self, code: str, request: Any) -> None:
        data = request.payload.data
        self.server.owner._codes[code] = _Code(
            client_id=request.client.get_client_id(),
            redirect_uri=data.get("redirect_uri") or request.client.get_default_redirect_uri(),
            scope=request.scope or "",
            subject=request.user.get_user_id(),
            resource=request.resource,
            code_challenge=data.get("code_challenge"),
            code_challenge_method=data.get("code_challenge_method"),
            expires_at=self.server.owner.clock() + self.server.owner.code_ttl,
        )

    def query_authorization_code(self, code: str, client: _ClientModel) -> _Code | None:
        owner = self.server.owner
        record = owner._codes.get(code)
        if record is None or record.client_id != client.get_client_id():
            return None
        self._found = code
        if record.expires_at <= owner.clock():
            owner._codes.pop(code, None)
            return None
        return record

    def delete_authorization_code(self, authorization_code: _Code) -> None:
        codes = self.server.owner._codes
        for code, record in list(codes.items()):
            if record is authorization_code:
                del codes[code]

    def authenticate_user(self, authorization_code: _Code) -> _User:
        return _User(authorization_code.subject)

    def validate_token_request(self) -> None:
        try:
            super().validate_token_request()  # client, code, redirect_uri, PKCE
            record: _Code = self.request.authorization_code
            resource = self.request.form.get("resource")
            if resource is not None and resource != record.resource:
                raise InvalidGrantError("resource differs from the authorization request")
        finally:
            # A code is single-use (RFC 6749 §4.1.2), and one failed redemption (a wrong
            # verifier, another redirect_uri) burns it too.
            self.server.owner._codes.pop(getattr(self, "_found", ""), None)


class _RefreshToken(IssuesTokens, grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotate on every use

    def _resource(self) -> str:
        return str(self.request.refresh_token.resource)

    def authenticate_refresh_token(self, refresh_token: str) -> _Refresh | None:
        owner = self.server.owner
        record = owner._refresh.get(refresh_token)
        if record is None or record.is_expired():
            return None
        resource = self.request.form.get("resource")
        if resource is not None and resource != record.resource:
            raise InvalidGrantError("resource differs from the original grant")
        if record.jkt is not None and record.jkt != self.request.dpop_jkt:
            raise InvalidGrantError("refresh token is bound to another DPoP key")
        self._presented = refresh_token
        return record

    def authenticate_user(self, refresh_token: _Refresh) -> _User:
        return _User(refresh_token.subject)

    def revoke_old_credential(self, refresh_token: _Refresh) -> None:
        self.server.owner._refresh.pop(getattr(self, "_presented", ""), None)


class _ClientCredentials(IssuesTokens, grants.ClientCredentialsGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post",
                                   "private_key_jwt"]

    def _resource(self) -> str:
        return self.server.owner.requested_resource(self.request.form)


class _TokenExchange(IssuesTokens, BaseGrant, TokenEndpointMixin):  # type: ignore[misc]
    """RFC 8693 for tokens this server issued: the subject token must be one of ours,
    for an audience configured as exchangeable."""

    GRANT_TYPE = TOKEN_EXCHANGE
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post",
                                   "private_key_jwt"]

    def _resource(self) -> str:
        return self.server.owner.requested_resource(self.request.form)

    def validate_token_request(self) -> None:
        client = self.authenticate_token_endpoint_client()
        if not client.check_grant_type(self.GRANT_TYPE):
            raise UnauthorizedClientError()
        form = self.request.form
        if form.get("subject_token_type") != ACCESS_TOKEN_TYPE:
            raise InvalidRequestError("subject_token_type must be an access token")
        owner = self.server.owner
        subject = owner._verify_own(form.get("subject_token", ""))
        if not set(_aud_list(subject.get("aud"))) & owner.exchangeable_audiences:
            raise InvalidGrantError("the subject token may not be exchanged")
        act: dict[str, Any] = {"sub": client.get_client_id()}
        if "act" in subject:
            act["act"] = subject["act"]
        self.request.client = client
        self.request.user = _User(subject["sub"])
        self.request.extra_claims = {"act": act}

    def create_token_response(self) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        token = self.generate_token(user=self.request.user,
                                    scope=self.request.form.get("scope", ""),
                                    include_refresh_token=False)
        token["issued_token_type"] = ACCESS_TOKEN_TYPE
        return 200, token, self.TOKEN_RESPONSE_HEADER


class _ClientAssertion(JWTBearerClientAssertion):  # type: ignore[misc]
    """``private_key_jwt`` (RFC 7523 §2.2 via authlib): ``aud`` is the issuer or the
    token endpoint, each ``jti`` is accepted once."""

    CLIENT_AUTH_METHOD = "private_key_jwt"

    def __init__(self, owner: LocalAuthorizationServer) -> None:
        super().__init__(leeway=30)
        self.owner = owner

    def get_audiences(self) -> list[str]:
        return [self.owner.issuer, self.owner.token_endpoint]

    def validate_jti(self, claims: Mapping[str, Any], jti: str) -> bool:
        return self.owner._first_use(f"assertion:{claims.get('sub')}:{jti}",
                                     float(claims.get("exp", 0)))

    def resolve_client_public_key(self, client: _ClientModel) -> Any:
        if client.client.jwks is not None:
            return KeySet.import_key_set(dict(client.client.jwks))  # type: ignore[arg-type]
        if client.client.public_key is None:
            raise InvalidClientError(description="the client has no key")
        return import_key(_public_jwk(client.client.public_key))  # one key: no kid needed


class _Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
    """RFC 7591 registration: open (no initial access token), bounded in count; public
    clients get no secret."""

    def __init__(self, owner: LocalAuthorizationServer) -> None:
        super().__init__()
        self.owner = owner

    def authenticate_token(self, request: Any) -> bool:
        return True

    def get_server_metadata(self) -> dict[str, Any]:
        return self.owner.metadata()

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        if request.payload.data.get("token_endpoint_auth_method", "none") not in SECRET_METHODS:
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def save_client(self, info: dict[str, Any], metadata: dict[str, Any], request: Any) -> Client:
        owner = self.owner
        method = metadata.get("token_endpoint_auth_method", "none")
        if method not in AUTH_METHODS or (method == "private_key_jwt"
                                          and not metadata.get("jwks")):
            raise InvalidRequestError("unsupported token_endpoint_auth_method")
        application_type = request.payload.data.get("application_type", "web")
        if application_type not in ("native", "web"):
            raise InvalidRequestError("application_type must be native or web")
        if len(owner.clients) >= _MAX_CLIENTS:
            raise AccessDeniedError("too many registered clients")
        uris = tuple(metadata.get("redirect_uris") or ())
        for uri in uris:
            _check_redirect_uri(uri, application_type)
        grant_types = tuple(metadata.get("grant_types") or ("authorization_code",))
        client = Client(
            info["client_id"], secret=info.get("client_secret"), scope=metadata.get("scope", ""),
            redirect_uris=uris, grant_types=grant_types, auth_method=method,
            name=metadata.get("client_name"), jwks=metadata.get("jwks"),
        )
        owner.clients[client.client_id] = client
        return client


class _Introspection(IntrospectionEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]

    def __init__(self, owner: LocalAuthorizationServer) -> None:
        super().__init__()
        self.owner = owner

    def query_token(self, token: str, hint: str | None) -> _Opaque | None:
        claims = self.owner._opaque.get(token)
        return _Opaque(claims, self.owner.clock) if claims is not None else None

    def check_permission(self, token: _Opaque, client: _ClientModel, request: Any) -> bool:
        return True

    def introspect_token(self, token: _Opaque) -> dict[str, Any]:
        return {"active": True, "token_type": "Bearer", **token.claims}


def _check_redirect_uri(uri: str, application_type: str) -> None:
    """Redirect URIs must be https, or http on a loopback host (RFC 8252 §7.3, OAuth 2.1
    §2.3.1); no fragments."""
    parts = urlsplit(uri)
    if parts.fragment or not parts.hostname:
        raise InvalidRedirectURIError("redirect_uri must be absolute without a fragment")
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS:
        return
    raise InvalidRedirectURIError("redirect_uri must be https or a loopback http URI")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def _aud_list(aud: object) -> list[str]:
    if isinstance(aud, str):
        return [aud]
    return [a for a in aud if isinstance(a, str)] if isinstance(aud, list) else []


ResourceOwner = Callable[[Request, Client, str], Awaitable[str | Response | None]]


def approve_as(subject: str) -> ResourceOwner:
    """Approve every authorization request as ``subject``, without asking anyone.

    For tests, demos and the conformance suite only: a real deployment signs users in
    (return a login ``Response``) and asks for consent before returning their subject.
    """

    async def approve(request: Request, client: Client, scope: str) -> str:
        return subject

    return approve


class _Refused(Exception):
    def __init__(self, status: int, error: str, description: str = "",
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(error)
        self.status, self.error, self.description = status, error, description
        self.headers = dict(headers or {})


class LocalAuthorizationServer:
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
        clients: Sequence[Client] = (),
        resources: Sequence[str] = (),
        exchangeable_audiences: Sequence[str] = (),
        scopes_supported: Sequence[str] | None = None,
        resource_owner: ResourceOwner | None = None,
        dynamic_registration: bool = True,
        client_metadata_documents: bool = True,
        network: NetworkPolicy | None = None,
        dpop_algorithms: Sequence[str] = ("ES256", "RS256", "PS256", "EdDSA"),
        dpop_nonces: bool = False,
        token_ttl: int = 300,
        refresh_ttl: int = 86_400,
        code_ttl: int = 60,
        clock: Callable[[], float] = time.time,
    ) -> None:
        issuer_parts = urlsplit(issuer)
        if issuer_parts.scheme != "https" and not (
            issuer_parts.scheme == "http" and issuer_parts.hostname in _LOOPBACK_HOSTS
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
        self.network = network or NetworkPolicy()
        self.token_ttl, self.refresh_ttl, self.code_ttl = token_ttl, refresh_ttl, code_ttl
        self.clock = clock
        self.requests: list[RecordedRequest] = []
        self.jwks_cache_control = "max-age=300"
        self.fail_token_endpoint: int | None = None
        self._opaque: dict[str, dict[str, Any]] = {}
        self._codes: dict[str, _Code] = {}
        self._refresh: dict[str, _Refresh] = {}
        self._seen: dict[str, float] = {}
        self._documents: dict[str, tuple[Client, float]] = {}
        self._prefix = urlsplit(issuer).path.rstrip("/")
        self._dpop_algorithms = tuple(dpop_algorithms)
        self.dpop = DPoPVerifier(
            store=MemoryStore(), policy=DPoPPolicy(algorithms=frozenset(dpop_algorithms)),
            nonces=_nonces(clock) if dpop_nonces else None, clock=clock,
        )
        self._authlib = _Authlib(self)
        self._authlib.register_grant(_AuthorizationCode, [_S256Challenge(required=True)])
        self._authlib.register_grant(_RefreshToken)
        self._authlib.register_grant(_ClientCredentials)
        self._authlib.register_grant(_TokenExchange)
        self._authlib.register_client_auth_method("private_key_jwt", _ClientAssertion(self))
        self._authlib.register_endpoint(_Registration(self))
        self._authlib.register_endpoint(_Introspection(self))
        self._grant_types = ["authorization_code", "refresh_token", "client_credentials",
                             TOKEN_EXCHANGE]
        self.app = Starlette(routes=[
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
        if self.dynamic_registration:
            doc["registration_endpoint"] = self.registration_endpoint
        if self.scopes_supported is not None:
            doc["scopes_supported"] = list(self.scopes_supported)
        return doc

    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.public_jwk() for k in self.keys]}

    def rotate(self, new_key: SigningKey | None = None, *, keep_old: bool = True) -> SigningKey:
        """Make ``new_key`` the signing key; old keys stay published unless told not to."""
        key = new_key or SigningKey.generate(self.keys[0].alg)
        self.keys = [key, *self.keys] if keep_old else [key]
        return key

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

    def _issue(self, client: Client, *, subject: str, scope: str, resource: str,
               jkt: str | None, refresh: bool, extra: Mapping[str, Any]) -> dict[str, Any]:
        claims: dict[str, Any] = {"client_id": client.client_id, **extra}
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
        token: dict[str, Any] = {
            "access_token": self.mint(sub=subject, aud=resource, scope=scope, **claims),
            "token_type": "DPoP" if jkt is not None else "Bearer",
            "expires_in": self.token_ttl,
        }
        if scope:
            token["scope"] = scope
        if refresh:
            value = secrets.token_urlsafe(32)
            self._refresh[value] = _Refresh(
                client.client_id, subject, scope, resource,
                jkt if client.method == "none" else None,  # RFC 9449 §5: public clients
                self.clock() + self.refresh_ttl, self.clock,
            )
            token["refresh_token"] = value
        return token

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
            raise _InvalidTarget("resource must be an absolute URI without a fragment")
        if self.resources and resource not in self.resources:
            raise _InvalidTarget("unknown resource")

    def _verify_own(self, token: str) -> dict[str, Any]:
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
            raise InvalidGrantError("the subject token is not valid") from None
        return claims

    # -- clients, including client ID metadata documents -----------------------------------

    def _client(self, client_id: str) -> Client | None:
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
        try:
            doc = msgspec.json.decode(body)
        except msgspec.DecodeError:
            doc = None
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
                _check_redirect_uri(uri, "native")
        except OAuth2Error:
            raise InvalidClientError(description="the client metadata document has an "
                                     "unusable redirect_uri") from None
        grant_types = doc.get("grant_types") or ["authorization_code"]
        client = Client(client_id, redirect_uris=tuple(uris), auth_method=method, jwks=jwks,
                        grant_types=tuple(g for g in grant_types if isinstance(g, str)),
                        name=doc.get("client_name") if isinstance(doc.get("client_name"), str)
                        else None)
        self._documents[client_id] = (client, self.clock() + _max_age(cache))

    # -- ASGI ---------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
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

    def _oauth_request(self, request: Request, form: Sequence[tuple[str, str]]) -> _Request:
        # The URI authlib sees is built from the configured issuer, never from ``Host``.
        uri = _origin(self.issuer) + request.url.path
        return _Request(request.method, uri, request.headers,
                        parse_qsl(request.url.query, keep_blank_values=True), form)

    async def _form(self, request: Request) -> list[tuple[str, str]]:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/x-www-form-urlencoded":
            raise _Refused(400, "invalid_request", "the body must be form-encoded")
        try:
            return parse_qsl((await request.body()).decode("utf-8"), keep_blank_values=True,
                             strict_parsing=False)
        except UnicodeDecodeError:
            raise _Refused(400, "invalid_request", "the body is not UTF-8") from None

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
            await self._load_document(client_id)
            for name in ("resource", "code_challenge", "code_challenge_method", "iss"):
                if len(oauth.payload.datalist.get(name, [])) > 1:
                    raise InvalidRequestError(f"Multiple '{name}' in request.")
            grant = self._authlib.get_consent_grant(oauth)
        except OAuth2Error as error:
            # authlib sets redirect_uri only once client and redirect_uri are validated
            # (RFC 6749 §4.1.2.1): otherwise the error is shown here, never redirected.
            return self._with_iss(self._response(
                self._authlib.handle_error_response(oauth, error)))
        client: Client = grant.request.client.client
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
        user = _User(decision) if decision else None
        response = self._authlib.create_authorization_response(oauth, grant_user=user,
                                                               grant=grant)
        return self._with_iss(response)

    async def _token_route(self, request: Request) -> Response:
        try:
            if self.fail_token_endpoint is not None:
                raise _Refused(self.fail_token_endpoint, "server_error")
            form = await self._form(request)
            fields = dict(form)
            if request.headers.get("authorization", "").lower().startswith("basic ") and (
                "client_secret" in fields or "client_assertion" in fields
            ):
                raise _Refused(400, "invalid_request", "one client authentication method only")
            if fields.get("client_assertion") and (
                fields.get("client_assertion_type") != JWT_BEARER_ASSERTION
            ):
                raise _Refused(400, "invalid_request", "unsupported client_assertion_type")
            oauth = self._oauth_request(request, form)
            jkt = await self._dpop_proof(request)
            await self._load_document(fields.get("client_id", ""))
            client = self._client(fields.get("client_id", ""))
            if client is not None and client.dpop_bound and jkt is None:
                raise _Refused(400, "invalid_dpop_proof", "this client must use DPoP")
            oauth.dpop_jkt = jkt
        except _Refused as exc:
            return self._error(exc)
        except OAuth2Error as error:
            return self._response(self._authlib.handle_error_response(None, error))
        response = self._response(self._authlib.create_token_response(oauth))
        response.headers["cache-control"] = "no-store"
        return response

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
        try:
            data = msgspec.json.decode(await request.body())
        except msgspec.DecodeError:
            data = None
        if not isinstance(data, dict):
            return self._error(_Refused(400, "invalid_client_metadata", "not a JSON object"))
        json_request = JsonRequest(request.method, str(request.url), request.headers)
        json_request.payload = _JsonPayload(data)
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


class _InvalidTarget(InvalidRequestError):  # type: ignore[misc]
    """RFC 8707 §2: the requested resource is not one this server issues tokens for."""

    error = "invalid_target"


def _nonces(clock: Callable[[], float]) -> Any:
    from mcpcore.auth.dpop import DPoPNonces

    return DPoPNonces(secrets.token_bytes(32), clock=clock)


def _max_age(cache_control: str | None) -> float:
    for part in (cache_control or "").split(","):
        name, _, value = part.strip().partition("=")
        if name.lower() == "max-age" and value.isdigit():
            return float(min(max(int(value), 60), 86_400))
    return 300.0


def main(argv: Sequence[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="Run the compact MCP authorization server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--resource", action="append",
                        help="an MCP server tokens are for (repeatable; default "
                             "http://127.0.0.1:8000/mcp)")
    parser.add_argument("--scope", default="mcp", help="scopes to advertise (space-separated)")
    parser.add_argument("--approve-as", default="demo-user",
                        help="approve every authorization as this user (demo mode)")
    args = parser.parse_args(argv)
    issuer = f"http://{args.host}:{args.port}"
    resources = args.resource or ["http://127.0.0.1:8000/mcp"]
    secret = secrets.token_urlsafe(24)
    server = LocalAuthorizationServer(
        issuer,
        clients=[
            Client("demo-client", secret=secret, grant_types=("client_credentials",)),
            Client("demo-public", redirect_uris=("http://127.0.0.1/callback",),
                   grant_types=("authorization_code", "refresh_token")),
        ],
        resources=resources,
        exchangeable_audiences=resources,
        scopes_supported=args.scope.split(),
        resource_owner=approve_as(args.approve_as),
        network=NetworkPolicy(allow_loopback=True),
    )
    print(f"issuer:          {issuer}")
    print(f"metadata:        {issuer}{server.metadata_path}")
    print("public client:   demo-public (PKCE, redirect http://127.0.0.1:<any port>/callback)")
    print(f"machine client:  demo-client / {secret} (client_credentials)")
    print(f"approving as:    {args.approve_as} (demo mode: nobody is asked)")
    uvicorn.run(server, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()


__all__ = [
    "ACCESS_TOKEN_TYPE",
    "JWT_BEARER_ASSERTION",
    "TOKEN_EXCHANGE",
    "Client",
    "IssuesTokens",
    "LocalAuthorizationServer",
    "RecordedRequest",
    "ResourceOwner",
    "SigningKey",
    "approve_as",
]
