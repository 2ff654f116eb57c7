"""What a 2025-era ``tools/call`` on an established session costs against a 2026-07-28 one.

    python bench/bench_legacy.py [--n 20000] [--rounds 5]

Both go through the same ``StreamableHTTP`` app of ``examples/quickstart.py`` in-process
(uvicorn-shaped scope, ``receive`` and ``send``; no sockets), alternating in rounds so a
busy machine slows both alike; the best round of each is kept. The legacy request pays
for what a session is: finding the session record in the Store, the era checks, and the
session's own answer shape; the modern one for its ``_meta`` and header checks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.quickstart import app

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}


def scope(headers: dict[str, str]) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
            "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5),
            "server": ("127.0.0.1", 8000),
            "headers": [(b"host", b"127.0.0.1:8000")] + [
                (k.lower().encode(), v.encode()) for k, v in headers.items()]}


async def call(headers: dict[str, str], body: bytes) -> tuple[int, bytes, dict[bytes, bytes]]:
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()
    first = True

    async def receive() -> dict[str, Any]:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    await app(scope(headers), receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), dict(
        sent[0]["headers"])


BASE = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def open_session() -> dict[str, str]:
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}).encode()
    status, _, headers = await call(BASE, init)
    assert status == 200
    session = {**BASE, "Mcp-Session-Id": headers[b"mcp-session-id"].decode(),
               "MCP-Protocol-Version": "2025-11-25"}
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    assert (await call(session, note))[0] == 202
    return session


async def per_request_us(headers: dict[str, str], body: bytes, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        status, reply, _ = await call(headers, body)
        await asyncio.sleep(0)
    assert status == 200 and b'"hello"' in reply, reply
    return (time.process_time() - start) / n * 1e6


async def main(n: int, rounds: int) -> None:
    modern_body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hello"}, "_meta": MODERN_META}}).encode()
    modern_headers = {**BASE, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                      "Mcp-Name": "echo"}
    legacy_body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hello"}}}).encode()
    session = await open_session()
    for headers, body in ((modern_headers, modern_body), (session, legacy_body)):
        await per_request_us(headers, body, min(n, 2000))  # warm up
    best = {"modern": float("inf"), "legacy": float("inf")}
    for _ in range(rounds):
        best["modern"] = min(best["modern"], await per_request_us(modern_headers, modern_body, n))
        best["legacy"] = min(best["legacy"], await per_request_us(session, legacy_body, n))
    ratio = best["legacy"] / best["modern"]
    print(f"modern tools/call          {best['modern']:7.2f} us CPU/request")
    print(f"legacy tools/call (session) {best['legacy']:6.2f} us CPU/request")
    print(f"legacy / modern = {ratio:.2f}x   (target <= 1.30x: "
          f"{'MET' if ratio <= 1.3 else 'NOT MET'})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not 1 <= args.n <= 1_000_000 or not 1 <= args.rounds <= 20:
        parser.error("keep --n in [1, 1e6] and --rounds in [1, 20]")
    asyncio.run(main(args.n, args.rounds))
