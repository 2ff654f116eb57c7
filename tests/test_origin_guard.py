"""OriginGuard answers a forbidden Host/Origin with 403 before inner middleware runs."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mcpcore.transports.http import OriginGuard

CALLS: list[str] = []


async def challenge_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Stands in for bearer-auth middleware: it would answer 401."""
    CALLS.append(scope["path"])
    await send({"type": "http.response.start", "status": 401, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@pytest.mark.parametrize(("host", "origin", "status", "reached"), [
    ("127.0.0.1:8000", None, 401, True),
    ("127.0.0.1:8000", "http://127.0.0.1:8000", 401, True),
    ("127.0.0.1:8000", "http://evil.example.com", 403, False),
    ("evil.example.com", None, 403, False),
    ("evil.example.com", "http://evil.example.com", 403, False),
])
async def test_origin_is_checked_before_authentication(
    host: str, origin: str | None, status: int, reached: bool
) -> None:
    CALLS.clear()
    guard = OriginGuard(challenge_app)
    headers = {"host": host, **({"origin": origin} if origin else {})}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=guard),
                                 base_url="http://127.0.0.1:8000") as client:
        response = await client.post("/mcp", content=b"{}", headers=headers)
    assert response.status_code == status
    assert bool(CALLS) is reached
    if status == 403:
        assert response.json()["error"]["code"] == -32600
