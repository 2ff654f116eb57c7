"""What a handler may know and do (mcpcore/context.py), through the engine.

Progress and log notifications flow only when the request asked for them; asking the
client is checked when the handler asks (a form outside the flat schema, an answer never
awaited are the author's mistakes, named at once).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcpcore import Context, InternalError, Server
from mcpcore.context import Context as ContextClass
from mcpcore.meta import RequestMeta
from tests.support.peers import DirectPeer
from tests.support.wire import make_meta

NESTED = {"type": "object", "properties": {"address": {"type": "object"}}}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


def server_with_tools() -> Server:
    server = Server("ctx")

    @server.tool()
    async def bad_form(ctx: Context) -> str:
        """Asks with a nested form."""
        answer = await ctx.elicit("Where?", NESTED)
        return str(answer)

    @server.tool()
    def forgot_await(ctx: Context) -> str:
        """A sync tool cannot wait for an answer."""
        answer = ctx.elicit("Name?", NAME)
        return f"Hello {answer}"

    @server.tool()
    async def steps(ctx: Context) -> str:
        """Reports progress and logs."""
        await ctx.report_progress(1, total=2)
        await ctx.log("debug", "ignored below the threshold")
        await ctx.log("warning", "half way")
        return "done"

    @server.tool()
    def who(ctx: Context) -> str:
        """Names the caller's declared capabilities."""
        return ",".join(sorted(ctx.client_capabilities))

    return server


async def test_an_invalid_form_is_named_when_the_handler_asks(caplog: pytest.LogCaptureFixture
                                                              ) -> None:
    peer = DirectPeer(server_with_tools())
    with caplog.at_level(logging.ERROR, "mcpcore.server"):
        reply = await peer.request("tools/call", {"name": "bad_form"})
    # Never sent to the client: the model sees a failed call, the log says why.
    assert reply.result["isError"] is True
    assert reply.result["resultType"] == "complete"
    assert "tool 'bad_form' asked with an invalid elicitation form" in caplog.text
    assert "/properties/address" in caplog.text


async def test_an_ask_never_awaited_is_an_error_not_a_coroutine_as_text(
        caplog: pytest.LogCaptureFixture) -> None:
    peer = DirectPeer(server_with_tools())
    with caplog.at_level(logging.ERROR, "mcpcore.server"):
        reply = await peer.request("tools/call", {"name": "forgot_await"})
    assert reply.result["isError"] is True
    assert "coroutine" not in reply.result["content"][0]["text"]
    assert "tool 'forgot_await' asked the client for input without awaiting" in caplog.text


@pytest.mark.parametrize(("token", "level", "expected"), [
    (None, None, []),
    ("p1", None, ["notifications/progress"]),
    (None, "info", ["notifications/message"]),
    ("p1", "debug", ["notifications/progress", "notifications/message",
                     "notifications/message"]),
])
async def test_notifications_flow_only_when_asked(token: Any, level: Any,
                                                  expected: list[str]) -> None:
    peer = DirectPeer(server_with_tools())
    reply = await peer.request("tools/call", {"name": "steps"},
                               meta=make_meta(progress_token=token, log_level=level))
    assert reply.methods() == expected
    assert reply.result["content"][0]["text"] == "done"


async def test_the_declared_capabilities_are_what_the_request_said() -> None:
    peer = DirectPeer(server_with_tools())
    reply = await peer.request("tools/call", {"name": "who"},
                               meta=make_meta(caps={"sampling": {}, "roots": {}}))
    assert reply.result["content"][0]["text"] == "roots,sampling"


def context(caps: dict[str, Any] | None = None) -> ContextClass:
    return ContextClass(request_id=1, method="tools/call",
                        meta=RequestMeta("2026-07-28", caps or {}))


def test_capability_paths_and_the_missing_capability_error() -> None:
    ctx = context({"elicitation": {"url": {}}})
    assert ctx.has_capability("elicitation", "url")
    assert not ctx.has_capability("sampling")
    with pytest.raises(Exception, match="sampling") as info:
        ctx.require_capability("sampling", "tools")
    assert info.value.data == {"requiredCapabilities": {"sampling": {"tools": {}}}}  # type: ignore[attr-defined]


async def test_a_context_made_outside_the_engine_cannot_ask() -> None:
    ctx = context({"elicitation": {}})
    with pytest.raises(InternalError, match="cannot ask the client"):
        await ctx.elicit("Name?", NAME)


async def test_nothing_flows_after_close() -> None:
    sent: list[bytes] = []

    async def sink(message: bytes) -> None:
        sent.append(message)

    ctx = ContextClass(request_id=1, method="tools/call", sink=sink,
                       meta=RequestMeta("2026-07-28", {}, progress_token="t"))
    await ctx.report_progress(1)
    ctx.close()
    await ctx.report_progress(2)
    assert len(sent) == 1 and not ctx.streaming


async def test_progress_must_increase() -> None:
    async def sink(message: bytes) -> None:
        return None

    ctx = ContextClass(request_id=1, method="tools/call", sink=sink,
                       meta=RequestMeta("2026-07-28", {}, progress_token="t"))
    await ctx.report_progress(5)
    with pytest.raises(ValueError, match="increase"):
        await ctx.report_progress(5)
