"""10,000 distinct principals on one upstream acting as the caller: the in-process
token cache holds at most ``MAX_CACHED_TOKENS`` (least recently used dropped first),
and a hit never reaches the authorization server (every exchange is counted). The
figures are in docs/performance.md ("Gateway: 10,000 principals")."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from mcpcore.auth.server.downstream import DownstreamToken
from mcpcore.auth.server.inbound import InboundToken
from mcpcore.gateway.config import (
    Credentials,
    GatewayConfig,
    SecretRef,
    UpstreamConfig,
    resolve_secrets,
)
from mcpcore.gateway.credentials import MAX_CACHED_TOKENS, Caller, UpstreamCredential
from mcpcore.principal import Principal

ROOT = Path(__file__).resolve().parents[2]
AUDIENCE = "https://upstream.example/mcp"


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    async def exchange(self, subject_token: InboundToken, *, audience: str,
                       scopes: Iterable[str] = ()) -> DownstreamToken:
        self.calls += 1
        return DownstreamToken(f"upstream-token-{self.calls}", audience=audience,
                               scopes=frozenset(scopes), expires_at=time.monotonic() + 3600)

    async def aclose(self) -> None:
        return None


def credential() -> tuple[UpstreamCredential, Counting]:
    upstream = UpstreamConfig("up", url=AUDIENCE, credentials=Credentials(
        kind="token_exchange", token_endpoint="http://127.0.0.1:9/token",
        client_id="gateway", client_secret=SecretRef(env="S"), resource=AUDIENCE))
    made = UpstreamCredential(upstream, resolve_secrets(
        GatewayConfig(upstreams=(upstream,)), {"S": "secret"}), clock=time.monotonic)
    counting = Counting()
    made.tokens.exchange = counting
    return made, counting


def callers(first: int, n: int) -> list[Caller]:
    return [Caller(Principal(f"user-{i}", issuer="https://as.example", auth_method="jwt"),
                   InboundToken(f"caller-{i}")) for i in range(first, first + n)]


async def test_ten_thousand_principals_bounded_and_hits_cost_no_exchange() -> None:
    assert MAX_CACHED_TOKENS == 10_000
    cred, counting = credential()
    first = callers(0, 10_000)
    values = [await cred.for_caller(c) for c in first]
    assert counting.calls == 10_000 and len(set(values)) == 10_000
    # Every one of them again: hits, no exchange, each its own token.
    assert [await cred.for_caller(c) for c in first] == values
    assert counting.calls == 10_000
    # One more principal: still 10,000 entries; the least recently used is gone.
    newcomer, = callers(10_000, 1)
    await cred.for_caller(newcomer)
    assert len(cred.tokens._cache) == MAX_CACHED_TOKENS
    assert counting.calls == 10_001
    await cred.for_caller(first[-1])  # recently used: kept
    assert counting.calls == 10_001
    await cred.for_caller(first[0])  # least recently used: dropped, exchanged again
    assert counting.calls == 10_002
    await cred.aclose()


def test_the_bench_runs_and_its_checks_pass() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench/bench_gateway_principals.py"),
                           "--principals", "300", "--rounds", "1"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "| in-process hit (for_caller)" in done.stdout
    assert "exchanges 0 |" in done.stdout
