"""The compact authorization server: metadata, the code flow with PKCE and ``iss``,
refresh rotation, registration, client ID metadata documents, client assertions, DPoP
binding, and a pluggable grant. In process over ASGI, except the metadata document
server, which is a real loopback server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import msgspec
import pytest
from authlib.oauth2.rfc6749.grants.base import BaseGrant, TokenEndpointMixin

from mcpcore.auth import (
    BearerAuthMiddleware,
    DPoPKey,
    IssuerConfig,
    NetworkPolicy,
    ResourceServerConfig,
    build_validator,
)
from mcpcore.auth.issuer import RegisteredClient, approve_as
from tests.auth import as_doubles as asd
from tests.auth.support import LoopbackServer, Recorder


async def test_metadata_advertises_what_clients_check() -> None:
    server = asd.AS()
    response = await server.http.get("/.well-known/oauth-authorization-server")
    assert response.headers["content-type"] == "application/json"
    doc = response.json()
    assert doc["issuer"] == asd.ISSUER
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["authorization_response_iss_parameter_supported"] is True
    assert doc["response_types_supported"] == ["code"]
    assert doc["client_id_metadata_document_supported"] is True
    assert {"authorization_code", "refresh_token", "client_credentials"} <= set(
        doc["grant_types_supported"])
    assert "ES256" in doc["dpop_signing_alg_values_supported"]
    assert doc["registration_endpoint"] == asd.ISSUER + "/register"


def test_the_issuer_must_be_https_or_loopback() -> None:
    from mcpcore.auth.issuer import LocalAuthorizationServer

    with pytest.raises(ValueError):
        LocalAuthorizationServer("http://as.example.com")
    LocalAuthorizationServer("https://as.example.com/tenant1")


async def test_code_flow_issues_a_token_the_resource_server_accepts() -> None:
    server = asd.AS()
    response = await server.authorize(scope="mcp offline_access")
    location = response.headers["location"]
    params = asd.query(location)
    assert response.status_code == 302 and location.startswith(asd.REDIRECT)
    assert params["iss"] == [asd.ISSUER] and "state" in params
    token = await server.redeem(params["code"][0])
    assert token.status_code == 200 and token.headers["cache-control"] == "no-store"
    body = token.json()
    assert body["token_type"] == "Bearer" and body["scope"] == "mcp offline_access"
    header = jwt.get_unverified_header(body["access_token"])
    assert header["typ"] == "at+jwt"
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    assert claims["aud"] == asd.RESOURCE and claims["sub"] == "alice"
    assert claims["client_id"] == asd.PUBLIC and claims["iss"] == asd.ISSUER

    config = ResourceServerConfig(
        resource=asd.RESOURCE,
        authorization_servers=(IssuerConfig(asd.ISSUER, jwks_uri=asd.ISSUER + "/jwks"),),
        required_scopes=frozenset({"mcp"}), network=NetworkPolicy(allow_loopback=True))
    recorder = Recorder()
    middleware = BearerAuthMiddleware(recorder, config=config,
                                      validator=build_validator(config, client=server.http))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(middleware),
                                 base_url="http://127.0.0.1:8000") as mcp:
        answer = await mcp.post("/mcp", content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                                headers={"authorization": f"Bearer {body['access_token']}"})
    assert answer.status_code == 200 and recorder.calls[0]["principal"].subject == "alice"


async def test_a_loopback_redirect_uri_may_use_any_port() -> None:
    server = asd.AS()  # PUBLIC registered http://127.0.0.1/callback
    response = await server.authorize(redirect_uri="http://127.0.0.1:59999/callback")
    assert response.headers["location"].startswith("http://127.0.0.1:59999/callback?code=")
    wrong_path = await server.authorize(redirect_uri="http://127.0.0.1:59999/other")
    assert wrong_path.status_code == 400 and "location" not in wrong_path.headers


async def test_error_redirects_carry_iss_too() -> None:
    server = asd.AS()
    response = await server.authorize(scope="mcp", code_challenge=None, code_challenge_method=None)
    params = asd.query(response.headers["location"])
    assert params["error"] == ["invalid_request"] and params["iss"] == [asd.ISSUER]


async def test_denied_authorization_redirects_access_denied() -> None:
    async def deny(request: Any, client: Any, scope: str) -> None:
        return None

    server = asd.AS()
    server.server.resource_owner = deny
    params = asd.query((await server.authorize()).headers["location"])
    assert params["error"] == ["access_denied"] and "code" not in params


async def test_refresh_tokens_rotate_and_keep_the_resource() -> None:
    server = asd.AS()
    first = (await server.redeem(await server.code())).json()
    form = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"],
            "client_id": asd.PUBLIC, "resource": asd.RESOURCE}
    second = (await server.token(form)).json()
    assert second["refresh_token"] != first["refresh_token"]
    claims = jwt.decode(second["access_token"], options={"verify_signature": False})
    assert claims["aud"] == asd.RESOURCE


async def test_confidential_client_with_basic_or_post() -> None:
    server = asd.AS()
    code = await server.code(asd.CONFIDENTIAL)
    basic = await server.http.post("/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": asd.REDIRECT,
        "code_verifier": server.verifier}, auth=(asd.CONFIDENTIAL, asd.SECRET))
    assert basic.status_code == 200
    code = await server.code(asd.CONFIDENTIAL)
    post = await server.redeem(code, asd.CONFIDENTIAL, client_secret=asd.SECRET)
    assert post.status_code == 200
    code = await server.code(asd.CONFIDENTIAL)
    public_style = await server.redeem(code, asd.CONFIDENTIAL)  # no secret: refused
    assert public_style.status_code in (400, 401)
    assert public_style.json()["error"] == "invalid_client"


async def test_dynamic_registration_public_and_confidential() -> None:
    server = asd.AS()
    public = (await server.http.post("/register", json={
        "client_name": "cli", "redirect_uris": ["http://127.0.0.1/callback"],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "none", "application_type": "native"})).json()
    assert "client_secret" not in public and public["client_id"]
    code = await server.code(public["client_id"], redirect_uri="http://127.0.0.1:7/callback")
    assert (await server.redeem(code, public["client_id"],
                                redirect_uri="http://127.0.0.1:7/callback")).status_code == 200
    secret = (await server.http.post("/register", json={
        "redirect_uris": ["https://app.example.com/cb"],
        "token_endpoint_auth_method": "client_secret_basic"})).json()
    assert secret["client_secret"]
    bad = await server.http.post("/register", json={
        "redirect_uris": ["https://app.example.com/cb"], "application_type": "desktop"})
    assert bad.status_code == 400


@pytest.fixture
def document_server() -> Iterator[LoopbackServer]:
    documents: dict[str, bytes] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = documents.get(scope["path"])
        await send({"type": "http.response.start", "status": 200 if body else 404,
                    "headers": [(b"content-type", b"application/json"),
                                (b"cache-control", b"max-age=600")]})
        await send({"type": "http.response.body", "body": body or b""})

    with LoopbackServer(lambda url: app) as server:
        server.documents = documents  # type: ignore[attr-defined]
        yield server


async def test_client_id_metadata_document(document_server: LoopbackServer) -> None:
    client_id = document_server.url + "/client.json"
    document_server.documents["/client.json"] = msgspec.json.encode({  # type: ignore[attr-defined]
        "client_id": client_id, "client_name": "doc client",
        "redirect_uris": ["http://127.0.0.1/callback"], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code"]})
    server = asd.AS()
    code = await server.code(client_id)
    assert (await server.redeem(code, client_id)).status_code == 200
    # A document that names another client is refused (and so is one that does not exist).
    document_server.documents["/liar.json"] = msgspec.json.encode({  # type: ignore[attr-defined]
        "client_id": "https://other.example.com/c.json", "redirect_uris": [asd.REDIRECT]})
    for path in ("/liar.json", "/missing.json"):
        response = await server.authorize(document_server.url + path)
        assert response.status_code in (400, 401) and "location" not in response.headers
        assert response.json()["error"] == "invalid_client"


async def test_dpop_binds_the_token_and_a_public_clients_refresh_token() -> None:
    server = asd.AS()
    key = DPoPKey.generate()
    code = await server.code()
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": asd.REDIRECT,
            "code_verifier": server.verifier, "client_id": asd.PUBLIC}
    body = (await server.token(form, {"dpop": key.proof("POST", asd.ISSUER + "/token")})).json()
    assert body["token_type"] == "DPoP"
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    assert claims["cnf"] == {"jkt": key.thumbprint}
    refresh = {"grant_type": "refresh_token", "refresh_token": body["refresh_token"],
               "client_id": asd.PUBLIC}
    other = DPoPKey.generate().proof("POST", asd.ISSUER + "/token")
    assert (await server.token(refresh, {"dpop": other})).json()["error"] == "invalid_grant"
    ok = await server.token(refresh, {"dpop": key.proof("POST", asd.ISSUER + "/token")})
    assert ok.status_code == 200 and ok.json()["token_type"] == "DPoP"


async def test_dpop_nonce_when_configured() -> None:
    server = asd.AS(options={"dpop_nonces": True})
    key = DPoPKey.generate()
    form = {"grant_type": "client_credentials", "resource": asd.RESOURCE}
    first = await server.http.post("/token", data=form, auth=(asd.CONFIDENTIAL, asd.SECRET),
                                   headers={"dpop": key.proof("POST", asd.ISSUER + "/token")})
    assert first.status_code == 400 and first.json()["error"] == "use_dpop_nonce"
    nonce = first.headers["dpop-nonce"]
    second = await server.http.post(
        "/token", data=form, auth=(asd.CONFIDENTIAL, asd.SECRET),
        headers={"dpop": key.proof("POST", asd.ISSUER + "/token", nonce=nonce)})
    assert second.status_code == 200 and second.json()["token_type"] == "DPoP"


async def test_private_key_jwt_client_credentials() -> None:
    server = asd.AS()
    now = int(time.time())
    for aud in (asd.ISSUER, asd.ISSUER + "/token"):
        assertion = jwt.encode({"iss": asd.KEYED, "sub": asd.KEYED, "aud": aud, "iat": now,
                                "exp": now + 60, "jti": f"jti-{aud}"},
                               server.client_key.private_key, algorithm="ES256")
        response = await server.token({
            "grant_type": "client_credentials", "resource": asd.RESOURCE, "scope": "mcp",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion})
        assert response.status_code == 200, response.text
        assert jwt.decode(response.json()["access_token"],
                          options={"verify_signature": False})["sub"] == asd.KEYED


async def test_a_grant_can_be_plugged_in() -> None:
    """How a JWT-bearer (e.g. ID-JAG) grant plugs into the token endpoint."""
    from mcpcore.auth.issuer.authorization_server import IssuesTokens

    class EchoAssertion(IssuesTokens, BaseGrant, TokenEndpointMixin):  # type: ignore[misc]
        GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
        TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]

        def _resource(self) -> str:
            return self.server.owner.requested_resource(self.request.form)

        def validate_token_request(self) -> None:
            self.request.client = self.authenticate_token_endpoint_client()
            self.request.user = None

        def create_token_response(self) -> Any:
            token = self.generate_token(scope="mcp", include_refresh_token=False)
            return 200, token, self.TOKEN_RESPONSE_HEADER

    server = asd.AS()
    server.server.register_grant(EchoAssertion, advertise=EchoAssertion.GRANT_TYPE)
    meta = (await server.http.get("/.well-known/oauth-authorization-server")).json()
    assert EchoAssertion.GRANT_TYPE in meta["grant_types_supported"]
    response = await server.http.post("/token", data={
        "grant_type": EchoAssertion.GRANT_TYPE, "assertion": "x", "resource": asd.RESOURCE},
        auth=(asd.CONFIDENTIAL, asd.SECRET))
    assert response.status_code == 200 and "refresh_token" not in response.json()


async def test_unknown_paths_and_oversized_bodies() -> None:
    server = asd.AS()
    assert (await server.http.get("/nope")).status_code == 404
    big = await server.http.post("/token", content=b"a=" + b"x" * 70_000,
                                 headers={"content-type": "application/x-www-form-urlencoded"})
    assert big.status_code == 413
    json_body = await server.http.post("/token", json={"grant_type": "client_credentials"})
    assert json_body.status_code == 400 and json_body.json()["error"] == "invalid_request"


# -- issue 23: redirect URIs, DPoP-bound clients, repeated parameters, replays, caps -----

@pytest.mark.parametrize(("registered", "requested", "matches"), [
    ("http://127.0.0.1/callback", "http://127.0.0.1/callback", True),
    ("http://127.0.0.1/callback", "http://127.0.0.1:59999/callback", True),
    ("http://127.0.0.1:8000/callback", "http://127.0.0.1:59999/callback", True),
    ("http://[::1]/callback", "http://[::1]:5000/callback", True),
    ("http://127.0.0.1/callback?a=1", "http://127.0.0.1:1/callback?a=1", True),
    ("https://app.example.com/cb", "https://app.example.com/cb", True),
    # only the port after a loopback IP literal may differ (RFC 8252 §7.3)
    ("https://app.example.com/cb", "https://app.example.com:8443/cb", False),
    ("http://localhost/callback", "http://localhost:5000/callback", False),
    ("http://127.0.0.1/callback", "http://localhost:5000/callback", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1:0/callback", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1:65536/callback", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1:/callback", False),
    ("http://127.0.0.1/callback", "HTTP://127.0.0.1/callback", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1/Callback", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1/callback/", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1/%63allback", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1/callback?x=1", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1.attacker.invalid/callback", False),
    ("http://127.0.0.1/callback", "http://attacker.invalid\\@127.0.0.1/callback", False),
    ("http://127.0.0.1/callback", "http://attacker.invalid@127.0.0.1/callback", False),
    ("http://127.0.0.1/callback", "http://127.0.0.1/callback#frag", False),
])
def test_redirect_uris_match_as_exact_strings(registered: str, requested: str,
                                              matches: bool) -> None:
    from mcpcore.auth.issuer.as_models import ClientModel

    assert ClientModel(RegisteredClient("c", redirect_uris=(registered,))).check_redirect_uri(
        requested) is matches


@pytest.mark.parametrize("uri", [
    "http://attacker.invalid\\@127.0.0.1/callback", "http://attacker.invalid@127.0.0.1/cb",
    "http://127.0.0.1/cb#", "http://127.0.0.1/c\tb", "http://127.0.0.1/c\nb",
    "http://127.0.0.1/c\x00b", "http://127.0.0.1/cb\x7f", "http://127.0.0.1/c b",
    "http://127.0.0.1/caf\u00e9", "http://127.0.0.1%2f@attacker.invalid/cb",
    "http://127.0.0.1/cb%", "http://127.0.0.1/cb%zz", "//127.0.0.1/cb", "/cb", "",
    "http:///cb", "http://[::1/cb", "http://127.0.0.1/[x]", "http://127.0.0.1/" + "a" * 2048,
    "http://127.0.0.1:80:80/cb", "http://127.0.0.1:0/cb", "http://[::1]:99999/cb",
    "http://127.0.0.1:/cb", "http://127.0.0.1:+80/cb",
])
def test_redirect_uris_parsers_read_differently_are_refused(uri: str) -> None:
    from mcpcore.auth.issuer.as_models import redirect_uri_problem

    assert redirect_uri_problem(uri) is not None


async def test_an_invalid_redirect_uri_never_redirects_even_for_a_valid_request() -> None:
    server = asd.AS()
    for uri in ("http://attacker.invalid\\@127.0.0.1/callback",
                "http://attacker.invalid@127.0.0.1/callback", "http://127.0.0.1/callback#f"):
        response = await server.authorize(redirect_uri=uri)
        assert response.status_code == 400 and "location" not in response.headers
        assert response.json()["error"] == "invalid_request"
        assert response.headers["cache-control"] == "no-store"
    assert not server.server._codes  # nothing was issued


async def test_dpop_bound_is_enforced_for_every_way_of_authenticating() -> None:
    """RFC 9449 §5.2: checked once the client is known, whatever told us who it is."""
    server = asd.AS()
    server.server.clients["bound"] = RegisteredClient("bound", secret=asd.SECRET, dpop_bound=True,
                                            redirect_uris=(asd.REDIRECT,))
    key = DPoPKey.generate()
    form = {"grant_type": "client_credentials", "resource": asd.RESOURCE}
    basic = await server.http.post("/token", data=form, auth=("bound", asd.SECRET))
    post = await server.token({**form, "client_id": "bound", "client_secret": asd.SECRET})
    for refused in (basic, post):
        assert (refused.status_code, refused.json()["error"]) == (400, "invalid_dpop_proof")
    proof = {"dpop": key.proof("POST", asd.ISSUER + "/token")}
    ok = await server.http.post("/token", data=form, auth=("bound", asd.SECRET), headers=proof)
    assert ok.status_code == 200 and ok.json()["token_type"] == "DPoP"
    # The code is not burnt by the refusal: the client retries with a proof.
    code = await server.code("bound")
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": asd.REDIRECT,
            "code_verifier": server.verifier, "resource": asd.RESOURCE}
    refused = await server.http.post("/token", data=form, auth=("bound", asd.SECRET))
    assert refused.json()["error"] == "invalid_dpop_proof"
    ok = await server.http.post("/token", data=form, auth=("bound", asd.SECRET),
                                headers={"dpop": key.proof("POST", asd.ISSUER + "/token")})
    assert ok.status_code == 200 and ok.json()["token_type"] == "DPoP"


async def test_a_replayed_code_revokes_the_tokens_it_produced() -> None:
    """RFC 6749 §4.1.2: deny the second redemption and revoke what the first got."""
    server = asd.AS()
    code = await server.code(asd.CONFIDENTIAL)
    first = await server.redeem(code, asd.CONFIDENTIAL, client_secret=asd.SECRET)
    tokens = first.json()
    replay = await server.redeem(code, asd.CONFIDENTIAL, client_secret=asd.SECRET)
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    refresh = await server.token({"grant_type": "refresh_token", "client_id": asd.CONFIDENTIAL,
                                  "client_secret": asd.SECRET,
                                  "refresh_token": tokens["refresh_token"]})
    assert (refresh.status_code, refresh.json()["error"]) == (400, "invalid_grant")
    introspected = await server.http.post("/introspect", data={"token": tokens["access_token"]},
                                          auth=(asd.CONFIDENTIAL, asd.SECRET))
    assert introspected.json() == {"active": False}
    # An unrelated grant of the same client is untouched.
    other = (await server.redeem(await server.code(asd.CONFIDENTIAL), asd.CONFIDENTIAL,
                                 client_secret=asd.SECRET)).json()
    active = await server.http.post("/introspect", data={"token": other["access_token"]},
                                    auth=(asd.CONFIDENTIAL, asd.SECRET))
    assert active.json()["active"] is True and active.json()["sub"] == "alice"


async def test_reuse_of_a_rotated_out_refresh_token_revokes_its_family() -> None:
    """RFC 9700 §4.14.2: the reuse shows two holders; every token of the family goes."""
    server = asd.AS()
    first = (await server.redeem(await server.code())).json()
    form = {"grant_type": "refresh_token", "client_id": asd.PUBLIC}
    second = (await server.token({**form, "refresh_token": first["refresh_token"]})).json()
    reused = await server.token({**form, "refresh_token": first["refresh_token"]})
    assert reused.json()["error"] == "invalid_grant"
    current = await server.token({**form, "refresh_token": second["refresh_token"]})
    assert (current.status_code, current.json()["error"]) == (400, "invalid_grant")
    exchange = await server.http.post("/token", data={
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": second["access_token"],
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "resource": asd.RESOURCE}, auth=(asd.CONFIDENTIAL, asd.SECRET))
    assert exchange.json()["error"] == "invalid_grant"


async def test_self_registered_clients_get_interactive_grants_and_capped_scopes() -> None:
    server = asd.AS()  # registration_scopes: mcp, offline_access
    refused = await server.http.post("/register", json={
        "redirect_uris": ["https://app.example.com/cb"], "grant_types": ["client_credentials"],
        "token_endpoint_auth_method": "client_secret_basic"})
    assert refused.status_code == 400
    assert "registration_grant_types" in refused.json()["error_description"]
    public = (await server.http.post("/register", json={
        "redirect_uris": ["http://127.0.0.1/callback"], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "application_type": "native"})).json()
    admin = await server.authorize(public["client_id"], scope="mcp mcp:admin")
    params = asd.query(admin.headers["location"])
    assert params["error"] == ["invalid_scope"] and "code" not in params
    assert "registration_scopes" in params["error_description"][0]
    # The operator opts in: client credentials for self-registered clients, still capped.
    opened = asd.AS(options={"registration_grant_types": ["client_credentials"]})
    machine = (await opened.http.post("/register", json={
        "redirect_uris": ["https://app.example.com/cb"], "grant_types": ["client_credentials"],
        "token_endpoint_auth_method": "client_secret_basic"})).json()
    auth = (machine["client_id"], machine["client_secret"])
    form = {"grant_type": "client_credentials", "resource": asd.RESOURCE}
    escalation = await opened.http.post("/token", data={**form, "scope": "mcp:admin"}, auth=auth)
    assert (escalation.status_code, escalation.json()["error"]) == (400, "invalid_scope")
    ok = await opened.http.post("/token", data={**form, "scope": "mcp"}, auth=auth)
    assert ok.status_code == 200 and ok.json()["scope"] == "mcp"


async def test_by_default_self_registered_clients_get_no_scope() -> None:
    from mcpcore.auth.issuer import LocalAuthorizationServer

    server = LocalAuthorizationServer(asd.ISSUER, resources=[asd.RESOURCE],
                                      scopes_supported=["mcp"], resource_owner=approve_as("a"))
    http = httpx.AsyncClient(transport=httpx.ASGITransport(server), base_url=asd.ISSUER)
    client = (await http.post("/register", json={
        "redirect_uris": ["http://127.0.0.1/callback"], "token_endpoint_auth_method": "none",
        "application_type": "native"})).json()
    _, challenge = asd.pkce()
    response = await http.get("/authorize", params={
        "response_type": "code", "client_id": client["client_id"], "scope": "mcp",
        "redirect_uri": "http://127.0.0.1/callback", "code_challenge": challenge,
        "code_challenge_method": "S256", "state": "s"})
    assert asd.query(response.headers["location"])["error"] == ["invalid_scope"]
    asked = await http.post("/register", json={"redirect_uris": ["https://a.example/cb"],
                                               "scope": "mcp"})
    assert asked.json()["error"] == "invalid_client_metadata"


async def test_client_scope_caps_apply_to_client_credentials() -> None:
    server = asd.AS()
    server.server.clients["capped"] = RegisteredClient("capped", secret=asd.SECRET, scope="mcp")
    response = await server.http.post("/token", data={
        "grant_type": "client_credentials", "resource": asd.RESOURCE,
        "scope": "mcp mcp:admin"}, auth=("capped", asd.SECRET))
    assert response.status_code == 200 and response.json()["scope"] == "mcp"
    claims = jwt.decode(response.json()["access_token"], options={"verify_signature": False})
    assert claims["scope"] == "mcp"


async def test_every_answer_but_metadata_and_jwks_is_no_store() -> None:
    server = asd.AS()
    answers = [
        await server.http.post("/token", content=b"a=" + b"x" * 70_000,
                               headers={"content-type": "application/x-www-form-urlencoded"}),
        await server.http.get("/token"),
        await server.http.put("/register"),
        await server.http.get("/nope"),
        await server.http.post("/introspect", data={"token": "x"}),
        await server.http.post("/register", content=b"[]"),
        await server.authorize(client_id="nobody"),
        await server.authorize(),
    ]
    assert [a.status_code for a in answers] == [413, 405, 405, 404, 401, 400, 400, 302]
    for answer in answers:
        assert answer.headers["cache-control"] == "no-store", answer.request.url
    meta = await server.http.get("/.well-known/oauth-authorization-server")
    assert meta.headers["cache-control"].startswith("public")


async def test_a_dpop_proof_whose_htu_carries_a_query_is_accepted() -> None:
    """RFC 9449 §4.3 step 9 compares htu ignoring query and fragment."""
    server = asd.AS()
    key = DPoPKey.generate()
    claims = jwt.decode(key.proof("POST", asd.ISSUER + "/token"),
                        options={"verify_signature": False})
    claims["htu"] = asd.ISSUER + "/token?x=1#f"
    proof = jwt.encode(claims, key.private_key, algorithm=key.alg,
                       headers={"typ": "dpop+jwt", "jwk": key.public_jwk})
    response = await server.http.post(
        "/token", data={"grant_type": "client_credentials", "resource": asd.RESOURCE},
        auth=(asd.CONFIDENTIAL, asd.SECRET), headers={"dpop": proof})
    assert response.status_code == 200 and response.json()["token_type"] == "DPoP"


async def test_a_metadata_document_client_is_self_registered(
        document_server: LoopbackServer) -> None:
    """Anyone can publish a client ID metadata document: such a client gets what a
    dynamically registered one gets (interactive grants, ``registration_scopes``)."""
    client_id = document_server.url + "/machine.json"
    document_server.documents["/machine.json"] = msgspec.json.encode({  # type: ignore[attr-defined]
        "client_id": client_id, "redirect_uris": ["http://127.0.0.1/callback"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "client_credentials"]})
    server = asd.AS()
    code = await server.code(client_id, scope="mcp")
    assert (await server.redeem(code, client_id)).status_code == 200
    client = server.server._client(client_id)
    assert client is not None and client.self_registered
    assert client.grant_types == ("authorization_code",)
    admin = await server.authorize(client_id, scope="mcp:admin")
    assert asd.query(admin.headers["location"])["error"] == ["invalid_scope"]


async def test_malformed_parameters_are_a_400_not_a_server_error() -> None:
    """RFC 6749 Appendix A syntax, checked first: authlib cannot even write an error
    description holding some of these (it raised, a 500)."""
    server = asd.AS()
    for query in ("response_type=%C2%A7&client_id=public-app",
                  "response_type=%22&client_id=public-app",
                  "response_type=code&client_id=public-app&scope=%C2%A7"):
        response = await server.http.get("/authorize?" + query)
        assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
        assert "location" not in response.headers
    for body in ("grant_type=%C2%A7", "grant_type=client_credentials&scope=%22x%22"):
        response = await server.http.post(
            "/token", content=body, auth=(asd.CONFIDENTIAL, asd.SECRET),
            headers={"content-type": "application/x-www-form-urlencoded"})
        assert (response.status_code, response.json()["error"]) == (400, "invalid_request")


async def test_codes_and_replay_memory_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcore.auth.issuer import authorization_server

    monkeypatch.setattr(authorization_server, "_MAX_REMEMBERED", 50)
    server = asd.AS()
    for _ in range(120):
        await server.authorize()  # codes nobody redeems
    assert len(server.server._codes) <= 50
    tokens = (await server.redeem(await server.code())).json()
    form = {"grant_type": "refresh_token", "client_id": asd.PUBLIC}
    for _ in range(120):
        tokens = (await server.token({**form, "refresh_token": tokens["refresh_token"]})).json()
    assert len(server.server._rotated) <= 50 and len(server.server._family_of) <= 50
