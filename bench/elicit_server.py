"""An upstream whose one tool asks for input: the bridged flow of
``bench_gateway_side_by_side.py``.

    MCPCORE_STATE_KEYS=... uvicorn bench.elicit_server:app

``ask`` elicits a name (one form) and answers ``Hello, <name>!``. The same app serves
both wires: a 2026-07-28 caller gets ``input_required`` and retries with the answer
(MRTR, its state sealed with ``MCPCORE_STATE_KEYS``); a 2025 session gets an
``elicitation/create`` request on its session (the legacy shim), which is how the
gateway reaches it with ``era = "legacy"``.
"""

from __future__ import annotations

from mcpcore import Context, MrtrConfig, Server, StreamableHTTP

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

server = Server("asker", "1.0.0", mrtr=MrtrConfig.from_env())


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the caller's name, then greet them."""
    answer = await ctx.elicit("What is your name?", NAME, key="name")
    return f"Hello, {answer.content['name']}!"


app = StreamableHTTP(server)
