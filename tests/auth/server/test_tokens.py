"""``verify_jwt`` is a pure function of (token, keys, now, policy): no clock, no I/O."""

from __future__ import annotations

import pytest

from mcpcore.auth.config import canonical_uri
from mcpcore.auth.errors import InvalidToken, UnknownSigningKey
from mcpcore.auth.issuer.authorization_server import SigningKey
from mcpcore.auth.jwks import KeySet, parse_jwks
from mcpcore.auth.server.tokens import ValidationPolicy, check_audience, verify_jwt

ISS = "https://idp.example.com/tenant1"
RES = "https://mcp.example.com/mcp"
NOW = 1_800_000_000


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey.generate("ES256", kid="k1")


@pytest.fixture(scope="module")
def keys(key: SigningKey) -> dict[str, KeySet | None]:
    return {ISS: parse_jwks(f'{{"keys": [{_json(key.public_jwk())}]}}')}


def _json(obj: object) -> str:
    import json

    return json.dumps(obj)


POLICY = ValidationPolicy(resource=RES, issuers=frozenset({ISS}), algorithms=frozenset({"ES256"}))


def claims(**over: object) -> dict[str, object]:
    base: dict[str, object] = {"iss": ISS, "sub": "alice", "aud": RES, "iat": NOW, "exp": NOW + 60}
    base.update(over)
    return base


def test_principal_carries_every_verified_field(
    key: SigningKey, keys: dict[str, KeySet | None]
) -> None:
    token = key.sign(
        claims(
            scope="mcp files:read",
            client_id="app",
            tid="acme",
            jti="j1",
            act={"sub": "agent-1", "act": {"sub": "gateway"}},
        )
    )
    principal = verify_jwt(token, keys, now=NOW, policy=POLICY)
    assert principal.subject == "alice" and principal.issuer == ISS
    assert principal.tenant == "acme" and principal.client_id == "app"
    assert principal.scopes == {"mcp", "files:read"}
    assert principal.actors == ("agent-1", "gateway")
    assert principal.auth_method == "jwt" and principal.token_id == "j1"
    assert principal.claims["tid"] == "acme"


def test_scp_array_and_azp_are_understood(key: SigningKey, keys: dict[str, KeySet | None]) -> None:
    token = key.sign(claims(scp=["a", "b"], azp="spa"))
    principal = verify_jwt(token, keys, now=NOW, policy=POLICY)
    assert principal.scopes == {"a", "b"} and principal.client_id == "spa"


@pytest.mark.parametrize(
    "exp, ok", [(NOW + 1, True), (NOW - 29, True), (NOW - 30, False), (NOW - 600, False)]
)
def test_expiry_uses_the_leeway_and_the_given_clock(
    key: SigningKey, keys: dict[str, KeySet | None], exp: int, ok: bool
) -> None:
    token = key.sign(claims(exp=exp))  # leeway is 30 s: valid while now < exp + 30
    if ok:
        verify_jwt(token, keys, now=NOW, policy=POLICY)
    else:
        with pytest.raises(InvalidToken, match="expired"):
            verify_jwt(token, keys, now=NOW, policy=POLICY)


def test_same_token_is_valid_then_expired_by_clock_alone(
    key: SigningKey, keys: dict[str, KeySet | None]
) -> None:
    token = key.sign(claims())
    verify_jwt(token, keys, now=NOW + 60, policy=POLICY)
    with pytest.raises(InvalidToken, match="expired"):
        verify_jwt(token, keys, now=NOW + 90, policy=POLICY)


@pytest.mark.parametrize("over", [{"exp": 10**400}, {"iat": -(10**400)}, {"nbf": 10**400},
                                  {"exp": 1e300}, {"exp": "soon"}, {"iat": False}])
def test_time_claims_out_of_range_are_invalid_not_an_overflow(
    key: SigningKey, keys: dict[str, KeySet | None], over: dict[str, object]
) -> None:
    with pytest.raises(InvalidToken, match=r"is (out of range|not a number)"):
        verify_jwt(key.sign(claims(**over)), keys, now=NOW, policy=POLICY)


def test_unloaded_issuer_keys_ask_the_caller_to_load(key: SigningKey) -> None:
    with pytest.raises(UnknownSigningKey) as info:
        verify_jwt(key.sign(claims()), {ISS: None}, now=NOW, policy=POLICY)
    assert info.value.issuer == ISS


@pytest.mark.parametrize(
    "typ, strict, ok",
    [
        ("at+jwt", True, True),
        ("application/at+jwt", True, True),
        ("AT+JWT", True, True),
        ("JWT", True, False),
        ("JWT", False, True),
        (None, False, True),
        (None, True, False),
        ("oauth-id-jag+jwt", False, False),
        ("logout+jwt", False, False),
    ],
)
def test_typ_rules(
    key: SigningKey, keys: dict[str, KeySet | None], typ: str | None, strict: bool, ok: bool
) -> None:
    import jwt

    headers = {"kid": "k1"} if typ is None else {"kid": "k1", "typ": typ}
    token = jwt.encode(claims(), key.private_key, algorithm="ES256", headers=headers)
    if typ is None:  # PyJWT adds typ=JWT by default; strip it
        token = jwt.encode(
            claims(), key.private_key, algorithm="ES256", headers={"kid": "k1", "typ": None}
        )
    policy = ValidationPolicy(
        resource=RES, issuers=frozenset({ISS}), algorithms=frozenset({"ES256"}), strict_typ=strict
    )
    if ok:
        verify_jwt(token, keys, now=NOW, policy=policy)
    else:
        with pytest.raises(InvalidToken):
            verify_jwt(token, keys, now=NOW, policy=policy)


@pytest.mark.parametrize(
    "aud, ok",
    [
        (RES, True),
        (RES + "/", True),
        ("HTTPS://MCP.EXAMPLE.COM/mcp", True),
        ("https://mcp.example.com:443/mcp", True),
        (["https://other.example", RES], True),
        ("https://mcp.example.com/MCP", False),  # paths are case-sensitive
        ("https://mcp.example.com/mcp/tools", False),
        ("https://mcp.example.com", False),
        ("https://mcp.example.com:8443/mcp", False),
        ("http://mcp.example.com/mcp", False),
        ([], False),
        (None, False),
        (42, False),
    ],
)
def test_audience_is_canonical_and_exact(aud: object, ok: bool) -> None:
    assert check_audience(aud, canonical_uri(RES)) is ok


def test_jwks_parsing_drops_unusable_keys(key: SigningKey) -> None:
    good = key.public_jwk()
    doc = {
        "keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {**good, "kid": "enc", "use": "enc"},
            {**good, "kid": "ops", "key_ops": ["encrypt"]},
            {**good, "kid": "private", "d": "AAAA"},
            {"kty": "RSA", "kid": "garbage", "n": "!!", "e": "AQAB"},
            "not-a-key",
            good,
        ]
    }
    assert [k.kid for k in parse_jwks(_json(doc)).keys] == ["k1"]


def test_short_rsa_keys_are_refused() -> None:
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(small.public_key(), as_dict=True)
    from mcpcore.auth.errors import KeySetError

    with pytest.raises(KeySetError):
        parse_jwks(_json({"keys": [jwk]}))


def test_the_composite_validator_offers_the_jwt_cache_for_jwts_only() -> None:
    from mcpcore.auth.server.tokens import CompositeValidator
    from mcpcore.principal import Principal

    alice = Principal(subject="alice", auth_method="jwt")

    class Jwt:
        def cached(self, token: str) -> Principal | None:
            return alice if token == "a.b.c" else None

        async def validate(self, token: str) -> Principal:
            raise AssertionError("not called")

    class Opaque:
        async def validate(self, token: str) -> Principal:
            raise AssertionError("not called")

    jwt = Jwt()
    assert CompositeValidator(jwt, None).cached == jwt.cached  # no indirection
    both = CompositeValidator(jwt, Opaque()).cached
    assert both("a.b.c") is alice and both("opaque") is None and both("x.y.z") is None
    assert CompositeValidator(None, Opaque()).cached("a.b.c") is None
