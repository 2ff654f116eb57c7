"""The client's ID-JAG request, sans-I/O: the request it builds and how it reads answers
(canned responses in, as the STYLE guide has it for OAuth client steps)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qs

import httpx
import jwt
import pytest

from mcpcore.auth.authorization_server import SigningKey
from mcpcore.auth.downstream import ClientSecretBasic, ClientSecretPost, PrivateKeyJwt
from mcpcore.auth.ema_client import ID_TOKEN_TYPE, id_jag_request, parse_id_jag_response
from mcpcore.auth.errors import IdJagRequestFailed
from mcpcore.auth.idjag import ID_JAG_TOKEN_TYPE

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
])
def test_refusals_and_wrong_answers(response: httpx.Response, message: str,
                                    error: str | None) -> None:
    with pytest.raises(IdJagRequestFailed, match=message) as info:
        parse_id_jag_response(response, audience=AS, resource=MCP)
    assert info.value.error == error
