"""``auth/jws.py``: strict compact-JWS parsing, and a signature check that only ever says
True or False."""

from __future__ import annotations

import pytest

from mcpcore.auth import jws
from mcpcore.auth.issuer.authorization_server import SigningKey

ES = SigningKey.generate("ES256", kid="e")
RS = SigningKey.generate("RS256", kid="r")


@pytest.mark.parametrize(("token", "message"), [
    ("a.b", "compact form"),
    ("a.b.c.d.e", "compact form"),
    ("e30=.e30.", "not base64url"),        # padding is not base64url (RFC 7515 §2)
    ("e+0.e30.", "not base64url"),
    ("eyJhb.e30.", "^segment is not base64url$"),  # 4k+1 characters cannot be base64
    ("bnVsbA.e30.", "header is not an object"),
    ("e30.W10.", "payload is not an object"),
    ("e30.eyJh.", "payload is not base64url JSON"),
    (".e30.", "not base64url"),
])
def test_malformed(token: str, message: str) -> None:
    with pytest.raises(jws.MalformedJws, match=message):
        jws.parse_compact(token)


def test_verify_says_yes_only_for_the_right_key_and_algorithm() -> None:
    parsed = jws.parse_compact(ES.sign({"sub": "x"}))
    assert parsed.header["kid"] == "e" and parsed.payload == {"sub": "x"}
    assert jws.verify(parsed, "ES256", ES.public_key)
    assert not jws.verify(parsed, "ES256", SigningKey.generate("ES256").public_key)
    assert not jws.verify(parsed, "RS256", RS.public_key)
    assert not jws.verify(parsed, "ES256", None)           # a key that is no key: raises inside
    assert not jws.verify(parsed, "HS256", b"secret")      # never in the table
    assert not jws.verify(parsed, "none", None)


def test_an_empty_signature_parses_and_verifies_as_nothing() -> None:
    parsed = jws.parse_compact("eyJhbGciOiJub25lIn0.e30.")
    assert parsed.signature == b"" and not jws.verify(parsed, "ES256", ES.public_key)
