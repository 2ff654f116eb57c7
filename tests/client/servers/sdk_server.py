"""A test server built with the official Python SDK (``mcp`` 2.3.0), both eras.

    python tests/client/servers/sdk_server.py stdio
    python tests/client/servers/sdk_server.py http PORT      # 127.0.0.1 only

The SDK serves 2026-07-28 (``server/discover``, MRTR) and the 2025 session wire
(``initialize``) on one endpoint. Tools ask the client in whichever era the request came:
an ``InputRequiredResult`` (2026-07-28) or a real server request (2025 sessions).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("sdk-fixture", version="2.3.0", instructions="A fixture for client tests.")
MODERN = "2026-07-28"
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}},
               "required": ["name"]}


class Name(BaseModel):
    name: str


@server.tool(structured_output=False)
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


@server.tool(structured_output=False)
async def slow_progress(ctx: Context, steps: int = 3) -> str:
    """Report progress, then finish."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
    return "done"


@server.tool(structured_output=False)
async def nap(seconds: float) -> str:
    """Sleep, then answer (for cancellation tests)."""
    await asyncio.sleep(seconds)
    return "rested"


@server.tool(structured_output=False)
async def log_something(ctx: Context) -> str:
    """Send one log message."""
    await ctx.info("hello from the SDK")
    return "logged"


async def _with_name(ctx: Context, answer_with: Callable[[object], str]) -> Any:
    """Elicit a name, in the request's era: ``answer_with(name)`` once it is given, the
    action if it is not (2025), ``input_required`` until it is (2026-07-28)."""
    if ctx.protocol_version == MODERN:
        answer = (ctx.input_responses or {}).get("name")
        if answer is None:
            return t.InputRequiredResult(input_requests={"name": t.ElicitRequest(
                params=t.ElicitRequestFormParams(message="Your name?",
                                                 requested_schema=NAME_SCHEMA))})
        content = answer.content if isinstance(answer, t.ElicitResult) else None
        return answer_with((content or {}).get("name"))
    result = await ctx.elicit("Your name?", Name)
    return answer_with(result.data.name) if result.action == "accept" else result.action


@server.tool(structured_output=False)
async def ask_name(ctx: Context) -> Any:
    """Elicit a name, in the request's era."""
    return await _with_name(ctx, lambda name: f"hello {name}")


#: Answers each ``ask_counted`` tag received (a retry must never deliver one twice).
COUNTED: dict[str, int] = {}


@server.tool(structured_output=False)
async def ask_counted(ctx: Context, tag: str) -> str:
    """Elicit a name on the 2025 session, counting the answers per tag."""
    result = await ctx.elicit(f"Your name for {tag}?", Name)
    COUNTED[tag] = COUNTED.get(tag, 0) + 1
    return f"{tag}: {result.data.name}" if result.action == "accept" else result.action


@server.tool(structured_output=False)
def answers_counted(tag: str) -> str:
    """How many answers ``ask_counted`` received for ``tag``."""
    return str(COUNTED.get(tag, 0))


@server.tool(structured_output=False)
async def ask_model(ctx: Context) -> Any:
    """Ask the client's model (sampling), in the request's era."""
    message = t.SamplingMessage(role="user", content=t.TextContent(type="text", text="Hi?"))
    if ctx.protocol_version == MODERN:
        answer = (ctx.input_responses or {}).get("model")
        if answer is None:
            return t.InputRequiredResult(input_requests={"model": t.CreateMessageRequest(
                params=t.CreateMessageRequestParams(messages=[message], max_tokens=20))})
        return f"model said {answer.content.text}"  # type: ignore[union-attr]
    result = await ctx.request_context.session.create_message([message], max_tokens=20)
    return f"model said {result.content.text}"  # type: ignore[union-attr]


@server.tool(structured_output=False)
async def ask_roots(ctx: Context) -> Any:
    """List the client's roots, in the request's era."""
    if ctx.protocol_version == MODERN:
        answer = (ctx.input_responses or {}).get("roots")
        if answer is None:
            return t.InputRequiredResult(input_requests={"roots": t.ListRootsRequest()})
        return " ".join(str(root.uri) for root in answer.roots)  # type: ignore[union-attr]
    result = await ctx.request_context.session.list_roots()
    return " ".join(str(root.uri) for root in result.roots)


@server.resource("fixture://static", mime_type="text/plain")
def static() -> str:
    """A static text resource."""
    return "static text"


@server.resource("fixture://items/{item}")
def item(item: str) -> str:
    """One item, by name."""
    return f"item {item}"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


@server.prompt()
async def ask_greeting(ctx: Context) -> Any:
    """A prompt that asks the caller's name first, in the request's era."""
    return await _with_name(ctx, lambda name: f"Greet {name}")


@server.completion()
async def complete(ref: Any, argument: Any, context: Any) -> t.Completion:
    names = ["ada", "alan", "grace"]
    return t.Completion(values=[n for n in names if n.startswith(argument.value)])


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]),
                    log_level="warning")
