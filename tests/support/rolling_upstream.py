"""The upstream of the gateway's rolling-restart test (``python -m
tests.support.rolling_upstream --port N``; the ``mcpcore serve`` flags): tools that
count what they did per tag, so the test can tell that every call the gateway
acknowledged ran exactly once (none lost, none run twice by a retrying proxy).

- ``work(tag, ms)``: counts the tag, then takes ``ms`` milliseconds (so some calls are
  in flight when an instance stops);
- ``ask(tag)``: asks the caller a name (elicitation); counts the tag once the answer
  came. Reached by the gateway on its 2025 session wire (``era = "legacy"``), the
  question parks the upstream call on the gateway instance that made it;
- ``ran(tags)``: the counts of ``tags``, as JSON.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

from mcpcore import Context, Server
from mcpcore.cli import serve

server = Server("rolling", "1.0.0")
counts: Counter[str] = Counter()
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool()
async def work(tag: str, ms: int = 200) -> str:
    """Counts ``tag``, then answers after ``ms`` milliseconds (at most 5 s)."""
    counts[tag] += 1
    await asyncio.sleep(min(max(ms, 0), 5000) / 1000)
    return f"{tag} done"


@server.tool()
async def ask(ctx: Context, tag: str) -> str:
    """Asks a name; counts ``tag`` once answered."""
    answer = await ctx.elicit(f"Name for {tag}?", NAME, key="name")
    counts[tag] += 1
    return f"{tag}: {(answer.content or {}).get('name')}"


@server.tool(annotations={"readOnlyHint": True})
def ran(tags: list[str]) -> str:
    """How many times each of ``tags`` ran (JSON)."""
    return json.dumps({tag: counts[tag] for tag in tags[:100_000]})


if __name__ == "__main__":
    serve(server, description=__doc__)
