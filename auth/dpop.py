"""DPoP, RFC 9449: proofs of possession for access tokens, on both sides.

Client side, ``DPoPKey``: one asymmetric key per client (ES256 by default), whose public
JWK travels in every proof's header. ``proof(method, url, access_token=..., nonce=...)``
makes a fresh ``dpop+jwt`` (RFC 9449 §4.2): a new ``jti``, ``htm``, ``htu`` (the target
URI without query and fragment), ``iat``, ``ath`` = base64url(SHA-256(token)) on resource
requests (§4.3 step 11), and the server's ``nonce`` when it asked for one (§8, §9).

Server side, ``verify_proof`` is a pure function of (proof, request, now, policy): it
checks the RFC 9449 §4.3 list in order, cheap checks first, and raises
``InvalidDPoPProof`` or ``UseDPoPNonce``. ``DPoPVerifier`` adds what is not pure: the
``jti`` replay cache (any ``mcpcore.stores`` ``Store``, so a fleet shares it through
Redis) and nonces. Nonces are stateless: an HMAC of a time window, so every instance of
a fleet issues and accepts the same values without sharing state (§8 leaves the form to
the server).

The resource-server hook (``DPoPResourceCheck``) and the authorization server's token
endpoint both use ``DPoPVerifier``; the bearer middleware calls the hook only when DPoP
is configured or the token is DPoP-bound (``cnf.jkt``, RFC 9449 §6).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import string
import struct
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import jwt
import msgspec
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from mcpcore.auth.errors import InvalidDPoPProof, InvalidToken, UseDPoPNonce
from mcpcore.auth.urls import scheme_and_authority

DPOP_TYP = "dpop+jwt"
#: Asymmetric JWS algorithms a proof may use (RFC 9449 §11.6: never ``none`` or MACs).
PROOF_ALGORITHMS = frozenset(
    {"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}
)
_KTY_FOR_ALG = {"ES": "EC", "RS": "RSA", "PS": "RSA", "Ed": "OKP"}
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
#: RFC 7638 §3.2: the members hashed into a thumbprint, per key type.
_THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"),
                       "OKP": ("crv", "kty", "x")}
_jws = jwt.PyJWS()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """RFC 7638 JWK SHA-256 thumbprint (the value of ``cnf.jkt``, RFC 9449 §6.1)."""
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty")))
    if members is None or any(not isinstance(jwk.get(m), str) for m in members):
        raise ValueError("not a public EC, RSA or OKP key")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode("utf-8")).digest())


def access_token_hash(access_token: str) -> str:
    """``ath`` (RFC 9449 §4.2): base64url SHA-256 of the ASCII access token."""
    return b64url(hashlib.sha256(access_token.encode("ascii")).digest())


def target_uri(url: str) -> str:
    """``htu``: the request URI without query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


def _normal_escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def normalize_htu(url: str) -> str:
    """What an ``htu`` is compared as (RFC 9449 §4.3 step 9): the URI without query and
    fragment, after syntax-based normalisation (RFC 3986 §6.2.2: lowercase scheme and
    host, uppercase percent-encodings, unreserved characters decoded) and scheme-based
    normalisation (§6.2.3: no default port, an empty path is ``/``). ``/mcp/`` and
    ``/mcp`` stay different resources."""
    parts = urlsplit(url)
    scheme, host = scheme_and_authority(parts)
    path = _ESCAPE.sub(_normal_escape, parts.path) or "/"
    return urlunsplit((scheme, host, path, "", ""))


# -- the client's key --------------------------------------------------------------------


@dataclass(frozen=True)
class DPoPKey:
    """A client's proof-of-possession key. Its ``repr`` shows only the thumbprint.

    >>> key = DPoPKey.generate()
    >>> proof = key.proof("POST", "https://as.example/token")
    """

    private_key: Any = field(repr=False)
    alg: str = "ES256"
    clock: Callable[[], float] = field(default=time.time, repr=False)

    @classmethod
    def generate(cls, alg: str = "ES256") -> DPoPKey:
        key: Any
        if alg == "ES256":
            key = ec.generate_private_key(ec.SECP256R1())
        elif alg == "ES384":
            key = ec.generate_private_key(ec.SECP384R1())
        elif alg in ("RS256", "PS256"):
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif alg == "EdDSA":
            key = ed25519.Ed25519PrivateKey.generate()
        else:
            raise ValueError(f"unsupported DPoP algorithm {alg}")
        return cls(key, alg)

    @property
    def public_jwk(self) -> dict[str, Any]:
        algorithm = jwt.get_algorithm_by_name(self.alg)
        jwk = dict(algorithm.to_jwk(self.private_key.public_key(), as_dict=True))
        return {k: v for k, v in jwk.items() if k not in _PRIVATE_MEMBERS}

    @property
    def thumbprint(self) -> str:
        return jwk_thumbprint(self.public_jwk)

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
    ) -> str:
        """A fresh proof for one HTTP request (never reuse one: ``jti`` must be unique)."""
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": target_uri(url),
            "iat": int(self.clock()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": DPOP_TYP, "jwk": self.public_jwk}
        return jwt.encode(claims, self.private_key, algorithm=self.alg, headers=headers)

    def __repr__(self) -> str:
        return f"DPoPKey(alg={self.alg!r}, jkt={self.thumbprint!r})"


# -- verifying proofs ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DPoPPolicy:
    """What ``verify_proof`` accepts."""

    algorithms: frozenset[str] = frozenset({"ES256", "ES384", "RS256", "PS256", "EdDSA"})
    #: A proof is fresh for this long after its ``iat`` (RFC 9449 §11.1 asks for a short
    #: window; the replay cache keeps each ``jti`` this long).
    max_age: float = 300.0
    #: Allowed clock skew for an ``iat`` in the future.
    leeway: float = 30.0
    max_bytes: int = 8 * 1024

    def __post_init__(self) -> None:
        bad = self.algorithms - PROOF_ALGORITHMS
        if bad or not self.algorithms:
            allowed = sorted(PROOF_ALGORITHMS)
            raise ValueError(f"DPoP algorithms must be a non-empty subset of {allowed}")


@dataclass(frozen=True, slots=True)
class VerifiedProof:
    jti: str
    jkt: str
    iat: float
    nonce: str | None


def _json_segment(segment: str) -> Any:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        return msgspec.json.decode(raw)
    except (ValueError, msgspec.DecodeError, RecursionError):
        raise InvalidDPoPProof("proof segment is not base64url JSON") from None


_KEYS: OrderedDict[str, tuple[Any, str]] = OrderedDict()
_KEYS_MAX = 1024


def _proof_key(header_segment: str, alg: str, jwk: Mapping[str, Any]) -> tuple[Any, str]:
    """(public key, thumbprint) for a proof header. A client signs every proof with the
    same key, so the parsed key is kept by the exact header bytes it came from (the
    header also holds ``alg``): a hit saves a key import and a thumbprint."""
    hit = _KEYS.get(header_segment)
    if hit is not None:
        _KEYS.move_to_end(header_segment)
        return hit
    value = (jwt.get_algorithm_by_name(alg).from_jwk(dict(jwk)), jwk_thumbprint(jwk))
    _KEYS[header_segment] = value
    if len(_KEYS) > _KEYS_MAX:
        _KEYS.popitem(last=False)
    return value


def verify_proof(
    proof: str,
    *,
    method: str,
    url: str,
    now: float,
    policy: DPoPPolicy,
    access_token: str | None = None,
    expected_jkt: str | None = None,
    nonce_ok: Callable[[str], bool] | None = None,
) -> VerifiedProof:
    """Check one DPoP proof against the request it came with (RFC 9449 §4.3).

    ``access_token`` is given on resource requests (then ``ath`` must match it);
    ``expected_jkt`` is the token's ``cnf.jkt`` (then the proof key must be that key);
    ``nonce_ok`` is given when the server requires a nonce (a missing or stale one raises
    ``UseDPoPNonce``). Replay (``jti``) is the caller's job: see ``DPoPVerifier``.
    """
    if len(proof) > policy.max_bytes:
        raise InvalidDPoPProof("proof too large")
    segments = proof.split(".")
    if len(segments) != 3 or not all(segments[:2]):
        raise InvalidDPoPProof("proof is not a JWS in compact form")
    header = _json_segment(segments[0])
    if not isinstance(header, dict):
        raise InvalidDPoPProof("proof header is not an object")
    if header.get("typ") != DPOP_TYP:
        raise InvalidDPoPProof("typ is not dpop+jwt")
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in policy.algorithms:
        raise InvalidDPoPProof("algorithm not allowed")
    jwk = header.get("jwk")
    if not isinstance(jwk, dict) or _PRIVATE_MEMBERS & jwk.keys():
        raise InvalidDPoPProof("jwk is missing or holds private key material")
    if jwk.get("kty") != _KTY_FOR_ALG.get(alg[:2]):
        raise InvalidDPoPProof("jwk type does not fit alg")
    if "crit" in header:
        raise InvalidDPoPProof("critical header parameters are not supported")
    try:
        key, jkt = _proof_key(segments[0], alg, jwk)
        decoded = _jws.decode_complete(proof, key, algorithms=[alg])
    except (jwt.InvalidTokenError, ValueError, TypeError, KeyError):
        raise InvalidDPoPProof("proof signature does not verify") from None
    try:
        claims = msgspec.json.decode(decoded["payload"])
    except (msgspec.DecodeError, RecursionError):
        raise InvalidDPoPProof("proof payload is not JSON") from None
    if not isinstance(claims, dict):
        raise InvalidDPoPProof("proof payload is not an object")
    jti, htm, htu, iat = (claims.get(k) for k in ("jti", "htm", "htu", "iat"))
    if not isinstance(jti, str) or not 16 <= len(jti) <= 256:
        raise InvalidDPoPProof("jti missing or not a fresh random value")
    if htm != method.upper():
        raise InvalidDPoPProof("htm does not match the request method")
    if not isinstance(htu, str) or "\\" in htu:
        raise InvalidDPoPProof("htu missing, or not a plain http(s) URI")
    try:
        plain = "@" not in urlsplit(htu).netloc
        same = plain and normalize_htu(htu) == normalize_htu(url)  # §4.3: no query, fragment
    except ValueError:  # urlsplit: an unclosed IPv6 bracket
        same = False
    if not same:
        raise InvalidDPoPProof("htu does not match the request URI")
    if isinstance(iat, bool) or not isinstance(iat, int | float):
        raise InvalidDPoPProof("iat missing")
    if iat > now + policy.leeway or iat < now - policy.max_age:
        raise InvalidDPoPProof("proof is stale or from the future")
    if access_token is not None and claims.get("ath") != access_token_hash(access_token):
        raise InvalidDPoPProof("ath does not match the access token")
    if expected_jkt is not None and not (expected_jkt.isascii()
                                         and hmac.compare_digest(jkt, expected_jkt)):
        raise InvalidDPoPProof("proof key is not the key the token is bound to")
    nonce = claims.get("nonce")
    if nonce is not None and not isinstance(nonce, str):
        raise InvalidDPoPProof("nonce is not a string")
    if nonce_ok is not None and (nonce is None or not nonce_ok(nonce)):
        raise UseDPoPNonce("a fresh server nonce is required")
    return VerifiedProof(jti, jkt, float(iat), nonce)


class DPoPNonces:
    """Stateless nonces: ``window || HMAC(secret, window)``, valid for the current and
    the previous window. Every server holding ``secret`` agrees on them."""

    def __init__(
        self, secret: bytes, *, window: float = 300.0, clock: Callable[[], float] = time.time
    ) -> None:
        if len(secret) < 16:
            raise ValueError("the DPoP nonce secret needs at least 16 bytes")
        self._secret = secret
        self._window = window
        self._clock = clock

    def _mac(self, slot: int) -> str:
        packed = struct.pack(">Q", slot)
        return b64url(packed + hmac.new(self._secret, packed, hashlib.sha256).digest()[:16])

    def issue(self) -> str:
        return self._mac(int(self._clock() // self._window))

    def check(self, nonce: str) -> bool:
        # compare_digest takes only ASCII strings: a peer's non-ASCII nonce is simply wrong
        # (our nonces are base64url), not a TypeError that fails the request.
        if not nonce.isascii():
            return False
        slot = int(self._clock() // self._window)
        return any(hmac.compare_digest(nonce, self._mac(s)) for s in (slot, slot - 1))


class ReplayStore(Protocol):
    """The one ``Store`` method DPoP needs: an atomic set-if-absent with a TTL."""

    async def set_if_absent(self, key: str, value: bytes, *, ttl: float | None) -> bool: ...


class DPoPVerifier:
    """``verify_proof`` plus ``jti`` replay protection and optional nonces.

    ``store`` is any ``mcpcore.stores`` store (``MemoryStore`` for one process,
    ``RedisStore`` for a fleet): each accepted ``jti`` is remembered for the freshness
    window, so a replayed proof fails everywhere.
    """

    def __init__(
        self,
        *,
        store: ReplayStore,
        policy: DPoPPolicy | None = None,
        nonces: DPoPNonces | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.policy = policy or DPoPPolicy()
        self.nonces = nonces
        self._clock = clock

    def fresh_nonce(self) -> str | None:
        return self.nonces.issue() if self.nonces is not None else None

    async def verify(
        self,
        proof: str,
        *,
        method: str,
        url: str,
        access_token: str | None = None,
        expected_jkt: str | None = None,
    ) -> VerifiedProof:
        nonce_ok = self.nonces.check if self.nonces is not None else None
        try:
            verified = verify_proof(
                proof, method=method, url=url, now=self._clock(), policy=self.policy,
                access_token=access_token, expected_jkt=expected_jkt, nonce_ok=nonce_ok,
            )
        except UseDPoPNonce as exc:
            exc.nonce = self.fresh_nonce()
            raise
        key = "dpop:jti:" + hashlib.sha256(f"{verified.jkt}|{verified.jti}".encode()).hexdigest()
        ttl = self.policy.max_age + self.policy.leeway
        if not await self.store.set_if_absent(key, b"1", ttl=ttl):
            raise InvalidDPoPProof("proof replayed (jti seen before)")
        return verified


class DPoPResourceCheck:
    """The resource server's DPoP rules (RFC 9449 §7), one call per request:

    * a DPoP-bound token (``cnf.jkt``) must come with the ``DPoP`` scheme and one valid
      proof for this request (method, URL, ``ath``, key = ``cnf.jkt``, fresh, unseen);
    * the ``DPoP`` scheme with an unbound token is refused;
    * with ``required``, a bearer token is refused too.

    The proof's ``htu`` is compared with ``origin`` (the configured public URL, never
    ``Host``) plus the request path.
    """

    def __init__(
        self,
        verifier: DPoPVerifier,
        *,
        origin: str,
        required: bool = False,
        algorithms: tuple[str, ...] = ("ES256",),
    ) -> None:
        self.verifier = verifier
        self.origin = origin.rstrip("/")
        self.required = required
        self.algorithms = algorithms

    async def check(
        self, *, scheme: str, token: str, claims: Mapping[str, Any], method: str, path: str,
        proofs: list[str],
    ) -> None:
        jkt = token_jkt(claims)
        if scheme != "dpop":
            if jkt is not None:
                raise InvalidToken("a DPoP-bound token was presented as a bearer token")
            if self.required:
                raise InvalidDPoPProof("this resource accepts DPoP-bound tokens only")
            return
        if jkt is None:
            raise InvalidToken("the DPoP scheme with a token that is not DPoP-bound")
        if len(proofs) != 1 or "," in proofs[0]:
            raise InvalidDPoPProof("exactly one DPoP proof is required")
        await self.verifier.verify(
            proofs[0], method=method, url=self.origin + path, access_token=token,
            expected_jkt=jkt,
        )


def token_jkt(claims: Mapping[str, Any]) -> str | None:
    """``cnf.jkt`` of validated token claims, or None for an unbound token."""
    cnf = claims.get("cnf")
    if cnf is None:
        return None
    jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
    if not isinstance(jkt, str) or not jkt:
        raise InvalidToken("cnf claim is malformed")
    return jkt


__all__ = [
    "DPOP_TYP",
    "PROOF_ALGORITHMS",
    "DPoPKey",
    "DPoPNonces",
    "DPoPPolicy",
    "DPoPResourceCheck",
    "DPoPVerifier",
    "ReplayStore",
    "VerifiedProof",
    "access_token_hash",
    "jwk_thumbprint",
    "normalize_htu",
    "target_uri",
    "token_jkt",
    "verify_proof",
]
