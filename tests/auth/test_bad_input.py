"""Bad input across the OAuth client, the authorization server and the resource server.

One table. Each row sends something an attacker (or a broken peer) would send, and says
which error must come back; every row also checks that **nothing was issued** (no token,
no code) and **nothing was sent on** (no token request after a bad authorization
response, no redirect to an unregistered URI, no MCP handler run).

* client rows drive the sans-I/O flows against ``FakeNet`` (mix-up attempts, a PRM for
  another resource, AS metadata whose issuer differs, a forged ``state``, unsafe URLs);
* authorization-server rows talk to ``LocalAuthorizationServer`` over ASGI (code replay,
  PKCE mismatch, unregistered redirects, DPoP proofs replayed or for another URL);
* resource-server rows send DPoP-bound tokens to ``BearerAuthMiddleware`` with proofs
  replayed, signed with another key, for another URL or method, or stale.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt
import pytest

from mcpcore.auth import (
    AuthorizationCodeGrant,
    BearerAuthMiddleware,
    ConfigurationError,
    DPoPKey,
    DPoPSettings,
    HeadlessUserAgent,
    IssuerConfig,
    NetworkPolicy,
    OAuth,
    OAuthClientError,
    OAuthSession,
    ResourceServerConfig,
    build_validator,
)
from mcpcore.auth.client.steps import MAX_REDIRECTS
from mcpcore.auth.errors import UnsafeUrl
from mcpcore.auth.issuer import RegisteredClient
from mcpcore.auth.urls import check_url
from tests.auth import as_doubles as asd
from tests.auth.oauth_doubles import ISSUER, PRM_URL, SERVER, FakeNet, challenge, json_response, run
from tests.auth.sdk_authorization_server import InMemoryProvider, sdk_authorization_server
from tests.auth.support import LoopbackServer, Recorder


@dataclass
class Outcome:
    error: str | None
    issued: bool = False
    sent_on: bool = False


@dataclass(frozen=True)
class Row:
    id: str
    side: str
    run: Callable[[], Awaitable[Outcome]]
    error: str


ROWS: list[Row] = []


def row(side: str, error: str) -> Callable[[Callable[[], Awaitable[Outcome]]], Any]:
    def register(fn: Callable[[], Awaitable[Outcome]]) -> Any:
        ROWS.append(Row(fn.__name__.replace("_", "-"), side, fn, error))
        return fn
    return register


# -- the client ---------------------------------------------------------------------------

async def client_flow(net: FakeNet, response: httpx.Response | None = None,
                      token_requests: int = 0, **kwargs: Any) -> Outcome:
    session = OAuthSession(SERVER, AuthorizationCodeGrant(HeadlessUserAgent()), **kwargs)
    try:
        run(session.on_unauthorized(response or challenge(), None), net)
    except OAuthClientError as exc:
        error: str | None = type(exc).__name__
    else:
        error = None
    return Outcome(error, issued=session.token is not None,
                   sent_on=len(net.sent("POST", "/token")) > token_requests)


def lying_redirect(**params: str | None) -> Callable[[dict[str, str]], str]:
    def build(query: dict[str, str]) -> str:
        honest = {"code": "the-code", "state": query["state"], "iss": ISSUER}
        honest.update(params)
        return f"{query['redirect_uri']}?{urlencode({k: v for k, v in honest.items() if v})}"
    return build


@row("client", "AuthorizationRejected")
async def iss_of_another_server() -> Outcome:
    return await client_flow(FakeNet(redirect=lying_redirect(iss="https://evil.example.com")))


@row("client", "AuthorizationRejected")
async def iss_missing_though_advertised() -> Outcome:
    return await client_flow(FakeNet(redirect=lying_redirect(iss=None)))


@row("client", "AuthorizationRejected")
async def iss_unexpected_and_wrong() -> Outcome:
    net = FakeNet(metadata={"authorization_response_iss_parameter_supported": None},
                  redirect=lying_redirect(iss="https://evil.example.com"))
    return await client_flow(net)


@row("client", "AuthorizationRejected")
async def iss_with_a_trailing_slash() -> Outcome:
    return await client_flow(FakeNet(redirect=lying_redirect(iss=ISSUER + "/")))


@row("client", "AuthorizationRejected")
async def iss_repeated() -> Outcome:
    def build(query: dict[str, str]) -> str:
        return (f"{query['redirect_uri']}?code=c&state={query['state']}"
                f"&iss={ISSUER}&iss=https://evil.example.com")
    return await client_flow(FakeNet(redirect=build))


@row("client", "AuthorizationRejected")
async def state_never_issued() -> Outcome:
    return await client_flow(FakeNet(redirect=lying_redirect(state="forged-state")))


@row("client", "AuthorizationRejected")
async def state_missing() -> Outcome:
    return await client_flow(FakeNet(redirect=lying_redirect(state=None)))


@row("client", "AuthorizationRejected")
async def error_response_with_a_wrong_iss() -> Outcome:
    return await client_flow(FakeNet(redirect=lying_redirect(
        code=None, error="access_denied", iss="https://evil.example.com")))


@row("client", "AuthorizationRejected")
async def redirect_to_another_endpoint() -> Outcome:
    def build(query: dict[str, str]) -> str:
        return f"https://evil.example.com/callback?code=c&state={query['state']}&iss={ISSUER}"
    return await client_flow(FakeNet(redirect=build))


@row("client", "DiscoveryError")
async def prm_for_another_resource() -> Outcome:
    net = FakeNet(prm={"resource": "https://evil.example.com/mcp"})
    outcome = await client_flow(net)
    outcome.sent_on |= any(ISSUER in str(r.url) for r in net.requests)  # AS never asked
    return outcome


@row("client", "DiscoveryError")
async def prm_for_another_port() -> Outcome:
    return await client_flow(FakeNet(prm={"resource": "https://mcp.example.com:8443/mcp"}))


@row("client", "DiscoveryError")
async def prm_resource_with_userinfo() -> Outcome:
    return await client_flow(FakeNet(prm={"resource": "https://a@mcp.example.com/mcp"}))


@row("client", "DiscoveryError")
async def prm_without_authorization_servers() -> Outcome:
    return await client_flow(FakeNet(prm={"authorization_servers": []}))


@row("client", "DiscoveryError")
async def metadata_issuer_differs() -> Outcome:
    net = FakeNet(metadata={"issuer": "https://attacker.example.com"})
    outcome = await client_flow(net)
    outcome.sent_on |= bool(net.sent("POST", "/register") or net.authorizations)
    return outcome


@row("client", "DiscoveryError")
async def metadata_without_s256() -> Outcome:
    net = FakeNet(metadata={"code_challenge_methods_supported": ["plain"]})
    outcome = await client_flow(net)
    outcome.sent_on |= bool(net.authorizations)
    return outcome


@row("client", "DiscoveryError")
async def token_endpoint_plain_http_to_a_public_host() -> Outcome:
    return await client_flow(FakeNet(metadata={"token_endpoint": "http://as.example.com/token"}))


@row("client", "DiscoveryError")
async def token_endpoint_on_a_private_address() -> Outcome:
    return await client_flow(FakeNet(metadata={"token_endpoint": "https://10.0.0.8/token"}))


@row("client", "DiscoveryError")
async def authorization_endpoint_javascript_url() -> Outcome:
    net = FakeNet(metadata={"authorization_endpoint": "javascript:alert(1)"})
    outcome = await client_flow(net)
    outcome.sent_on |= bool(net.authorizations)
    return outcome


@row("client", "OAuthClientError")
async def resource_metadata_url_with_credentials() -> Outcome:
    net = FakeNet()
    outcome = await client_flow(net, challenge(
        value='Bearer resource_metadata="https://u:p@mcp.example.com/prm"'))
    outcome.sent_on |= bool(net.requests)  # refused before any fetch
    return outcome


@row("client", "OAuthClientError")
async def resource_metadata_on_link_local_address() -> Outcome:
    net = FakeNet()
    outcome = await client_flow(net, challenge(
        value='Bearer resource_metadata="https://169.254.169.254/latest/meta-data"'))
    outcome.sent_on |= bool(net.requests)
    return outcome


@row("client", "OAuthClientError")
async def prm_redirects_without_end() -> Outcome:
    net = FakeNet()
    net.routes[("GET", PRM_URL)] = lambda r: httpx.Response(302, headers={"location": PRM_URL})
    outcome = await client_flow(net)
    outcome.sent_on |= len(net.requests) > MAX_REDIRECTS + 1
    return outcome


@row("client", "OAuthClientError")
async def prm_redirects_to_plain_http() -> Outcome:
    net = FakeNet()
    net.routes[("GET", PRM_URL)] = lambda r: httpx.Response(
        302, headers={"location": "http://internal.example.com/prm"})
    outcome = await client_flow(net)
    outcome.sent_on |= len(net.requests) > 1
    return outcome


@row("client", "TokenRequestFailed")
async def token_response_with_an_unknown_type() -> Outcome:
    net = FakeNet()
    net.token = lambda f, r: json_response(200, {"access_token": "x", "token_type": "mac"})
    return await client_flow(net, token_requests=1)


def _token_with_expires_in(raw: bytes) -> Callable[[], Awaitable[Outcome]]:
    body = b'{"access_token": "x", "token_type": "Bearer", "expires_in": ' + raw + b"}"

    async def run_row() -> Outcome:
        net = FakeNet()
        net.token = lambda f, r: httpx.Response(
            200, content=body, headers={"content-type": "application/json"})
        return await client_flow(net, token_requests=1)
    return run_row


# expires_in must be a non-negative number of seconds (RFC 6749 §5.1); each of these was
# a bare OverflowError (10^400) or a token taken as never expiring. A huge but well-formed
# lifetime is clamped instead (tests/auth/client/test_oauth_client.py).
for _name, _raw in [("negative", b"-1"), ("hugely-negative", b"-1" + b"0" * 400),
                    ("a-boolean", b"true"), ("a-word", b'"soon"'), ("a-list", b"[3600]"),
                    ("an-object", b'{"s": 3600}'), ("out-of-float-range", b"1e400")]:
    ROWS.append(Row(f"token-response-with-an-expires-in-{_name}", "client",
                    _token_with_expires_in(_raw), "TokenRequestFailed"))


@row("client", "TokenRequestFailed")
async def token_response_not_json() -> Outcome:
    net = FakeNet()
    net.token = lambda f, r: httpx.Response(200, content=b"<html>ok</html>")
    return await client_flow(net, token_requests=1)


# -- the authorization server -----------------------------------------------------------

async def as_error(response: httpx.Response) -> Outcome:
    location = response.headers.get("location")
    if location:
        params = asd.query(location)
        error = params.get("error", [None])[0]
        issued = "code" in params
        sent_on = not location.startswith(asd.REDIRECT) or params.get("iss") != [asd.ISSUER]
        return Outcome(error, issued=issued, sent_on=sent_on)
    body = response.json()
    return Outcome(body.get("error"), issued="access_token" in body)


@row("as", "invalid_grant")
async def code_replayed() -> Outcome:
    server = asd.AS()
    code = await server.code()
    assert (await server.redeem(code)).status_code == 200
    return await as_error(await server.redeem(code))


@row("as", "invalid_grant")
async def pkce_verifier_does_not_match() -> Outcome:
    server = asd.AS()
    code = await server.code()
    server.verifier = asd.pkce()[0]
    outcome = await as_error(await server.redeem(code))
    outcome.issued |= (await server.redeem(code)).status_code == 200  # and the code is burnt
    return outcome


@row("as", "invalid_request")
async def pkce_missing() -> Outcome:
    return await as_error(await asd.AS().authorize(code_challenge=None,
                                                   code_challenge_method=None))


@row("as", "invalid_request")
async def pkce_plain_method() -> Outcome:
    server = asd.AS()
    return await as_error(await server.authorize(code_challenge_method="plain",
                                                 code_challenge="a" * 43))


@row("as", "invalid_request")
async def redirect_uri_not_registered() -> Outcome:
    response = await asd.AS().authorize(redirect_uri="https://evil.example.com/cb")
    outcome = await as_error(response)
    outcome.sent_on = response.status_code in (301, 302, 303, 307, 308)
    return outcome


@row("as", "invalid_grant")
async def token_request_with_another_redirect_uri() -> Outcome:
    server = asd.AS()
    code = await server.code()
    return await as_error(await server.redeem(code, redirect_uri="http://127.0.0.1:1/callback"))


@row("as", "invalid_grant")
async def token_request_for_another_resource() -> Outcome:
    server = asd.AS()
    code = await server.code()
    return await as_error(await server.redeem(code, resource=asd.OTHER_RESOURCE))


@row("as", "invalid_target")
async def authorization_for_an_unknown_resource() -> Outcome:
    return await as_error(await asd.AS().authorize(resource="https://evil.example.com/mcp"))


@row("as", "invalid_request")
async def two_client_authentication_methods() -> Outcome:
    server = asd.AS()
    form = {"grant_type": "client_credentials", "client_secret": asd.SECRET}
    auth = httpx.BasicAuth(asd.CONFIDENTIAL, asd.SECRET)
    request = server.http.build_request("POST", "/token", data=form)
    request.headers["authorization"] = auth._auth_header  # type: ignore[attr-defined]
    return await as_error(await server.http.send(request))


@row("as", "invalid_client")
async def wrong_client_secret() -> Outcome:
    server = asd.AS()
    return await as_error(await server.http.post(
        "/token", data={"grant_type": "client_credentials", "resource": asd.RESOURCE},
        auth=(asd.CONFIDENTIAL, "guess")))


def assertion(server: asd.AS, **over: Any) -> str:
    now = int(time.time())
    claims = {"iss": asd.KEYED, "sub": asd.KEYED, "aud": asd.ISSUER, "iat": now,
              "exp": now + 60, "jti": "same-jti-every-time", **over}
    return jwt.encode(claims, server.client_key.private_key, algorithm="ES256")


def assertion_form(value: str) -> dict[str, str]:
    return {"grant_type": "client_credentials", "resource": asd.RESOURCE,
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": value}


@row("as", "invalid_client")
async def client_assertion_replayed() -> Outcome:
    server = asd.AS()
    value = assertion(server)
    assert (await server.token(assertion_form(value))).status_code == 200
    return await as_error(await server.token(assertion_form(value)))


@row("as", "invalid_client")
async def client_assertion_for_another_audience() -> Outcome:
    server = asd.AS()
    return await as_error(await server.token(assertion_form(
        assertion(server, aud="https://other-as.example.com", jti="j2"))))


@row("as", "invalid_client")
async def client_assertion_with_an_exp_beyond_any_date() -> Outcome:
    # A JSON integer of 400 digits is a valid JSON number and "in the future": before,
    # float() of it in the replay bookkeeping raised OverflowError (a 500).
    server = asd.AS()
    return await as_error(await server.token(assertion_form(
        assertion(server, exp=10**400, jti="j-huge-exp"))))


@row("as", "invalid_grant")
async def refresh_token_reused_after_rotation() -> Outcome:
    server = asd.AS()
    code = await server.code()
    first = (await server.redeem(code)).json()["refresh_token"]
    form = {"grant_type": "refresh_token", "refresh_token": first, "client_id": asd.PUBLIC}
    assert (await server.token(form)).status_code == 200
    return await as_error(await server.token(form))


@row("as", "invalid_dpop_proof")
async def token_endpoint_proof_for_another_url() -> Outcome:
    server = asd.AS()
    code = await server.code()
    proof = DPoPKey.generate().proof("POST", "https://elsewhere.example.com/token")
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": asd.REDIRECT,
            "code_verifier": server.verifier, "client_id": asd.PUBLIC}
    return await as_error(await server.token(form, {"dpop": proof}))


@row("as", "invalid_dpop_proof")
async def token_endpoint_proof_replayed() -> Outcome:
    server = asd.AS()
    key = DPoPKey.generate()
    proof = key.proof("POST", asd.ISSUER + "/token")
    code = await server.code()
    assert (await server.redeem(code)).status_code == 200  # the bearer way, fine
    code = await server.code()
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": asd.REDIRECT,
            "code_verifier": server.verifier, "client_id": asd.PUBLIC}
    assert (await server.token(form, {"dpop": proof})).json()["token_type"] == "DPoP"
    code = await server.code()
    form.update(code=code, code_verifier=server.verifier)
    return await as_error(await server.token(form, {"dpop": proof}))


@row("as", "invalid_redirect_uri")
async def registration_with_a_plain_http_redirect() -> Outcome:
    server = asd.AS()
    response = await server.http.post("/register", json={
        "client_name": "x", "redirect_uris": ["http://evil.example.com/cb"],
        "token_endpoint_auth_method": "none", "application_type": "native"})
    body = response.json()
    return Outcome(body.get("error"), issued="client_id" in body)


def redirect_row(uri: str) -> Callable[[], Awaitable[Outcome]]:
    async def run() -> Outcome:
        # PUBLIC registered http://127.0.0.1/callback; a browser would go elsewhere.
        response = await asd.AS().authorize(redirect_uri=uri)
        outcome = await as_error(response)
        outcome.sent_on = response.status_code in (301, 302, 303, 307, 308)
        return outcome
    return run


for _name, _uri in [
    ("redirect-uri-backslash-before-userinfo", "http://attacker.invalid\\@127.0.0.1/callback"),
    ("redirect-uri-with-userinfo", "http://attacker.invalid@127.0.0.1/callback"),
    ("redirect-uri-with-a-fragment", "http://127.0.0.1/callback#frag"),
    ("redirect-uri-with-a-tab", "http://127.0.0.1/call\tback"),
    ("redirect-uri-with-a-space", "http://127.0.0.1/callback "),
    ("redirect-uri-uppercase-scheme", "HTTP://127.0.0.1/callback"),
    ("redirect-uri-port-zero", "http://127.0.0.1:0/callback"),
    ("redirect-uri-localhost-for-a-loopback-ip", "http://localhost:4321/callback"),
    ("redirect-uri-percent-encoded-host", "http://127.0.0.1%2f@attacker.invalid/callback"),
]:
    ROWS.append(Row(_name, "as", redirect_row(_uri), "invalid_request"))


@row("as", "invalid_redirect_uri")
async def registration_with_a_space_in_a_redirect() -> Outcome:
    response = await asd.AS().http.post("/register", json={
        "redirect_uris": ["http://127.0.0.1/c b"],
        "token_endpoint_auth_method": "none", "application_type": "native"})
    body = response.json()
    return Outcome(body.get("error"), issued="client_id" in body)


def dpop_bound_server() -> asd.AS:
    server = asd.AS()
    server.server.clients["bound-app"] = RegisteredClient(
        "bound-app", secret=asd.SECRET, dpop_bound=True)
    server.server.clients["bound-keyed"] = RegisteredClient(
        "bound-keyed", public_key=server.client_key.public_key, dpop_bound=True)
    return server


@row("as", "invalid_dpop_proof")
async def dpop_bound_client_with_basic_and_no_proof() -> Outcome:
    server = dpop_bound_server()
    return await as_error(await server.http.post(
        "/token", data={"grant_type": "client_credentials", "resource": asd.RESOURCE},
        auth=("bound-app", asd.SECRET)))


@row("as", "invalid_dpop_proof")
async def dpop_bound_client_with_an_assertion_and_no_proof() -> Outcome:
    server = dpop_bound_server()
    value = assertion(server, iss="bound-keyed", sub="bound-keyed", jti="bound-1")
    return await as_error(await server.token(assertion_form(value)))  # no client_id in body


@row("as", "invalid_request")
async def grant_type_repeated() -> Outcome:
    server = asd.AS()
    return await as_error(await server.http.post(
        "/token", content=f"grant_type=client_credentials&grant_type=authorization_code"
                          f"&resource={asd.RESOURCE}",
        headers={"content-type": "application/x-www-form-urlencoded"},
        auth=(asd.CONFIDENTIAL, asd.SECRET)))


@row("as", "invalid_request")
async def grant_type_in_the_url_query() -> Outcome:
    server = asd.AS()
    return await as_error(await server.http.post(
        "/token?grant_type=client_credentials",
        data={"grant_type": "authorization_code", "code": "x", "resource": asd.RESOURCE},
        auth=(asd.CONFIDENTIAL, asd.SECRET)))


@row("as", "invalid_request")
async def client_secret_repeated() -> Outcome:
    server = asd.AS()
    return await as_error(await server.http.post(
        "/token", content=f"grant_type=client_credentials&client_id={asd.CONFIDENTIAL}"
                          f"&client_secret={asd.SECRET}&client_secret=guess",
        headers={"content-type": "application/x-www-form-urlencoded"}))


@row("as", "invalid_target")
async def two_resources_in_one_token_request() -> Outcome:
    server = asd.AS()
    return await as_error(await server.http.post(
        "/token", content=f"grant_type=client_credentials&resource={asd.RESOURCE}"
                          f"&resource={asd.OTHER_RESOURCE}",
        headers={"content-type": "application/x-www-form-urlencoded"},
        auth=(asd.CONFIDENTIAL, asd.SECRET)))


@row("as", "invalid_request")
async def authorization_parameter_repeated() -> Outcome:
    server = asd.AS()
    _, challenge_value = asd.pkce()
    url = ("/authorize?" + urlencode({
        "response_type": "code", "client_id": asd.PUBLIC, "redirect_uri": asd.REDIRECT,
        "code_challenge": challenge_value, "code_challenge_method": "S256",
        "resource": asd.RESOURCE, "scope": "mcp"}) + "&response_mode=query&response_mode=x")
    response = await server.http.get(url)
    outcome = await as_error(response)
    outcome.sent_on = "location" in response.headers
    return outcome


@row("as", "invalid_request")
async def introspection_token_repeated() -> Outcome:
    server = asd.AS()
    good = server.server.mint_opaque(sub="alice", aud=asd.RESOURCE)
    response = await server.http.post(
        "/introspect", content=f"token=junk&token={good}",
        headers={"content-type": "application/x-www-form-urlencoded"},
        auth=(asd.CONFIDENTIAL, asd.SECRET))
    body = response.json()
    return Outcome(body.get("error"), issued=body.get("active") is True)


@row("as", "invalid_client_metadata")
async def registration_member_repeated() -> Outcome:
    response = await asd.AS().http.post(
        "/register", headers={"content-type": "application/json"},
        content=b'{"redirect_uris": ["https://app.example.com/cb"], "grant_types": '
                b'["authorization_code"], "token_endpoint_auth_method": "client_secret_basic",'
                b' "grant_types": ["client_credentials"]}')
    body = response.json()
    return Outcome(body.get("error"), issued="client_id" in body)


@row("as", "invalid_client_metadata")
async def registration_asking_for_client_credentials() -> Outcome:
    response = await asd.AS().http.post("/register", json={
        "redirect_uris": ["https://app.example.com/cb"], "grant_types": ["client_credentials"],
        "token_endpoint_auth_method": "client_secret_basic", "scope": "mcp:admin"})
    body = response.json()
    return Outcome(body.get("error"), issued="client_id" in body)


@row("as", "invalid_scope")
async def client_credentials_for_an_unadvertised_scope() -> Outcome:
    server = asd.AS()
    return await as_error(await server.http.post(
        "/token", data={"grant_type": "client_credentials", "resource": asd.RESOURCE,
                        "scope": "mcp root"}, auth=(asd.CONFIDENTIAL, asd.SECRET)))


@row("as", "invalid_scope")
async def authorization_for_an_unadvertised_scope() -> Outcome:
    return await as_error(await asd.AS().authorize(scope="mcp root"))


# -- the resource server ----------------------------------------------------------------

KEY = DPoPKey.generate()
OTHER_KEY = DPoPKey.generate()


@dataclass
class RS:
    authorization_server: asd.AS
    middleware: BearerAuthMiddleware
    recorder: Recorder

    @classmethod
    def start(cls, **dpop: Any) -> RS:
        server = asd.AS()
        config = ResourceServerConfig(
            resource=asd.RESOURCE,
            authorization_servers=(IssuerConfig(asd.ISSUER, jwks_uri=asd.ISSUER + "/jwks"),),
            network=NetworkPolicy(allow_loopback=True),
            dpop=DPoPSettings(**dpop),
        )
        recorder = Recorder()
        validator = build_validator(config, client=server.http)
        return cls(server, BearerAuthMiddleware(recorder, config=config, validator=validator),
                   recorder)

    def bound_token(self, key: DPoPKey = KEY) -> str:
        return self.authorization_server.server.mint(
            sub="alice", aud=asd.RESOURCE, scope="mcp", cnf={"jkt": key.thumbprint},
            client_id=asd.PUBLIC)

    async def send(self, token: str, *, proof: str | None, scheme: str = "DPoP",
                   method: str = "POST") -> Outcome:
        headers = {"authorization": f"{scheme} {token}", "content-type": "application/json"}
        if proof is not None:
            headers["dpop"] = proof
        transport = httpx.ASGITransport(self.middleware)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            response = await c.request(method, "/mcp", headers=headers,
                                       content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        if response.status_code == 200:
            return Outcome(None, sent_on=bool(self.recorder.calls))
        error = response.json().get("error")
        if response.status_code == 401 and "dpop-nonce" in response.headers:
            assert 'error="use_dpop_nonce"' in response.headers["www-authenticate"]
        return Outcome(error, sent_on=bool(self.recorder.calls))


def proof(key: DPoPKey, token: str, *, method: str = "POST", url: str = asd.RESOURCE,
          **claims: Any) -> str:
    if not claims:
        return key.proof(method, url, access_token=token)
    base = jwt.decode(key.proof(method, url, access_token=token),
                      options={"verify_signature": False})
    base.update(claims)
    return jwt.encode(base, key.private_key, algorithm=key.alg,
                      headers={"typ": "dpop+jwt", "jwk": key.public_jwk})


@row("rs", "invalid_dpop_proof")
async def proof_replayed() -> Outcome:
    rs = RS.start()
    token = rs.bound_token()
    value = proof(KEY, token)
    assert (await rs.send(token, proof=value)).error is None
    rs.recorder.calls.clear()
    return await rs.send(token, proof=value)


@row("rs", "invalid_dpop_proof")
async def proof_signed_with_another_key() -> Outcome:
    rs = RS.start()
    token = rs.bound_token()
    return await rs.send(token, proof=proof(OTHER_KEY, token))


@row("rs", "invalid_dpop_proof")
async def proof_for_another_url() -> Outcome:
    rs = RS.start()
    token = rs.bound_token()
    return await rs.send(token, proof=proof(KEY, token, url="http://127.0.0.1:8000/other"))


@row("rs", "invalid_dpop_proof")
async def proof_for_another_method() -> Outcome:
    rs = RS.start()
    token = rs.bound_token()
    return await rs.send(token, proof=proof(KEY, token, method="GET"))


@row("rs", "invalid_dpop_proof")
async def proof_stale() -> Outcome:
    rs = RS.start()
    token = rs.bound_token()
    return await rs.send(token, proof=proof(KEY, token, iat=int(time.time()) - 3600))


@row("rs", "invalid_dpop_proof")
async def proof_for_another_token() -> Outcome:
    rs = RS.start()
    token = rs.bound_token()
    return await rs.send(token, proof=proof(KEY, rs.bound_token()))


@row("rs", "invalid_dpop_proof")
async def proof_missing() -> Outcome:
    rs = RS.start()
    return await rs.send(rs.bound_token(), proof=None)


@row("rs", "invalid_token")
async def bound_token_sent_as_bearer() -> Outcome:
    rs = RS.start()
    token = rs.bound_token()
    return await rs.send(token, proof=proof(KEY, token), scheme="Bearer")


@row("rs", "invalid_token")
async def dpop_scheme_with_an_unbound_token() -> Outcome:
    rs = RS.start()
    token = rs.authorization_server.server.mint(sub="alice", aud=asd.RESOURCE, scope="mcp")
    return await rs.send(token, proof=proof(KEY, token))


@row("rs", "use_dpop_nonce")
async def nonce_required_but_missing() -> Outcome:
    rs = RS.start(nonce_secret="00" * 16)
    token = rs.bound_token()
    return await rs.send(token, proof=proof(KEY, token))


@row("rs", "invalid_dpop_proof")
async def bearer_token_where_dpop_is_required() -> Outcome:
    rs = RS.start(required=True)
    token = rs.authorization_server.server.mint(sub="alice", aud=asd.RESOURCE, scope="mcp")
    return await rs.send(token, proof=None, scheme="Bearer")


def test_the_table_is_large_enough() -> None:
    assert len(ROWS) >= 30
    assert len({r.id for r in ROWS}) == len(ROWS)
    assert {r.side for r in ROWS} == {"client", "as", "rs"}


@pytest.mark.parametrize("case", ROWS, ids=[f"{r.side}:{r.id}" for r in ROWS])
async def test_bad_input_is_refused(case: Row) -> None:
    outcome = await case.run()
    assert outcome.error == case.error
    assert not outcome.issued, "something was issued"
    assert not outcome.sent_on, "something was sent on"


async def test_control_a_good_dpop_request_goes_through() -> None:
    rs = RS.start()
    token = rs.bound_token()
    outcome = await rs.send(token, proof=proof(KEY, token))
    assert outcome.error is None and outcome.sent_on  # the handler ran


# -- every refusal of an insecure mode names the switch that allows it -------------------

LOOPBACK_SWITCH = "NetworkPolicy(allow_loopback=True)"


@pytest.mark.parametrize(("url", "policy", "switch"), [
    ("http://127.0.0.1:8000/token", NetworkPolicy(), LOOPBACK_SWITCH),
    ("http://localhost/jwks", NetworkPolicy(), LOOPBACK_SWITCH),
    ("http://as.example.com/token", NetworkPolicy(allow_loopback=True), "use https"),
    ("https://127.0.0.1/token", NetworkPolicy(), LOOPBACK_SWITCH),
    ("https://10.1.2.3/token", NetworkPolicy(), "NetworkPolicy(allow_private_networks=True)"),
])
def test_a_refused_url_names_the_switch(url: str, policy: NetworkPolicy, switch: str) -> None:
    with pytest.raises(UnsafeUrl) as info:
        check_url(url, policy)
    assert switch in str(info.value)


@pytest.mark.parametrize("network", [NetworkPolicy(), NetworkPolicy(allow_loopback=True)])
@pytest.mark.parametrize("resource", ["http://127.0.0.1:8000/mcp", "http://mcp.example.com/mcp"])
def test_an_http_resource_is_refused_with_the_switch_named(
    resource: str, network: NetworkPolicy
) -> None:
    if network.allow_loopback and "127.0.0.1" in resource:
        ResourceServerConfig(resource=resource, authorization_servers=(
            IssuerConfig(ISSUER, jwks_uri=ISSUER + "/jwks"),), network=network)
        return
    with pytest.raises(ConfigurationError) as info:
        ResourceServerConfig(resource=resource, authorization_servers=(
            IssuerConfig(ISSUER, jwks_uri=ISSUER + "/jwks"),), network=network)
    message = str(info.value)
    assert LOOPBACK_SWITCH in message and "MCPCORE_AUTH_ALLOW_LOOPBACK=1" in message


async def test_the_oauth_client_names_the_switch_for_a_loopback_authorization_server() -> None:
    """What a new user meets first: ``OAuth(...)`` against a local server, no switch."""
    with LoopbackServer(lambda base: sdk_authorization_server(base, InMemoryProvider())) as srv:
        auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()))
        with pytest.raises(OAuthClientError) as plain:
            await auth.authorize(srv.url + "/mcp")
        # https to a name that resolves to loopback: refused at connect time, and said so
        with pytest.raises(OAuthClientError) as resolved:
            await auth.authorize(f"https://localhost:{srv.port}/mcp")
    assert LOOPBACK_SWITCH in str(plain.value)
    assert LOOPBACK_SWITCH in str(resolved.value)
