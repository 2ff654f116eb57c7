"""The docs' recipe for serving mcpcore inside a Starlette or FastAPI app works for the
exact path ``/mcp``: no 307 to ``/mcp/``, real framework routing, our client on top.

This used to be a ``Mount("/mcp", ...)``, whose ``POST /mcp`` Starlette redirects to
``/mcp/`` (the client then failed with ``HTTP 307 without a JSON-RPC response``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpcore.client import Client

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```",
                    (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8"), re.S)
STARLETTE = next(b for b in BLOCKS if "from starlette.applications import Starlette" in b)
FASTAPI = next(b for b in BLOCKS if "from fastapi import FastAPI" in b)


def build(block: str, name: str) -> Any:
    scope: dict[str, Any] = {"__name__": "docs_mount"}
    exec(compile(block, "docs/quickstart.md", "exec"), scope)
    return scope[name]


@pytest.mark.parametrize(("block", "name"), [(STARLETTE, "app"), (FASTAPI, "api")],
                         ids=["starlette", "fastapi"])
async def test_the_mount_recipe_serves_exactly_slash_mcp(block: str, name: str) -> None:
    app = build(block, name)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        probe = await http.post("/mcp", json={}, headers={"Accept": "application/json"})
        assert probe.status_code != 307  # the framework routed it to us, no redirect
        async with Client.http("http://localhost/mcp", http_client=http,
                               mode="2026-07-28") as client:
            result = await client.call_tool("echo", {"text": "hi"})
    assert result.content[0].text == "hi"  # type: ignore[union-attr]


async def test_the_starlette_recipe_closes_the_server_on_shutdown() -> None:
    app = build(STARLETTE, "app")
    async with app.router.lifespan_context(app):
        pass  # startup, then shutdown: server.aclose() ran without error
