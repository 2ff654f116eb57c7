"""The authorization server's use of authlib: requests, grants, endpoints.

authlib does the OAuth machinery (request validation, client authentication, PKCE,
client assertions, registration, introspection); this module adapts it to requests the
Starlette routes have already read, and to ``LocalAuthorizationServer``'s storage and
token minting (``IssuesTokens``).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from authlib.oauth2 import AuthorizationServer as _AuthlibServer
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (
    AccessDeniedError,
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    JsonPayload,
    JsonRequest,
    OAuth2Payload,
    OAuth2Request,
    UnauthorizedClientError,
    grants,
)
from authlib.oauth2.rfc6749.grants.base import BaseGrant, TokenEndpointMixin
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint, InvalidClientMetadataError
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from joserfc.jwk import KeySet, import_key
from starlette.responses import Response

from mcpcore.auth.issuer.as_models import (
    AUTH_METHODS,
    SECRET_METHODS,
    ClientModel,
    CodeRecord,
    OpaqueRecord,
    RefreshRecord,
    RegisteredClient,
    User,
    check_redirect_uri,
    public_jwk,
)
from mcpcore.auth.terms import ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE
from mcpcore.auth.times import numeric_date

if TYPE_CHECKING:
    from mcpcore.auth.issuer.authorization_server import LocalAuthorizationServer

_MAX_CLIENTS = 10_000


class FormPayload(OAuth2Payload):  # type: ignore[misc]
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


class OAuthRequest(OAuth2Request):  # type: ignore[misc]
    """An ``OAuth2Request`` built from what the Starlette route already read.

    Its parameters come from one place: the query of a ``GET`` (the authorization
    endpoint, RFC 6749 §3.1), the body of a ``POST`` (the token and introspection
    endpoints, RFC 6749 §3.2), never both, so no layer reads a value another did not.
    Where a name repeats (only ``resource`` and ``audience`` may) every reader sees the
    first value."""

    def __init__(self, method: str, uri: str, headers: Mapping[str, str],
                 query: Sequence[tuple[str, str]], form: Sequence[tuple[str, str]]) -> None:
        super().__init__(method, uri, headers=headers)
        self.payload = FormPayload(form if method == "POST" else query)
        self._args = {k: v for k, v in reversed(query)}
        self._form = {k: v for k, v in reversed(form)}
        #: Set by the token route when a DPoP proof was verified.
        self.dpop_jkt: str | None = None
        #: Extra access-token claims a grant wants (``act`` for token exchange).
        self.extra_claims: dict[str, Any] = {}
        #: The token family the tokens of this request join (a redeemed code's, or the
        #: refresh token's); ``None`` starts a new one.
        self.family: str | None = None

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class JsonBody(JsonPayload):  # type: ignore[misc]
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class InvalidDPoPProofError(OAuth2Error):  # type: ignore[misc]
    """RFC 9449 §5: a token request without the DPoP proof this client must send."""

    error = "invalid_dpop_proof"
    status_code = 400


class AuthlibServer(_AuthlibServer):  # type: ignore[misc]
    def __init__(self, owner: LocalAuthorizationServer) -> None:
        super().__init__(scopes_supported=None)
        self.owner = owner

    def authenticate_client(self, request: Any, methods: Sequence[str],
                            endpoint: str = "token") -> ClientModel:
        """authlib's client authentication, then the rule every grant must pass once
        the client is known (whichever way it authenticated: Basic, the body, an
        assertion): a ``dpop_bound`` client's token request carries a proof (RFC 9449
        §5.2, ``dpop_bound_access_tokens``)."""
        client: ClientModel = super().authenticate_client(request, methods, endpoint)
        if (endpoint == "token" and client.client.dpop_bound
                and getattr(request, "dpop_jkt", None) is None):
            raise InvalidDPoPProofError("this client must use DPoP")
        return client

    def query_client(self, client_id: str) -> ClientModel | None:
        client = self.owner._client(client_id)
        return ClientModel(client) if client is not None else None

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        return None  # access tokens are self-contained JWTs; refresh tokens kept at mint

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request  # the routes build ``OAuthRequest`` themselves

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
    server: AuthlibServer
    GRANT_TYPE: str | None

    def _resource(self) -> str:
        raise NotImplementedError

    def validate_requested_scope(self) -> None:
        """authlib's hook, called once the client is known: scopes the server does not
        advertise, and a self-registered client's scopes past the operator's cap, are
        ``invalid_scope``."""
        client: ClientModel | None = self.request.client
        self.server.owner.check_scope(
            self.request.payload.scope,
            self_registered=client is not None and client.client.self_registered)

    def generate_token(self, user: Any = None, scope: str | None = None,
                       grant_type: str | None = None, expires_in: int | None = None,
                       include_refresh_token: bool = True) -> dict[str, Any]:
        client: ClientModel = self.request.client
        subject = user.get_user_id() if user is not None else client.get_client_id()
        return self.server.owner._issue(
            client.client, subject=subject, scope=client.get_allowed_scope(scope),
            resource=self._resource(), jkt=self.request.dpop_jkt,
            refresh=include_refresh_token, extra=self.request.extra_claims,
            family=self.request.family,
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
        owner = self.server.owner
        owner.remember_code(code, CodeRecord(
            client_id=request.client.get_client_id(),
            redirect_uri=data.get("redirect_uri") or request.client.get_default_redirect_uri(),
            scope=request.scope or "",
            subject=request.user.get_user_id(),
            resource=request.resource,
            code_challenge=data.get("code_challenge"),
            code_challenge_method=data.get("code_challenge_method"),
            expires_at=owner.clock() + owner.code_ttl,
        ))

    def query_authorization_code(self, code: str, client: ClientModel) -> CodeRecord | None:
        owner = self.server.owner
        record = owner._codes.get(code)
        if record is None or record.client_id != client.get_client_id():
            return None
        self._found = code
        if record.expires_at <= owner.clock():
            return None
        if record.family is not None:
            # Redeemed before: deny, and revoke what it produced (RFC 6749 §4.1.2,
            # RFC 9700 §4.1.1): one of the two redeemers is not the client.
            owner.revoke_family(record.family)
            return None
        return record

    def delete_authorization_code(self, authorization_code: CodeRecord) -> None:
        return None  # kept, marked redeemed, until it expires: see query_authorization_code

    def authenticate_user(self, authorization_code: CodeRecord) -> User:
        return User(authorization_code.subject)

    def validate_token_request(self) -> None:
        try:
            super().validate_token_request()  # client, code, redirect_uri, PKCE
            record: CodeRecord = self.request.authorization_code
            resource = self.request.form.get("resource")
            if resource is not None and resource != record.resource:
                raise InvalidGrantError("resource differs from the authorization request")
        except BaseException:
            # One failed redemption (a wrong verifier, another redirect_uri) burns the
            # code; a redeemed one stays marked until it expires.
            codes = self.server.owner._codes
            found = codes.get(getattr(self, "_found", ""))
            if found is not None and found.family is None:
                del codes[self._found]
            raise
        # A code is single-use (RFC 6749 §4.1.2): from now on it names its tokens.
        record.family = self.request.family = secrets.token_urlsafe(12)


class _RefreshToken(IssuesTokens, grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotate on every use

    def _resource(self) -> str:
        return str(self.request.refresh_token.resource)

    def authenticate_refresh_token(self, refresh_token: str) -> RefreshRecord | None:
        owner = self.server.owner
        record = owner._refresh.get(refresh_token)
        if record is None:
            # A rotated-out token presented again: someone holds a copy; revoke the
            # family (RFC 9700 §4.14.2).
            owner.reused_refresh_token(refresh_token, self.request.client.get_client_id())
            return None
        if record.is_expired():
            return None
        resource = self.request.form.get("resource")
        if resource is not None and resource != record.resource:
            raise InvalidGrantError("resource differs from the original grant")
        if record.jkt is not None and record.jkt != self.request.dpop_jkt:
            raise InvalidGrantError("refresh token is bound to another DPoP key")
        self._presented = refresh_token
        self.request.family = record.family
        return record

    def authenticate_user(self, refresh_token: RefreshRecord) -> User:
        return User(refresh_token.subject)

    def revoke_old_credential(self, refresh_token: RefreshRecord) -> None:
        self.server.owner.rotated_out(self._presented, refresh_token)


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
        self.validate_requested_scope()
        self.request.user = User(subject["sub"])
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
        try:
            expires = numeric_date(claims.get("exp", 0))
        except ValueError as exc:  # RFC 7519 §2: a NumericDate; 10**400 is not one
            raise InvalidClientError(description=f"client_assertion exp {exc}") from None
        return self.owner._first_use(f"assertion:{claims.get('sub')}:{jti}", expires)

    def resolve_client_public_key(self, client: ClientModel) -> Any:
        if client.client.jwks is not None:
            return KeySet.import_key_set(dict(client.client.jwks))  # type: ignore[arg-type]
        if client.client.public_key is None:
            raise InvalidClientError(description="the client has no key")
        return import_key(public_jwk(client.client.public_key))  # one key: no kid needed


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

    def save_client(self, info: dict[str, Any], metadata: dict[str, Any],
                    request: Any) -> RegisteredClient:
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
            check_redirect_uri(uri, application_type)
        grant_types = tuple(metadata.get("grant_types") or ("authorization_code",))
        # Anyone may register (RFC 7591 §5): a person approves what such a client gets,
        # unless the operator allows it more grants and scopes.
        extra = [g for g in grant_types if g not in owner.registration_grant_types]
        if extra:
            raise InvalidClientMetadataError(
                f"grant_types {' '.join(extra)} are not open to dynamic registration; the "
                "operator allows them with LocalAuthorizationServer("
                "registration_grant_types=[...])")
        scope = metadata.get("scope", "")
        try:
            owner.check_scope(scope, self_registered=True)
        except InvalidScopeError as error:
            raise InvalidClientMetadataError(error.description) from None
        client = RegisteredClient(
            info["client_id"], secret=info.get("client_secret"), scope=scope,
            redirect_uris=uris, grant_types=grant_types, auth_method=method,
            name=metadata.get("client_name"), jwks=metadata.get("jwks"), self_registered=True,
        )
        owner.clients[client.client_id] = client
        return client


class _Introspection(IntrospectionEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]

    def __init__(self, owner: LocalAuthorizationServer) -> None:
        super().__init__()
        self.owner = owner

    def query_token(self, token: str, hint: str | None) -> OpaqueRecord | None:
        claims = self.owner._opaque.get(token)
        if claims is None and token.count(".") == 2:
            # An access token this server signed: inactive once its family is revoked.
            claims = self.owner.own_token_claims(token)
        return OpaqueRecord(claims, self.owner.clock) if claims is not None else None

    def check_permission(self, token: OpaqueRecord, client: ClientModel, request: Any) -> bool:
        return True

    def introspect_token(self, token: OpaqueRecord) -> dict[str, Any]:
        token_type = "DPoP" if isinstance(token.claims.get("cnf"), dict) else "Bearer"
        return {"active": True, "token_type": token_type, **token.claims}


def _aud_list(aud: object) -> list[str]:
    if isinstance(aud, str):
        return [aud]
    return [a for a in aud if isinstance(a, str)] if isinstance(aud, list) else []


class InvalidTargetError(InvalidRequestError):  # type: ignore[misc]
    """RFC 8707 §2: the requested resource is not one this server issues tokens for."""

    error = "invalid_target"



def register_authlib(owner: LocalAuthorizationServer) -> AuthlibServer:
    """authlib's server for ``owner``, with this module's grants and endpoints."""
    server = AuthlibServer(owner)
    server.register_grant(_AuthorizationCode, [_S256Challenge(required=True)])
    server.register_grant(_RefreshToken)
    server.register_grant(_ClientCredentials)
    server.register_grant(_TokenExchange)
    server.register_client_auth_method("private_key_jwt", _ClientAssertion(owner))
    server.register_endpoint(_Registration(owner))
    server.register_endpoint(_Introspection(owner))
    return server

__all__ = [
    "AuthlibServer",
    "InvalidTargetError",
    "IssuesTokens",
    "JsonBody",
    "OAuthRequest",
    "register_authlib",
]
