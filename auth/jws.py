"""Compact JWS: strict parsing and signature checks, shared by every JWT we verify.

Access tokens (``auth/server/tokens.py``) and ID-JAGs (``auth/issuer/idjag.py``) are both
compact JWS (RFC 7515 §7.1). What they share lives here, so the two validators cannot drift apart:

* ``parse_compact``: exactly three segments of strict base64url (RFC 7515 §2: no padding,
  no other characters), a JSON object for header and payload. Anything else, a JWE
  (five segments) included, is ``MalformedJws``. The payload is decoded from exactly the
  bytes the signature covers, so after ``verify`` it *is* the verified claim set.
* ``verify``: PyJWT's algorithm objects (cryptography underneath) check the signature
  for an algorithm name the caller allowed. Only asymmetric names are ever looked up:
  ``none`` and HS* are not in the table, so they cannot be asked for by accident
  (RFC 8725 §2.1, §3.1).

Each caller maps ``MalformedJws`` to its own error (``invalid_token`` at a resource
server, ``invalid_grant`` at a token endpoint).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

import jwt
import msgspec

_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")

#: One PyJWT algorithm object per asymmetric JWS algorithm we support.
ALGORITHMS = {
    name: jwt.get_algorithm_by_name(name)
    for name in (
        "RS256",
        "RS384",
        "RS512",
        "PS256",
        "PS384",
        "PS512",
        "ES256",
        "ES384",
        "ES512",
        "EdDSA",
    )
}


class MalformedJws(ValueError):
    """Not a compact JWS with JSON-object header and payload (the message says why)."""


@dataclass(frozen=True, slots=True)
class CompactJws:
    """The parts of a compact JWS; ``payload`` is trusted only after ``verify``."""

    header: dict[str, Any]
    payload: dict[str, Any]
    signing_input: bytes
    signature: bytes


def b64decode(segment: str) -> bytes:
    """Strict base64url (RFC 7515 §2)."""
    if not _SEGMENT.fullmatch(segment):
        raise MalformedJws("segment is not base64url")
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise MalformedJws("segment is not base64url") from None


def _json_object(segment: str, what: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(b64decode(segment))
    except (msgspec.DecodeError, RecursionError):
        raise MalformedJws(f"{what} is not base64url JSON") from None
    if not isinstance(value, dict):
        raise MalformedJws(f"{what} is not an object")
    return value


def parse_compact(token: str) -> CompactJws:
    """Split and decode a compact JWS (see the module docstring); raises ``MalformedJws``."""
    segments = token.split(".")
    if len(segments) != 3:
        raise MalformedJws("not a JWS in compact form")
    header = _json_object(segments[0], "header")
    payload = _json_object(segments[1], "payload")
    # An empty signature parses (it then fails every check), so that ``alg: none`` is
    # refused for what it is rather than for its shape.
    signature = b64decode(segments[2]) if segments[2] else b""
    signing_input = f"{segments[0]}.{segments[1]}".encode("ascii")
    return CompactJws(header, payload, signing_input, signature)


def verify(jws: CompactJws, alg: str, key: Any) -> bool:
    """True if ``jws`` carries a valid ``alg`` signature by ``key``.

    ``alg`` must come from the caller's allow-list, never from the token alone.
    """
    algorithm = ALGORITHMS.get(alg)
    if algorithm is None:
        return False
    try:
        return bool(algorithm.verify(jws.signing_input, key, jws.signature))
    except Exception:  # malformed signature encodings raise instead of returning False
        return False


__all__ = [
    "ALGORITHMS",
    "CompactJws",
    "MalformedJws",
    "b64decode",
    "parse_compact",
    "verify",
]
