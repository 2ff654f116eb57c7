"""Baseline (c): a minimal Starlette app that answers ``tools/call echo`` with no MCP logic.

One POST route at /mcp: read the body, parse it with the stdlib ``json`` module, return a
fixed JSON-RPC result carrying the echoed text through ``JSONResponse``. No header checks,
no ``_meta`` validation, no schema validation: the floor a framework app pays per request.

    uvicorn bench.bare_starlette:app --loop uvloop --http httptools
"""

from __future__ import annotations

import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def mcp(request: Request) -> JSONResponse:
    message = json.loads(await request.body())
    text = message["params"]["arguments"]["text"]
    return JSONResponse({
        "jsonrpc": "2.0",
        "id": message["id"],
        "result": {"content": [{"type": "text", "text": text}], "resultType": "complete"},
    })


app = Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])
