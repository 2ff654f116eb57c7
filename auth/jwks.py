"""JWKS: parsing key sets, and a per-``jwks_uri`` cache with bounded refetching.

Rules (RFC 8725 §3.1 and §3.10, RFC 7517 §4):

* Keys come only from the configured ``jwks_uri``, never from ``jku``/``x5u``/``jwk`` in
  a token header.
* Only asymmetric public keys are kept (RSA of at least 2048 bits, EC, OKP). Symmetric
  (``oct``) keys, keys holding private parts, and keys whose ``use`` is not ``sig`` are
  dropped, so HS/RS confusion cannot start from the key set.
* The TTL comes from ``Cache-Control: max-age``, clamped into [min_ttl, max_ttl].
* An unknown ``kid`` triggers at most one refetch per cooldown; a failed fetch is not
  retried faster than that either, so a flood of random ``kid``s or a dead JWKS endpoint
  cannot turn into a flood of requests to the IdP.
* On a failed refresh the last good set is served for ``stale_grace`` seconds. A
  successful refresh *replaces* the set: keys the IdP withdrew are no longer trusted.
* Fetches go through ``mcpcore.auth.urls``: https (loopback http only in development), checked
  addresses, no redirects, a size limit and an overall timeout.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import msgspec
from cryptography.hazmat.primitives.asymmetric import rsa

from mcpcore.auth.config import JwksSettings
from mcpcore.auth.errors import KeySetError, UnsafeUrl
from mcpcore.auth.urls import (
    NetworkPolicy,
    check_url,
    failure_reason,
    read_limited,
    safe_async_client,
)

log = logging.getLogger("mcpcore.auth.jwks")

#: Which key type (and curve) each algorithm needs.
_ALG_KEYS: dict[str, tuple[str, frozenset[str] | None]] = {
    **{a: ("RSA", None) for a in ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")},
    "ES256": ("EC", frozenset({"P-256"})),
    "ES384": ("EC", frozenset({"P-384"})),
    "ES512": ("EC", frozenset({"P-521"})),
    "EdDSA": ("OKP", frozenset({"Ed25519", "Ed448"})),
}
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d+)")
_MIN_RSA_BITS = 2048
_MAX_KEYS = 100


@dataclass(frozen=True, slots=True)
class VerificationKey:
    """One public key from a JWKS, ready for PyJWT."""

    kid: str | None
    kty: str
    alg: str | None
    crv: str | None
    key: Any

    def usable_for(self, alg: str) -> bool:
        if self.alg is not None and self.alg != alg:
            return False
        kty, curves = _ALG_KEYS.get(alg, ("", None))
        return self.kty == kty and (curves is None or self.crv in curves)


@dataclass(frozen=True, slots=True)
class KeySet:
    keys: tuple[VerificationKey, ...]

    def find(self, kid: str | None, alg: str) -> list[VerificationKey]:
        return [k for k in self.keys if (kid is None or k.kid == kid) and k.usable_for(alg)]

    @property
    def kids(self) -> frozenset[str]:
        return frozenset(k.kid for k in self.keys if k.kid is not None)


def parse_jwks(data: bytes | str) -> KeySet:
    """Parse a JWKS document, keeping only public signature keys we can use.

    Raises ``KeySetError`` for anything that is not a JSON object with a ``keys`` list,
    or when no usable key is left.
    """
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        raise KeySetError("JWKS is not valid JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise KeySetError("JWKS has no 'keys' list")
    if len(doc["keys"]) > _MAX_KEYS:
        raise KeySetError("JWKS has too many keys")
    keys: list[VerificationKey] = []
    for jwk in doc["keys"]:
        key = _parse_key(jwk)
        if key is not None:
            keys.append(key)
    if not keys:
        raise KeySetError("JWKS has no usable signature key")
    return KeySet(tuple(keys))


def _parse_key(jwk: object) -> VerificationKey | None:
    if not isinstance(jwk, dict):
        return None
    kty = jwk.get("kty")
    if kty not in ("RSA", "EC", "OKP"):
        return None  # 'oct' (shared secrets) never become verification keys
    if "d" in jwk or "p" in jwk or "k" in jwk:
        return None  # a private key published by mistake: refuse rather than use it
    if jwk.get("use", "sig") != "sig":
        return None
    ops = jwk.get("key_ops")
    if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
        return None
    alg = jwk.get("alg")
    if alg is not None and alg not in _ALG_KEYS:
        return None
    kid = jwk.get("kid")
    if kid is not None and not isinstance(kid, str):
        return None
    try:
        parsed = jwt.PyJWK(jwk)
    except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError, KeyError):
        return None
    if isinstance(parsed.key, rsa.RSAPublicKey) and parsed.key.key_size < _MIN_RSA_BITS:
        return None
    crv = jwk.get("crv")
    return VerificationKey(
        kid=kid, kty=kty, alg=alg, crv=crv if isinstance(crv, str) else None, key=parsed.key
    )


def _ttl(cache_control: str | None, settings: JwksSettings) -> float:
    ttl = 3600.0
    if cache_control:
        if "no-store" in cache_control or "no-cache" in cache_control:
            ttl = 0.0
        elif match := _MAX_AGE.search(cache_control.lower()):
            ttl = float(match.group(1))
    return min(max(ttl, settings.min_ttl), settings.max_ttl)


class JwksCache:
    """The key set of one ``jwks_uri``.

    ``fresh()`` is the hot path (no I/O); ``get()`` refreshes an expired set;
    ``refetch_for_unknown_kid()`` is rate-limited by the cooldown.
    """

    def __init__(
        self,
        uri: str,
        settings: JwksSettings,
        policy: NetworkPolicy,
        *,
        client: httpx.AsyncClient | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.uri = check_url(uri, policy)
        self._settings = settings
        self._policy = policy
        self._client = client
        self._own_client = client is None
        self._monotonic = monotonic
        self._keys: KeySet | None = None
        self._expires = 0.0
        self._stale_until = 0.0
        self._last_attempt: float | None = None
        self._lock = asyncio.Lock()
        #: Number of network fetches attempted (for tests and metrics).
        self.fetches = 0
        #: Bumped on every successful load, so memoised verifications can tell.
        self.generation = 0

    @property
    def fresh_until(self) -> float:
        """The ``monotonic`` time until which the current key set is fresh (0.0 before
        the first load). It changes only with ``generation``: a load sets both."""
        return self._expires

    def fresh(self) -> KeySet | None:
        if self._keys is not None and self._monotonic() < self._expires:
            return self._keys
        return None

    async def get(self) -> KeySet:
        """A usable key set: fresh, refreshed, or stale within the grace period."""
        keys = self.fresh()
        if keys is not None:
            return keys
        async with self._lock:
            keys = self.fresh()
            if keys is not None:
                return keys
            if self._may_fetch():
                try:
                    return await self._fetch()
                except KeySetError:
                    pass
            if self._keys is not None and self._monotonic() < self._stale_until:
                return self._keys
            raise KeySetError("no usable keys for this issuer")

    async def refetch_for_unknown_kid(self) -> bool:
        """Refetch once if the cooldown allows; True if a new set was loaded."""
        async with self._lock:
            if not self._may_fetch():
                return False
            try:
                await self._fetch()
            except KeySetError:
                return False
            return True

    async def keys_for_retry(self, tried: KeySet | None) -> KeySet | None:
        """The key set to retry a verification with, after a token named a key ``tried``
        lacks. ``tried`` None (nothing loaded, or expired): load it, as ``get()`` does
        (``KeySetError`` if no set can be had). Otherwise refetch once if the cooldown
        allows; None when no newer set can be had (the key is unknown)."""
        if tried is None:
            return await self.get()
        if await self.refetch_for_unknown_kid():
            return self.fresh()
        return None

    def _may_fetch(self) -> bool:
        last = self._last_attempt
        return last is None or self._monotonic() - last >= self._settings.refetch_cooldown

    async def _fetch(self) -> KeySet:
        self._last_attempt = self._monotonic()
        self.fetches += 1
        if self._client is None:
            self._client = safe_async_client(self._policy, timeout=self._settings.timeout)
        try:
            async with asyncio.timeout(self._settings.timeout):
                async with self._client.stream(
                    "GET",
                    self.uri,
                    headers={"accept": "application/jwk-set+json, application/json"},
                ) as response:
                    if response.status_code != 200:
                        raise KeySetError(f"JWKS endpoint answered {response.status_code}")
                    body = await read_limited(response, self._settings.max_bytes)
                    cache_control = response.headers.get("cache-control")
        except KeySetError as exc:
            log.warning("JWKS fetch from %s failed: %s", self.uri, exc)
            raise
        except (httpx.HTTPError, TimeoutError, ValueError, UnsafeUrl, OSError) as exc:
            log.warning("JWKS fetch from %s failed: %s", self.uri, failure_reason(exc))
            raise KeySetError("JWKS endpoint unreachable") from None
        try:
            keys = parse_jwks(body)
        except KeySetError as exc:
            log.warning("JWKS from %s rejected: %s", self.uri, exc)
            raise
        now = self._monotonic()
        # The keys, their expiry and the generation change together, here only (the
        # verified-token cache relies on it: see ``fresh_until``).
        self._keys = keys
        self.generation += 1
        self._expires = now + _ttl(cache_control, self._settings)
        self._stale_until = self._expires + self._settings.stale_grace
        log.info("JWKS from %s loaded: kids=%s", self.uri, sorted(keys.kids))
        return keys

    async def aclose(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None


__all__ = ["JwksCache", "KeySet", "VerificationKey", "parse_jwks"]
