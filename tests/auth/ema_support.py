"""Real doubles for the EMA tests: a token endpoint that serves the ID-JAG grant, the
local enterprise IdP, and a way to stand both up on loopback.

``EmaTokenEndpoint`` is the smallest authorization server the ID-JAG grant can live in:
``client_secret_basic``/``client_secret_post`` client authentication (a failure is
``invalid_client`` before the grant runs), the grant through ``IdJagGrantType``, a
``client_credentials`` grant for comparison, and JWT access tokens signed with one key
(``access_token_claims``), published at ``/jwks``. It counts what it issued, so a test can
assert that a refusal issued nothing.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote_plus

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpcore.auth.authorization_server import SigningKey
from mcpcore.auth.config import JwksSettings
from mcpcore.auth.downstream import ClientSecretBasic
from mcpcore.auth.ema import EmaConfig, IdJagGrantType, IdJagValidator, access_token_claims
from mcpcore.auth.ema_client import IdJag, id_jag_request, parse_id_jag_response
from mcpcore.auth.errors import (
    InvalidClient,
    InvalidTokenRequest,
    TokenEndpointError,
    UnsupportedGrantType,
)
from mcpcore.auth.idjag import JWT_BEARER_GRANT, EmaClient, TrustedIdp
from mcpcore.auth.idp import AccessRule, IdpClient, LocalIdentityProvider
from mcpcore.auth.urls import NetworkPolicy
from mcpcore.stores.base import Store
from mcpcore.stores.memory import MemoryStore
from tests.auth.support import LoopbackServer

RESOURCE = "http://127.0.0.1:8765/mcp"
OTHER_RESOURCE = "http://127.0.0.1:8766/mcp"
SCOPES = frozenset({"files:read", "files:write"})
#: The client at the MCP authorization server (its id there, and its secret).
CLIENT_ID, CLIENT_SECRET = "chat-app", "chat-app-secret-3b9e"
#: The same client's registration at the IdP.
IDP_CLIENT_ID, IDP_CLIENT_SECRET = "chat-idp", "chat-idp-secret-77a0"
USER = "U019488227"


class EmaTokenEndpoint:
    """A token endpoint with the ID-JAG grant (see the module docstring)."""

    def __init__(self, issuer: str, grant: IdJagGrantType, *, clients: Mapping[str, str],
                 key: SigningKey | None = None, token_ttl: int = 300) -> None:
        self.issuer = issuer
        self.grant = grant
        self.clients = dict(clients)
        self.key = key or SigningKey.generate("ES256")
        self.token_ttl = token_ttl
        self.issued: list[dict[str, Any]] = []
        self.app = Starlette(routes=[
            Route("/token", self._token, methods=["POST"]),
            Route("/jwks", self._jwks),
        ], lifespan=self._lifespan)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield  # the store and the JWKS clients live in the server's event loop: close there
        await self.grant.validator.aclose()
        await self.grant.validator.store.close()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    async def _jwks(self, request: Request) -> Response:
        return JSONResponse({"keys": [self.key.public_jwk()]})

    def _client(self, request: Request, form: dict[str, list[str]]) -> str:
        auth = request.headers.get("authorization")
        if auth is not None:
            scheme, _, value = auth.partition(" ")
            try:
                raw = base64.b64decode(value, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                raise InvalidClient("malformed Basic credentials") from None
            if scheme.lower() != "basic":
                raise InvalidClient("not Basic")
            client_id, _, secret = (unquote_plus(p) for p in raw.partition(":"))
        else:
            client_id = (form.get("client_id") or [""])[0]
            secret = (form.get("client_secret") or [""])[0]
        expected = self.clients.get(client_id)
        if expected is None or not secrets.compare_digest(expected, secret):
            raise InvalidClient("bad client credentials")
        return client_id

    async def grant_response(self, form: dict[str, list[str]], client_id: str) -> dict[str, Any]:
        grant_type = (form.get("grant_type") or [""])[0]
        if grant_type == JWT_BEARER_GRANT:
            accepted = await self.grant.accept(form, client_id=client_id)
            claims = access_token_claims(accepted)
        elif grant_type == "client_credentials":
            resource = (form.get("resource") or [RESOURCE])[0]
            claims = {"sub": client_id, "aud": resource, "client_id": client_id}
            if form.get("scope"):
                claims["scope"] = form["scope"][0]
        else:
            raise UnsupportedGrantType(grant_type)
        now = int(time.time())
        token = self.key.sign({"iss": self.issuer, "iat": now, "exp": now + self.token_ttl,
                               "jti": secrets.token_urlsafe(12), **claims})
        self.issued.append(claims)
        body = {"access_token": token, "token_type": "Bearer", "expires_in": self.token_ttl}
        if "scope" in claims:
            body["scope"] = claims["scope"]
        return body

    async def _token(self, request: Request) -> Response:
        headers = {"cache-control": "no-store"}
        try:
            form: dict[str, list[str]] = {}
            for name, value in parse_qsl((await request.body()).decode(),
                                         keep_blank_values=True):
                form.setdefault(name, []).append(value)
            if len(form.get("grant_type", [])) != 1:
                raise InvalidTokenRequest("grant_type")
            client_id = self._client(request, form)
            body = await self.grant_response(form, client_id)
        except TokenEndpointError as exc:
            return JSONResponse({"error": exc.error, "error_description": exc.description},
                                status_code=exc.status, headers=headers)
        return JSONResponse(body, headers=headers)


@dataclass
class EmaSetup:
    """A running IdP and authorization server(s) that trust each other, on loopback."""

    idp: LocalIdentityProvider
    idp_server: LoopbackServer
    endpoints: list[EmaTokenEndpoint]
    servers: list[LoopbackServer]
    issuer: str
    config: EmaConfig
    stores: list[Store] = field(default_factory=list)

    @property
    def token_url(self) -> str:
        return self.servers[0].url + "/token"

    def sign_in(self, user: str = USER) -> str:
        """An ID token for the client, as SSO would leave it."""
        return self.idp.id_token(user, client_id=IDP_CLIENT_ID)


def ema_config(issuer: str, idp: str, *, idp_jwks_uri: str | None = None,
               idp_options: Mapping[str, Any] | None = None, **overrides: Any) -> EmaConfig:
    trusted = TrustedIdp(idp, jwks_uri=idp_jwks_uri or idp + "/jwks", **(idp_options or {}))
    settings: dict[str, Any] = {
        "issuer": issuer,
        "trusted_idps": (trusted,),
        "resources": {RESOURCE: SCOPES, OTHER_RESOURCE: frozenset({"other:read"})},
        "clients": (EmaClient(CLIENT_ID, resources=frozenset({RESOURCE})),
                    EmaClient("other-app")),
        "network": NetworkPolicy(allow_loopback=True),
        "jwks": JwksSettings(timeout=2.0, refetch_cooldown=30.0),
    }
    settings.update(overrides)
    return EmaConfig(**settings)


@contextmanager
def ema_setup(*, instances: int = 1, store_factory: Any = None, tenant: str | None = None,
              **config: Any) -> Iterator[EmaSetup]:
    """Start the IdP, then ``instances`` authorization-server instances sharing one
    issuer (the first instance's URL), each with a store from ``store_factory()``
    (default: its own ``MemoryStore``). ``config`` goes to ``ema_config``."""
    make_store = store_factory or MemoryStore
    with LoopbackServer(lambda url: LocalIdentityProvider(url, tenant=tenant)) as idp_server:
        idp = idp_server.app
        assert isinstance(idp, LocalIdentityProvider)
        servers: list[LoopbackServer] = []
        endpoints: list[EmaTokenEndpoint] = []
        stores: list[Store] = []
        issuer: list[str] = []
        key = SigningKey.generate("ES256", kid="as-1")

        def factory(url: str) -> EmaTokenEndpoint:
            if not issuer:
                issuer.append(url)
            cfg = ema_config(issuer[0], idp.issuer, **config)
            store = make_store()
            stores.append(store)
            endpoint = EmaTokenEndpoint(
                issuer[0], IdJagGrantType(IdJagValidator(cfg, store)),
                clients={CLIENT_ID: CLIENT_SECRET, "other-app": "other-secret",
                         "no-ema-app": "no-ema-secret"},
                key=key)
            endpoints.append(endpoint)
            return endpoint

        try:
            for _ in range(instances):
                servers.append(LoopbackServer(factory, lifespan="on").__enter__())
            idp.clients[IDP_CLIENT_ID] = IdpClient(
                IDP_CLIENT_ID, IDP_CLIENT_SECRET, {issuer[0]: CLIENT_ID})
            idp.rules.append(AccessRule(issuer[0], RESOURCE, SCOPES))
            yield EmaSetup(idp, idp_server, endpoints, servers, issuer[0],
                           ema_config(issuer[0], idp.issuer, **config), stores)
        finally:
            for server in servers:
                server.__exit__(None, None, None)


async def get_id_jag(setup: EmaSetup, http: httpx.AsyncClient,
                     scopes: frozenset[str] = frozenset({"files:read"}),
                     resource: str = RESOURCE) -> IdJag:
    """The client's first leg: the ID token for an ID-JAG, at the IdP."""
    request = id_jag_request(
        setup.idp.token_endpoint, subject_token=setup.sign_in(), audience=setup.issuer,
        resource=resource, scopes=scopes, idp_issuer=setup.idp.issuer,
        client_auth=ClientSecretBasic(IDP_CLIENT_ID, IDP_CLIENT_SECRET))
    response = await http.send(request)
    return parse_id_jag_response(response, audience=setup.issuer, resource=resource,
                                 requested=scopes)


async def redeem(http: httpx.AsyncClient, url: str, assertion: str | None, /, *,
                 client: tuple[str, str] | None = (CLIENT_ID, CLIENT_SECRET),
                 **params: Any) -> httpx.Response:
    """The second leg: the JWT-bearer grant at the MCP authorization server."""
    form: dict[str, Any] = {"grant_type": JWT_BEARER_GRANT}
    if assertion is not None:
        form["assertion"] = assertion
    form.update(params)
    auth = httpx.BasicAuth(*client) if client is not None else None
    return await http.post(url, data=form, auth=auth)
