"""Time MRTR ``requestState`` sealing against baselines measured in the same run.

    python bench/bench_sealing.py [--iterations N]

Per op, for a typical state (two small earlier answers plus a little handler data):
seal, open, seal+open, and as baselines a plain msgspec JSON encode+decode of the same
claims and an HMAC-SHA256 over them (what integrity-only state would cost). Target
(DESIGN.md): seal+open in tens of microseconds.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpcore.sealing import KeyRing, Sealer, StateBinding, params_digest

PARAMS = {"name": "deploy", "arguments": {"service": "billing", "env": "prod", "replicas": 3}}
BINDING = StateBinding(
    "https://idp.example.com|user-8c41f2", "tools/call", params_digest("tools/call", PARAMS)
)
DATA = {
    "answers": {
        "confirm": {"action": "accept", "content": {"approve": True, "reason": "hotfix"}},
        "region": {"action": "accept", "content": {"region": "eu-west-1"}},
    },
    "step": "await-window",
    "attempt": 2,
}


def timed(label: str, fn: Callable[[], object], iterations: int) -> float:
    """Best of 9 short runs (robust to a busy machine), in microseconds per call."""
    for _ in range(min(iterations, 2000)):
        fn()  # warm up
    best = float("inf")
    for _ in range(9):
        start = time.perf_counter_ns()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / iterations / 1000)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5_000)
    n = parser.parse_args().iterations

    sealer = Sealer(KeyRing([("k2", os.urandom(32)), ("k1", os.urandom(32))]))
    token = sealer.seal(BINDING, round=2, data=DATA)
    claims = {
        "v": 1,
        "principal": BINDING.principal,
        "method": BINDING.method,
        "digest": BINDING.params_digest,
        "round": 2,
        "flow_id": "x" * 22,
        "jti": "y" * 22,
        "iat": time.time(),
        "exp": time.time() + 600,
        "data": DATA,
    }
    mac_key = os.urandom(32)

    def json_roundtrip() -> object:
        return msgspec.json.decode(msgspec.json.encode(claims))

    def hmac_json() -> object:
        body = msgspec.json.encode(claims)
        return hmac.new(mac_key, body, hashlib.sha256).digest()

    def seal() -> object:
        return sealer.seal(BINDING, round=2, data=DATA)

    def open_() -> object:
        return sealer.open(token, BINDING)

    def seal_open() -> object:
        return sealer.open(sealer.seal(BINDING, round=2, data=DATA), BINDING)

    rows = [
        ("baseline: msgspec JSON encode+decode", timed("json", json_roundtrip, n)),
        ("baseline: JSON encode + HMAC-SHA256", timed("hmac", hmac_json, n)),
        ("seal", timed("seal", seal, n)),
        ("open", timed("open", open_, n)),
        ("seal+open", timed("seal+open", seal_open, n)),
    ]
    base = rows[0][1]
    print(f"python {platform.python_version()} on {platform.machine()}, {n} iterations, best of 9")
    print(f"typical requestState: {len(token)} characters")
    print(f"{'operation':40} {'µs/op':>8} {'x JSON baseline':>16}")
    for label, us in rows:
        print(f"{label:40} {us:8.2f} {us / base:16.1f}")
    total = rows[-1][1]
    verdict = "within" if total < 100 else "OVER"
    print(f"seal+open: {total:.1f} µs ({verdict} the 'tens of microseconds' target)")


if __name__ == "__main__":
    main()
