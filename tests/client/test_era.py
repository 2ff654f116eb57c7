"""``mode="auto"``: what each answer to the ``server/discover`` probe makes of the server
(``mcpcore/client/era.py``), a table as the spec's backward-compatibility rules read."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mcpcore.client import Client, EraCache, EraNegotiationError, HttpError

URL = "http://localhost/mcp"
DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {}, "ttlMs": 0,
              "cacheScope": "private", "resultType": "complete"}


def error(code: int, message: str = "no", data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"error": body}


#: (HTTP status, body of the probe's answer, the era the client settles on). A -32022
#: naming 2026-07-28 is retried, not a verdict: the suite's request-metadata scenario.
CASES = [
    (200, {"result": DISCOVERED}, "modern"),
    (400, error(-32020), "modern"),
    (400, error(-32021), "modern"),
    (404, error(-32601), "modern"),
    (200, error(-32601), "legacy"),          # a legacy server's "method not found"
    (400, error(-32000, "Bad Request: Server not initialized"), "legacy"),
    (400, None, "legacy"),                   # an empty 400
    (400, error(-32022, data={"supported": ["2025-11-25"], "requested": "x"}), "legacy"),
    (200, {"result": {**DISCOVERED, "supportedVersions": ["2025-06-18"]}}, "legacy"),
    (200, {"result": {"supportedVersions": "not a list"}}, "legacy"),
]


def app_for(status: int, body: dict[str, Any] | None, seen: list[str]) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(raw) if raw else {}
        method = request.get("method", scope["method"])
        seen.append(method)
        reply_status, reply = 200, None
        if method == "server/discover":
            reply_status, reply = status, body and {"jsonrpc": "2.0", "id": request["id"],
                                                    **body}
        elif method == "initialize":
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "legacy", "version": "1"}}}
        elif "id" in request:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}}
        else:
            reply_status = 202 if scope["method"] == "POST" else 405
        payload = json.dumps(reply).encode() if reply is not None else b""
        await send({"type": "http.response.start", "status": reply_status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})

    return app


@pytest.mark.parametrize("status, body, era", CASES)
async def test_the_probe_answer_decides_the_era(status: int, body: Any, era: str) -> None:
    seen: list[str] = []
    cache = EraCache()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app_for(status, body, seen))
                                 ) as http, \
            Client.http(URL, http_client=http, era_cache=cache, heartbeat=None) as client:
        assert client.era == era, client.attempts
        assert (await client.list_tools()).tools == []
    assert seen[0] == "server/discover"
    assert ("initialize" in seen) == (era == "legacy")
    assert cache.get(URL) == era


@pytest.mark.parametrize("status, body", [
    (400, error(-32022, data={"supported": ["2099-01-01"], "requested": "2026-07-28"})),
    (200, {"result": {**DISCOVERED, "supportedVersions": ["2099-01-01"]}}),
])
async def test_a_modern_server_without_a_common_version_is_an_era_error(
        status: int, body: Any) -> None:
    seen: list[str] = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app_for(status, body, seen))
                                 ) as http:
        with pytest.raises(EraNegotiationError, match="server/discover at 2026-07-28"):
            async with Client.http(URL, http_client=http, era_cache=None):
                pass
    assert "initialize" not in seen


async def test_a_cached_verdict_skips_the_probe_and_a_failing_one_is_probed_again() -> None:
    seen: list[str] = []
    cache = EraCache()
    cache.set(URL, "modern")
    app = app_for(200, {"result": DISCOVERED}, seen)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app)) as http:
        async with Client.http(URL, http_client=http, era_cache=cache) as client:
            assert client.era == "modern"
        assert "server/discover" not in seen
        cache.set(URL, "legacy")

        async def refuses_initialize(scope: Any, receive: Any, send: Any) -> None:
            raw = (await receive()).get("body", b"")
            if raw and json.loads(raw).get("method") == "initialize":
                await send({"type": "http.response.start", "status": 400, "headers": []})
                await send({"type": "http.response.body", "body": b"modern only"})
                return
            await app({**scope}, lambda: _replay(raw), send)

        async with httpx.AsyncClient(transport=httpx.ASGITransport(refuses_initialize)
                                     ) as other, \
                Client.http(URL, http_client=other, era_cache=cache) as client:
            assert client.era == "modern"  # the cached "legacy" failed: probed again
    assert cache.get(URL) == "modern"


async def _replay(raw: bytes) -> dict[str, Any]:
    return {"type": "http.request", "body": raw, "more_body": False}


async def test_401_on_the_probe_is_no_era_verdict() -> None:
    seen: list[str] = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app_for(401, None, seen))
                                 ) as http:
        with pytest.raises(HttpError) as info:
            async with Client.http(URL, http_client=http, era_cache=None):
                pass
    assert info.value.status == 401 and "initialize" not in seen
