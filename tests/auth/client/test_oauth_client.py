"""The OAuth client's sans-I/O flows, fed canned responses (``oauth_doubles.FakeNet``):
discovery order and validation, registration preference, the authorization request,
the RFC 9207 table, token requests and client authentication, refresh, step-up, DPoP
nonces at the token endpoint."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, parse_qsl, unquote, urlencode, urlsplit

import httpx
import jwt
import pytest

from mcpcore.auth import (
    AuthorizationCodeGrant,
    AuthorizationRejected,
    ClientCredentialsGrant,
    ClientInfo,
    DiscoveryError,
    DPoPKey,
    HeadlessUserAgent,
    JwtBearerGrant,
    MemoryCredentialStore,
    NetworkPolicy,
    OAuth,
    OAuthSession,
    Registration,
    StepUpFailed,
    TokenRequestFailed,
)
from mcpcore.auth.challenges import parse_challenges
from mcpcore.auth.client.code_flow import PendingAuthorization, s256_challenge, validate_response
from mcpcore.auth.client.discovery import as_metadata_candidates, prm_candidates, resource_matches
from mcpcore.auth.client.steps import AuthFlow, OpenAuthorization
from mcpcore.auth.client_auth import ClientSecretBasic
from mcpcore.auth.dpop import DPoPPolicy, verify_proof
from mcpcore.auth.times import MAX_TOKEN_LIFETIME
from tests.auth.oauth_doubles import (
    ISSUER,
    PRM_URL,
    REDIRECT,
    SERVER,
    FakeNet,
    challenge,
    form_of,
    json_response,
    run,
    s256,
    unauthorized,
)
from tests.auth.sdk_authorization_server import InMemoryProvider, sdk_authorization_server
from tests.auth.support import LoopbackServer

CIMD = "https://client.example.com/metadata.json"


def scoped(scope: str) -> httpx.Response:
    return challenge(value=f'Bearer scope="{scope}", resource_metadata="{PRM_URL}"')


def session(grant: object | None = None, **kwargs: object) -> OAuthSession:
    return OAuthSession(SERVER, grant or AuthorizationCodeGrant(HeadlessUserAgent()),  # type: ignore[arg-type]
                        **kwargs)  # type: ignore[arg-type]


# -- WWW-Authenticate -------------------------------------------------------------------

@pytest.mark.parametrize(("header", "expected"), [
    ('Bearer realm="a, b", scope="x y"', [("bearer", {"realm": "a, b", "scope": "x y"})]),
    ('Bearer error="invalid_token", DPoP algs="ES256"',
     [("bearer", {"error": "invalid_token"}), ("dpop", {"algs": "ES256"})]),
    ('bEaReR Scope=mcp', [("bearer", {"scope": "mcp"})]),
    ('Bearer title="say \\"hi\\", ok"', [("bearer", {"title": 'say "hi", ok'})]),
    ("Basic YWxhZGRpbjpvcGVuc2VzYW1l, Bearer", [("basic", {}), ("bearer", {})]),
    (',,, Bearer , ', [("bearer", {})]),
    ('"junk", Bearer a=b', [("bearer", {"a": "b"})]),
])
def test_www_authenticate_parsing(header: str, expected: list[tuple[str, dict[str, str]]]) -> None:
    got = [(c.scheme, dict(c.params)) for c in parse_challenges(header)]
    assert got == expected


def test_challenges_across_header_lines() -> None:
    got = parse_challenges(['Bearer scope="a"', 'DPoP algs="ES256", error="use_dpop_nonce"'])
    assert [c.scheme for c in got] == ["bearer", "dpop"]
    assert got[1].get("error") == "use_dpop_nonce"


# -- discovery --------------------------------------------------------------------------

def test_prm_candidates_follow_the_spec_order() -> None:
    assert prm_candidates("https://h/a/mcp", "https://h/x.json") == [
        "https://h/x.json", "https://h/.well-known/oauth-protected-resource/a/mcp",
        "https://h/.well-known/oauth-protected-resource"]
    assert prm_candidates("https://h") == ["https://h/.well-known/oauth-protected-resource"]


def test_as_metadata_candidates_insert_the_path_and_never_probe_root_for_a_path() -> None:
    assert as_metadata_candidates("https://a/t1/") == [
        "https://a/.well-known/oauth-authorization-server/t1",
        "https://a/.well-known/openid-configuration/t1",
        "https://a/t1/.well-known/openid-configuration"]
    assert as_metadata_candidates("https://a") == [
        "https://a/.well-known/oauth-authorization-server",
        "https://a/.well-known/openid-configuration"]


@pytest.mark.parametrize(("resource", "ok"), [
    ("https://mcp.example.com/mcp", True),
    ("https://mcp.example.com", True),           # a root PRM names the origin
    ("HTTPS://MCP.example.com:443/mcp", True),
    ("https://mcp.example.com/mcp/", True),
    ("https://mcp.example.com/mc", False),       # not a segment-wise prefix
    ("https://mcp.example.com/other", False),
    ("https://mcp.example.com:8443/mcp", False),
    ("http://mcp.example.com/mcp", False),
    ("https://evil.example.com/mcp", False),
    ("https://u@mcp.example.com/mcp", False),
    ("https://mcp.example.com/mcp#x", False),
])
def test_resource_matching(resource: str, ok: bool) -> None:
    assert resource_matches(resource, SERVER) is ok


def test_header_url_first_then_well_known_fallbacks() -> None:
    net = FakeNet()
    custom = "https://mcp.example.com/custom/prm.json"
    net.routes[("GET", custom)] = net.routes.pop(("GET", PRM_URL))
    s = session()
    unauthorized(s, net, challenge(value=f'Bearer resource_metadata="{custom}"'))
    assert [str(r.url) for r in net.requests[:1]] == [custom]
    assert s.resource is not None and s.resource.metadata_url == custom


def test_path_based_prm_before_root_and_oidc_for_a_path_issuer() -> None:
    issuer = "https://as.example.com/tenant1"
    net = FakeNet(issuer=issuer)
    meta = net.routes.pop(("GET", "https://as.example.com/.well-known/oauth-authorization-server/tenant1"))
    net.routes[("GET", "https://as.example.com/tenant1/.well-known/openid-configuration")] = meta
    s = session()
    unauthorized(s, net, challenge(value="Bearer"))
    urls = [str(r.url) for r in net.requests if r.method == "GET"]
    assert urls[0] == PRM_URL
    assert urls[1:4] == as_metadata_candidates(issuer)
    assert "https://as.example.com/.well-known/oauth-authorization-server" not in urls
    assert s.metadata is not None and s.metadata.issuer == issuer


def test_code_challenge_methods_missing_means_no_authorization() -> None:
    net = FakeNet(metadata={"code_challenge_methods_supported": None})
    with pytest.raises(DiscoveryError, match="S256"):
        unauthorized(session(), net)
    assert net.authorizations == [] and net.sent("POST", "/token") == []


# -- registration -------------------------------------------------------------------------

def test_dcr_sends_application_type_and_refresh_grant() -> None:
    net = FakeNet()
    unauthorized(session(), net)
    [register] = net.sent("POST", "/register")
    body = register.read()
    assert b'"application_type":"native"' in body and b'"refresh_token"' in body
    assert b'"token_endpoint_auth_method":"none"' in body
    assert net.authorizations[0]["client_id"] == "registered-client"


def test_cimd_preferred_over_dcr_when_supported() -> None:
    net = FakeNet(metadata={"client_id_metadata_document_supported": True})
    grant = AuthorizationCodeGrant(HeadlessUserAgent(), Registration(metadata_document_url=CIMD))
    unauthorized(session(grant), net)
    assert net.sent("POST", "/register") == []
    assert net.authorizations[0]["client_id"] == CIMD
    assert form_of(net.sent("POST", "/token")[0])["client_id"] == CIMD


def test_pre_registered_credentials_win_and_use_basic() -> None:
    net = FakeNet(metadata={"token_endpoint_auth_methods_supported": ["client_secret_basic"]})
    static = ClientInfo("pre id", client_secret="s&cret:x")
    grant = AuthorizationCodeGrant(HeadlessUserAgent(), Registration(static=static))
    unauthorized(session(grant), net)
    assert net.sent("POST", "/register") == []
    [token] = net.sent("POST", "/token")
    pair = base64.b64decode(token.headers["authorization"].split()[1]).decode()
    assert [unquote(p.replace("+", " ")) for p in pair.split(":")] == ["pre id", "s&cret:x"]
    assert "client_secret" not in form_of(token) and form_of(token)["client_id"] == "pre id"


def test_static_credentials_are_bound_to_their_first_issuer() -> None:
    registration = Registration(static=ClientInfo("only-for-as1", client_secret="x"),
                                dynamic=False)
    store = MemoryCredentialStore()
    grant = AuthorizationCodeGrant(HeadlessUserAgent(), registration)
    unauthorized(session(grant, store=store), FakeNet())
    net2 = FakeNet(issuer="https://as2.example.com")
    from mcpcore.auth import RegistrationError

    with pytest.raises(RegistrationError):
        unauthorized(session(grant, store=store), net2)
    assert net2.authorizations == []


@pytest.mark.parametrize(("method", "where"), [
    ("client_secret_post", "body"), ("client_secret_basic", "header"), ("none", "none")])
def test_dcr_token_endpoint_auth_method_is_honoured(method: str, where: str) -> None:
    net = FakeNet(metadata={"token_endpoint_auth_methods_supported": [method]})
    net.routes[("POST", ISSUER + "/register")] = lambda r: json_response(201, {
        "client_id": "c", "client_secret": "s" if method != "none" else None,
        "token_endpoint_auth_method": method})
    unauthorized(session(), net)
    [token] = net.sent("POST", "/token")
    form = form_of(token)
    assert ("authorization" in token.headers) == (where == "header")
    assert ("client_secret" in form) == (where == "body")
    assert form["resource"] == SERVER


# -- the authorization request ----------------------------------------------------------

def test_authorization_request_parameters() -> None:
    net = FakeNet()
    unauthorized(session(), net, scoped("mcp:basic"))
    query = net.authorizations[0]
    assert query["response_type"] == "code" and query["code_challenge_method"] == "S256"
    assert len(query["state"]) >= 32 and query["resource"] == SERVER
    assert query["scope"] == "mcp:basic" and query["redirect_uri"] == REDIRECT
    form = form_of(net.sent("POST", "/token")[0])
    assert s256(form["code_verifier"]) == query["code_challenge"]
    assert form["redirect_uri"] == REDIRECT and form["resource"] == query["resource"]


def test_scope_falls_back_to_scopes_supported_then_is_omitted() -> None:
    net = FakeNet(prm={"scopes_supported": ["a", "b"]})
    unauthorized(session(), net, challenge(value="Bearer"))
    assert net.authorizations[0]["scope"] == "a b"
    net = FakeNet()
    unauthorized(session(), net, challenge(value="Bearer"))
    assert "scope" not in net.authorizations[0]


@pytest.mark.parametrize(("listed", "asked"), [(True, True), (False, False)])
def test_offline_access_only_when_the_server_lists_it(listed: bool, asked: bool) -> None:
    net = FakeNet(metadata={"scopes_supported": ["mcp", "offline_access"] if listed else ["mcp"]})
    unauthorized(session(), net, scoped("mcp"))
    assert ("offline_access" in net.authorizations[0]["scope"].split()) is asked


# -- RFC 9207: the four rows, plus normalisation ------------------------------------------

def pending(supported: bool) -> PendingAuthorization:
    return PendingAuthorization.start(
        issuer="http://localhost:9", iss_parameter_supported=supported, client_id="c",
        redirect_uri=REDIRECT, resource=SERVER, scopes=())


@pytest.mark.parametrize(("supported", "iss", "ok"), [
    (True, "http://localhost:9", True),
    (True, None, False),
    (False, "http://localhost:9", True),
    (False, None, True),
    (False, "https://evil.example.com", False),
    (True, "http://localhost:9/", False),      # a trailing slash is another issuer
    (True, "http://LOCALHOST:9", False),       # no case folding
    (True, "http://localhost:09", False),      # no port normalisation
    (True, "http%3A%2F%2Flocalhost%3A9", False),  # decoded once, not twice
])
def test_iss_table(supported: bool, iss: str | None, ok: bool) -> None:
    record = pending(supported)
    params = {"code": "c", "state": record.state}
    if iss is not None:
        params["iss"] = iss
    url = f"{REDIRECT}?{urlencode(params)}"
    if ok:
        assert validate_response(record, url) == "c"
    else:
        with pytest.raises(AuthorizationRejected):
            validate_response(record, url)


def test_error_response_with_a_wrong_iss_is_not_acted_on() -> None:
    record = pending(True)
    url = f"{REDIRECT}?" + urlencode({"error": "access_denied", "state": record.state,
                                      "iss": "https://evil.example.com"})
    with pytest.raises(AuthorizationRejected) as info:
        validate_response(record, url)
    assert info.value.error is None and "access_denied" not in str(info.value)


def test_a_genuine_error_response_is_reported() -> None:
    record = pending(True)
    url = f"{REDIRECT}?" + urlencode({"error": "access_denied", "state": record.state,
                                      "iss": "http://localhost:9"})
    with pytest.raises(AuthorizationRejected) as info:
        validate_response(record, url)
    assert info.value.error == "access_denied"


def test_the_s256_challenge_is_rfc_7636s_example() -> None:
    """RFC 7636 Appendix B: the verifier and the challenge it gives."""
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert s256_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    record = pending(True)
    assert s256_challenge(record.code_verifier) == record.code_challenge


def test_the_authorization_url_keeps_the_endpoints_query_and_sends_each_parameter_once(
) -> None:
    """RFC 6749 §3.1 (the endpoint's query is kept) and §4.1.1, RFC 7636 §4.3, RFC 8707
    §2; the scope is one space-separated parameter, and absent when none is known."""
    record = PendingAuthorization.start(
        issuer="http://localhost:9", iss_parameter_supported=True, client_id="c d&e",
        redirect_uri=REDIRECT, resource=SERVER, scopes=("b:write", "a"))
    url = urlsplit(record.url("https://as.example.com/authorize?tenant=t%201"))
    assert (url.scheme, url.netloc, url.path) == ("https", "as.example.com", "/authorize")
    params = parse_qsl(url.query, keep_blank_values=True)
    assert params == [
        ("tenant", "t 1"), ("response_type", "code"), ("client_id", "c d&e"),
        ("redirect_uri", REDIRECT), ("scope", "a b:write"), ("state", record.state),
        ("code_challenge", record.code_challenge), ("code_challenge_method", "S256"),
        ("resource", SERVER)]
    bare = parse_qs(urlsplit(pending(True).url("https://as.example.com/a")).query,
                    keep_blank_values=True)
    assert "scope" not in bare


# -- tokens, refresh and step-up --------------------------------------------------------

def test_token_response_without_scope_means_the_requested_scopes() -> None:
    net = FakeNet()
    net.token = lambda form, request: json_response(
        200, {"access_token": "x", "token_type": "bearer"})
    s = session()
    unauthorized(s, net, scoped("a b"))
    assert s.token is not None and s.token.scopes == {"a", "b"} and s.token.expires_at is None


@pytest.mark.parametrize(("raw", "lifetime"), [
    (b"1" + b"0" * 400, MAX_TOKEN_LIFETIME),  # was a bare OverflowError
    (b"1e308", MAX_TOKEN_LIFETIME),
    (b'"3599"', 3599.0),  # a string of digits, as some servers send it
    (b"1.5", 1.5),
    (b"0", 0.0),
])
def test_a_token_lifetime_is_read_and_clamped(raw: bytes, lifetime: float) -> None:
    body = b'{"access_token": "x", "token_type": "Bearer", "expires_in": ' + raw + b"}"
    net = FakeNet()
    net.token = lambda form, request: httpx.Response(200, content=body)
    s = session(clock=lambda: 1000.0)
    unauthorized(s, net)
    assert s.token is not None and s.token.expires_at == 1000.0 + lifetime


def test_a_401_with_a_refresh_token_refreshes_and_keeps_resource() -> None:
    net = FakeNet()
    s = session()
    unauthorized(s, net)
    first = s.token
    run(s.on_unauthorized(challenge(), first), net)
    refresh = form_of(net.sent("POST", "/token")[-1])
    assert refresh["grant_type"] == "refresh_token" and refresh["refresh_token"] == "rt-1"
    assert refresh["resource"] == SERVER and len(net.authorizations) == 1
    assert s.token is not None and s.token.access_token == "at-2"


def test_a_failed_refresh_falls_back_to_authorizing_again() -> None:
    net = FakeNet()
    s = session()
    unauthorized(s, net)
    net.token = lambda form, r: (json_response(400, {"error": "invalid_grant"})
                                 if form["grant_type"] == "refresh_token"
                                 else json_response(200, {"access_token": "new",
                                                          "token_type": "Bearer"}))
    run(s.on_unauthorized(challenge(), s.token), net)
    assert len(net.authorizations) == 2 and s.token is not None
    assert s.token.access_token == "new"


def test_step_up_asks_for_the_union_and_never_scopes_supported() -> None:
    net = FakeNet(prm={"scopes_supported": ["decoy"]})
    s = session()
    unauthorized(s, net, scoped("mcp:basic"))
    forbidden = parse_challenges('Bearer error="insufficient_scope", scope="mcp:write"')[0]
    run(s.on_insufficient_scope(forbidden, s.token), net)
    assert set(net.authorizations[1]["scope"].split()) == {"mcp:basic", "mcp:write"}


def test_step_up_for_granted_scopes_stops_at_once() -> None:
    net = FakeNet()
    s = session()
    unauthorized(s, net, scoped("admin"))
    forbidden = parse_challenges('Bearer error="insufficient_scope", scope="admin"')[0]
    with pytest.raises(StepUpFailed):
        run(s.on_insufficient_scope(forbidden, s.token), net)
    assert len(net.authorizations) == 1


def test_migration_to_another_authorization_server_registers_again() -> None:
    net = FakeNet()
    store = MemoryCredentialStore()
    s = session(store=store)
    unauthorized(s, net)
    old = s.token
    net2 = FakeNet(issuer="https://as2.example.com")
    net2.routes[("POST", "https://as2.example.com/register")] = lambda r: json_response(
        201, {"client_id": "as2-client"})
    run(s.on_unauthorized(challenge(), old), net2)
    assert net2.sent("POST", "/register")  # re-registered at the new server
    assert net2.authorizations[0]["client_id"] == "as2-client"
    assert s.token is not None and s.token.issuer == "https://as2.example.com"
    assert store.client(ISSUER) is not None  # the old registration stays with its issuer


# -- other grants -------------------------------------------------------------------------

def test_client_credentials_with_private_key_jwt_has_the_issuer_as_audience() -> None:
    key = DPoPKey.generate()  # any EC key will do as a client key
    net = FakeNet(metadata={"token_endpoint_auth_methods_supported": ["private_key_jwt"]})
    grant = ClientCredentialsGrant(ClientInfo("machine", private_key=key.private_key))
    unauthorized(session(grant), net, scoped("s"))
    form = form_of(net.sent("POST", "/token")[0])
    assert form["grant_type"] == "client_credentials" and form["scope"] == "s"
    claims = jwt.decode(form["client_assertion"], key.private_key.public_key(),
                        algorithms=["ES256"], audience=ISSUER)
    assert claims["iss"] == claims["sub"] == "machine"


def test_jwt_bearer_rejection_is_final() -> None:
    net = FakeNet()
    net.token = lambda form, r: json_response(400, {"error": "invalid_grant"})
    with pytest.raises(TokenRequestFailed) as info:
        unauthorized(session(JwtBearerGrant("workload-jwt")), net)
    assert info.value.error == "invalid_grant"
    [only] = net.sent("POST", "/token")
    assert form_of(only)["assertion"] == "workload-jwt"


def test_jwt_bearer_assertion_can_come_from_a_flow() -> None:
    """How a token-exchange step (e.g. an ID-JAG from an IdP) plugs in ahead of the grant."""
    exchanged: list[str] = []

    def exchange(ctx):  # type: ignore[no-untyped-def]
        response = yield from __import__("mcpcore.auth.client.steps", fromlist=["fetch"]).fetch(
            httpx.Request("POST", "https://idp.example.com/token",
                          data={"audience": ctx.metadata.issuer}), ctx.network, what="exchange")
        exchanged.append(response.json()["access_token"])
        return exchanged[-1]

    net = FakeNet()
    net.routes[("POST", "https://idp.example.com/token")] = lambda r: json_response(
        200, {"access_token": "id-jag"})
    unauthorized(session(JwtBearerGrant(exchange)), net)
    assert form_of(net.sent("POST", "/token")[-1])["assertion"] == "id-jag"
    assert form_of(net.sent("POST", "/token")[0])["audience"] == ISSUER


# -- DPoP at the token endpoint ---------------------------------------------------------

def test_dpop_proof_and_one_nonce_retry_at_the_token_endpoint() -> None:
    key = DPoPKey.generate()
    net = FakeNet()
    seen: list[str | None] = []

    def token(form: dict[str, str], request: httpx.Request) -> httpx.Response:
        proof = verify_proof(request.headers["dpop"], method="POST",
                             url=ISSUER + "/token", now=key.clock(), policy=DPoPPolicy())
        seen.append(proof.nonce)
        if proof.nonce != "n1":
            return json_response(400, {"error": "use_dpop_nonce"}, {"dpop-nonce": "n1"})
        return json_response(200, {"access_token": "bound", "token_type": "DPoP"})

    net.token = token
    s = session(dpop=key)
    unauthorized(s, net)
    assert seen == [None, "n1"]
    assert s.token is not None and s.token.is_dpop
    request = httpx.Request("POST", SERVER + "?x=1")
    s.apply(request)
    assert request.headers["authorization"] == "DPoP bound"
    proof = verify_proof(request.headers["dpop"], method="POST", url=SERVER, now=key.clock(),
                         policy=DPoPPolicy(), access_token="bound", expected_jkt=key.thumbprint)
    assert proof.jkt == key.thumbprint


def test_dpop_token_without_a_proof_is_refused() -> None:
    net = FakeNet()
    net.token = lambda form, r: json_response(200, {"access_token": "x", "token_type": "DPoP"})
    with pytest.raises(TokenRequestFailed, match="DPoP"):
        unauthorized(session(), net)


def test_redirect_uri_query_is_parsed_once() -> None:
    # Sanity for the doubles: the honest redirect carries exactly what the AS sent.
    net = FakeNet()
    unauthorized(session(), net)
    assert parse_qs(urlsplit(net.authorizations[0]["redirect_uri"]).query) == {}


# -- interoperability: an authorization server on the official Python SDK's handlers ----

async def test_the_default_flow_gets_a_token_from_an_sdk_authorization_server() -> None:
    """The SDK's client authenticator reads ``client_id`` from the form body even under
    ``client_secret_basic`` (``401 invalid_client "Missing client_id"`` without it);
    RFC 6749 §2.3.1 and §3.2.1 let an authenticated client send it, so we do."""
    provider = InMemoryProvider()
    now = [1000.0]
    with LoopbackServer(lambda base: sdk_authorization_server(base, provider)) as server:
        auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()),
                     network=NetworkPolicy(allow_loopback=True), clock=lambda: now[0])
        token = await auth.authorize(server.url + "/mcp")
        [client] = provider.clients.values()
        assert client.token_endpoint_auth_method == "client_secret_basic"  # what DCR agreed
        assert token.access_token in provider.access_tokens
        now[0] += 3600  # expired: the refresh goes through the same client authentication
        session = auth.session(server.url + "/mcp")
        await auth.run(session.before_request())
    assert session.token is not None and session.token.access_token != token.access_token
    assert session.token.access_token in provider.access_tokens


def test_client_secret_basic_also_names_the_client_in_the_body() -> None:
    form: dict[str, str] = {}
    headers: dict[str, str] = {}
    ClientSecretBasic("the id", "the secret").apply(form, headers, audience=ISSUER)
    assert form == {"client_id": "the id"}  # never the secret: one method per request
    assert headers["authorization"].startswith("Basic ")


async def test_an_http_failure_in_the_user_agent_is_an_oauth_error() -> None:
    """The headless agent's own GETs failed with a raw httpx error, unlike every other
    fetch of the flow; a connect-time refusal keeps its reason (which names the switch)."""
    class Unreachable:
        redirect_uri = REDIRECT

        async def authorize(self, url: str, *, http: httpx.AsyncClient) -> str:
            raise httpx.ConnectError("loopback address refused (...)")

    def flow() -> AuthFlow[str]:
        redirect: str = yield OpenAuthorization(ISSUER + "/authorize?state=s", Unreachable())
        return redirect

    with pytest.raises(AuthorizationRejected, match=r"https://as\.example\.com failed"):
        await OAuth(AuthorizationCodeGrant(HeadlessUserAgent())).run(flow())
