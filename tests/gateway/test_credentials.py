"""The gateway's credentials for its upstreams, against the project's own authorization
server and IdP (``mcpcore.auth.issuer``, on loopback): what each upstream receives is
recorded on the UPSTREAM's side, and the caller's token never appears there."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import jwt
import pytest

from mcpcore import StreamableHTTP
from mcpcore.auth import BearerAuthMiddleware, IssuerConfig, NetworkPolicy, ResourceServerConfig
from mcpcore.auth.issuer.authorization_server import LocalAuthorizationServer, RegisteredClient
from mcpcore.auth.issuer.idp import IdpClient
from mcpcore.auth.server.inbound import InboundToken, _current
from mcpcore.auth.terms import JWT_BEARER_GRANT, TOKEN_EXCHANGE
from mcpcore.client import Client
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway import serve as gateway_serve
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.config import (
    Credentials,
    GatewayConfig,
    GatewayConfigError,
    SecretRef,
    UpstreamConfig,
    load,
    resolve_secrets,
)
from mcpcore.gateway.credentials import Caller, UpstreamCredential, credential_for
from mcpcore.gateway.errors import CredentialUnavailable
from mcpcore.principal import PRINCIPAL_SCOPE_KEY, Principal
from mcpcore.transports.http import LOCAL_HOSTS
from tests.auth.ema_support import CLIENT_ID, CLIENT_SECRET, RESOURCE, USER, ema_setup
from tests.auth.support import LoopbackServer
from tests.gateway.inprocess import URL, alpha_server, beta_server, http_client

GATEWAY = "http://localhost/mcp"  # the gateway's own resource (its callers' token aud)
ALPHA = "https://alpha.example/mcp"  # the upstreams' resources (their tokens' aud)
BETA = "https://beta.example/mcp"
SECRET = "gateway-secret-5f1c"
ENVIRON = {"GATEWAY_SECRET": SECRET, "STATIC_KEY": "static-key-9d2e"}
ERAS = ("2026-07-28", "legacy")


class Recording:
    """An upstream app that records the Authorization header of every request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[str | None] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            value = headers.get(b"authorization")
            self.seen.append(value.decode("latin-1") if value is not None else None)
            if any(v.startswith(b"Bearer caller") for v in headers.values()):
                self.seen.append("CALLER-TOKEN-IN-ANOTHER-HEADER")
        await self.app(scope, receive, send)

    def tokens(self) -> list[str]:
        return [v.removeprefix("Bearer ") for v in self.seen if v is not None]


@pytest.fixture(scope="module")
def auth_server() -> Iterator[LocalAuthorizationServer]:
    def factory(url: str) -> LocalAuthorizationServer:
        return LocalAuthorizationServer(
            url, clients=[
                RegisteredClient("gateway", secret=SECRET),
                RegisteredClient("no-exchange", secret=SECRET,
                                 grant_types=("client_credentials",)),
            ], resources=[GATEWAY, ALPHA, BETA], exchangeable_audiences=[GATEWAY],
            scopes_supported=["mcp", "notes:read"],
            network=NetworkPolicy(allow_loopback=True))

    with LoopbackServer(factory) as server:
        assert isinstance(server.app, LocalAuthorizationServer)
        yield server.app


def oauth(kind: str, issuer: str, resource: str, **extra: Any) -> Credentials:
    return Credentials(kind=kind, token_endpoint=issuer + "/token",  # type: ignore[arg-type]
                       client_id=extra.pop("client_id", "gateway"),
                       client_secret=SecretRef(env="GATEWAY_SECRET"), resource=resource,
                       **extra)


def config(alpha: Credentials, beta: Credentials) -> GatewayConfig:
    return GatewayConfig(upstreams=(
        UpstreamConfig("alpha", url=URL, credentials=alpha),
        UpstreamConfig("beta", url=URL, era="legacy", credentials=beta)))


@contextlib.asynccontextmanager
async def gateway_over(cfg: GatewayConfig, apps: dict[str, Any]) -> AsyncIterator[Gateway]:
    clients = {name: http_client(app) for name, app in apps.items()}
    gateway = Gateway(cfg, http_clients=clients, environ=ENVIRON)
    try:
        await gateway.start()
        yield gateway
    finally:
        await gateway.aclose()
        for client in clients.values():
            await client.aclose()


def protected(gateway: Gateway, issuer: str) -> Any:
    """The gateway's endpoint behind the resource server (as ``gateway serve`` with
    ``auth``)."""
    return BearerAuthMiddleware(StreamableHTTP(gateway.server), config=ResourceServerConfig(
        resource=GATEWAY, authorization_servers=(IssuerConfig(issuer, jwks_uri=issuer + "/jwks"),),
        network=NetworkPolicy(allow_loopback=True)))


@contextlib.asynccontextmanager
async def caller(app: Any, token: str, mode: str) -> AsyncIterator[Client]:
    try:
        async with http_client(app) as http, Client.http(
                URL, http_client=http, mode=mode, era_cache=None,
                headers={"Authorization": f"Bearer {token}"}) as client:
            yield client
    finally:
        if isinstance(app, BearerAuthMiddleware):
            await app.aclose()  # its key-set fetcher's connections


def exchanges(server: LocalAuthorizationServer) -> list[dict[str, str]]:
    forms = [dict(parse_qsl(r.body.decode())) for r in server.requests if r.path == "/token"]
    return [f for f in forms if f.get("grant_type") == TOKEN_EXCHANGE]


def claims(token: str) -> dict[str, Any]:
    return jwt.decode(token, options={"verify_signature": False})


async def text(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    return str(result.content[0].text)  # type: ignore[union-attr]


# -- token exchange ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ERAS)
async def test_token_exchange_per_caller_cached_and_never_the_callers_token(
        auth_server: LocalAuthorizationServer, mode: str) -> None:
    issuer = auth_server.issuer
    alpha, beta = Recording(StreamableHTTP(alpha_server())), Recording(
        StreamableHTTP(beta_server()))
    cfg = config(oauth("token_exchange", issuer, ALPHA), oauth("token_exchange", issuer, BETA))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    bob = auth_server.mint(sub="bob", aud=GATEWAY, scope="mcp")
    async with gateway_over(cfg, {"alpha": alpha, "beta": beta}) as gateway:
        app = protected(gateway, issuer)
        before = len(exchanges(auth_server))
        async with caller(app, alice, mode) as client:
            assert await text(client, "alpha__add", {"a": 1, "b": 2}) == "3"
            assert await text(client, "beta__echo", {"text": "hi"}) == "beta: hi"
            calls_after_first = len(exchanges(auth_server))
            # Cache hit: the same caller again costs no exchange.
            assert await text(client, "alpha__add", {"a": 2, "b": 2}) == "4"
            assert await text(client, "beta__echo", {"text": "again"}) == "beta: again"
            assert len(exchanges(auth_server)) == calls_after_first == before + 2
        async with caller(protected(gateway, issuer), bob, mode) as client:
            assert await text(client, "alpha__add", {"a": 5, "b": 5}) == "10"
            assert await text(client, "beta__echo", {"text": "bob"}) == "beta: bob"
        assert len(exchanges(auth_server)) == before + 4  # bob never gets alice's token
        # A 2025 upstream: one session per caller (its session bound to its credential).
        assert len(gateway.upstreams["beta"]._sessions) == 2
        assert not gateway.upstreams["alpha"]._sessions
        # The subject tokens went to the AS only: each exchange carried its caller's.
        subjects = [f["subject_token"] for f in exchanges(auth_server)[before:]]
        assert subjects == [alice, alice, bob, bob]
    for upstream, audience in ((alpha, ALPHA), (beta, BETA)):
        tokens = upstream.tokens()
        assert "CALLER-TOKEN-IN-ANOTHER-HEADER" not in upstream.seen
        assert None not in upstream.seen  # every request carried a credential
        assert alice not in tokens and bob not in tokens
        assert all(alice not in v and bob not in v for v in upstream.seen if v)
        subjects = {claims(t)["sub"] for t in tokens}
        assert {"alice", "bob"} <= subjects  # the callers', each their own
        assert all(claims(t)["aud"] == audience for t in tokens)
        by_sub: dict[str, set[str]] = {}
        for token in tokens:
            by_sub.setdefault(claims(token)["sub"], set()).add(token)
        assert not by_sub["alice"] & by_sub["bob"]


async def test_token_exchange_without_a_caller_token_is_a_structured_error(
        auth_server: LocalAuthorizationServer) -> None:
    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    cfg = GatewayConfig(upstreams=(UpstreamConfig(
        "alpha", url=URL, credentials=oauth("token_exchange", issuer, ALPHA)),))
    async with gateway_over(cfg, {"alpha": alpha}) as gateway, \
            http_client(StreamableHTTP(gateway.server)) as http, \
            Client.http(URL, http_client=http, era_cache=None) as client:
        # The catalog is listed as the gateway itself (client credentials) ...
        assert "alpha__add" in [t.name for t in await client.tools()]
        with pytest.raises(RemoteProtocolError) as refused:
            await client.call_tool("alpha__add", {"a": 1, "b": 1})
    # ... but a call is never made as the gateway on a caller's behalf.
    assert refused.value.code == -32603
    assert refused.value.data == {"upstream": "alpha", "reason": "no_caller_token"}
    assert all(claims(t)["sub"] == "gateway" for t in alpha.tokens())


async def test_an_exchange_the_authorization_server_refuses_names_upstream_and_why(
        auth_server: LocalAuthorizationServer) -> None:
    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    # The gateway's client may use client credentials (the catalog) but not exchange.
    cfg = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL, credentials=oauth(
        "token_exchange", issuer, ALPHA, client_id="no-exchange")),))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with gateway_over(cfg, {"alpha": alpha}) as gateway, \
            caller(protected(gateway, issuer), alice, "2026-07-28") as client:
        with pytest.raises(RemoteProtocolError) as refused:
            await client.call_tool("alpha__add", {"a": 1, "b": 1})
    assert refused.value.code == -32603
    assert refused.value.data == {"upstream": "alpha", "reason": "exchange_refused",
                                  "error": "unauthorized_client"}
    assert "'alpha'" in refused.value.message
    assert alice not in [v for v in alpha.seen if v]


@pytest.mark.parametrize(("scopes", "token", "reason", "error"), [
    (("files:write",), "alice", "scope_missing", "invalid_scope"),
    ((), "not-a-token-of-ours", "exchange_refused", "invalid_grant"),
    ((), None, "no_caller_token", None),
])
async def test_why_a_callers_credential_is_missing(
        auth_server: LocalAuthorizationServer, scopes: tuple[str, ...], token: str | None,
        reason: str, error: str | None) -> None:
    upstream = UpstreamConfig("alpha", url=URL, credentials=oauth(
        "token_exchange", auth_server.issuer, ALPHA, scopes=scopes))
    secrets = resolve_secrets(GatewayConfig(upstreams=(upstream,)), ENVIRON)
    credential = credential_for(upstream, secrets)
    assert isinstance(credential, UpstreamCredential)
    subject = auth_server.mint(sub="alice", aud=GATEWAY) if token == "alice" else token
    who = Caller(Principal("alice", issuer=auth_server.issuer, auth_method="jwt"),
                 InboundToken(subject) if subject is not None else None)
    try:
        with pytest.raises(CredentialUnavailable) as missing:
            await credential.for_caller(who)
    finally:
        await credential.aclose()
    expected: dict[str, Any] = {"upstream": "alpha", "reason": reason}
    if error is not None:
        expected["error"] = error
    assert missing.value.to_error()["data"] == expected
    assert credential.tokens.grants == (0 if token is None else 1)


# -- the gateway's own credentials --------------------------------------------------------
@pytest.mark.parametrize("mode", ERAS)
async def test_client_credentials_one_token_for_the_gateway_refreshed_not_per_call(
        auth_server: LocalAuthorizationServer, mode: str) -> None:
    issuer = auth_server.issuer
    alpha, beta = Recording(StreamableHTTP(alpha_server())), Recording(
        StreamableHTTP(beta_server()))
    cfg = config(oauth("client_credentials", issuer, ALPHA),
                 oauth("client_credentials", issuer, BETA))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with gateway_over(cfg, {"alpha": alpha, "beta": beta}) as gateway:
        grants = [g for g in (gateway.credentials["alpha"], gateway.credentials["beta"])]
        async with caller(protected(gateway, issuer), alice, mode) as client:
            for n in range(3):
                assert await text(client, "alpha__add", {"a": n, "b": 1}) == str(n + 1)
                assert await text(client, "beta__echo", {"text": "x"}) == "beta: x"
        # One client-credentials grant per upstream, for lists and every call.
        assert [g.tokens.grants for g in grants] == [1, 1]  # type: ignore[union-attr]
    for upstream, audience in ((alpha, ALPHA), (beta, BETA)):
        assert None not in upstream.seen
        assert alice not in upstream.tokens()
        assert {claims(t)["sub"] for t in upstream.tokens()} == {"gateway"}
        assert {claims(t)["aud"] for t in upstream.tokens()} == {audience}


@pytest.mark.parametrize("mode", ERAS)
async def test_static_secret_in_its_header_on_every_request(
        auth_server: LocalAuthorizationServer, mode: str) -> None:
    alpha, beta = Recording(StreamableHTTP(alpha_server())), Recording(
        StreamableHTTP(beta_server()))
    static = Credentials(kind="static", secret=SecretRef(env="STATIC_KEY"))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with gateway_over(config(static, static), {"alpha": alpha, "beta": beta}
                            ) as gateway, \
            caller(protected(gateway, auth_server.issuer), alice, mode) as client:
        assert await text(client, "alpha__add", {"a": 1, "b": 1}) == "2"
        assert await text(client, "beta__echo", {"text": "x"}) == "beta: x"
    for upstream in (alpha, beta):
        assert upstream.seen and set(upstream.seen) == {"Bearer static-key-9d2e"}


async def test_static_secret_in_a_header_of_its_own() -> None:
    seen: list[dict[bytes, bytes]] = []
    inner = StreamableHTTP(alpha_server())

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]))
        await inner(scope, receive, send)

    static = Credentials(kind="static", secret=SecretRef(env="STATIC_KEY"),
                         header="x-api-key", scheme=None)
    cfg = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL, credentials=static),))
    async with gateway_over(cfg, {"alpha": app}) as gateway, \
            http_client(StreamableHTTP(gateway.server)) as http, \
            Client.http(URL, http_client=http, era_cache=None) as client:
        assert await text(client, "alpha__add", {"a": 1, "b": 1}) == "2"
    assert seen and all(h.get(b"x-api-key") == b"static-key-9d2e" for h in seen)
    assert all(b"authorization" not in h for h in seen)


# -- ID-JAG (Enterprise-Managed Authorization) ----------------------------------------------
def signed_in(app: Any, subject: str, id_token: str) -> Any:
    """What the gateway's resource server does for a caller whose bearer token is the
    IdP's ID token: the principal in the scope, the raw token as the inbound token."""
    principal = Principal(subject, issuer="idp", auth_method="jwt")

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        reset = _current.set(InboundToken(id_token))
        try:
            await app({**scope, PRINCIPAL_SCOPE_KEY: principal}, receive, send)
        finally:
            _current.reset(reset)

    return wrapped


@pytest.mark.parametrize("mode", ERAS)
async def test_id_jag_the_callers_id_token_becomes_an_upstream_token(mode: str) -> None:
    with ema_setup() as setup:
        # The gateway is the EMA client: one registration at the IdP and at the AS.
        setup.idp.clients[CLIENT_ID] = IdpClient(CLIENT_ID, CLIENT_SECRET,
                                                 {setup.issuer: CLIENT_ID})
        environ = {"GATEWAY_SECRET": CLIENT_SECRET}
        creds = Credentials(kind="id_jag", idp_token_endpoint=setup.idp.token_endpoint,
                            token_endpoint=setup.token_url, client_id=CLIENT_ID,
                            client_secret=SecretRef(env="GATEWAY_SECRET"),
                            audience=setup.issuer, resource=RESOURCE, scopes=("files:read",))
        alpha = Recording(StreamableHTTP(alpha_server()))
        cfg = GatewayConfig(upstreams=(UpstreamConfig(
            "alpha", url=URL, era="legacy" if mode == "legacy" else "auto",
            credentials=creds),))
        id_token = setup.idp.id_token(USER, client_id=CLIENT_ID)
        upstream_client = http_client(alpha)
        gateway = Gateway(cfg, http_clients={"alpha": upstream_client}, environ=environ)
        try:
            await gateway.start()
            app = signed_in(StreamableHTTP(gateway.server), USER, id_token)
            async with http_client(app) as http, Client.http(
                    URL, http_client=http, mode=mode, era_cache=None) as client:
                assert await text(client, "alpha__add", {"a": 2, "b": 3}) == "5"
                assert await text(client, "alpha__add", {"a": 3, "b": 3}) == "6"
            issued = [i for i in setup.endpoints[0].issued if i["sub"] == USER]
            assert len(issued) == 1  # the second call was a cache hit
            assert issued[0]["aud"] == RESOURCE
        finally:
            await gateway.aclose()
            await upstream_client.aclose()
    assert id_token not in alpha.tokens()
    mine = [t for t in alpha.tokens() if claims(t)["sub"] == USER]
    assert mine and {claims(t)["aud"] for t in mine} == {RESOURCE}
    assert JWT_BEARER_GRANT  # the grant the AS redeemed (EMA §5)


async def test_id_jag_the_idp_refusing_is_a_structured_error() -> None:
    with ema_setup() as setup:
        setup.idp.clients[CLIENT_ID] = IdpClient(CLIENT_ID, CLIENT_SECRET,
                                                 {setup.issuer: CLIENT_ID})
        creds = Credentials(kind="id_jag", idp_token_endpoint=setup.idp.token_endpoint,
                            token_endpoint=setup.token_url, client_id=CLIENT_ID,
                            client_secret=SecretRef(env="GATEWAY_SECRET"),
                            audience=setup.issuer, resource=RESOURCE)
        cfg = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL, credentials=creds),))
        upstream_client = http_client(StreamableHTTP(alpha_server()))
        gateway = Gateway(cfg, http_clients={"alpha": upstream_client},
                          environ={"GATEWAY_SECRET": CLIENT_SECRET})
        try:
            await gateway.start()
            # An ID token issued to another client: the IdP refuses (invalid_grant).
            foreign = setup.idp.id_token(USER, client_id="someone-else")
            app = signed_in(StreamableHTTP(gateway.server), USER, foreign)
            async with http_client(app) as http, Client.http(
                    URL, http_client=http, era_cache=None) as client:
                with pytest.raises(RemoteProtocolError) as refused:
                    await client.call_tool("alpha__add", {"a": 1, "b": 1})
        finally:
            await gateway.aclose()
            await upstream_client.aclose()
    assert refused.value.data == {"upstream": "alpha", "reason": "exchange_refused",
                                  "error": "invalid_grant"}


def test_passthrough_stays_impossible() -> None:
    # No kind forwards the caller's token; the config refuses one that asks.
    from mcpcore.gateway.config import loads

    with pytest.raises(GatewayConfigError, match="passthrough"):
        loads('[[upstream]]\nname = "a"\nurl = "https://a.example/mcp"\n'
              '[upstream.credentials]\nkind = "passthrough"\n')
    assert httpx  # the upstream clients are httpx's


async def test_callers_2025_sessions_are_bounded(
        auth_server: LocalAuthorizationServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpcore.gateway.upstreams.MAX_CALLER_SESSIONS", 1)
    issuer = auth_server.issuer
    beta = Recording(StreamableHTTP(beta_server()))
    cfg = GatewayConfig(upstreams=(UpstreamConfig(
        "beta", url=URL, era="legacy", credentials=oauth("token_exchange", issuer, BETA)),))
    async with gateway_over(cfg, {"beta": beta}) as gateway:
        for who in ("alice", "bob", "carol"):
            token = auth_server.mint(sub=who, aud=GATEWAY, scope="mcp")
            async with caller(protected(gateway, issuer), token, "2026-07-28") as client:
                assert await text(client, "beta__echo", {"text": who}) == f"beta: {who}"
        sessions = gateway.upstreams["beta"]._sessions
        assert [key[2] for key in sessions] == ["carol"]


# -- the gateway's own inbound auth: [gateway] auth -------------------------------------
async def test_serve_with_auth_requires_a_bearer_token_and_exchanges_it(
        auth_server: LocalAuthorizationServer, tmp_path: Path) -> None:
    issuer = auth_server.issuer
    (tmp_path / "auth.toml").write_text(
        f'resource = "{GATEWAY}"\n[network]\nallow_loopback = true\n'
        f'[[authorization_servers]]\nissuer = "{issuer}"\njwks_uri = "{issuer}/jwks"\n',
        encoding="utf-8")
    upstream_url = "http://127.0.0.1:9/mcp"  # reached through the injected client
    (tmp_path / "gateway.toml").write_text(
        f'[gateway]\nauth = "auth.toml"\n[[upstream]]\nname = "alpha"\nurl = '
        f'"{upstream_url}"\n[upstream.credentials]\nkind = "token_exchange"\n'
        f'token_endpoint = "{issuer}/token"\nclient_id = "gateway"\n'
        f'client_secret_env = "GATEWAY_SECRET"\nresource = "{ALPHA}"\n', encoding="utf-8")
    cfg = load(tmp_path / "gateway.toml")
    assert cfg.auth == str(tmp_path / "auth.toml")
    alpha = Recording(StreamableHTTP(alpha_server()))
    upstream = http_client(alpha)
    gateway = Gateway(cfg, http_clients={"alpha": upstream}, environ=ENVIRON)
    app = gateway_serve.build(gateway, allowed_hosts=LOCAL_HOSTS,
                              auth=gateway_serve.inbound_auth(cfg))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    try:
        await gateway.start()
        async with http_client(app) as http:
            assert (await http.get("/readyz")).status_code == 200  # open to anyone
            bare = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                  "method": "server/discover"})
            assert bare.status_code == 401
            assert bare.headers["www-authenticate"].lower().startswith("bearer")
            async with Client.http(URL, http_client=http, era_cache=None, headers={
                    "Authorization": f"Bearer {alice}"}) as client:
                assert await text(client, "alpha__add", {"a": 4, "b": 4}) == "8"
    finally:
        await gateway.aclose()
        await upstream.aclose()
        await app.app.aclose()  # the resource server's key-set fetcher
    assert alice not in alpha.tokens()
    assert "alice" in {claims(t)["sub"] for t in alpha.tokens()}


def test_serve_without_auth_warns_about_upstreams_acting_as_the_caller(
        caplog: pytest.LogCaptureFixture) -> None:
    cfg = config(oauth("token_exchange", "http://127.0.0.1:1", ALPHA),
                 Credentials(kind="static", secret=SecretRef(env="STATIC_KEY")))
    with caplog.at_level("WARNING", logger="mcpcore.gateway"):
        assert gateway_serve.inbound_auth(cfg) is None
    assert "upstreams alpha act as the caller" in caplog.text


@pytest.mark.parametrize(("text_", "line", "message"), [
    ('[[upstream]]\nname = "a"\ncommand = "x"\n[upstream.credentials]\nkind = "static"\n'
     'secret_env = "K"\n', 4, "a stdio upstream (command) has none: give it its secret "
                             "with env_from"),
    ('[gateway]\nauth = "nowhere.toml"\n[[upstream]]\nname = "a"\ncommand = "x"\n', 2,
     "gateway.auth: no resource-server file at"),
])
def test_config_problems_of_credentials(tmp_path: Path, text_: str, line: int,
                                        message: str) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(text_, encoding="utf-8")
    with pytest.raises(GatewayConfigError) as bad:
        load(path)
    assert [(p.line, message in p.message) for p in bad.value.problems] == [(line, True)]


async def test_client_credentials_fetched_again_shortly_before_expiry(
        auth_server: LocalAuthorizationServer) -> None:
    now = [1000.0]
    upstream = UpstreamConfig("alpha", url=URL, credentials=oauth(
        "client_credentials", auth_server.issuer, ALPHA))
    secrets = resolve_secrets(GatewayConfig(upstreams=(upstream,)), ENVIRON)
    credential = credential_for(upstream, secrets, clock=lambda: now[0])
    assert isinstance(credential, UpstreamCredential)
    try:
        first = await credential.for_gateway()
        now[0] += auth_server.token_ttl - 31  # still fresh: 31 s left, margin 30 s
        assert await credential.for_gateway() == first
        assert credential.tokens.grants == 1
        now[0] += 2  # inside the margin: a new one before the old one expires
        second = await credential.for_gateway()
        assert second != first and credential.tokens.grants == 2
    finally:
        await credential.aclose()


async def test_a_callers_concurrent_first_calls_share_one_2025_session(
        auth_server: LocalAuthorizationServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every session opened is closed by the end (a raced one is not left open).
    opened: list[Client] = []
    closed: list[Client] = []
    real_open, real_close = Client.open, Client.aclose

    async def counted_open(self: Client) -> None:
        opened.append(self)
        await real_open(self)

    async def counted_close(self: Client) -> None:
        closed.append(self)
        await real_close(self)

    monkeypatch.setattr(Client, "open", counted_open)
    monkeypatch.setattr(Client, "aclose", counted_close)
    issuer = auth_server.issuer
    beta = Recording(StreamableHTTP(beta_server()))
    cfg = GatewayConfig(upstreams=(UpstreamConfig(
        "beta", url=URL, era="legacy", credentials=oauth("token_exchange", issuer, BETA)),))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with gateway_over(cfg, {"beta": beta}) as gateway, \
            caller(protected(gateway, issuer), alice, "2026-07-28") as client:
        answers = await asyncio.gather(*(text(client, "beta__echo", {"text": str(n)})
                                         for n in range(4)))
        assert answers == [f"beta: {n}" for n in range(4)]
        sessions = gateway.upstreams["beta"]._sessions
        assert len(sessions) == 1
        (kept, _), = sessions.values()
        assert kept.session_id is not None
        await asyncio.sleep(0.1)  # a raced session closes in the background
    gateway_side = [c for c in opened if c.transport is not client.transport]
    assert gateway_side and set(map(id, gateway_side)) <= set(map(id, closed))


# -- completions, asked as the caller -------------------------------------------------------
class ByMethod:
    """An upstream app that records (JSON-RPC method, Authorization) of every POST."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str | None, str | None]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method")
        except (ValueError, AttributeError):
            method = None
        value = dict(scope["headers"]).get(b"authorization")
        self.seen.append((method, value.decode("latin-1") if value is not None else None))
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


@pytest.mark.parametrize("mode", ERAS)
async def test_completions_of_an_upstream_acting_as_the_caller_go_as_the_caller(
        auth_server: LocalAuthorizationServer, mode: str) -> None:
    issuer = auth_server.issuer
    alpha = ByMethod(StreamableHTTP(alpha_server()))
    cfg = GatewayConfig(upstreams=(UpstreamConfig(
        "alpha", url=URL, era="legacy" if mode == "legacy" else "auto",
        credentials=oauth("token_exchange", issuer, ALPHA)),))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with gateway_over(cfg, {"alpha": alpha}) as gateway, \
            caller(protected(gateway, issuer), alice, mode) as client:
        done = await client.complete({"type": "ref/prompt", "name": "alpha__greet"},
                                     {"name": "name", "value": "a"})
    assert done.completion.values == ["alice", "albert"]
    asked = [value for method, value in alpha.seen if method == "completion/complete"]
    assert len(asked) == 1 and asked[0] is not None
    token = asked[0].removeprefix("Bearer ")
    assert token != alice
    assert claims(token)["sub"] == "alice" and claims(token)["aud"] == ALPHA
    assert all(alice not in (value or "") for _, value in alpha.seen)
