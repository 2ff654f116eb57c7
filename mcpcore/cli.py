"""The command line every example shares.

``python -m examples.NAME --host 127.0.0.1 --port 8000`` serves the module's ASGI ``app``
with uvicorn; ``python -m examples.NAME --stdio`` serves its ``server`` over stdio.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from mcpcore.server import Server


def main(server: Server, app: Any, argv: Sequence[str] | None = None,
         *, description: str | None = None) -> None:
    parser = argparse.ArgumentParser(description=description or f"Serve {server.name}")
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to bind (default 127.0.0.1: local only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    if args.stdio:
        from mcpcore.transports.stdio import run_stdio

        logging.basicConfig(stream=sys.stderr, level=args.log_level.upper())
        run_stdio(server)
        return
    import uvicorn

    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                lifespan="on")


__all__ = ["main"]
