"""The gateway's per-caller token cache with 10,000 distinct principals.

    python bench/bench_gateway_principals.py [--principals 10000] [--rounds 3]

One ``token_exchange`` upstream credential (``mcpcore.gateway.credentials``), the
gateway's own code path (``UpstreamCredential.for_caller`` → the in-process LRU →
the exchange), with the authorization server replaced by a counting stand-in that
returns tokens the size of the project's own authorization server's (an RS256 JWT):
every exchange is counted, so "no round trip" is a count, not a guess.

Measured (and checked: the script exits 1 if a check fails):

1. memory (``tracemalloc``) of the cache holding one token for each of N principals;
2. N more principals: the cache stays at ``MAX_CACHED_TOKENS`` entries and its memory
   where it was (least recently used dropped first: the first principal's next call is
   an exchange, the last one's a hit);
3. a hit for each principal in the cache: exchanges made (must be 0) and µs per hit
   (best round of ``--rounds``);
4. the fleet's second level (``token_cache.SealedTokenCache`` on a ``MemoryStore``):
   a second instance's first call for each principal opens the sealed entry instead of
   exchanging (exchanges: 0), µs per such hit.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import secrets
import sys
import time
import tracemalloc
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcpcore.auth.issuer.authorization_server import LocalAuthorizationServer  # noqa: E402
from mcpcore.auth.server.downstream import DownstreamToken  # noqa: E402
from mcpcore.auth.server.inbound import InboundToken  # noqa: E402
from mcpcore.gateway.config import (  # noqa: E402
    Credentials,
    GatewayConfig,
    SecretRef,
    UpstreamConfig,
    resolve_secrets,
)
from mcpcore.gateway.credentials import (  # noqa: E402
    MAX_CACHED_TOKENS,
    Caller,
    UpstreamCredential,
)
from mcpcore.principal import Principal  # noqa: E402
from mcpcore.sealing import KeyRing, Sealer  # noqa: E402
from mcpcore.stores.memory import MemoryStore  # noqa: E402

ISSUER = "http://127.0.0.1:9000"
AUDIENCE = "https://upstream.example/mcp"


class CountingExchange:
    """Stands in for the authorization server: counts exchanges, returns a fresh token
    of ``size`` characters for each (an hour's lifetime)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.calls = 0

    async def exchange(self, subject_token: InboundToken, *, audience: str,
                       scopes: Iterable[str] = ()) -> DownstreamToken:
        self.calls += 1
        return DownstreamToken(secrets.token_urlsafe(self.size * 3 // 4), audience=audience,
                               scopes=frozenset(scopes), expires_at=time.monotonic() + 3600)

    async def aclose(self) -> None:
        return None


def jwt_size() -> int:
    """The length of a token the project's authorization server issues for a caller."""
    server = LocalAuthorizationServer(ISSUER, resources=[AUDIENCE])
    return len(server.mint(sub="user-000001", aud=AUDIENCE, scope="mcp",
                           client_id="gateway", jti=secrets.token_urlsafe(16)))


def credential(store: MemoryStore | None = None, sealer: Sealer | None = None
               ) -> tuple[UpstreamCredential, CountingExchange]:
    upstream = UpstreamConfig("up", url=AUDIENCE, credentials=Credentials(
        kind="token_exchange", token_endpoint=ISSUER + "/token", client_id="gateway",
        client_secret=SecretRef(env="SECRET"), resource=AUDIENCE, scopes=("mcp",)))
    found = resolve_secrets(GatewayConfig(upstreams=(upstream,)), {"SECRET": "s" * 24})
    made = UpstreamCredential(upstream, found, clock=time.monotonic, store=store,
                              sealer=(lambda: sealer) if sealer is not None else None)
    counting = CountingExchange(jwt_size())
    made.tokens.exchange = counting
    return made, counting


def callers(first: int, n: int) -> list[Caller]:
    return [Caller(Principal(f"user-{i:06d}", issuer=ISSUER, client_id="chat-app",
                             auth_method="jwt"), InboundToken(f"caller-token-{i}"))
            for i in range(first, first + n)]


async def each(cred: UpstreamCredential, who: list[Caller]) -> float:
    """Seconds for one ``for_caller`` per caller."""
    started = time.perf_counter()
    for caller in who:
        await cred.for_caller(caller)
    return time.perf_counter() - started


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def main(n: int, rounds: int) -> int:
    failed: list[str] = []

    def check(ok: bool, what: str) -> None:
        if not ok:
            failed.append(what)

    cred, counting = credential()
    first, second = callers(0, n), callers(n, n)
    # Memory: traced over both fills (tracemalloc must run throughout, or the frees of
    # evicted entries, allocated while it was off, would not count).
    tracemalloc.start()
    base = traced()
    await each(cred, first)
    filled = traced()
    await each(cred, second)
    refilled = traced()
    tracemalloc.stop()
    check(counting.calls == 2 * n, f"{2 * n} exchanges to fill ({counting.calls})")
    size = len(cred.tokens._cache)
    check(size == min(2 * n, MAX_CACHED_TOKENS), f"entries capped ({size})")
    calls = counting.calls
    await cred.for_caller(second[-1])
    last_hit = counting.calls == calls
    await cred.for_caller(first[0])
    first_evicted = counting.calls == calls + 1
    if 2 * n > MAX_CACHED_TOKENS:
        check(last_hit and first_evicted, "least recently used dropped first")
    # Hits: the principals in the cache now (the second batch, but for the one just
    # evicted to make room for the first principal again).
    cached = second[1:]
    exchanged = counting.calls
    hit_times = [await each(cred, cached) for _ in range(rounds)]
    hits_made = counting.calls - exchanged
    check(hits_made == 0, f"no exchange on a hit ({hits_made})")
    await cred.aclose()

    # The fleet's second level: instance one fills it, instance two reads it.
    store = MemoryStore()
    sealer = Sealer(KeyRing([("bench", secrets.token_bytes(32))]))
    one, _ = credential(store, sealer)
    two, counting_two = credential(store, sealer)
    fill_started = time.perf_counter()
    await each(one, first)
    fill_shared = time.perf_counter() - fill_started
    shared_time = await each(two, first)
    check(counting_two.calls == 0, f"second instance: no exchange ({counting_two.calls})")
    await one.aclose()
    await two.aclose()

    per_entry = (filled - base) / n
    best_hit = min(hit_times) / len(cached) * 1e6
    print(f"principals: {n:,} (then {n:,} more); cache cap {MAX_CACHED_TOKENS:,}; "
          f"token size {counting.size} characters")
    print("| measure | value |")
    print("|---|---|")
    print(f"| cache memory, {n:,} principals (tracemalloc) | "
          f"{(filled - base) / 1e6:.1f} MB ({per_entry:,.0f} B per principal) |")
    print(f"| exchanges to fill / on {rounds} rounds of {len(cached):,} hits | "
          f"{2 * n:,} / {hits_made} |")
    print(f"| in-process hit (for_caller), best of {rounds} rounds | {best_hit:.2f} µs |")
    print(f"| entries after {2 * n:,} principals | {size:,} |")
    print(f"| memory change for the next {n:,} principals | "
          f"{(refilled - filled) / 1e6:+.2f} MB |")
    print(f"| least recently used dropped first | first principal: "
          f"{'exchange' if first_evicted else 'hit'}, last: "
          f"{'hit' if last_hit else 'exchange'} |")
    print(f"| shared level: fill (exchange + seal + store), per principal | "
          f"{fill_shared / n * 1e6:.1f} µs |")
    print(f"| shared level: second instance's first call (open the sealed entry), "
          f"exchanges {counting_two.calls} | {shared_time / n * 1e6:.1f} µs |")
    for what in failed:
        print(f"FAILED: {what}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--principals", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.principals, args.rounds)))
