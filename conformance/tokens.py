"""Forged access tokens for the auth audit: each one must be refused with 401.

Built from the claims of the auditor's own token when it is a JWT (so only the one thing
under test is wrong), else from the Protected Resource Metadata (``iss`` = the first
authorization server, ``aud`` = the resource). Attacks follow RFC 8725 §2 and §3.1:
``alg: none``, HS256 keyed with the server's public key (key confusion), a key of our own
(self-signed, unknown ``kid``, ``jku``/``x5u`` pointing at a URL we control).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from functools import cache
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unverified(token: str | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(header, claims)`` of a JWT without verifying it, ``None`` if not a JWT."""
    if not token or token.count(".") != 2:
        return None
    try:
        return jwt.get_unverified_header(token), jwt.decode(
            token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None


def claims_for(bearer: str | None, *, issuer: str | None, resource: str | None,
               scopes: list[str] | None = None) -> tuple[dict[str, Any], str | None]:
    """Plausible claims (and the ``kid`` to borrow) for forged tokens."""
    now = int(time.time())
    parsed = unverified(bearer)
    if parsed is not None:
        header, claims = parsed
        claims = {**claims, "iat": now, "exp": now + 600}
        return claims, header.get("kid")
    claims = {"iss": issuer or "https://issuer.invalid", "aud": resource or "",
              "sub": "conformance-auditor", "iat": now, "exp": now + 600,
              "jti": b64url(hashlib.sha256(str(now).encode()).digest())[:16]}
    if scopes:
        claims["scope"] = " ".join(scopes)
    return claims, None


def alg_none(claims: dict[str, Any], kid: str | None = None) -> str:
    header: dict[str, Any] = {"alg": "none", "typ": "JWT"}
    if kid:
        header["kid"] = kid
    return (b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
            + ".")


def hs256(claims: dict[str, Any], secret: bytes, kid: str | None = None) -> str:
    """HMAC-SHA256 by hand: PyJWT rightly refuses a PEM public key as an HMAC secret."""
    header: dict[str, Any] = {"alg": "HS256", "typ": "JWT"}
    if kid:
        header["kid"] = kid
    signing = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    signature = hmac.new(secret, signing.encode(), hashlib.sha256).digest()
    return signing + "." + b64url(signature)


@cache
def auditor_key() -> rsa.RSAPrivateKey:
    """The auditor's own RSA key (one per process)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def auditor_jwks(kid: str) -> dict[str, Any]:
    """The auditor's public key as a JWKS (what a ``jku`` URL serves)."""
    numbers = auditor_key().public_key().public_numbers()

    def part(value: int) -> str:
        return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))

    return {"keys": [{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                      "n": part(numbers.n), "e": part(numbers.e)}]}


def self_signed(claims: dict[str, Any], *, kid: str | None = None,
                headers: dict[str, Any] | None = None) -> str:
    """RS256 signed with the auditor's key (never trusted by a correct server)."""
    extra = dict(headers or {})
    if kid:
        extra["kid"] = kid
    # The key object itself: as PEM, PyJWT would parse and check the RSA key again for
    # each token (about 35 ms of CPU each).
    return jwt.encode(claims, auditor_key(), algorithm="RS256", headers=extra)


def public_pems(jwks: Any) -> list[tuple[str | None, bytes]]:
    """``(kid, PEM)`` of each RSA/EC key of a JWKS document (for key confusion)."""
    out: list[tuple[str | None, bytes]] = []
    for key in (jwks or {}).get("keys", []) if isinstance(jwks, dict) else []:
        try:
            loaded = jwt.PyJWK(key).key
            pem = loaded.public_bytes(serialization.Encoding.PEM,
                                      serialization.PublicFormat.SubjectPublicKeyInfo)
        except Exception:  # keys we cannot load (OKP without support, symmetric): skip
            continue
        out.append((key.get("kid"), pem))
    return out


__all__ = ["alg_none", "auditor_jwks", "auditor_key", "b64url", "claims_for", "hs256",
           "public_pems", "self_signed", "unverified"]
