"""DPoP (RFC 9449): proofs made by ``DPoPKey`` and checked by ``verify_proof``, the
RFC 7638 thumbprint, stateless nonces, the replay cache, and fuzzing of both parsers
(proofs and ``WWW-Authenticate``): bad input raises our errors, never anything else."""

from __future__ import annotations

import contextlib
import time

import jwt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore.auth import DPoPKey, DPoPNonces, DPoPPolicy, DPoPVerifier, InvalidDPoPProof
from mcpcore.auth.challenges import parse_challenges
from mcpcore.auth.dpop import (
    access_token_hash,
    jwk_thumbprint,
    normalize_htu,
    target_uri,
    verify_proof,
)
from mcpcore.auth.errors import UseDPoPNonce
from mcpcore.stores.memory import MemoryStore
from tests.support.budgets import budget

URL = "https://mcp.example.com/mcp"


def test_rfc7638_thumbprint_example() -> None:
    # RFC 7638 §3.1's key and its thumbprint.
    jwk = {
        "kty": "RSA", "e": "AQAB", "alg": "RS256", "kid": "2011-04-29",
        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuh"
             "DR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6"
             "Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajr"
             "n1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0L"
             "s1jF44-csFCur-kEgU8awapJzKnqDKgw",
    }
    assert jwk_thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


@pytest.mark.parametrize("alg", ["ES256", "ES384", "RS256", "PS256", "EdDSA"])
def test_proof_round_trip(alg: str) -> None:
    key = DPoPKey.generate(alg)
    proof = key.proof("post", URL + "?q=1#f", access_token="tok", nonce="n")
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
    claims = jwt.decode(proof, options={"verify_signature": False})
    assert claims["htm"] == "POST" and claims["htu"] == URL and claims["nonce"] == "n"
    assert claims["ath"] == access_token_hash("tok")
    verified = verify_proof(proof, method="POST", url=URL, now=time.time(), policy=DPoPPolicy(
        algorithms=frozenset({alg})), access_token="tok", expected_jkt=key.thumbprint)
    assert verified.jkt == key.thumbprint and "jkt" in repr(key) and "private" not in repr(key)


def test_every_proof_is_fresh() -> None:
    key = DPoPKey.generate()
    jtis = {jwt.decode(key.proof("POST", URL), options={"verify_signature": False})["jti"]
            for _ in range(50)}
    assert len(jtis) == 50


def test_htu_normalisation() -> None:
    assert normalize_htu("HTTPS://MCP.example.com:443/mcp") == URL
    assert normalize_htu("http://h:80/x") == "http://h/x"
    assert normalize_htu("https://h:8443/x") == "https://h:8443/x"
    assert target_uri("https://h/x?y#z") == "https://h/x"
    # RFC 3986 §6.2.2-6.2.3: an empty path is "/", escapes of unreserved characters are
    # the characters, hex digits are uppercase; "/mcp/" is another resource than "/mcp".
    assert normalize_htu("https://h") == normalize_htu("https://h/")
    assert normalize_htu("https://h/%7euser/a%2f") == "https://h/~user/a%2F"
    assert normalize_htu(URL + "/") != URL


def test_htu_is_compared_without_query_and_fragment() -> None:
    """RFC 9449 §4.3 step 9: the htu matches the request URI "ignoring any query and
    fragment parts"; a client that put them in is not refused for it."""
    key = DPoPKey.generate()
    claims = {"jti": "j" * 24, "htm": "POST", "iat": int(time.time())}
    for htu in (URL + "?q=1", URL + "#f", URL + "?q=1#f"):
        header = {"typ": "dpop+jwt", "jwk": key.public_jwk}
        verify_proof(forged(header, {**claims, "htu": htu}, key), method="POST",
                     url=URL + "?other=2", now=time.time(), policy=DPoPPolicy())


def test_nonces_rotate_by_window_and_are_shared_by_secret() -> None:
    now = [1000.0]
    a = DPoPNonces(b"k" * 32, window=60, clock=lambda: now[0])
    b = DPoPNonces(b"k" * 32, window=60, clock=lambda: now[0])
    other = DPoPNonces(b"x" * 32, window=60, clock=lambda: now[0])
    nonce = a.issue()
    assert b.check(nonce) and not other.check(nonce)
    now[0] += 60
    assert a.check(nonce)  # the previous window still counts
    now[0] += 60
    assert not a.check(nonce)
    with pytest.raises(ValueError):
        DPoPNonces(b"short")
    # A peer's nonce is any JSON string: a non-ASCII one is refused, not a TypeError.
    assert not a.check("é" + nonce) and not a.check("\u2603")


async def test_a_non_ascii_nonce_or_jkt_is_a_refused_proof_not_a_crash() -> None:
    key = DPoPKey.generate()
    verifier = DPoPVerifier(store=MemoryStore(), nonces=DPoPNonces(b"n" * 32))
    with pytest.raises(UseDPoPNonce):
        await verifier.verify(key.proof("POST", URL, nonce="nonce-\u00e9" * 4), method="POST",
                              url=URL)
    with pytest.raises(InvalidDPoPProof):
        await DPoPVerifier(store=MemoryStore()).verify(
            key.proof("POST", URL), method="POST", url=URL, expected_jkt="\u00e9" * 43)


async def test_verifier_refuses_a_replay_and_asks_for_nonces() -> None:
    key = DPoPKey.generate()
    verifier = DPoPVerifier(store=MemoryStore())
    proof = key.proof("POST", URL)
    await verifier.verify(proof, method="POST", url=URL)
    with pytest.raises(InvalidDPoPProof, match="replayed"):
        await verifier.verify(proof, method="POST", url=URL)
    with_nonces = DPoPVerifier(store=MemoryStore(), nonces=DPoPNonces(b"n" * 32))
    with pytest.raises(UseDPoPNonce) as info:
        await with_nonces.verify(key.proof("POST", URL), method="POST", url=URL)
    assert info.value.nonce
    await with_nonces.verify(key.proof("POST", URL, nonce=info.value.nonce), method="POST",
                             url=URL)


def test_policy_refuses_symmetric_and_none() -> None:
    with pytest.raises(ValueError):
        DPoPPolicy(algorithms=frozenset({"HS256"}))
    with pytest.raises(ValueError):
        DPoPPolicy(algorithms=frozenset({"none"}))


def forged(header: dict[str, object], claims: dict[str, object], key: DPoPKey) -> str:
    return jwt.encode(claims, key.private_key, algorithm=key.alg, headers=header)


@pytest.mark.parametrize("mutate", [
    lambda k, c: ({"typ": "JWT", "jwk": k.public_jwk}, c),
    lambda k, c: ({"typ": "dpop+jwt"}, c),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": {**k.public_jwk, "d": "AAAA"}}, c),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk, "crit": ["x"], "x": 1}, c),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": DPoPKey.generate("RS256").public_jwk}, c),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk}, {**c, "jti": "short"}),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk}, {**c, "htu": URL + "/other?q"}),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk},
                  {**c, "htu": URL.replace("https://", "https://evil.example\\@")}),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk},
                  {**c, "htu": URL.replace("https://", "https://evil.example@")}),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk}, {**c, "htu": "https://[::1/mcp"}),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk}, {**c, "iat": "now"}),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk}, {**c, "iat": time.time() + 600}),
    lambda k, c: ({"typ": "dpop+jwt", "jwk": k.public_jwk}, {**c, "nonce": 5}),
], ids=["typ", "no-jwk", "private-jwk", "crit", "jwk-of-other-kty", "short-jti",
        "htu-other-path-with-query", "htu-backslash", "htu-userinfo", "htu-bad-ipv6",
        "iat-string", "iat-future", "nonce-number"])
def test_malformed_proofs(mutate: object) -> None:
    key = DPoPKey.generate()
    claims = {"jti": "j" * 24, "htm": "POST", "htu": URL, "iat": int(time.time())}
    header, claims = mutate(key, claims)  # type: ignore[operator]
    with pytest.raises(InvalidDPoPProof):
        verify_proof(forged(header, claims, key), method="POST", url=URL, now=time.time(),
                     policy=DPoPPolicy())


# A slow property (every example parses and verifies a proof): tests/support/budgets.py.
@budget(small=50, full=200, deadline=None)
@given(st.text(max_size=300))
def test_proof_parser_never_raises_anything_else(text: str) -> None:
    with contextlib.suppress(InvalidDPoPProof):
        verify_proof(text, method="POST", url=URL, now=time.time(), policy=DPoPPolicy())


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from('Bearer DPoP realm=scope"\\,= \tabc'), max_size=80))
def test_challenge_parser_never_raises(text: str) -> None:
    for challenge in parse_challenges(text):
        assert challenge.scheme and challenge.scheme == challenge.scheme.lower()
