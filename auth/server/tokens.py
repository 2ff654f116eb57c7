"""Access-token validation.

``verify_jwt`` is a pure function of (token, keys, now, policy): no clock, no network.
It raises ``InvalidToken`` for every failure (or ``UnknownSigningKey`` so the caller may
refetch keys once) and returns a ``Principal`` built from verified claims only.

Order of checks, each cheap one before any expensive one:

1. size, shape (three base64url segments; JWE and anything else refused);
2. header: ``alg`` in the configured allow-list (never taken from the token, so ``none``
   and HS* cannot get in), ``typ`` not an ID token/ID-JAG/DPoP proof/logout token,
   no ``crit``;
3. ``iss`` is read (unverified) only to pick which *configured* issuer's keys to use;
   an unknown issuer is refused before any key lookup or fetch;
4. signature, by PyJWT's algorithm objects (cryptography underneath), with a key from
   that issuer's JWKS whose type matches ``alg``;
5. claims: required ones present, ``iss`` equal (plain ``==``) to that issuer, ``aud``
   containing this resource (canonical compare, never prefix), ``exp``/``nbf``/``iat``
   within the leeway, a non-empty ``sub``.

``JwtValidator`` wraps it with the JWKS caches: the common case (cached key) does no I/O.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from mcpcore.auth import jws
from mcpcore.auth.config import ResourceServerConfig, canonical_uri
from mcpcore.auth.errors import InvalidToken, KeySetError, TemporarilyUnavailable, UnknownSigningKey
from mcpcore.auth.jwks import JwksCache, KeySet
from mcpcore.auth.scopes import parse_scopes
from mcpcore.auth.times import numeric_claim
from mcpcore.principal import Principal

_AT_TYPES = frozenset({"at+jwt", "application/at+jwt"})
_LEGACY_TYPES = frozenset({"jwt", "application/jwt"})
_MAX_ACT_DEPTH = 8


class TokenValidator(Protocol):
    """Anything that turns a bearer token into a ``Principal`` or raises
    ``AuthenticationError`` (``InvalidToken``, ``TemporarilyUnavailable``).

    A validator with a cache may also offer ``cached(token) -> Principal | None``: a
    synchronous lookup, with no I/O, of a token it already verified and that is still
    valid now (``JwtValidator`` does). ``BearerAuthMiddleware`` tries it first and calls
    ``validate`` when it returns ``None``.
    """

    async def validate(self, token: str) -> Principal: ...


@dataclass(frozen=True, slots=True)
class ValidationPolicy:
    """What ``verify_jwt`` checks, taken from ``ResourceServerConfig``."""

    resource: str
    issuers: frozenset[str]
    algorithms: frozenset[str]
    leeway: float = 30.0
    required_claims: tuple[str, ...] = ("iss", "sub", "aud", "exp", "iat")
    strict_typ: bool = False
    tenant_claim: str = "tid"
    max_token_bytes: int = 8 * 1024

    @classmethod
    def from_config(cls, config: ResourceServerConfig) -> ValidationPolicy:
        return cls(
            resource=canonical_uri(config.resource),
            issuers=frozenset(config.issuers),
            algorithms=frozenset(config.algorithms),
            leeway=config.leeway,
            required_claims=config.required_claims,
            strict_typ=config.strict_typ,
            tenant_claim=config.tenant_claim,
            max_token_bytes=config.max_token_bytes,
        )


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    return numeric_claim(claims, name, InvalidToken)


def _actors(claims: Mapping[str, Any]) -> tuple[str, ...]:
    actors: list[str] = []
    act = claims.get("act")
    while act is not None:
        if not isinstance(act, dict) or not isinstance(act.get("sub"), str):
            raise InvalidToken("act claim is malformed")
        if len(actors) >= _MAX_ACT_DEPTH:
            raise InvalidToken("act chain too deep")
        actors.append(act["sub"])
        act = act.get("act")
    return tuple(actors)


def _names(audience: str, resource: str) -> bool:
    if audience == resource:
        return True
    # Canonical compare (case of scheme and host, default port, one trailing slash), but
    # never for a value canonicalisation would *strip* something from: userinfo
    # (``http://evil@host/mcp``) or a fragment (``.../mcp#x``) make it another string.
    if "#" in audience or "@" in audience.split("?", 1)[0]:
        return False
    return canonical_uri(audience) == resource


def check_audience(aud: object, resource: str) -> bool:
    """True if ``aud`` (string or list) names ``resource``; canonical compare, exact:
    never by prefix or substring, never through userinfo or a fragment."""
    if isinstance(aud, str):
        return _names(aud, resource)
    if isinstance(aud, list):
        return any(isinstance(a, str) and _names(a, resource) for a in aud)
    return False


def check_claims(
    claims: Mapping[str, Any], *, issuer: str, now: float, policy: ValidationPolicy
) -> None:
    """Claim checks shared by JWT and introspection results."""
    for name in policy.required_claims:
        if name not in claims:
            raise InvalidToken(f"missing claim {name}")
    if claims.get("iss", issuer) != issuer:
        raise InvalidToken("issuer mismatch")
    if not check_audience(claims.get("aud"), policy.resource):
        raise InvalidToken("audience is not this resource")
    check_times(claims, now=now, leeway=policy.leeway)
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise InvalidToken("sub is missing or not a string")
    for name in ("client_id", "azp"):
        if name in claims and not isinstance(claims[name], str):
            raise InvalidToken(f"{name} is not a string")


def check_times(claims: Mapping[str, Any], *, now: float, leeway: float) -> None:
    """``exp``, ``nbf`` and ``iat`` against ``now``, with ``leeway`` seconds of skew."""
    exp = _number(claims, "exp")
    if exp is not None and now >= exp + leeway:
        raise InvalidToken("token expired")
    nbf = _number(claims, "nbf")
    if nbf is not None and now + leeway < nbf:
        raise InvalidToken("token not yet valid")
    iat = _number(claims, "iat")
    if iat is not None and iat > now + leeway:
        raise InvalidToken("token issued in the future")


def _time_window(claims: Mapping[str, Any], leeway: float) -> tuple[float, float]:
    """The ``now`` values ``check_times`` accepts for these claims: ``[from, until)``."""
    exp, nbf, iat = _number(claims, "exp"), _number(claims, "nbf"), _number(claims, "iat")
    valid_until = exp + leeway if exp is not None else math.inf
    valid_from = max(nbf - leeway if nbf is not None else -math.inf,
                     iat - leeway if iat is not None else -math.inf)
    return valid_from, valid_until


def principal_from_claims(
    claims: Mapping[str, Any], *, issuer: str, method: str, policy: ValidationPolicy
) -> Principal:
    """A ``Principal`` from checked claims (never from headers, body or ``_meta``)."""
    client_id = claims.get("client_id") or claims.get("azp")
    tenant = claims.get(policy.tenant_claim)
    jti = claims.get("jti")
    return Principal(
        subject=claims["sub"],
        issuer=issuer,
        tenant=tenant if isinstance(tenant, str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=parse_scopes(claims),
        actors=_actors(claims),
        auth_method=method,
        token_id=jti if isinstance(jti, str) else None,
        claims=dict(claims),
    )


def verify_jwt(
    token: str, keys: Mapping[str, KeySet | None], *, now: float, policy: ValidationPolicy
) -> Principal:
    """Validate a JWT access token; pure (see the module docstring for the order).

    ``keys`` maps each configured issuer to its current key set (``None`` if not loaded:
    that raises ``UnknownSigningKey`` so the caller can load it).
    """
    if len(token) > policy.max_token_bytes:
        raise InvalidToken("token too large")
    try:
        parsed = jws.parse_compact(token)
    except jws.MalformedJws as exc:
        raise InvalidToken(str(exc)) from None
    header = parsed.header
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in policy.algorithms:
        raise InvalidToken("algorithm not allowed")
    typ = header.get("typ")
    if typ is not None:
        if not isinstance(typ, str):
            raise InvalidToken("typ is not a string")
        typ = typ.lower()
        if typ not in _AT_TYPES and (policy.strict_typ or typ not in _LEGACY_TYPES):
            raise InvalidToken("token type is not an access token")
    elif policy.strict_typ:
        raise InvalidToken("typ is required")
    if "crit" in header:
        raise InvalidToken("critical header parameters are not supported")
    kid = header.get("kid")
    if kid is not None and not isinstance(kid, str):
        raise InvalidToken("kid is not a string")

    unverified = parsed.payload
    issuer = unverified.get("iss")
    if not isinstance(issuer, str) or issuer not in policy.issuers:
        raise InvalidToken("issuer is not trusted")
    keyset = keys.get(issuer)
    if keyset is None:
        raise UnknownSigningKey(issuer, "keys not loaded")
    candidates = keyset.find(kid, alg)
    if not candidates:
        raise UnknownSigningKey(issuer)
    if len(candidates) > 1:
        raise InvalidToken("token has no kid and the issuer publishes several keys")
    if not jws.verify(parsed, alg, candidates[0].key):
        raise InvalidToken("signature check failed")
    claims = unverified  # decoded from exactly the bytes the signature covers
    check_claims(claims, issuer=issuer, now=now, policy=policy)
    return principal_from_claims(claims, issuer=issuer, method="jwt", policy=policy)


class JwtValidator:
    """Validates JWT access tokens against the configured issuers' JWKS.

    >>> validator = JwtValidator(config)                # doctest: +SKIP
    >>> principal = await validator.validate(token)     # doctest: +SKIP
    """

    def __init__(
        self,
        config: ResourceServerConfig,
        *,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = ValidationPolicy.from_config(config)
        self._clock = clock
        self.caches: dict[str, JwksCache] = {
            s.issuer: JwksCache(
                s.jwks_uri, config.jwks, config.network, client=client, monotonic=monotonic
            )
            for s in config.authorization_servers
            if s.jwks_uri
        }
        self._monotonic = monotonic
        self._memo_ttl = config.verified_token_cache_ttl
        self._memo_max = config.verified_token_cache_size
        self._memo: dict[str, tuple[Principal, float, JwksCache, int, float, float]] = {}

    def current_keys(self) -> dict[str, KeySet | None]:
        return {issuer: cache.fresh() for issuer, cache in self.caches.items()}

    def cached(self, token: str) -> Principal | None:
        """The ``Principal`` of ``token`` if the verified-token cache holds it and it is
        valid now (times, TTL, its issuer's key set unchanged and fresh), with no I/O;
        ``None`` otherwise, and then ``validate`` decides (and says why it refuses)."""
        hit = self._memo.get(token)
        if hit is None:
            return None
        principal, until, cache, generation, valid_from, valid_until = hit
        # ``until`` is the TTL's end or the key set's (``fresh_until``), whichever is
        # first; the key set's moves only with its generation.
        if (
            self._monotonic() < until
            and cache.generation == generation
            and valid_from <= self._clock() < valid_until
        ):
            return principal
        return None

    async def validate(self, token: str) -> Principal:
        if self._memo_ttl <= 0:
            return await self._validate(token)
        # Opt-in memo of *signature and claim parsing* only, keyed by the token itself
        # (one dict lookup; the process holds the token for the request anyway): times
        # are re-checked on every hit (against the window the claims allow, computed
        # once), scopes are re-checked by the middleware, and a hit is dropped once its
        # issuer's key set changes or goes stale, or the TTL passes.
        principal = self.cached(token)
        if principal is not None:
            return principal
        memo = self._memo
        hit = memo.get(token)
        if hit is not None:
            principal, until, cache, generation, _, _ = hit
            if self._monotonic() < until and cache.generation == generation:
                try:  # outside the window: say why, as a full check would
                    check_times(principal.claims, now=self._clock(), leeway=self.policy.leeway)
                except InvalidToken:
                    memo.pop(token, None)
                    raise
                return principal
            memo.pop(token, None)
        principal = await self._validate(token)
        # Read right after the check, with no await in between: the generation (and
        # freshness) of the very key set the signature was checked against.
        issuer_cache = self.caches[principal.issuer or ""]
        valid_from, valid_until = _time_window(principal.claims, self.policy.leeway)
        until = min(self._monotonic() + self._memo_ttl, issuer_cache.fresh_until)
        memo[token] = (principal, until, issuer_cache, issuer_cache.generation,
                       valid_from, valid_until)
        while len(memo) > self._memo_max:
            del memo[next(iter(memo))]  # the oldest entry (dicts keep insertion order)
        return principal

    async def _validate(self, token: str) -> Principal:
        keys = self.current_keys()
        tries = 0  # with the cached keys; after loading them; after one refetch
        while True:
            try:
                return verify_jwt(token, keys, now=self._clock(), policy=self.policy)
            except UnknownSigningKey as exc:
                tries += 1
                cache = self.caches.get(exc.issuer)
                if cache is None:
                    raise InvalidToken("issuer has no JWKS configured") from None
                if tries == 3:
                    raise InvalidToken("unknown signing key") from None
                try:  # not loaded or expired: load (rate-limited), stale within grace
                    retry = await cache.keys_for_retry(keys.get(exc.issuer))
                except KeySetError:
                    raise TemporarilyUnavailable("JWKS unavailable") from None
                if retry is None:
                    raise InvalidToken("unknown signing key") from None
                keys[exc.issuer] = retry

    async def aclose(self) -> None:
        for cache in self.caches.values():
            await cache.aclose()


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


class CompositeValidator:
    """JWS-shaped tokens go to the JWT validator; others to introspection (if any)."""

    def __init__(self, jwt_validator: TokenValidator | None, opaque: TokenValidator | None):
        self._jwt = jwt_validator
        self._opaque = opaque
        self._jwt_cached: Callable[[str], Principal | None] | None = getattr(
            jwt_validator, "cached", None)

    @property
    def cached(self) -> Callable[[str], Principal | None]:
        """The JWT validator's ``cached`` for a JWT (``None`` for any other token); with
        no other validator, that method itself (one call less per request)."""
        if self._jwt_cached is not None and self._opaque is None:
            return self._jwt_cached
        return self._cached_jwt

    def _cached_jwt(self, token: str) -> Principal | None:
        if self._jwt_cached is not None and looks_like_jwt(token):
            return self._jwt_cached(token)
        return None

    async def validate(self, token: str) -> Principal:
        if self._jwt is not None and (self._opaque is None or looks_like_jwt(token)):
            return await self._jwt.validate(token)
        if self._opaque is not None:
            return await self._opaque.validate(token)
        raise InvalidToken("no validator for this kind of token")

    async def aclose(self) -> None:
        for v in (self._jwt, self._opaque):
            close = getattr(v, "aclose", None)
            if close is not None:
                await close()


__all__ = [
    "CompositeValidator",
    "JwtValidator",
    "TokenValidator",
    "ValidationPolicy",
    "check_audience",
    "check_claims",
    "check_times",
    "looks_like_jwt",
    "principal_from_claims",
    "verify_jwt",
]
