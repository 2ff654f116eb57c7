"""The local enterprise IdP over loopback HTTP: what it issues, and everything it must
refuse (each with its RFC 6749 §5.2 / RFC 8693 §2.2.2 error)."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import jwt
import pytest

from mcpcore.auth.issuer.authorization_server import SigningKey
from mcpcore.auth.issuer.idp import AccessRule, IdpClient, LocalIdentityProvider
from mcpcore.auth.terms import ID_JAG_TOKEN_TYPE, ID_JAG_TYP, ID_TOKEN_TYPE, TOKEN_EXCHANGE
from mcpcore.auth.urls import verifying_context
from tests.auth.support import LoopbackServer

AS = "https://auth.example.com"
MCP = "https://mcp.example.com/mcp"
DOCS = "https://docs.example.com/mcp"
CHAT = IdpClient("chat", "chat-secret", {AS: "chat-at-as"})
LONELY = IdpClient("lonely", "lonely-secret", {})
RULES = [
    AccessRule(AS, MCP, frozenset({"files:read", "files:write"}), clients=frozenset({"chat"})),
    AccessRule(AS, DOCS, frozenset({"docs:read"}), users=frozenset({"bob"})),
]


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(lambda url: LocalIdentityProvider(
            url, clients=[CHAT, LONELY], rules=RULES, tenant="acme")) as running:
        yield running


@pytest.fixture
def idp(server: LoopbackServer) -> LocalIdentityProvider:
    assert isinstance(server.app, LocalIdentityProvider)
    return server.app


@pytest.fixture
async def http(server: LoopbackServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=5.0,
                                 verify=verifying_context(trust_env=True)) as client:
        yield client


def form(idp: LocalIdentityProvider, **over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG_TOKEN_TYPE,
        "subject_token": idp.id_token("alice", client_id="chat", acr="mfa"),
        "subject_token_type": ID_TOKEN_TYPE,
        "audience": AS,
        "resource": MCP,
        "scope": "files:read",
    }
    data.update(over)
    return {k: v for k, v in data.items() if v is not None}


CHAT_AUTH = httpx.BasicAuth("chat", "chat-secret")


async def test_an_id_jag_for_the_client_at_that_authorization_server(
    idp: LocalIdentityProvider, http: httpx.AsyncClient
) -> None:
    response = await http.post("/token", data=form(idp), auth=CHAT_AUTH)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["issued_token_type"] == ID_JAG_TOKEN_TYPE and body["token_type"] == "N_A"
    assert body["scope"] == "files:read" and body["expires_in"] == 300
    assert "refresh_token" not in body
    header = jwt.get_unverified_header(body["access_token"])
    assert header["typ"] == ID_JAG_TYP
    claims = jwt.decode(body["access_token"], idp.keys[0].public_key, algorithms=["ES256"],
                        audience=AS, issuer=idp.issuer)
    assert claims["sub"] == "alice" and claims["client_id"] == "chat-at-as"
    assert claims["resource"] == MCP and claims["scope"] == "files:read"
    assert claims["tenant"] == "acme" and claims["acr"] == "mfa"
    assert claims["exp"] - claims["iat"] == 300 and claims["jti"]
    again = (await http.post("/token", data=form(idp), auth=CHAT_AUTH)).json()
    assert jwt.decode(again["access_token"], options={"verify_signature": False})["jti"] != (
        claims["jti"])


async def test_secret_in_the_body_and_the_only_resource_of_an_audience(
    idp: LocalIdentityProvider, http: httpx.AsyncClient
) -> None:
    data = form(idp, resource=None, scope=None, client_id="chat", client_secret="chat-secret")
    idp.rules.append(AccessRule("https://solo.example.com", "https://solo.example.com/mcp"))
    idp.clients["chat"] = IdpClient("chat", "chat-secret", {
        AS: "chat-at-as", "https://solo.example.com": "chat-solo"})
    try:
        solo = await http.post("/token", data={**data, "audience": "https://solo.example.com"})
        assert solo.status_code == 200, solo.text
        claims = jwt.decode(solo.json()["access_token"], options={"verify_signature": False})
        assert claims["resource"] == "https://solo.example.com/mcp" and "scope" not in claims
        # AS serves two resources: which one must be said.
        assert (await http.post("/token", data=data)).json()["error"] == "invalid_target"
    finally:
        idp.rules.pop()
        idp.clients["chat"] = CHAT


async def test_metadata_and_keys(idp: LocalIdentityProvider, http: httpx.AsyncClient) -> None:
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        doc = (await http.get(path)).json()
        assert doc["issuer"] == idp.issuer and doc["token_endpoint"] == idp.token_endpoint
        assert doc["identity_chaining_requested_token_types_supported"] == [ID_JAG_TOKEN_TYPE]
    keys = await http.get("/jwks")
    assert keys.headers["cache-control"] == "max-age=300"
    assert [k["kid"] for k in keys.json()["keys"]] == [k.kid for k in idp.keys]


def basic(pair: bytes) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(pair).decode()}


OTHER_KEY = SigningKey.generate("ES256", kid="not-the-idp")


AUTH = basic(b"chat:chat-secret")
Build = Callable[[LocalIdentityProvider], tuple[dict[str, Any], dict[str, str]]]


def signed(key: SigningKey, **claims: Any) -> str:
    return key.sign({"exp": int(time.time()) + 60, **claims}, {"typ": "JWT"})


def subject(token: Callable[[LocalIdentityProvider], str]) -> Build:
    return lambda idp: (form(idp, subject_token=token(idp)), AUTH)


def with_form(headers: dict[str, str] = AUTH, **over: Any) -> Build:
    return lambda idp: (form(idp, **over), headers)


REFUSALS: list[tuple[str, Build, int, str]] = [
    ("no client authentication", with_form({}), 401, "invalid_client"),
    ("wrong secret", with_form(basic(b"chat:guess")), 401, "invalid_client"),
    ("unknown client", with_form(basic(b"nobody:x")), 401, "invalid_client"),
    ("Basic that is not base64", with_form({"authorization": "Basic !!"}), 401,
     "invalid_client"),
    ("a Bearer token as client auth", with_form({"authorization": "Bearer x"}), 401,
     "invalid_client"),
    ("Basic and a body secret", with_form(client_secret="chat-secret"), 400, "invalid_request"),
    ("another grant type", with_form(grant_type="client_credentials"), 400,
     "unsupported_grant_type"),
    ("an access token requested",
     with_form(requested_token_type="urn:ietf:params:oauth:token-type:access_token"), 400,
     "invalid_request"),
    ("a SAML subject token",
     with_form(subject_token_type="urn:ietf:params:oauth:token-type:saml2"), 400,
     "invalid_request"),
    ("no audience", with_form(audience=None), 400, "invalid_request"),
    ("no subject token", with_form(subject_token=None), 400, "invalid_request"),
    ("audience twice", with_form(audience=[AS, AS]), 400, "invalid_request"),
    ("an ID token for another client",
     subject(lambda idp: idp.id_token("alice", client_id="lonely")), 400, "invalid_grant"),
    ("an expired ID token",
     subject(lambda idp: idp.id_token("alice", client_id="chat", ttl=-120)), 400,
     "invalid_grant"),
    ("an ID token signed by someone else", subject(lambda idp: signed(
        OTHER_KEY, iss=idp.issuer, sub="alice", aud="chat")), 400, "invalid_grant"),
    ("an ID-JAG as the subject token",
     subject(lambda idp: idp.mint_id_jag(sub="alice", aud="chat")), 400, "invalid_grant"),
    ("garbage subject token", subject(lambda idp: "abc"), 400, "invalid_grant"),
    ("several audiences and no azp", subject(lambda idp: signed(
        idp.keys[0], iss=idp.issuer, sub="alice", aud=["chat", "x"])), 400, "invalid_grant"),
    ("an ID token without a subject", subject(lambda idp: signed(
        idp.keys[0], iss=idp.issuer, aud="chat")), 400, "invalid_grant"),
    ("audience not the AS of that resource", with_form(audience="https://evil.example"), 400,
     "invalid_target"),
    ("resource not behind that audience", with_form(resource="https://evil.example/mcp"), 400,
     "invalid_target"),
    ("client without an id at that AS", lambda idp: (
        form(idp, subject_token=idp.id_token("alice", client_id="lonely")),
        basic(b"lonely:lonely-secret")), 400, "invalid_target"),
    ("user the rule does not name", with_form(resource=DOCS, scope="docs:read"), 400,
     "access_denied"),
    ("scopes no rule allows", with_form(scope="admin"), 400, "invalid_scope"),
    ("not a form", lambda idp: ({}, {**AUTH, "content-type": "application/json"}), 400,
     "invalid_request"),
]


@pytest.mark.parametrize("body", [b"\xff\xfe=1", b"grant_type", b"a=1&&b"])
async def test_a_body_that_is_not_a_form(http: httpx.AsyncClient, body: bytes) -> None:
    response = await http.post("/token", content=body, headers={
        **AUTH, "content-type": "application/x-www-form-urlencoded"})
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")


@pytest.mark.parametrize(("name", "build", "status", "error"), REFUSALS,
                         ids=[r[0] for r in REFUSALS])
async def test_refusals(idp: LocalIdentityProvider, http: httpx.AsyncClient, name: str,
                        build: Build, status: int, error: str) -> None:
    data, headers = build(idp)
    response = await http.post("/token", data=data, headers=headers)
    assert (response.status_code, response.json().get("error")) == (status, error), name
    assert "access_token" not in response.json()
    assert response.headers["cache-control"] == "no-store"
    if status == 401:
        assert response.headers["www-authenticate"].startswith("Basic")


async def test_a_body_too_large_is_refused(http: httpx.AsyncClient) -> None:
    response = await http.post("/token", content=b"a=" + b"x" * 70_000,
                               headers={"content-type": "application/x-www-form-urlencoded"})
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")


def test_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback"):
        LocalIdentityProvider("https://idp.example.com")
    with pytest.raises(ValueError, match="query"):
        LocalIdentityProvider("http://127.0.0.1:9?x=1")
