"""A raw 2025-era session: ``initialize``, ``Mcp-Session-Id``, the GET stream, DELETE.

Written against the wire (2025-11-25 basic/lifecycle.mdx and basic/transports.mdx), not
through a client library, so each check controls every header. Server→client requests
that arrive on a POST's SSE stream (sampling, elicitation, roots, ping) are answered with
a separate POST carrying the session id, as the 2025 transport requires.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcpcore.conformance import wire
from mcpcore.conformance.schema_values import example_arguments
from mcpcore.conformance.transport import RecordedExchange

if TYPE_CHECKING:
    from mcpcore.conformance.context import AuditContext

#: What the suite answers a server's request with, unless a check says otherwise.
ServerRequestReply = Callable[[dict[str, Any]], dict[str, Any] | None]

SAMPLING_ANSWER = {"role": "assistant", "model": "test-model", "stopReason": "endTurn",
                   "content": {"type": "text", "text": "This is a test response from the client"}}
ROOTS_ANSWER = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}


def default_answer(request: dict[str, Any]) -> dict[str, Any] | None:
    """A plausible client result for a server request (``None``: answer with an error)."""
    method = request.get("method")
    params: dict[str, Any] = request["params"] if isinstance(request.get("params"),
                                                              dict) else {}
    if method == "ping":
        return {}
    if method == "roots/list":
        return dict(ROOTS_ANSWER)
    if method == "sampling/createMessage":
        return dict(SAMPLING_ANSWER)
    if method == "elicitation/create":
        content = example_arguments(params.get("requestedSchema"))
        return {"action": "accept", "content": content} if content is not None else {
            "action": "decline"}
    return None


class LegacySession:
    """One 2025-era session; ``open`` performs the handshake."""

    def __init__(self, init: RecordedExchange, version: str, session_id: str | None) -> None:
        self.init = init
        self.version = version
        self.session_id = session_id

    @property
    def result(self) -> dict[str, Any]:
        return self.init.result or {}

    @classmethod
    async def open(cls, ctx: AuditContext, *, version: str = wire.LEGACY,
                   capabilities: Mapping[str, Any] | None = None, initialized: bool = True,
                   headers: Mapping[str, Any] | None = None) -> LegacySession:
        """``initialize`` (and ``notifications/initialized``); skips the check when the
        server does not complete a handshake."""
        body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "initialize",
                "params": {"protocolVersion": version,
                           "capabilities": dict(capabilities if capabilities is not None
                                                else {"sampling": {}, "elicitation": {},
                                                      "roots": {"listChanged": True}}),
                           "clientInfo": dict(wire.SUITE_CLIENT)}}
        sent = {**wire.legacy_headers(), **(headers or {})}
        init = await ctx.send(body, headers=sent, label="initialize")
        result = init.result
        if result is None:
            ctx.skip(f"the server completed no 2025-era handshake ({init.describe()})")
        negotiated = result.get("protocolVersion")
        session = cls(init, negotiated if isinstance(negotiated, str) else version,
                      init.response_headers.get("mcp-session-id"))
        if initialized:
            await session.notify(ctx, "notifications/initialized")
        return session

    def headers(self) -> dict[str, Any]:
        """This session's request headers (negotiated version, session id)."""
        return dict(wire.legacy_headers(self.version, self.session_id))

    async def request(self, ctx: AuditContext, method: str, params: Mapping[str, Any] | None = None,
                      *, answer: ServerRequestReply = default_answer,
                      headers: Mapping[str, Any] | None = None,
                      timeout: float | None = None, label: str = "") -> RecordedExchange:
        """A request in this session; server requests on its stream get ``answer``."""
        request_id = ctx.session.next_id()
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = dict(params)

        async def on_message(message: dict[str, Any]) -> None:
            if "method" in message and "id" in message:
                await self.respond(ctx, message, answer(message))

        sent = {**self.headers(), **(headers or {})}
        return await ctx.send(body, headers=sent, request_id=request_id, label=label or method,
                              timeout=timeout, on_message=on_message)

    async def respond(self, ctx: AuditContext, request: dict[str, Any],
                      result: dict[str, Any] | None) -> RecordedExchange:
        """Answer a server request (an error when ``result`` is ``None``)."""
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
        if result is None:
            reply["error"] = {"code": -32601, "message": "Not supported by the suite"}
        else:
            reply["result"] = result
        return await ctx.send(reply, headers=self.headers(),
                              label=f"reply to {request.get('method')}")

    async def notify(self, ctx: AuditContext, method: str,
                     params: Mapping[str, Any] | None = None) -> RecordedExchange:
        return await ctx.send(wire.notification(method, params), headers=self.headers(),
                              label=method)

    async def delete(self, ctx: AuditContext) -> RecordedExchange:
        return await ctx.send(b"", headers={"Mcp-Session-Id": self.session_id,
                                            "MCP-Protocol-Version": self.version},
                              http_method="DELETE", label="DELETE session")


async def shared_session(ctx: AuditContext) -> LegacySession:
    """The era's shared legacy session (opened by the first check that asks)."""
    async def open_it() -> LegacySession | Exception:
        try:
            return await LegacySession.open(ctx)
        except Exception as exc:  # a skip inside open: every user of the session skips
            return exc

    value: LegacySession | Exception = await ctx.session.once("legacy-session", open_it)
    if isinstance(value, Exception):
        raise value
    if value.init not in ctx.evidence:
        ctx.evidence.append(value.init)
    return value


__all__ = ["ROOTS_ANSWER", "SAMPLING_ANSWER", "LegacySession", "default_answer",
           "shared_session"]
