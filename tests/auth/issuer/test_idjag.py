"""``verify_id_jag``: the pure acceptance check, edge by edge, with real signatures and
no network (key sets are parsed from the signing keys' public JWKs)."""

from __future__ import annotations

import base64
import contextlib
import doctest
import time
from typing import Any

import jwt
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpcore.auth.issuer.idjag as idjag_module
from mcpcore.auth import jws
from mcpcore.auth.errors import (
    InvalidGrant,
    InvalidScope,
    InvalidTarget,
    TokenEndpointError,
    UnauthorizedClient,
    UnknownGrantKey,
)
from mcpcore.auth.issuer.authorization_server import SigningKey
from mcpcore.auth.issuer.idjag import (
    EmaClient,
    IdJagGrant,
    IdJagPolicy,
    TrustedIdp,
    verify_id_jag,
)
from mcpcore.auth.jwks import KeySet, parse_jwks
from mcpcore.auth.terms import ID_JAG_TYP

IDP = "https://idp.example.com"
AS = "https://auth.example.com"
MCP = "https://mcp.example.com/mcp"
DOCS = "https://docs.example.com/mcp"
NOW = 1_800_000_000.0
KEY = SigningKey.generate("ES256", kid="idp-1")
SECOND = SigningKey.generate("EdDSA", kid="idp-2")


def keyset(*keys: SigningKey) -> KeySet:
    return parse_jwks(msgspec.json.encode({"keys": [k.public_jwk() for k in keys]}))


KEYS: dict[str, KeySet | None] = {IDP: keyset(KEY)}


def policy(**over: Any) -> IdJagPolicy:
    settings: dict[str, Any] = {
        "issuer": AS,
        "idps": {IDP: TrustedIdp(IDP, jwks_uri=IDP + "/jwks")},
        "resources": {MCP: frozenset({"files:read", "files:write"}),
                      DOCS: frozenset({"docs:read"})},
        "clients": {"app": EmaClient("app")},
    }
    settings.update(over)
    return IdJagPolicy(**settings)


def jag(*, key: SigningKey = KEY, headers: dict[str, Any] | None = None, **over: Any) -> str:
    claims: dict[str, Any] = {"iss": IDP, "sub": "u1", "aud": AS, "client_id": "app",
                              "resource": MCP, "scope": "files:read files:write",
                              "iat": int(NOW), "exp": int(NOW) + 300, "jti": "j1"}
    claims.update(over)
    claims = {k: v for k, v in claims.items() if v is not None}
    return key.sign(claims, {"typ": ID_JAG_TYP, **(headers or {})})


def verify(token: str, **kw: Any) -> IdJagGrant:
    pol = kw.pop("policy", None) or policy()
    keys = kw.pop("keys", KEYS)
    return verify_id_jag(token, keys, now=kw.pop("now", NOW), policy=pol,
                         client_id=kw.pop("client_id", "app"), **kw)


def test_a_good_grant() -> None:
    grant = verify(jag(tenant="acme", email="u1@example.com"))
    assert (grant.idp, grant.subject, grant.client_id, grant.resource) == (IDP, "u1", "app", MCP)
    assert grant.scopes == {"files:read", "files:write"} and grant.tenant == "acme"
    assert grant.jti == "j1" and grant.expires_at == NOW + 300
    assert grant.claims["email"] == "u1@example.com"


@pytest.mark.parametrize("typ", ["oauth-id-jag+jwt", "OAuth-ID-JAG+JWT",
                                 "application/oauth-id-jag+jwt"])
def test_typ_is_a_media_type_compared_without_case(typ: str) -> None:
    assert verify(jag(headers={"typ": typ})).subject == "u1"


def test_a_one_element_aud_array_is_the_issuer() -> None:
    assert verify(jag(aud=[AS])).resource == MCP


def test_the_client_check_comes_before_anything_about_the_assertion() -> None:
    with pytest.raises(UnauthorizedClient):
        verify("garbage", client_id="stranger")


def test_checks_run_in_order_cheap_and_structural_first() -> None:
    """A grant wrong in several ways is refused for the first check in the order."""
    forged = jag(key=SECOND, aud="https://other.example", exp=int(NOW) - 100)
    with pytest.raises(UnknownGrantKey):  # the signature is checked before aud and exp
        verify(forged)
    with pytest.raises(InvalidGrant, match="audience"):  # aud before lifetime
        verify(jag(aud="https://other.example", exp=int(NOW) - 100, iat=int(NOW) - 400))
    with pytest.raises(InvalidGrant, match="typ"):  # typ before the issuer
        verify(jag(iss="https://rogue.example", headers={"typ": "JWT"}))


def test_keys_not_loaded_or_kid_unknown_ask_the_caller_to_load() -> None:
    with pytest.raises(UnknownGrantKey) as info:
        verify(jag(), keys={IDP: None})
    assert info.value.issuer == IDP and info.value.error == "invalid_grant"
    with pytest.raises(UnknownGrantKey):
        verify(jag(key=SECOND), keys={IDP: keyset(KEY)})
    assert verify(jag(key=SECOND), keys={IDP: keyset(KEY, SECOND)}).subject == "u1"


def test_no_kid_with_several_keys_is_ambiguous() -> None:
    other = SigningKey.generate("ES256", kid="idp-3")
    claims = {"iss": IDP, "sub": "u1", "aud": AS, "client_id": "app", "resource": MCP,
              "iat": int(NOW), "exp": int(NOW) + 60, "jti": "x"}
    token = jwt.encode(claims, KEY.private_key, algorithm="ES256", headers={"typ": ID_JAG_TYP})
    with pytest.raises(InvalidGrant, match="several keys"):
        verify(token, keys={IDP: keyset(KEY, other)})
    assert verify(token).subject == "u1"  # one key: no kid is fine


def test_a_kid_that_is_not_a_string_is_refused() -> None:
    token = jwt.encode({"iss": IDP}, KEY.private_key, algorithm="ES256",
                       headers={"typ": ID_JAG_TYP})
    head = jws.b64decode(token.split(".")[0])
    forged = base64.urlsafe_b64encode(head.replace(b"{", b'{"kid":7,', 1)).rstrip(b"=")
    with pytest.raises(InvalidGrant, match="kid is not a string"):
        verify(forged.decode() + token[token.index("."):])


def test_an_algorithm_the_idp_does_not_use_is_refused() -> None:
    pol = policy(idps={IDP: TrustedIdp(IDP, jwks_uri=IDP + "/jwks", algorithms=("RS256",))})
    with pytest.raises(InvalidGrant, match="not allowed for this IdP"):
        verify(jag(), policy=pol)


def test_too_large_is_refused_before_parsing() -> None:
    with pytest.raises(InvalidGrant, match="too large"):
        verify(jag(padding="x" * 20_000))


@pytest.mark.parametrize(("claims", "detail"), [
    ({"exp": None}, "exp and iat"),
    ({"iat": None}, "exp and iat"),
    ({"exp": "soon"}, "not a number"),
    ({"exp": True}, "not a number"),
    ({"exp": 10**400}, "exp is out of range"),  # was a bare OverflowError
    ({"iat": -(10**400)}, "iat is out of range"),
    ({"jti": ""}, "claim jti"),
    ({"jti": "j" * 300}, "too long"),
    ({"sub": 42}, "claim sub"),
    ({"tenant": 7}, "tenant claim"),
    ({"resource": []}, "resource claim"),
    ({"resource": [MCP, 3]}, "resource claim"),
    ({"resource": {"uri": MCP}}, "resource claim"),
    ({"scope": ["files:read"]}, "scope claim"),
])
def test_malformed_claims_are_invalid_grant(claims: dict[str, Any], detail: str) -> None:
    with pytest.raises(InvalidGrant, match=detail):
        verify(jag(**claims))


def test_leeway_applies_to_exp_nbf_and_iat() -> None:
    assert verify(jag(), now=NOW + 300 + 29).subject == "u1"
    with pytest.raises(InvalidGrant, match="expired"):
        verify(jag(), now=NOW + 300 + 30)
    assert verify(jag(nbf=int(NOW) + 29)).subject == "u1"
    assert verify(jag(iat=int(NOW) + 29, exp=int(NOW) + 329)).subject == "u1"


def test_several_resources_need_a_choice() -> None:
    both = jag(resource=[MCP, DOCS], scope=None)
    with pytest.raises(InvalidTarget, match="several"):
        verify(both)
    assert verify(both, resource=DOCS).resource == DOCS
    with pytest.raises(InvalidGrant, match="does not serve"):
        verify(jag(resource=[MCP, "https://elsewhere.example/mcp"]), resource=MCP)


def test_a_grant_without_resource_only_where_the_idp_is_configured_so() -> None:
    loose = policy(idps={IDP: TrustedIdp(IDP, jwks_uri=IDP + "/jwks", require_resource=False)})
    with pytest.raises(InvalidGrant, match="names no resource"):
        verify(jag(resource=None))
    with pytest.raises(InvalidTarget):
        verify(jag(resource=None), policy=loose)
    assert verify(jag(resource=None), policy=loose, resource=MCP).resource == MCP
    with pytest.raises(InvalidGrant, match="does not serve"):
        verify(jag(resource=None), policy=loose, resource="https://elsewhere.example/mcp")


def test_scopes_are_the_intersection_then_narrowed_by_client_policy() -> None:
    capped = policy(clients={"app": EmaClient("app", scopes=frozenset({"files:read"}))})
    assert verify(jag(), policy=capped).scopes == {"files:read"}
    assert verify(jag(), scope="files:write").scopes == {"files:write"}
    with pytest.raises(InvalidScope, match="none of the requested"):
        verify(jag(), policy=capped, scope="files:write")
    with pytest.raises(InvalidScope, match="does not carry"):
        verify(jag(scope="files:read"), scope="files:write")
    assert verify(jag(scope=None)).scopes == frozenset()
    assert verify(jag(scope="")).scopes == frozenset()
    with pytest.raises(InvalidScope):
        verify(jag(scope=None), scope="files:read")


def test_client_resource_policy() -> None:
    pol = policy(clients={"app": EmaClient("app", resources=frozenset({DOCS}))})
    with pytest.raises(InvalidTarget, match="may not"):
        verify(jag(), policy=pol)
    assert verify(jag(resource=DOCS, scope="docs:read"), policy=pol).resource == DOCS


def test_subject_prefix_and_tenants() -> None:
    idp = TrustedIdp(IDP, jwks_uri=IDP + "/jwks", subject_prefix="acme:", tenants=("t1",))
    pol = policy(idps={IDP: idp})
    assert verify(jag(tenant="t1"), policy=pol).subject == "acme:u1"
    with pytest.raises(InvalidGrant, match="tenant"):
        verify(jag(tenant="t2"), policy=pol)
    with pytest.raises(InvalidGrant, match="tenant"):
        verify(jag(), policy=pol)


def test_replay_key_is_bounded_and_scoped_by_issuer() -> None:
    a = verify(jag(jti="j" * 255))
    b = verify(jag(jti="j" * 255), policy=policy(
        idps={IDP: TrustedIdp(IDP, jwks_uri=IDP + "/jwks", subject_prefix="p:")}))
    assert a.replay_key == b.replay_key and len(a.replay_key) < 64
    assert verify(jag(jti="j2")).replay_key != a.replay_key


def test_module_examples_run() -> None:
    result = doctest.testmod(idjag_module)
    assert result.failed == 0 and result.attempted > 0


@given(st.text(max_size=300))
def test_any_text_is_a_grant_or_a_token_endpoint_error(text: str) -> None:
    with contextlib.suppress(TokenEndpointError):
        verify(text)


@given(st.dictionaries(st.sampled_from(["sub", "aud", "exp", "iat", "nbf", "jti",
                                        "client_id", "resource", "scope", "tenant"]),
                       st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20),
                                 st.lists(st.text(max_size=10), max_size=3))))
def test_any_signed_claim_set_is_a_grant_or_a_token_endpoint_error(
    claims: dict[str, Any],
) -> None:
    token = KEY.sign({"iss": IDP, **{k: v for k, v in claims.items() if v is not None}},
                     {"typ": ID_JAG_TYP})
    try:
        grant = verify(token, now=time.time())
    except TokenEndpointError:
        return
    assert grant.resource in (MCP, DOCS)
