"""DPoP-bound upstream tokens (``dpop = true``; ``upstream_dpop.py``) against the
project's own authorization server in DPoP mode (nonces required at its token
endpoint) and an upstream behind the project's resource server that requires DPoP
and nonces: what the upstream receives is recorded on ITS side: a DPoP token bound to
the gateway's key, with a valid fresh proof of each request, never the caller's token."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcpcore import StreamableHTTP
from mcpcore.auth import (
    BearerAuthMiddleware,
    DPoPSettings,
    IssuerConfig,
    NetworkPolicy,
    ResourceServerConfig,
)
from mcpcore.auth.dpop import DPoPPolicy, jwk_thumbprint, verify_proof
from mcpcore.auth.issuer.authorization_server import LocalAuthorizationServer, RegisteredClient
from mcpcore.auth.issuer.idp import IdpClient
from mcpcore.auth.terms import TOKEN_EXCHANGE
from mcpcore.client import Client
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.config import (
    Credentials,
    GatewayConfig,
    GatewayConfigError,
    SecretRef,
    UpstreamConfig,
    loads,
)
from mcpcore.gateway.credentials import UpstreamCredential
from mcpcore.transports.http import ANY_HOST
from tests.auth.ema_support import CLIENT_ID, CLIENT_SECRET, RESOURCE, USER, ema_setup
from tests.auth.support import LoopbackServer
from tests.gateway.inprocess import alpha_server, http_client
from tests.gateway.test_credentials import (
    GATEWAY,
    SECRET,
    caller,
    claims,
    protected,
    signed_in,
    text,
)

ALPHA = "https://alpha.example/mcp"  # the upstream's URL and resource (the proofs' htu)
ENVIRON = {"GATEWAY_SECRET": SECRET}
ERAS = ("2026-07-28", "legacy")


class Seen:
    """Records each HTTP request an upstream app receives: its method, URL, Authorization
    and DPoP headers, and the status it answered."""

    def __init__(self, app: Any, origin: str) -> None:
        self.app = app
        self.origin = origin
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        seen: dict[str, Any] = {
            "method": scope["method"], "url": self.origin + scope["path"],
            "authorization": [v for k, v in headers if k == "authorization"],
            "dpop": [v for k, v in headers if k == "dpop"], "status": None,
            "headers": headers}
        self.requests.append(seen)

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            await send(message)

        await self.app(scope, receive, sending)


def dpop_upstream(resource: str, issuer: str, *, nonces: bool) -> Seen:
    """``alpha_server`` behind the resource server, DPoP required (with nonces)."""
    rs = ResourceServerConfig(
        resource=resource, authorization_servers=(IssuerConfig(issuer,
                                                               jwks_uri=issuer + "/jwks"),),
        network=NetworkPolicy(allow_loopback=True),
        dpop=DPoPSettings(required=True, nonce_secret="cd" * 16 if nonces else None))
    app = BearerAuthMiddleware(StreamableHTTP(alpha_server(), allowed_hosts=ANY_HOST),
                               config=rs)
    origin = resource.removesuffix("/mcp")
    return Seen(app, origin)


@pytest.fixture(scope="module")
def dpop_as() -> Iterator[LocalAuthorizationServer]:
    """The project's authorization server, requiring DPoP nonces at its token endpoint."""
    def factory(url: str) -> LocalAuthorizationServer:
        return LocalAuthorizationServer(
            url, clients=[RegisteredClient("gateway", secret=SECRET)],
            resources=[GATEWAY, ALPHA], exchangeable_audiences=[GATEWAY],
            scopes_supported=["mcp"], network=NetworkPolicy(allow_loopback=True),
            dpop_nonces=True)

    with LoopbackServer(factory) as server:
        assert isinstance(server.app, LocalAuthorizationServer)
        yield server.app


def dpop_creds(kind: str, issuer: str, **extra: Any) -> Credentials:
    return Credentials(kind=kind, token_endpoint=issuer + "/token",  # type: ignore[arg-type]
                       client_id="gateway", client_secret=SecretRef(env="GATEWAY_SECRET"),
                       resource=ALPHA, dpop=True, **extra)


@contextlib.asynccontextmanager
async def gateway_over(cfg: GatewayConfig, upstream: Seen, environ: dict[str, str]
                       ) -> AsyncIterator[Gateway]:
    client = http_client(upstream)
    gateway = Gateway(cfg, http_clients={cfg.upstreams[0].name: client}, environ=environ)
    try:
        await gateway.start()
        yield gateway
    finally:
        await gateway.aclose()
        await client.aclose()
        assert isinstance(upstream.app, BearerAuthMiddleware)
        await upstream.app.aclose()


def key_of(gateway: Gateway) -> str:
    credential = gateway.credentials["alpha"]
    assert isinstance(credential, UpstreamCredential) and credential.proofs is not None
    return credential.proofs.thumbprint


def check_bound(upstream: Seen, jkt: str, forbidden: tuple[str, ...]) -> list[str]:
    """Every request the upstream served carried a DPoP token bound to ``jkt`` and one
    valid, fresh proof of that very request (method, URL, token hash, key); the
    subjects of the tokens; none of ``forbidden`` anywhere in any request."""
    served = [r for r in upstream.requests if r["status"] is not None and r["status"] < 400]
    assert served
    jtis: set[str] = set()
    subjects = []
    for request in served:
        (authorization,), (proof,) = request["authorization"], request["dpop"]
        scheme, _, token = authorization.partition(" ")
        assert scheme == "DPoP"
        assert claims(token)["cnf"] == {"jkt": jkt}
        verified = verify_proof(proof, method=request["method"], url=request["url"],
                                now=claims(token)["iat"] + 1, policy=DPoPPolicy(
                                    max_age=3600), access_token=token, expected_jkt=jkt)
        assert verified.jti not in jtis  # a fresh proof each time
        jtis.add(verified.jti)
        subjects.append(claims(token)["sub"])
    for request in upstream.requests:
        for _, value in request["headers"]:
            assert all(secret not in value for secret in forbidden)
    return subjects


@pytest.mark.parametrize("mode", ERAS)
async def test_token_exchange_gets_dpop_bound_tokens_with_a_proof_per_request(
        dpop_as: LocalAuthorizationServer, mode: str) -> None:
    issuer = dpop_as.issuer
    upstream = dpop_upstream(ALPHA, issuer, nonces=True)
    cfg = GatewayConfig(upstreams=(UpstreamConfig(
        "alpha", url=ALPHA, era="legacy" if mode == "legacy" else "auto",
        credentials=dpop_creds("token_exchange", issuer)),))
    alice = dpop_as.mint(sub="alice", aud=GATEWAY, scope="mcp")
    before = len(dpop_as.requests)
    async with gateway_over(cfg, upstream, ENVIRON) as gateway:
        jkt = key_of(gateway)
        async with caller(protected(gateway, issuer), alice, mode) as client:
            assert await text(client, "alpha__add", {"a": 1, "b": 2}) == "3"
            assert await text(client, "alpha__add", {"a": 2, "b": 2}) == "4"
    subjects = check_bound(upstream, jkt, (alice,))
    assert "alice" in subjects  # the call, as the caller
    assert "gateway" in subjects  # the catalog, as the gateway (client credentials)
    # The upstream asked for its nonce, and the request went once more with it.
    refused = [r for r in upstream.requests if r["status"] == 401]
    assert refused
    # The token endpoint got a proof with each request; the exchange carried alice's
    # token there (the one place it goes), and asked for the nonce the AS requires.
    token_requests = [(dict(parse_qsl(r.body.decode())), r.headers)
                      for r in dpop_as.requests[before:] if r.path == "/token"]
    assert token_requests and all("dpop" in headers for _, headers in token_requests)
    grants = [form["grant_type"] for form, _ in token_requests]
    # The first (the catalog's client credentials) without a nonce, refused with one,
    # then again with it; the exchange carried the nonce from the start.
    assert grants == ["client_credentials", "client_credentials", TOKEN_EXCHANGE]
    assert token_requests[-1][0]["subject_token"] == alice


async def test_client_credentials_get_dpop_bound_tokens(
        dpop_as: LocalAuthorizationServer) -> None:
    issuer = dpop_as.issuer
    upstream = dpop_upstream(ALPHA, issuer, nonces=False)
    cfg = GatewayConfig(upstreams=(UpstreamConfig(
        "alpha", url=ALPHA, credentials=dpop_creds("client_credentials", issuer)),))
    async with gateway_over(cfg, upstream, ENVIRON) as gateway, \
            http_client(StreamableHTTP(gateway.server)) as http, \
            Client.http("http://localhost/mcp", http_client=http, era_cache=None) as client:
        jkt = key_of(gateway)
        assert await text(client, "alpha__add", {"a": 3, "b": 4}) == "7"
    assert set(check_bound(upstream, jkt, ())) == {"gateway"}


@pytest.mark.parametrize("mode", ERAS)
async def test_id_jag_gets_dpop_bound_tokens(tmp_path: Path, mode: str) -> None:
    # The key from a file, as a fleet would share it.
    private = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "dpop.pem").write_bytes(private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    with ema_setup() as setup:
        setup.idp.clients[CLIENT_ID] = IdpClient(CLIENT_ID, CLIENT_SECRET,
                                                 {setup.issuer: CLIENT_ID})
        creds = Credentials(kind="id_jag", idp_token_endpoint=setup.idp.token_endpoint,
                            token_endpoint=setup.token_url, client_id=CLIENT_ID,
                            client_secret=SecretRef(env="GATEWAY_SECRET"),
                            audience=setup.issuer, resource=RESOURCE, scopes=("files:read",),
                            dpop=True, dpop_key=SecretRef(file=str(tmp_path / "dpop.pem")))
        upstream = dpop_upstream(RESOURCE, setup.issuer, nonces=True)
        cfg = GatewayConfig(upstreams=(UpstreamConfig(
            "alpha", url=RESOURCE, era="legacy" if mode == "legacy" else "auto",
            credentials=creds),))
        id_token = setup.idp.id_token(USER, client_id=CLIENT_ID)
        async with gateway_over(cfg, upstream, {"GATEWAY_SECRET": CLIENT_SECRET}
                                ) as gateway:
            jkt = key_of(gateway)
            app = signed_in(StreamableHTTP(gateway.server), USER, id_token)
            async with http_client(app) as http, Client.http(
                    "http://localhost/mcp", http_client=http, mode=mode,
                    era_cache=None) as client:
                assert await text(client, "alpha__add", {"a": 2, "b": 3}) == "5"
    from mcpcore.auth.dpop import DPoPKey

    assert jkt == jwk_thumbprint(DPoPKey(private).public_jwk)  # the file's key
    assert USER in check_bound(upstream, jkt, (id_token,))


async def test_a_bearer_token_when_dpop_is_asked_for_is_refused(
        dpop_as: LocalAuthorizationServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # An authorization server that ignores the proof: the gateway does not fall back.
    issuer = dpop_as.issuer
    upstream = dpop_upstream(ALPHA, issuer, nonces=False)
    cfg = GatewayConfig(upstreams=(UpstreamConfig(
        "alpha", url=ALPHA, credentials=dpop_creds("token_exchange", issuer)),))
    alice = dpop_as.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with gateway_over(cfg, upstream, ENVIRON) as gateway:
        monkeypatch.setattr(dpop_as, "_dpop_proof", _ignored)
        async with caller(protected(gateway, issuer), alice, "2026-07-28") as client:
            with pytest.raises(RemoteProtocolError) as refused:
                await client.call_tool("alpha__add", {"a": 1, "b": 1})
    assert refused.value.data == {"upstream": "alpha", "reason": "token_endpoint_failed"}
    assert not [r for r in upstream.requests if any(
        claims(a.partition(" ")[2]).get("sub") == "alice" for a in r["authorization"])]


async def _ignored(request: Any) -> None:
    return None


def test_a_dpop_key_that_cannot_sign_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "bad.pem").write_text("not a key\n")
    creds = dpop_creds("client_credentials", "http://127.0.0.1:1",
                       dpop_key=SecretRef(file=str(tmp_path / "bad.pem")))
    cfg = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=ALPHA, credentials=creds),))
    with pytest.raises(ValueError, match=r"credentials\.dpop_key_file: not an unencrypted PEM"):
        Gateway(cfg, environ=ENVIRON)


def test_a_dpop_key_without_dpop_is_a_config_problem() -> None:
    with pytest.raises(GatewayConfigError, match="add dpop = true"):
        loads('[[upstream]]\nname = "a"\nurl = "https://a.example/mcp"\n'
              '[upstream.credentials]\nkind = "client_credentials"\n'
              'token_endpoint = "https://as.example/token"\nclient_id = "g"\n'
              'client_secret_env = "S"\ndpop_key_file = "dpop.pem"\n')


# -- a fleet: tokens bound to a key are shared only with instances holding it -----------
@pytest.mark.parametrize("shared_key", [True, False])
async def test_a_fleet_shares_dpop_tokens_only_with_the_same_key(
        dpop_as: LocalAuthorizationServer, tmp_path: Path, shared_key: bool) -> None:
    from mcpcore.stores.memory import MemoryStore

    issuer = dpop_as.issuer
    key_file = tmp_path / "dpop.pem"
    key_file.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    extra = {"dpop_key": SecretRef(file=str(key_file))} if shared_key else {}
    cfg = GatewayConfig(upstreams=(UpstreamConfig(
        "alpha", url=ALPHA, credentials=dpop_creds("token_exchange", issuer, **extra)),))
    upstreams = [dpop_upstream(ALPHA, issuer, nonces=False) for _ in range(2)]
    store = MemoryStore()
    alice = dpop_as.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with contextlib.AsyncExitStack() as stack:
        gateways = []
        for upstream in upstreams:
            assert isinstance(upstream.app, BearerAuthMiddleware)
            stack.push_async_callback(upstream.app.aclose)  # its key-set fetcher
            client = http_client(upstream)
            stack.push_async_callback(client.aclose)
            gateway = Gateway(cfg, http_clients={"alpha": client}, environ=ENVIRON,
                              store=store)
            stack.push_async_callback(gateway.aclose)
            await gateway.start()
            gateways.append(gateway)
        for gateway in gateways:
            async with caller(protected(gateway, issuer), alice, "2026-07-28") as client:
                assert await text(client, "alpha__add", {"a": 1, "b": 1}) == "2"
        shared = [g.credentials["alpha"].shared for g in gateways]  # type: ignore[union-attr]
        assert shared[1] is not None
        assert shared[1].counts["hit"] == (1 if shared_key else 0)
        keys = {key_of(g) for g in gateways}
        assert len(keys) == (1 if shared_key else 2)
    for upstream, gateway_key in zip(upstreams, [key_of(g) for g in gateways], strict=True):
        check_bound(upstream, gateway_key, (alice,))


# -- hostile upstreams: nonce rounds are bounded ------------------------------------------
@pytest.mark.parametrize(("nonce", "tries"), [
    ("n-1", 2),            # a fresh nonce: once more with it, and no more than once
    ("x" * 5000, 1),       # not a nonce (too long): not retried, not kept
    ('bad"quote', 1),      # not NQCHAR
])
async def test_an_upstream_asking_for_nonces_forever_gets_one_retry(
        nonce: str, tries: int) -> None:
    import httpx

    from mcpcore.auth.dpop import DPoPKey
    from mcpcore.gateway.credentials import UpstreamAuth, sending
    from mcpcore.gateway.upstream_dpop import UpstreamProofs

    proofs_seen: list[str] = []
    counter = iter(range(1000))

    def handler(request: httpx.Request) -> httpx.Response:
        proofs_seen.append(request.headers["dpop"])
        given = nonce if nonce != "n-1" else f"n-{next(counter)}"
        return httpx.Response(401, headers={
            "www-authenticate": 'DPoP error="use_dpop_nonce"', "dpop-nonce": given})

    class Credential:
        header = "authorization"
        proofs = UpstreamProofs(DPoPKey.generate())

        async def for_gateway(self) -> str:
            raise AssertionError("a call made for a caller")

    auth = UpstreamAuth(Credential())  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), auth=auth) as http:
        with sending("DPoP the-token"):
            response = await http.post("https://alpha.example/mcp", content=b"{}")
    assert response.status_code == 401
    assert len(proofs_seen) == tries
    kept = Credential.proofs.nonces
    assert all(len(v) <= 1024 and '"' not in v for v in kept.values())


def test_a_dpop_credential_keeps_off_the_pools_lean_lane() -> None:
    """The lean lane applies header fields only; a DPoP proof signs the request and may
    retry it with a nonce, so such an upstream's requests take httpx's path."""
    from mcpcore.auth.dpop import DPoPKey
    from mcpcore.client.http import HeaderAuth
    from mcpcore.gateway.credentials import UpstreamAuth
    from mcpcore.gateway.upstream_dpop import UpstreamProofs

    class Bearer:
        header = "authorization"
        proofs = None

    class Bound(Bearer):
        proofs = UpstreamProofs(DPoPKey.generate())  # type: ignore[assignment]

    plain, bound = UpstreamAuth(Bearer()), UpstreamAuth(Bound())  # type: ignore[arg-type]
    assert isinstance(plain, HeaderAuth) and plain.lean
    assert not bound.lean
