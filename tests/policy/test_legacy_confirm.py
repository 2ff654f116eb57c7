"""Policy confirmation reaches 2025-era clients too: the same gate, asked through the
legacy bridge as a real elicitation/create request on the tool call's stream."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import MemoryAuditSink, Policy, Principal, Rule, Ruleset, Server, StreamableHTTP
from mcpcore.principal import PRINCIPAL_SCOPE_KEY
from tests.support.legacy import LegacyClient

ALICE = Principal("alice", issuer="https://idp.example", tenant="contoso", client_id="app",
                  scopes=frozenset({"mcp:admin"}), auth_method="jwt")


@pytest.fixture
async def rig(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MCPCORE_STATE_KEYS", "test1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
    audit = MemoryAuditSink()
    ran: list[str] = []
    server = Server("legacy-policy", policy=Policy(
        Ruleset([Rule("confirm-destructive", "confirm", categories={"destructive"})],
                allowed_tenants={"contoso"}), sinks=[audit]))

    @server.tool(annotations={"destructiveHint": True})
    def wipe(path: str) -> str:
        """Deletes everything under a path."""
        ran.append(path)
        return f"wiped {path}"

    inner = StreamableHTTP(server)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await inner({**scope, PRINCIPAL_SCOPE_KEY: ALICE}, receive, send)

    client = LegacyClient(app)
    yield client, ran, audit
    await client.aclose()


@pytest.mark.parametrize(("answer", "runs"), [
    ({"action": "accept", "content": {"confirm": True}}, True),
    ({"action": "accept", "content": {"confirm": False}}, False),
    ({"action": "decline"}, False),
])
async def test_a_legacy_client_is_asked_to_confirm(rig: Any, answer: dict[str, Any],
                                                   runs: bool) -> None:
    client, ran, audit = rig
    await client.initialize("2025-11-25", {"elicitation": {}})
    call = client.stream("tools/call", {"name": "wipe", "arguments": {"path": "/tmp/x"}})
    question = await call.next()
    assert question["method"] == "elicitation/create"
    assert "wipe" in question["params"]["message"]
    await client.answer(question["id"], answer)
    done = await call.next()
    await call.finished()
    result = done["result"]
    assert ("isError" in result) is not runs
    assert ran == (["/tmp/x"] if runs else [])
    assert len(audit.events) == 1
