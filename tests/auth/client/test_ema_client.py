"""The client's ID-JAG request, sans-I/O: the request it builds and how it reads answers
(canned responses in, as the STYLE guide has it for OAuth client steps)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qs

import httpx
import jwt
import pytest

from mcpcore.auth.client.credentials import ClientInfo, MemoryCredentialStore, TokenSet
from mcpcore.auth.client.discovery import AuthServerMetadata
from mcpcore.auth.client.ema_client import (
    ID_TOKEN_TYPE,
    EnterpriseGrant,
    id_jag_request,
    parse_id_jag_response,
)
from mcpcore.auth.client.grants import GrantContext
from mcpcore.auth.client.steps import Fetch, run_flow
from mcpcore.auth.client_auth import ClientSecretBasic, ClientSecretPost, PrivateKeyJwt
from mcpcore.auth.errors import DiscoveryError, IdJagRequestFailed, TokenRequestFailed
from mcpcore.auth.issuer.authorization_server import SigningKey
from mcpcore.auth.terms import ID_JAG_TOKEN_TYPE, JWT_BEARER_GRANT
from mcpcore.auth.times import MAX_TOKEN_LIFETIME
from mcpcore.auth.urls import NetworkPolicy

IDP = "https://idp.example.com"
AS = "https://auth.example.com"
MCP = "https://mcp.example.com/mcp"
ID_TOKEN = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln"
ID_JAG = "eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.eyJzdWIiOiJ1In0.c2ln"


def form_of(request: httpx.Request) -> dict[str, list[str]]:
    return parse_qs(request.content.decode())


def build(**over: Any) -> httpx.Request:
    settings: dict[str, Any] = {
        "subject_token": ID_TOKEN, "audience": AS, "resource": MCP,
        "scopes": frozenset({"files:read", "files:write"}),
        "client_auth": ClientSecretBasic("chat idp", "s3cr=t"), "idp_issuer": IDP,
    }
    settings.update(over)
    return id_jag_request(IDP + "/token", **settings)


def test_the_request_is_the_profile_exactly() -> None:
    request = build()
    assert request.method == "POST" and str(request.url) == IDP + "/token"
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert form_of(request) == {
        "grant_type": ["urn:ietf:params:oauth:grant-type:token-exchange"],
        "requested_token_type": [ID_JAG_TOKEN_TYPE],
        "audience": [AS],
        "resource": [MCP],
        "subject_token": [ID_TOKEN],
        "subject_token_type": [ID_TOKEN_TYPE],
        "scope": ["files:read files:write"],
        "client_id": ["chat idp"],  # identification beside Basic (RFC 6749 §3.2.1)
    }
    # RFC 6749 §2.3.1: the id and secret are form-encoded before base64.
    basic = request.headers["authorization"].removeprefix("Basic ")
    assert base64.b64decode(basic) == b"chat+idp:s3cr%3Dt"


def test_no_scope_parameter_when_no_scopes() -> None:
    assert "scope" not in form_of(build(scopes=frozenset()))


def test_post_and_private_key_jwt_client_auth_at_the_idp() -> None:
    assert form_of(build(client_auth=ClientSecretPost("chat", "s")))["client_secret"] == ["s"]
    key = SigningKey.generate("ES256")
    form = form_of(build(client_auth=PrivateKeyJwt("chat", key.private_key)))
    claims = jwt.decode(form["client_assertion"][0], key.public_key, algorithms=["ES256"],
                        audience=IDP)
    assert claims["iss"] == claims["sub"] == "chat"  # aud is the IdP, not the MCP server


@pytest.mark.parametrize("over", [{"subject_token": ""}, {"audience": ""}, {"resource": ""}])
def test_missing_inputs_fail_before_anything_is_sent(over: dict[str, Any]) -> None:
    with pytest.raises(IdJagRequestFailed):
        build(**over)


def answer(status: int = 200, body: Any = None, content: bytes | None = None) -> httpx.Response:
    if content is not None:
        return httpx.Response(status, content=content)
    return httpx.Response(status, json=body)


GOOD = {"issued_token_type": ID_JAG_TOKEN_TYPE, "access_token": ID_JAG, "token_type": "N_A",
        "expires_in": 300, "scope": "files:read"}


def test_a_good_answer() -> None:
    id_jag = parse_id_jag_response(answer(body=GOOD), audience=AS, resource=MCP,
                                   requested=frozenset({"files:read", "files:write"}),
                                   clock=lambda: 1000.0)
    assert id_jag.assertion == ID_JAG and id_jag.scopes == {"files:read"}
    assert id_jag.expires_at == 1300.0 and (id_jag.audience, id_jag.resource) == (AS, MCP)
    assert ID_JAG not in repr(id_jag) and "sha256:" in repr(id_jag)


def test_no_scope_in_the_answer_means_what_was_asked() -> None:
    body = {k: v for k, v in GOOD.items() if k not in ("scope", "expires_in")}
    id_jag = parse_id_jag_response(answer(body=body), audience=AS, resource=MCP,
                                   requested=frozenset({"files:read"}))
    assert id_jag.scopes == {"files:read"} and id_jag.expires_at is None


def test_a_huge_lifetime_is_clamped() -> None:
    content = (b'{"issued_token_type": "' + ID_JAG_TOKEN_TYPE.encode()
               + b'", "access_token": "a.b.c", "expires_in": 1' + b"0" * 400 + b"}")
    id_jag = parse_id_jag_response(answer(content=content), audience=AS, resource=MCP,
                                   clock=lambda: 1000.0)  # was a bare OverflowError
    assert id_jag.expires_at == 1000.0 + MAX_TOKEN_LIFETIME


@pytest.mark.parametrize(("response", "message", "error"), [
    (answer(400, {"error": "access_denied", "error_description": "no"}), "400, access_denied",
     "access_denied"),
    (answer(400, {"error": "insufficient_user_authentication"}), "insufficient_user",
     "insufficient_user_authentication"),
    (answer(401, {"error": "invalid_client"}), "401", "invalid_client"),
    (answer(400, {"error": "<script>"}), r"\(400\)", None),
    (answer(503, content=b"<html>down</html>"), r"\(503\)", None),
    (answer(200, content=b"not json"), "not a JSON object", None),
    (answer(200, [GOOD]), "not a JSON object", None),
    (answer(200, {**GOOD, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}),
     "other than an ID-JAG", None),
    (answer(200, {k: v for k, v in GOOD.items() if k != "issued_token_type"}),
     "other than an ID-JAG", None),
    (answer(200, {**GOOD, "access_token": ""}), "no usable", None),
    (answer(200, {**GOOD, "access_token": 7}), "no usable", None),
    (answer(200, {**GOOD, "access_token": "x" * 20_000}), "no usable", None),
    (answer(200, {**GOOD, "expires_in": -5}), "expires_in must be a non-negative", None),
    (answer(200, {**GOOD, "expires_in": "soon"}), "expires_in must be a number", None),
])
def test_refusals_and_wrong_answers(response: httpx.Response, message: str,
                                    error: str | None) -> None:
    with pytest.raises(IdJagRequestFailed, match=message) as info:
        parse_id_jag_response(response, audience=AS, resource=MCP)
    assert info.value.error == error


# -- EnterpriseGrant, driven with canned answers (sans-I/O) -----------------------------
AS_TOKEN = AS + "/token"
METADATA = AuthServerMetadata(issuer=AS, token_endpoint=AS_TOKEN,
                              grant_types_supported=(JWT_BEARER_GRANT,),
                              token_endpoint_auth_methods_supported=("client_secret_basic",))


def context(metadata: AuthServerMetadata = METADATA,
            scopes: frozenset[str] = frozenset({"files:read", "files:write"})) -> GrantContext:
    return GrantContext(server_url=MCP, resource=MCP, metadata=metadata, scopes=scopes,
                        store=MemoryCredentialStore(), network=NetworkPolicy(),
                        clock=lambda: 1000.0)


def enterprise(**over: Any) -> EnterpriseGrant:
    settings: dict[str, Any] = {
        "idp_issuer": IDP, "idp_token_endpoint": IDP + "/token",
        "idp_client": ClientInfo("chat-idp", client_secret="idp-secret"),
        "id_token": lambda: ID_TOKEN,
        "client": ClientInfo("chat-app", client_secret="as-secret"),
    }
    settings.update(over)
    return EnterpriseGrant(**settings)


class Answers:
    """Canned answers by URL; records what was sent."""

    def __init__(self, **by_url: httpx.Response) -> None:
        self.by_url = by_url
        self.sent: list[httpx.Request] = []

    def __call__(self, step: Any) -> httpx.Response:
        assert isinstance(step, Fetch)
        self.sent.append(step.request)
        return self.by_url[str(step.request.url)]


def test_the_grant_asks_the_idp_then_the_authorization_server() -> None:
    answers = Answers(**{
        IDP + "/token": answer(body={**GOOD, "scope": "files:read"}),  # the IdP narrowed it
        AS_TOKEN: answer(body={"access_token": "at-1", "token_type": "Bearer",
                               "expires_in": 300, "scope": "files:read"}),
    })
    token = run_flow(enterprise().obtain(context()), answers)
    assert token.access_token == "at-1" and token.scopes == {"files:read"}
    exchange, bearer = answers.sent
    assert form_of(exchange)["audience"] == [AS] and form_of(exchange)["resource"] == [MCP]
    assert form_of(exchange)["scope"] == ["files:read files:write"]
    assert base64.b64decode(exchange.headers["authorization"][6:]) == b"chat-idp:idp-secret"
    assert form_of(bearer) == {"grant_type": [JWT_BEARER_GRANT], "assertion": [ID_JAG],
                               "resource": [MCP], "scope": ["files:read"],
                               "client_id": ["chat-app"]}
    assert base64.b64decode(bearer.headers["authorization"][6:]) == b"chat-app:as-secret"


def test_credentials_per_issuer_and_the_idp_client_alone() -> None:
    answers = Answers(**{IDP + "/token": answer(body={**GOOD, "scope": None}),
                         AS_TOKEN: answer(body={"access_token": "t", "token_type": "Bearer"})})
    grant = enterprise(client={AS: ClientInfo("chat-app", client_secret="s")},
                       idp_client=ClientInfo("chat-idp"), id_token=ID_TOKEN)
    run_flow(grant.obtain(context(scopes=frozenset())), answers)
    exchange, bearer = answers.sent
    assert "authorization" not in exchange.headers
    assert form_of(exchange)["client_id"] == ["chat-idp"] and "scope" not in form_of(exchange)
    assert "scope" not in form_of(bearer)
    with pytest.raises(DiscoveryError, match="no client registration"):
        run_flow(enterprise(client={"https://other.example": ClientInfo("x")}).obtain(
            context()), Answers())


def test_refusals_end_the_flow_with_nothing_sent_on() -> None:
    plain = AuthServerMetadata(issuer=AS, token_endpoint=AS_TOKEN)
    with pytest.raises(DiscoveryError, match="JWT-bearer"):
        run_flow(enterprise().obtain(context(plain)), Answers())
    refused = Answers(**{IDP + "/token": answer(400, {"error": "access_denied"})})
    with pytest.raises(IdJagRequestFailed) as info:
        run_flow(enterprise().obtain(context()), refused)
    assert info.value.error == "access_denied" and len(refused.sent) == 1
    as_refused = Answers(**{IDP + "/token": answer(body=GOOD),
                            AS_TOKEN: answer(400, {"error": "invalid_grant"})})
    with pytest.raises(TokenRequestFailed) as failed:
        run_flow(enterprise().obtain(context()), as_refused)
    assert failed.value.error == "invalid_grant" and len(as_refused.sent) == 2
    assert run_flow(enterprise().refresh(context(), TokenSet("t", AS, MCP)), Answers()) is None
