"""A fleet's second level for the caller kinds' upstream tokens: sealed, in the Store.

``credentials.py`` keeps each upstream's exchanged tokens (``token_exchange``,
``id_jag``) in a bounded in-process LRU (``DownstreamCredentials``). With a shared Store
(``[gateway] store_url_env``: Redis), ``SealedTokenCache`` sits behind it: a token one
instance obtained for a principal is used by every instance until shortly before it
expires, so a caller whose requests the load balancer spreads costs one exchange at the
authorization server, not one per instance.

An exchanged token is a bearer credential (RFC 6750 §5: whoever holds it may use it),
so it never sits in the Store in clear, and nothing in the Store names the principal:

- **Sealed**: AES-256-GCM with the server's key ring (``mcpcore.sealing``, the ring the
  gateway's cursors and MRTR state use: ``MCPCORE_STATE_KEYS``, one for the fleet). An
  entry is sealed for its own Store key (the binding inside the authenticated
  plaintext), so an entry copied under another key does not open; one tampered with,
  or sealed with a key the ring does not hold (another deployment, a rotated-out key,
  an instance on a per-process development key), is ignored: the token is exchanged
  again and the entry replaced.
- **Keyed by a hash**: SHA-256 over (upstream, DPoP key thumbprint, principal issuer,
  tenant, subject, client, actors, audience, sorted scopes): never the principal's
  identifiers nor the caller's token. The DPoP thumbprint keeps instances with keys of
  their own (``dpop_key`` unset: one generated per instance) from sharing tokens bound
  to a key they do not hold.
- **TTL**: the token's remaining life minus the refresh margin (an entry the Store
  keeps is one the in-process cache would still use), at most ``MAX_SHARED_TTL``.
  The remaining life travels as a wall-clock expiry (instances' monotonic clocks
  differ): the fleet's clocks must agree within the refresh margin (30 s).

The Store is a cache, never a dependency: a Store that is down, slow (``timeout``) or
answers garbage is a miss, or a write skipped; the call goes on with an exchange.
Each outcome is counted (``counts``; ``mcpcore_gateway_token_cache_total`` on
``/metrics``) and an outage is logged once when it starts and once when it ends.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from typing import Final

import msgspec

from mcpcore.auth.server.downstream import CacheKey, DownstreamToken
from mcpcore.errors import InvalidRequestState
from mcpcore.sealing import Sealer, StateBinding
from mcpcore.stores.base import Store

log = logging.getLogger("mcpcore.gateway")

#: The longest an entry lives in the Store, whatever the token's lifetime.
MAX_SHARED_TTL: Final = 24 * 3600.0
#: Seconds a Store operation gets before it counts as a failure (a miss).
SHARED_TIMEOUT: Final = 2.0
#: The sealed entries' "method" (what the binding says the blob is).
_SEALED_AS: Final = "gateway/upstream-token"
#: Version of the key derivation and the sealed data: a change makes old entries misses.
_FORMAT: Final = 1
#: The outcomes counted (``counts``).
OUTCOMES: Final = ("hit", "miss", "stored", "rejected", "error")


class _Entry(msgspec.Struct, array_like=True, frozen=True):
    """The sealed plaintext's data: the token and when it expires (wall clock)."""

    token: str
    token_type: str
    audience: str
    scopes: list[str]
    expires: float



class SealedTokenCache:
    """One upstream's tokens in the fleet's Store (module docstring); the second level
    of its ``DownstreamCredentials`` (``SharedTokens``).

    ``sealer``: the server's sealer (``Server.mrtr.get_sealer``), asked on first use;
    its key ring seals, with this cache's own lifetime. ``clock``: the clock token
    expiries are measured on (``DownstreamCredentials``'s); ``wall``: seconds since the
    epoch, shared by the fleet. ``binding``: what else the tokens are bound to (the
    upstream's DPoP key thumbprint, else empty).
    """

    def __init__(self, store: Store, sealer: Callable[[], Sealer], *, upstream: str,
                 binding: str = "", refresh_margin: float = 30.0,
                 clock: Callable[[], float] = time.time,
                 wall: Callable[[], float] = time.time,
                 timeout: float = SHARED_TIMEOUT) -> None:
        self.store = store
        self.upstream = upstream
        self._sealer_of = sealer
        self._sealer: Sealer | None = None
        self._binding = binding
        self._margin = refresh_margin
        self._clock = clock
        self._wall = wall
        self._timeout = timeout
        self._down = False
        #: Outcomes so far, by ``OUTCOMES`` name.
        self.counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)

    def store_key(self, key: CacheKey) -> str:
        """The Store key of ``key``'s entry: a hash, never the identifiers."""
        material = msgspec.json.encode([_FORMAT, self.upstream, self._binding, list(key)])
        return "gw:token:" + hashlib.sha256(material).hexdigest()

    def _sealing(self) -> Sealer:
        if self._sealer is None:
            ring = self._sealer_of().ring
            self._sealer = Sealer(ring, ttl_seconds=MAX_SHARED_TTL, clock=self._wall)
        return self._sealer

    async def get(self, key: CacheKey) -> DownstreamToken | None:
        name = self.store_key(key)
        try:
            async with asyncio.timeout(self._timeout):
                raw = await self.store.get(name)
        except Exception as exc:  # down, slow, or a bug: a miss, never a failed call
            self._failed("read", exc)
            return None
        self._up()
        if raw is None:
            self.counts["miss"] += 1
            return None
        token = self._open(raw, name, key)
        if token is None:
            self.counts["rejected"] += 1
        elif token.expires_at - self._margin <= self._clock():
            token = None  # stale on this instance's clock: as good as absent
            self.counts["miss"] += 1
        else:
            self.counts["hit"] += 1
        return token

    def _open(self, raw: bytes, name: str, key: CacheKey) -> DownstreamToken | None:
        try:
            opened = self._sealing().open(raw.decode("ascii", "replace"),
                                          StateBinding(name, _SEALED_AS, name))
            entry = msgspec.convert(opened.data.get("entry"), _Entry)
        except (InvalidRequestState, msgspec.ValidationError) as exc:
            log.warning("upstream %s: a shared token entry is ignored (%s); exchanging "
                        "again", self.upstream, getattr(exc, "message", exc),
                        extra={"upstream": self.upstream})
            return None
        if entry.audience != key[5]:
            return None
        expires_at = self._clock() + (entry.expires - self._wall())
        return DownstreamToken(entry.token, audience=entry.audience,
                               scopes=frozenset(entry.scopes), expires_at=expires_at,
                               token_type=entry.token_type)

    async def put(self, key: CacheKey, token: DownstreamToken) -> None:
        remaining = token.expires_at - self._clock()
        ttl = min(remaining - self._margin, MAX_SHARED_TTL)
        if ttl <= 0:
            return  # the in-process cache would not use it either
        name = self.store_key(key)
        entry = _Entry(token.access_token, token.token_type, token.audience,
                       sorted(token.scopes), self._wall() + remaining)
        try:
            blob = self._sealing().seal(StateBinding(name, _SEALED_AS, name), round=0,
                                        data={"entry": msgspec.to_builtins(entry)})
        except ValueError as exc:  # a token too large to seal: kept in-process only
            log.info("upstream %s: a token is not shared: %s", self.upstream, exc,
                     extra={"upstream": self.upstream})
            return
        try:
            async with asyncio.timeout(self._timeout):
                await self.store.set(name, blob.encode("ascii"), ttl=ttl)
        except Exception as exc:
            self._failed("write", exc)
            return
        self._up()
        self.counts["stored"] += 1

    def _failed(self, what: str, exc: BaseException) -> None:
        self.counts["error"] += 1
        if not self._down:
            self._down = True
            log.warning("upstream %s: the shared token cache failed (%s: %s); tokens are "
                        "exchanged without it until it answers", self.upstream, what,
                        str(exc) or type(exc).__name__, extra={"upstream": self.upstream})

    def _up(self) -> None:
        if self._down:
            self._down = False
            log.warning("upstream %s: the shared token cache answers again", self.upstream,
                        extra={"upstream": self.upstream})

    def __repr__(self) -> str:
        return f"SealedTokenCache({self.upstream!r}, counts={self.counts!r})"


__all__ = ["MAX_SHARED_TTL", "OUTCOMES", "SHARED_TIMEOUT", "SealedTokenCache"]
