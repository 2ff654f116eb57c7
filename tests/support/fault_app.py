"""``examples.everything`` as the fault tests serve it (``python -m tests.support.fault_app``
takes the same flags): plus a tool that takes its time (``test_slow``), a ``GET /debug``
route that reports what the process holds (asyncio tasks, open file descriptors,
admitted requests and streams, open listen streams), and the stall timeout of event
streams from ``FAULTS_SEND_TIMEOUT`` (seconds), so tests need not wait the default 30 s.
With ``FAULTS_OPERATIONS`` set, ``mcpcore.health.Operations`` in front (``/healthz``,
``/readyz``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
from typing import Any

from examples.everything import app, server
from mcpcore.cli import serve
from mcpcore.transports.asgi import Receive, Scope, Send, send_json


@server.tool(annotations={"readOnlyHint": True})
async def test_slow(seconds: float = 1.0) -> str:
    """Answers after ``seconds`` (at most 30)."""
    await asyncio.sleep(min(max(seconds, 0.0), 30.0))
    return f"Answered after {seconds} s."


class Debug:
    """``GET /debug``: what this process holds now, as JSON; everything else: ``app``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/debug":
            admission = self.app.admission
            report = {
                "tasks": len(asyncio.all_tasks()),
                "fds": len(os.listdir("/proc/self/fd")),
                "requests": admission.requests if admission else None,
                "streams": admission.streams if admission else None,
                "listens": server.subscriptions.active,
                "gc": {"young_threshold": gc.get_threshold()[0],
                       "frozen": gc.get_freeze_count()},
            }
            await send_json(send, 200, json.dumps(report).encode())
            return
        await self.app(scope, receive, send)


stall = os.environ.get("FAULTS_SEND_TIMEOUT")
if stall:
    app.send_timeout = float(stall)
    if app.legacy is not None:
        app.legacy.send_timeout = float(stall)

if __name__ == "__main__":
    served: Any = Debug(app)
    if os.environ.get("FAULTS_OPERATIONS"):
        from mcpcore.health import Operations

        served = Operations(served)
    serve(server, served, description=__doc__)
