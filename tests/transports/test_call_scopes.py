"""Per-call scopes checked where the call is decoded (``CALL_SCOPES_KEY``).

``BearerAuthMiddleware`` in front of ``StreamableHTTP`` checks the scopes every request
needs and leaves the per-call part (``scope_map``) to the transport, which runs it once
the call is decoded: the body is neither buffered nor parsed twice, and a missing scope
is still a 403 with a step-up challenge naming every scope the call needs, before any
handler runs, in both eras, batches included.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mcpcore import Principal, Server, StreamableHTTP
from mcpcore.auth import BearerAuthMiddleware
from mcpcore.auth.server.resource_server import CallScopes, ScopeTable
from mcpcore.errors import InsufficientScope
from mcpcore.principal import CALL_SCOPES_KEY
from tests.auth.support import make_config
from tests.support.wire import make_meta, standard_headers

ISSUER = "https://idp.example"
METADATA = "http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp"


SCOPES = {"mcp": {"mcp"}, "writer": {"mcp", "files:write"}, "other": {"other"}}


class Tokens:
    """A validator double: each token stands for a set of scopes (``SCOPES``)."""

    async def validate(self, token: str) -> Principal:
        return Principal(subject="alice", issuer=ISSUER, auth_method="jwt",
                         scopes=frozenset(SCOPES[token]))


def protected() -> tuple[Any, list[str]]:
    ran: list[str] = []
    server = Server("scoped")

    @server.tool()
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    @server.tool()
    def echo(text: str) -> str:
        """Echo."""
        ran.append(text)
        return text

    app = BearerAuthMiddleware(StreamableHTTP(server), config=make_config(ISSUER),
                               validator=Tokens())
    return app, ran


async def post(app: Any, body: dict[str, Any] | list[Any], token: str,
               headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://localhost") as client:
        return await client.post("/mcp", content=json.dumps(body).encode(),
                                 headers={**(headers or {}), "authorization": f"Bearer {token}"})


def call(tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    params = {"name": tool, "arguments": arguments, "_meta": make_meta()}
    return ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
            standard_headers("tools/call", params))


async def test_a_call_missing_its_scope_is_a_403_before_the_handler() -> None:
    app, ran = protected()
    body, headers = call("delete_file", {"path": "/tmp/x"})
    response = await post(app, body, "mcp", headers)
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'error="insufficient_scope"' in challenge
    assert 'scope="files:write mcp"' in challenge
    assert f'resource_metadata="{METADATA}"' in challenge
    error = response.json()["error"]
    assert error["code"] == -32600
    assert error["data"] == {"requiredScopes": ["files:write", "mcp"]}
    assert ran == []


async def test_a_call_with_its_scope_or_a_broader_one_runs() -> None:
    app, ran = protected()
    body, headers = call("delete_file", {"path": "/tmp/x"})
    assert (await post(app, body, "writer", headers)).status_code == 200
    body, headers = call("echo", {"text": "hi"})  # nothing beyond the base scope
    assert (await post(app, body, "mcp", headers)).status_code == 200
    assert ran == ["/tmp/x", "hi"]


async def test_the_base_scope_is_still_checked_by_the_middleware() -> None:
    app, ran = protected()
    body, headers = call("echo", {"text": "hi"})
    response = await post(app, body, "other", headers)
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"  # the middleware's own answer
    assert ran == []


async def test_the_transport_gets_the_check_and_the_body_untouched() -> None:
    seen: dict[str, Any] = {}

    class Inner:
        checks_call_scopes = True

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            seen["check"] = scope.get(CALL_SCOPES_KEY)
            seen["first"] = await receive()  # the client's own message, not a replay
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    app = BearerAuthMiddleware(Inner(), config=make_config(ISSUER), validator=Tokens())
    body, headers = call("echo", {"text": "hi"})
    assert (await post(app, body, "mcp", headers)).status_code == 204
    assert isinstance(seen["check"], CallScopes)
    assert json.loads(seen["first"]["body"]) == body


def test_call_scopes_follow_the_hierarchy() -> None:
    table = ScopeTable(make_config(ISSUER))
    writer = Principal(subject="w", scopes=frozenset({"mcp", "files:write"}))
    CallScopes(writer, table)("resources/read", None)  # files:write implies files:read
    reader = Principal(subject="r", scopes=frozenset({"mcp"}))
    CallScopes(reader, table)("tools/call", "echo")  # no per-call scopes for echo


async def test_a_session_batch_cannot_hide_a_call_from_its_scope() -> None:
    app, ran = protected()
    init = await post(app, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "1"}}},
                      "mcp", {"content-type": "application/json",
                              "accept": "application/json, text/event-stream"})
    assert init.status_code == 200
    session = {"content-type": "application/json",
               "accept": "application/json, text/event-stream",
               "mcp-session-id": init.headers["mcp-session-id"]}
    batch = [{"jsonrpc": "2.0", "id": 2, "method": "ping"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "delete_file", "arguments": {"path": "/etc"}}}]
    response = await post(app, batch, "mcp", session)
    assert response.status_code == 403
    assert 'scope="files:write mcp"' in response.headers["www-authenticate"]
    assert ran == []
    single = await post(app, batch[1], "mcp", session)
    assert single.status_code == 403
    assert ran == []


class Changing:
    """A validator double whose principal for the *same* token changes between calls
    (as after a key rotation re-verifies it): scopes from ``SCOPES``, in turn."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)

    async def validate(self, token: str) -> Principal:
        return Principal(subject="alice", issuer=ISSUER, auth_method="jwt",
                         scopes=frozenset(SCOPES[self.names.pop(0)]))


async def test_a_new_principal_for_the_same_token_is_checked_afresh() -> None:
    server = Server("scoped")

    @server.tool()
    def delete_file(path: str) -> str:
        """Delete a file."""
        return "deleted"

    app = BearerAuthMiddleware(StreamableHTTP(server), config=make_config(ISSUER),
                               validator=Changing("writer", "mcp", "other"))
    body, headers = call("delete_file", {"path": "/tmp/x"})
    statuses = [(await post(app, body, "same", headers)).status_code for _ in range(3)]
    assert statuses == [200, 403, 403]  # then the per-call scope, then the base one


async def test_a_principal_covering_the_whole_map_gets_no_per_call_check() -> None:
    seen: list[Any] = []

    class Inner:
        checks_call_scopes = True

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            seen.append(scope.get(CALL_SCOPES_KEY))
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    app = BearerAuthMiddleware(Inner(), config=make_config(ISSUER), validator=Tokens())
    body, headers = call("echo", {"text": "hi"})
    for token in ("writer", "mcp"):
        assert (await post(app, body, token, headers)).status_code == 204
    assert seen[0] is None and isinstance(seen[1], CallScopes)
    table = ScopeTable(make_config(ISSUER))
    writer = Principal(subject="w", scopes=frozenset(SCOPES["writer"]))
    assert not CallScopes(writer, table).can_refuse  # files:write implies files:read
    reader = CallScopes(Principal(subject="r", scopes=frozenset({"mcp"})), table)
    with pytest.raises(InsufficientScope) as refused:
        reader("resources/read", None)  # a method-wide entry
    assert refused.value.scopes == frozenset({"mcp", "files:read"})
    with pytest.raises(InsufficientScope) as refused:
        reader("tools/call", "delete_file")
    assert refused.value.scopes == frozenset({"mcp", "files:write"})
    reader("tools/call", "echo")
    reader("prompts/get", "delete_file")  # the name counts under its own method only
