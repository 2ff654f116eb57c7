"""Baseline (d): a raw ASGI callable under uvicorn, returning a fixed reply. The ceiling.

No framework, no parsing: read the body, send the precomputed JSON-RPC result for the
benchmark's text (``MCPCORE_BENCH_TEXT_BYTES``, as ``bench/run.py --text-bytes`` sets it).
What is left is what uvicorn itself costs per request; no server can do better under it.

    uvicorn bench.raw_asgi:app --loop uvloop --http httptools
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import loadgen

TEXT = loadgen.text_of(int(os.environ.get("MCPCORE_BENCH_TEXT_BYTES", "0")))
REPLY = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
    "content": [{"type": "text", "text": TEXT}], "resultType": "complete"}},
    separators=(",", ":")).encode()
HEADERS = [(b"content-type", b"application/json"),
           (b"content-length", str(len(REPLY)).encode())]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
        return
    while (await receive()).get("more_body", False):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": REPLY})
