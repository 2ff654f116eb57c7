"""The steps of ``Server._call_tool`` and the gate it asks at each (issue 25): one
path for every call, with or without a policy; without one the gate is ``OPEN_GATE``,
whose two no-op steps (``guard``, ``finish``) the path skips by identity rather than
paying a call for each."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

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


class RecordingPolicy:
    """A policy whose every call is gated by ``gate`` (what ``Server`` asks of one)."""

    filter_tools_list = False

    def __init__(self, gate: Recording) -> None:
        self.gate = gate

    def begin(self, ctx: Any, name: str, arguments: Any) -> Recording:
        return self.gate

    def gates(self, method: str) -> bool:
        return method == "tools/call"


async def test_a_gate_is_asked_at_every_step() -> None:
    gate = Recording()
    server = build()
    server.policy = RecordingPolicy(gate)  # type: ignore[assignment]
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


async def test_without_a_policy_the_open_gate_costs_no_guard_or_finish_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same path without a policy: ``OPEN_GATE`` is asked for the timeouts and told
    of a timeout or a failure, but its no-op ``guard`` and ``finish`` are not called
    (each a Python call per ``tools/call``: docs/performance.md, issue 25)."""
    steps: list[str] = []

    def guard(self: OpenGate, tool: Any, run: Any) -> Any:
        steps.append("guard")
        return run

    monkeypatch.setattr(OpenGate, "guard", guard)
    monkeypatch.setattr(OpenGate, "finish", lambda self, outcome: steps.append("finish"))
    monkeypatch.setattr(OpenGate, "timed_out", lambda self, s: steps.append(f"timed out {s:g}"))
    monkeypatch.setattr(OpenGate, "fail", lambda self, exc: steps.append(type(exc).__name__))
    server = build()
    assert server.policy is None
    assert (await call(server, "echo", {"text": "hi"}))["content"][0]["text"] == "hi"
    assert (await call(server, "broken", {}))["isError"] is True
    assert steps == []
    assert (await call(server, "slow", {}))["isError"] is True
    assert steps == ["timed out 0.2"]
    with pytest.raises(McpError):
        await call(server, "missing", {})
    assert steps == ["timed out 0.2", "UnknownTool"]


def test_the_open_gate_lets_everything_through() -> None:
    async def run() -> dict[str, Any]:
        return {}

    tool = build().tools.get("echo")
    assert OPEN_GATE.guard(tool, run) is run  # the round gets no layer of its own
    assert OPEN_GATE.timeouts.get("echo", 3.0) == 3.0
    assert OPEN_GATE.timeouts.get("echo", None) is None


async def test_a_plain_call_enters_only_its_named_steps() -> None:
    """The Python functions a ``tools/call`` without a policy enters, from the route to
    the handler (issue 25, "keep the speed": each is a Python call per request): the
    round is one coroutine (``run_round``'s: ``SealedRetries.run`` makes none), the
    tool's round is bound without a closure factory, the open gate's no-op steps cost
    no call, ``Arguments`` has no Python ``__init__``, and "are there tools?" no Python
    ``__len__``."""
    import sys
    from types import FrameType

    server = Server("plain")

    @server.tool()
    def echo(text: str) -> str:
        return text

    await call(server, "echo", {"text": "warm"})
    entered: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            entered.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        result = await call(server, "echo", {"text": "hi"})
    finally:
        sys.setprofile(None)
    assert result["content"][0]["text"] == "hi"
    assert entered[entered.index("handle"):] == [
        "handle", "_handle", "_decode", "parse_request_meta", "_route", "offers",
        "__init__",  # the Context
        "_call_tool", "find", "of", "run", "run_round", "_tool_round", "bind", "invoke",
        "echo", "tool_result", "close"]
