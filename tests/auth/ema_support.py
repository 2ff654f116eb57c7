"""The EMA tests' setting: the local enterprise IdP and our authorization server (with
the ID-JAG grant) trusting each other, on loopback, and the client's two legs as
helpers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpcore.auth.client.ema_client import IdJag, id_jag_request, parse_id_jag_response
from mcpcore.auth.client_auth import ClientSecretBasic
from mcpcore.auth.config import JwksSettings
from mcpcore.auth.issuer.authorization_server import (
    LocalAuthorizationServer,
    RegisteredClient,
    SigningKey,
)
from mcpcore.auth.issuer.ema import EmaConfig, IdJagGrantType, IdJagValidator
from mcpcore.auth.issuer.idjag import EmaClient, TrustedIdp
from mcpcore.auth.issuer.idp import AccessRule, IdpClient, LocalIdentityProvider
from mcpcore.auth.terms import JWT_BEARER_GRANT
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


class CountingAS(LocalAuthorizationServer):
    """The real authorization server, counting the access tokens it issues (so a test
    can tell a refusal issued nothing) and closing its replay store on shutdown."""

    def __init__(self, *args: Any, store: Store, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.store = store
        self.issued: list[dict[str, Any]] = []

    def _issue(self, client: RegisteredClient, *, subject: str, scope: str, resource: str,
               jkt: str | None, refresh: bool, extra: Mapping[str, Any],
               **more: Any) -> dict[str, Any]:
        self.issued.append({"sub": subject, "aud": resource, "scope": scope,
                            "client_id": client.client_id, **extra})
        return super()._issue(client, subject=subject, scope=scope, resource=resource,
                              jkt=jkt, refresh=refresh, extra=extra, **more)

    async def aclose(self) -> None:
        await super().aclose()
        await self.store.close()  # it lives in this server's event loop: close it there


@dataclass
class EmaSetup:
    """A running IdP and authorization server(s) that trust each other, on loopback."""

    idp: LocalIdentityProvider
    idp_server: LoopbackServer
    endpoints: list[CountingAS]
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
        endpoints: list[CountingAS] = []
        stores: list[Store] = []
        issuer: list[str] = []
        key = SigningKey.generate("ES256", kid="as-1")

        def factory(url: str) -> CountingAS:
            if not issuer:
                issuer.append(url)
            cfg = ema_config(issuer[0], idp.issuer, **config)
            store = make_store()
            stores.append(store)
            ema = (JWT_BEARER_GRANT, "client_credentials")
            endpoint = CountingAS(
                issuer[0], keys=[key], resources=[RESOURCE, OTHER_RESOURCE], clients=[
                    RegisteredClient(CLIENT_ID, secret=CLIENT_SECRET, grant_types=ema),
                    RegisteredClient("other-app", secret="other-secret", grant_types=ema),
                    RegisteredClient("no-ema-app", secret="no-ema-secret", grant_types=ema),
                    RegisteredClient("no-grant-app", secret="no-grant-secret"),
                ], id_jag=IdJagGrantType(IdJagValidator(cfg, store)), store=store,
                network=NetworkPolicy(allow_loopback=True))
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
