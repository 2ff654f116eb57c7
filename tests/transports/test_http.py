"""Streamable HTTP: framing, streams, disconnects, mounting, and a real uvicorn server.

Engine behaviour over HTTP is in tests/test_server.py (the ``http`` peer) and the bad
input table in test_bad_input.py; here: what only the transport decides.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

import examples.everything as everything
from mcpcore import (
    PRINCIPAL_SCOPE_KEY,
    Context,
    Limits,
    Principal,
    Server,
    StreamableHTTP,
)
from mcpcore.subscriptions import Event
from mcpcore.transports import http as http_transport
from tests.support.asgi import Exchange
from tests.support.clock import settle
from tests.support.peers import HttpPeer, parse_http_reply
from tests.support.processes import ROOT, free_port, subprocess_env
from tests.support.schema import SchemaChecker
from tests.support.sse import SseParser
from tests.support.wire import SUBSCRIPTION_ID, make_meta, standard_headers


def body_of(method: str, params: dict[str, Any] | None = None, *, id: Any = 1,
            **meta: Any) -> tuple[bytes, dict[str, str]]:
    full = {**(params or {}), "_meta": make_meta(**meta)}
    payload = {"jsonrpc": "2.0", "id": id, "method": method, "params": full}
    return json.dumps(payload).encode(), standard_headers(method, full)


# -- SSE framing (sans-I/O) ----------------------------------------------------------------

SSE = (b"event: message\ndata: {\"a\":1}\n\n: keep-alive\n\n"
       b"data: {\"b\":2}\r\n\r\nevent: message\ndata:{\"c\":3}\n\n")


@pytest.mark.parametrize("split", ["whole", "bytewise", "trailing"])
def test_sse_parser_frames_events(split: str) -> None:
    parser = SseParser()
    events: list[str] = []
    if split == "whole":
        events += parser.feed(SSE)
    elif split == "bytewise":
        for i in range(len(SSE)):
            events += parser.feed(SSE[i:i + 1])
    else:
        events += parser.feed(SSE + b"data: {\"partial\"")
        assert parser.pending
    assert [json.loads(e) for e in events] == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert parser.comments == 1
    assert parser.retry is None


def test_sse_parser_keeps_the_last_retry_of_digits() -> None:
    parser = SseParser()
    assert parser.feed(b"retry: 1000\n\nretry: soon\n\n") == []
    assert parser.retry == 1000  # not digits: ignored, as the WHATWG rules say
    assert parser.feed(b"retry:50\ndata: {}\n\n") == ["{}"]
    assert parser.retry == 50


# -- responses ------------------------------------------------------------------------------

async def test_plain_request_gets_json_with_content_length(checker: SchemaChecker) -> None:
    body, headers = body_of("tools/list")
    call = Exchange(everything.app, "POST", path="/mcp", headers=headers, body=body,
                    raise_after_hang_up=True)
    [message] = await call.run()
    assert call.status == 200 and call.complete
    assert call.header("content-type") == "application/json"
    payload = b"".join(call.chunks)
    assert call.header("content-length") == str(len(payload))
    assert message["result"]["tools"]


async def test_progress_switches_to_sse_and_ends_with_the_response(
        checker: SchemaChecker) -> None:
    body, headers = body_of("tools/call", {"name": "test_tool_with_progress"},
                            progress_token="t")
    call = Exchange(everything.app, "POST", path="/mcp", headers=headers, body=body,
                    raise_after_hang_up=True)
    messages = await call.run()
    assert call.status == 200
    assert call.header("content-type") == "text/event-stream"
    assert call.header("x-accel-buffering") == "no"
    assert call.header("cache-control") == "no-cache"
    assert call.header("content-length") is None
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + [None]
    for chunk in call.chunks[:-1]:
        assert chunk.startswith(b"event: message\ndata: ") and chunk.endswith(b"\n\n")
        assert chunk.count(b"\n") == 3  # one JSON line per event
    assert messages[-1]["id"] == 1


async def test_disconnect_cancels_the_handler_and_nothing_more_is_sent() -> None:
    body, headers = body_of("tools/call", {"name": "test_tool_with_progress"},
                            progress_token="t")
    call = Exchange(everything.app, "POST", path="/mcp", headers=headers, body=body,
                    raise_after_hang_up=True)
    await call.wait_events(1)
    before = len(call.chunks)
    started = time.monotonic()
    await call.disconnect()  # raises if the app failed (e.g. it sent after the disconnect)
    assert time.monotonic() - started < 0.14  # cancelled, not run to the end (~150 ms)
    assert len(call.chunks) == before and not call.complete


async def test_disconnect_before_a_json_response_sends_nothing() -> None:
    body, headers = body_of("tools/call", {"name": "test_tool_with_progress"})
    call = Exchange(everything.app, "POST", path="/mcp", headers=headers, body=body,
                    raise_after_hang_up=True)
    await settle()  # the handler is running, its response not decided
    await call.disconnect()
    assert call.status is None and call.chunks == []


async def test_a_json_only_client_never_gets_an_event_stream() -> None:
    body, headers = body_of("tools/call", {"name": "test_tool_with_progress"},
                            progress_token="t")
    call = Exchange(everything.app, "POST", path="/mcp",
                    headers={**headers, "Accept": "application/json"}, body=body,
                    raise_after_hang_up=True)
    [message] = await call.run()
    assert call.header("content-type") == "application/json"
    assert message["result"]["content"][0]["text"] == "Progress test completed."


async def test_listen_stream_over_http(checker: SchemaChecker) -> None:
    server = Server("listen-http")
    server.tool("t")(lambda: "x")
    app = StreamableHTTP(server)
    body, headers = body_of("subscriptions/listen", {"notifications": {"toolsListChanged": True}},
                            id="L")
    call = Exchange(app, "POST", path="/mcp", headers=headers, body=body,
                    raise_after_hang_up=True)
    await call.wait_events(1)
    assert call.header("content-type") == "text/event-stream"
    assert call.header("x-accel-buffering") == "no"
    await server.subscriptions.publish(Event(kind="tools"))
    await call.wait_events(2)
    await server.aclose()  # graceful: the listen result ends the stream
    await asyncio.wait_for(call.task, 5)  # type: ignore[arg-type]
    assert call.complete
    ack, changed, result = call.messages()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert changed["method"] == "notifications/tools/list_changed"
    assert result["id"] == "L" and result["result"]["_meta"][SUBSCRIPTION_ID] == "L"


async def test_internal_error_in_a_handler_has_no_traceback(checker: SchemaChecker) -> None:
    server = Server("crashy")

    @server.resource("test://boom")
    def boom() -> str:
        raise RuntimeError("secret internals")

    peer = HttpPeer(StreamableHTTP(server))
    body = peer.build("resources/read", {"uri": "test://boom"})
    response = await peer.post(json.dumps(body).encode(), peer.headers_for(body, None))
    message = response.json()
    checker.check(message)
    assert message["id"] == body["id"] and message["error"]["code"] == -32603
    assert "secret" not in response.text and "Traceback" not in response.text
    # Like every ordinary JSON-RPC error: the transport page names no status for it.
    assert response.status_code == 200


async def test_a_crash_outside_the_engine_gets_the_same_answer(
        checker: SchemaChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    """One policy for unexpected errors: wherever they happen, -32603 with HTTP 200."""

    class Exploding(Server):
        async def handle(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("inside")

    server = Exploding("crashy")
    app = StreamableHTTP(server)

    def explode(*args: Any) -> None:
        raise RuntimeError("outside")

    peer = HttpPeer(app)
    body = peer.build("tools/list", {})
    with monkeypatch.context() as patched:  # the Host/Origin check, before the body
        patched.setattr(http_transport, "check_host_and_origin", explode)
        outside = await peer.post(json.dumps(body).encode(), peer.headers_for(body, None))
    app2 = StreamableHTTP(server)
    inside = await HttpPeer(app2).post(json.dumps(body).encode(), peer.headers_for(body, None))
    for response in (outside, inside):
        assert response.status_code == 200
        assert response.json()["error"]["code"] == -32603
    assert "id" not in outside.json()  # the body was never read
    assert inside.json()["id"] == body["id"]


async def test_lifespan_is_answered() -> None:
    sent: list[dict[str, Any]] = []
    inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive() -> dict[str, Any]:
        return inbox.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(everything.app({"type": "lifespan"}, receive, send), 5)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete",
                                         "lifespan.shutdown.complete"]


@pytest.mark.parametrize(("app_path", "path", "root_path", "status"), [
    ("/mcp", "/mcp", "", 200),
    ("/mcp", "/mcp/", "", 200),
    ("/mcp", "/api/mcp", "/api", 200),
    ("/mcp", "/other", "", 404),
    (None, "/anything/at/all", "", 200),
])
async def test_mounting(app_path: str | None, path: str, root_path: str, status: int) -> None:
    app = StreamableHTTP(everything.server, path=app_path)
    body, headers = body_of("tools/list")
    call = Exchange(app, "POST", path=path, headers=headers, body=body,
                    raise_after_hang_up=True)
    call.scope["root_path"] = root_path
    messages = await call.run()
    assert call.status == status
    assert len(messages) == (status == 200)


async def test_allowed_origins_and_hosts_are_configurable() -> None:
    app = StreamableHTTP(everything.server, allowed_hosts=["mcp.example"],
                         allowed_origins=["https://app.example"])
    body, headers = body_of("tools/list")
    for host, origin, status in [("mcp.example", "https://app.example", 200),
                                 ("mcp.example", None, 200),
                                 ("mcp.example", "https://mcp.example", 200),
                                 ("localhost", None, 403),
                                 ("mcp.example", "https://evil.example", 403)]:
        call = Exchange(app, "POST", path="/mcp",
                        headers={**headers, **({"origin": origin} if origin else {})},
                        body=body, raise_after_hang_up=True)
        call.scope["headers"] = [(k, v) for k, v in call.scope["headers"] if k != b"host"] + [
            (b"host", host.encode())]
        [message] = await call.run()
        assert call.status == status, (host, origin)
        assert ("result" in message) == (status == 200)


async def test_small_body_limit_is_enforced() -> None:
    peer = HttpPeer(StreamableHTTP(everything.server, limits=Limits(max_body_bytes=100)))
    reply = await peer.request("tools/list")
    assert reply.status == 413 and reply.error["code"] == -32600


async def test_mrtr_state_is_bound_to_the_principal(checker: SchemaChecker) -> None:
    app = everything.app

    async def as_principal(subject: str, params: dict[str, Any]) -> dict[str, Any]:
        body, headers = body_of("tools/call", params)
        call = Exchange(app, "POST", path="/mcp", headers=headers, body=body,
                    raise_after_hang_up=True)
        call.scope[PRINCIPAL_SCOPE_KEY] = Principal(subject=subject, issuer="https://idp",
                                                    auth_method="jwt")
        [message] = await call.run()
        return message

    tool = "test_input_required_result_elicitation"
    first = await as_principal("alice", {"name": tool, "arguments": {}})
    retry = {"name": tool, "arguments": {}, "requestState": first["result"]["requestState"],
             "inputResponses": {"user_name": {"action": "accept", "content": {"name": "A"}}}}
    stolen = await as_principal("mallory", retry)
    assert stolen["error"]["code"] == -32602
    owned = await as_principal("alice", retry)
    assert owned["result"]["content"][0]["text"] == "Hello, A!"


async def test_context_sees_the_principal() -> None:
    server = Server("who")

    @server.tool()
    def whoami(ctx: Context) -> str:
        return ctx.principal.subject

    app = StreamableHTTP(server)
    body, headers = body_of("tools/call", {"name": "whoami", "arguments": {}})
    call = Exchange(app, "POST", path="/mcp", headers=headers, body=body,
                    raise_after_hang_up=True)
    call.scope[PRINCIPAL_SCOPE_KEY] = Principal(subject="alice")
    [message] = await call.run()
    assert message["result"]["content"][0]["text"] == "alice"


# -- a real server: uvicorn in a subprocess ------------------------------------------------------

@pytest.fixture(scope="module")
def uvicorn_url(state_keys: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "examples.everything:app", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning", "--no-access-log"],
        cwd=ROOT, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    body, headers = body_of("server/discover")
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.post(url, content=body, headers=headers, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start: " + proc.stderr.read().decode()
                                   if proc.stderr else "")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        errors = proc.stderr.read().decode() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        assert "Traceback" not in errors, errors


@pytest.fixture
async def real_client(uvicorn_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as client:
        yield client


@pytest.mark.integration
async def test_closing_the_stream_cancels_and_the_server_stays_healthy(
        uvicorn_url: str, real_client: httpx.AsyncClient, checker: SchemaChecker) -> None:
    body, headers = body_of("tools/call", {"name": "test_tool_with_progress"},
                            progress_token="p1")
    async with real_client.stream("POST", uvicorn_url, content=body, headers=headers) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"] == "text/event-stream"
        parser = SseParser()
        first: list[str] = []
        async for chunk in resp.aiter_raw():
            first += parser.feed(chunk)
            if first:
                break
        progress = json.loads(first[0])
        checker.check(progress)
        assert progress["params"]["progressToken"] == "p1"
    # The stream is closed mid-way: the server must keep serving.
    for _ in range(3):
        body, headers = body_of("tools/call", {"name": "test_simple_text"})
        reply = parse_http_reply(await real_client.post(uvicorn_url, content=body,
                                                        headers=headers),
                                 checker, "tools/call")
        assert reply.result["content"][0]["text"].startswith("This is a simple")


@pytest.mark.integration
async def test_real_server_streams_progress_and_answers(uvicorn_url: str,
                                                        real_client: httpx.AsyncClient,
                                                        checker: SchemaChecker) -> None:
    body, headers = body_of("tools/call", {"name": "test_tool_with_progress"},
                            progress_token=5)
    reply = parse_http_reply(await real_client.post(uvicorn_url, content=body, headers=headers),
                             checker, "tools/call")
    assert [m["params"]["progress"] for m in reply.messages] == [0, 50, 100]
    rejected = await real_client.get(uvicorn_url)
    assert rejected.status_code == 405
    checker.check(rejected.json())


@pytest.mark.integration
async def test_real_server_rejects_a_foreign_host(uvicorn_url: str,
                                                  real_client: httpx.AsyncClient) -> None:
    body, headers = body_of("tools/list")
    response = await real_client.post(uvicorn_url, content=body,
                                      headers={**headers, "Host": "attacker.example"})
    assert response.status_code == 403


async def test_initialize_without_the_legacy_shim_names_what_we_speak() -> None:
    # legacy=False: a 2025-era initialize (no MCP-Protocol-Version header, no _meta) is
    # refused with 400, and the error names the versions we speak (versioning.mdx,
    # "Backward Compatibility with Initialization-Based Versions").
    from mcpcore import Server, StreamableHTTP

    app = StreamableHTTP(Server("modern-only"), legacy=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://localhost") as client:
        response = await client.post("/mcp", json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "old", "version": "1"}}},
            headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert "2026-07-28" in error["message"]
    assert "initialize" not in error["message"]


@pytest.mark.parametrize(("root_path", "path", "status"), [
    ("", "/mcp", 200), ("", "/mcp/", 200), ("", "/other", 404),
    ("/api", "/api/mcp", 200),
    ("/mcp", "/mcp", 404),      # mounted at /mcp: this request is for "/", not "/mcp"
])
async def test_the_endpoint_path_is_taken_relative_to_the_root_path(
        root_path: str, path: str, status: int) -> None:
    app = StreamableHTTP(everything.server)
    peer = HttpPeer(app)
    body = peer.build("tools/list", {})
    raw = json.dumps(body).encode()
    exchange = Exchange(app, "POST", path=path, headers=peer.headers_for(body, None),
                        body=raw, root_path=root_path)
    await exchange.finished()
    assert exchange.status == status
