"""FastMCP's proxy in front of one upstream, for ``bench_gateway_side_by_side.py``.

    <fastmcp venv>/bin/python bench/fastmcp_proxy.py UPSTREAM_URL PORT

Runs in the venv the side-by-side bench builds for ``fastmcp`` (never in mcpcore's own):
``fastmcp.server.create_proxy(UPSTREAM_URL)`` served as Streamable HTTP at ``/mcp`` on
127.0.0.1:PORT, by uvicorn, one worker, uvloop + httptools as for every server of the
bench, log level warning, no access log. FastMCP's defaults otherwise: the proxy
mirrors each caller's protocol era to the upstream (``create_proxy``'s ``mode=None``).
"""

from __future__ import annotations

import sys


def main() -> None:
    upstream, port = sys.argv[1], int(sys.argv[2])
    import uvicorn
    from fastmcp.server import create_proxy

    proxy = create_proxy(upstream, name="bench-proxy")
    app = proxy.http_app(path="/mcp")
    uvicorn.run(app, host="127.0.0.1", port=port, workers=1, loop="uvloop",
                http="httptools", log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
