"""Server CPU per request over HTTP for the hot path's variants, at c=32, in one run.

    python bench/bench_hot.py [--duration 6] [--concurrency 32] [--rounds 2]

Four workloads against uvicorn processes set up as in ``run.py`` (one worker, uvloop +
httptools, pinned to core 1; the load generator on core 0), see ``hot_apps.py``:

- ``plain``: ``tools/call echo`` (the baseline of every ratio);
- ``auth``: the same call with a bearer JWT (RS256) through ``BearerAuthMiddleware``,
  verified-token cache on (the default); the token comes from a
  ``LocalAuthorizationServer`` run in this process on loopback, whose JWKS the server
  fetches once;
- ``mrtr1``: round 1 of a two-round elicitation (``greet``: the handler asks, the state
  is sealed, the reply is ``input_required``);
- ``mrtr2``: round 2, the retry with ``inputResponses`` and the ``requestState`` round 1
  returned (opened, checked against the request, the answer validated, completed). The
  same retry is sent again and again: the server seals without single-use markers here.

Reports req/s and server CPU µs per request (best round of each) and each one's ratio
to ``plain`` (targets: auth ≤ 1.10, each MRTR round ≤ 1.3). Writes
``bench/results/hot.json``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import bench_auth  # noqa: E402  (bench/ is not a package)
import loadgen  # noqa: E402
import run  # noqa: E402

from mcpcore.auth.issuer import LocalAuthorizationServer, SigningKey  # noqa: E402

RESULTS = BENCH_DIR / "results" / "hot.json"
META = {"io.modelcontextprotocol/protocolVersion": loadgen.PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
TARGETS = {"auth": 1.10, "mrtr1": 1.3, "mrtr2": 1.3}


def call_body(name: str, arguments: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, **extra, "_meta": META}},
        separators=(",", ":")).encode()


def post(port: int, body: bytes, name: str, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(run.HOST, port, timeout=10)
    try:
        conn.request("POST", "/mcp", body=body, headers={
            "Content-Type": "application/json", "Accept": "application/json",
            "MCP-Protocol-Version": loadgen.PROTOCOL_VERSION, "Mcp-Method": "tools/call",
            "Mcp-Name": name, **headers})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def result_of(body: bytes) -> dict[str, Any]:
    try:
        reply = json.loads(body)
    except ValueError:
        return {}
    return reply.get("result") or {} if isinstance(reply, dict) else {}


def completes_with(text: str) -> Any:
    def check(status: int, ctype: str, body: bytes) -> bool:
        content = result_of(body).get("content") or [{}]
        return status == 200 and content[0].get("text") == text
    return check


def asks(status: int, ctype: str, body: bytes) -> bool:
    return status == 200 and result_of(body).get("resultType") == "input_required"


def retry_of(greet: bytes) -> Any:
    """The body of round 2, built from this server's own round 1 (its key is its own)."""
    def make(port: int) -> bytes:
        status, reply = post(port, greet, "greet", {})
        state = result_of(reply).get("requestState")
        if status != 200 or not isinstance(state, str):
            raise RuntimeError(f"round 1 failed: HTTP {status} {reply[:300]!r}")
        return call_body("greet", {}, requestState=state, inputResponses={
            "user_name": {"action": "accept", "content": {"name": "Ada"}}})
    return make


def measure(key: str, app: str, body: bytes | Any, name: str, headers: dict[str, str],
            check: Any, args: argparse.Namespace, log_dir: Path, pin: bool,
            env: dict[str, str]) -> dict[str, Any]:
    """One server, one workload; ``body`` may be a function of the server's port."""
    target = run.Target(key, key, app, "")
    os.environ.update(env)
    server = run.ServerProcess(target, run.free_port(), log_dir, pin, 0)
    try:
        server.wait_ready()  # answers HTTP at all
        if callable(body):
            body = body(server.port)
        status, reply = post(server.port, body, name, headers)
        if not check(status, "application/json", reply):
            raise RuntimeError(f"[{key}] wrong probe reply: HTTP {status} {reply[:300]!r}")
        pid = server.proc.pid
        edges: dict[str, float] = {}
        loop = loadgen.new_event_loop()
        try:
            stats = loop.run_until_complete(loadgen.run_load(
                run.HOST, server.port, concurrency=args.concurrency, duration=args.duration,
                warmup=args.warmup, check=check,
                request=loadgen.build_request(run.HOST, server.port, body=body,
                                              extra_headers={"Mcp-Name": name, **headers}),
                on_measure_start=lambda: edges.__setitem__("cpu0", run.cpu_seconds(pid)),
                on_measure_end=lambda: edges.__setitem__("cpu1", run.cpu_seconds(pid))))
        finally:
            loop.close()
        summary = stats.summary()
        n = summary["requests"]
        summary["cpu_us_per_request"] = (edges["cpu1"] - edges["cpu0"]) / n * 1e6 if n else 0.0
        summary["key"] = key
        return summary
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    run.load_arguments(parser, duration=6.0, rounds=2)
    args = parser.parse_args()
    run.check_load_arguments(parser, args)
    pin = run.pin_client()
    key = SigningKey.generate("RS256")
    as_server, as_thread, authorization_server = bench_auth.serve_in_thread(
        lambda url: LocalAuthorizationServer(url, keys=[key], token_ttl=3600))
    token = authorization_server.mint(sub="bench", aud="http://127.0.0.1:8000/mcp",
                                      scope="mcp", key=key)
    env = {"MCPCORE_BENCH_ISSUER": authorization_server.issuer}
    echo = call_body("echo", {"text": "hello"})
    greet = call_body("greet", {})
    rounds: dict[str, list[dict[str, Any]]] = {k: [] for k in ("plain", "auth", "mrtr1",
                                                                "mrtr2")}
    try:
        with tempfile.TemporaryDirectory(prefix="mcpcore-bench-hot-") as tmp:
            for number in range(1, args.rounds + 1):
                plans = [
                    ("plain", "bench.hot_apps:plain", echo, "echo", {},
                     completes_with("hello")),
                    ("auth", "bench.hot_apps:protected", echo, "echo",
                     {"Authorization": f"Bearer {token}"}, completes_with("hello")),
                    ("mrtr1", "bench.hot_apps:plain", greet, "greet", {}, asks),
                    ("mrtr2", "bench.hot_apps:plain", retry_of(greet), "greet", {},
                     completes_with("Hello, Ada!")),
                ]
                for plan in plans:
                    result = measure(*plan, args, Path(tmp), pin, env)
                    rounds[plan[0]].append(result)
                    print(f"[{plan[0]}] round {number}: {result['rps']:.0f} req/s, "
                          f"{result['cpu_us_per_request']:.1f} us CPU/req, "
                          f"{result['errors']} errors", flush=True)
    finally:
        as_server.should_exit = True
        as_thread.join(10)
    best = {k: min(v, key=lambda r: r["cpu_us_per_request"]) for k, v in rounds.items()}
    base = best["plain"]["cpu_us_per_request"]
    ratios = {k: best[k]["cpu_us_per_request"] / base for k in TARGETS}
    print(f"\n{'workload':<10} {'req/s':>9} {'CPU us/req':>11} {'x plain':>8}")
    for k, r in best.items():
        print(f"{k:<10} {r['rps']:>9.0f} {r['cpu_us_per_request']:>11.1f} "
              f"{r['cpu_us_per_request'] / base:>8.2f}")
    for k, bound in TARGETS.items():
        print(f"cpu_{k}_over_plain: {ratios[k]:.2f} (target <= {bound}: "
              f"{'met' if ratios[k] <= bound else 'MISSED'})")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"settings": vars(args), "best": best, "ratios": ratios,
                                   "rounds": rounds}, indent=2, default=str))
    errors = sum(r["errors"] for v in rounds.values() for r in v)
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
