"""The steps of ``Server._call_tool`` and the gate it asks at each (issue 25):
without a policy the call goes through ``OPEN_GATE``, the same path a policy's ``Gate``
takes, with no ``if gate is None`` branch."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

import mcpcore.server
from mcpcore import Server, ToolError
from mcpcore.call_gate import OPEN_GATE, OpenGate
from mcpcore.errors import McpError
from mcpcore.jsonrpc import Request
from mcpcore.outcome import Outcome
from tests.support.wire import make_meta


class Recording(OpenGate):
    """An open gate that says what it was asked, in order."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps: list[str] = []

    @property
    def timeouts(self) -> Any:
        steps = self.steps

        class Asked:
            def get(self, name: str, default: float | None) -> float | None:
                steps.append(f"timeout {default}")
                return default

        return Asked()

    def guard(self, tool: Any, run: Any) -> Any:
        self.steps.append(f"guard {tool.name}")
        return run

    def timed_out(self, seconds: float) -> None:
        self.steps.append(f"timed out {seconds:g}")

    def finish(self, outcome: Outcome) -> None:
        self.steps.append(f"finish {outcome.body.get('isError', False)}")

    def fail(self, exc: BaseException) -> None:
        self.steps.append(f"fail {type(exc).__name__}")


def build() -> Server:
    server = Server("gated", tool_timeout=0.2)

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def broken() -> str:
        raise ToolError("no")

    @server.tool()
    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    return server


async def call(server: Server, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = msgspec.json.encode({"name": name, "arguments": arguments, "_meta": make_meta()})
    return await server.handle(Request(id=1, method="tools/call",
                                       params=msgspec.Raw(params)))


async def test_a_server_without_a_policy_runs_every_step_through_the_open_gate(
        monkeypatch: pytest.MonkeyPatch) -> None:
    gate = Recording()
    monkeypatch.setattr(mcpcore.server, "OPEN_GATE", gate)
    server = build()
    assert server.policy is None
    assert (await call(server, "echo", {"text": "hi"}))["content"][0]["text"] == "hi"
    assert gate.steps == ["guard echo", "timeout 0.2", "finish False"]
    gate.steps.clear()
    assert (await call(server, "broken", {}))["isError"] is True
    assert gate.steps == ["guard broken", "timeout 0.2", "finish True"]
    gate.steps.clear()
    assert (await call(server, "slow", {}))["isError"] is True
    assert gate.steps == ["guard slow", "timeout 0.2", "timed out 0.2",
                          "finish True"]
    gate.steps.clear()
    with pytest.raises(McpError):
        await call(server, "missing", {})
    assert gate.steps == ["fail UnknownTool"]


def test_the_open_gate_lets_everything_through() -> None:
    async def run() -> dict[str, Any]:
        return {}

    tool = build().tools.get("echo")
    assert OPEN_GATE.guard(tool, run) is run  # the round gets no layer of its own
    assert OPEN_GATE.timeouts.get("echo", 3.0) == 3.0
    assert OPEN_GATE.timeouts.get("echo", None) is None
