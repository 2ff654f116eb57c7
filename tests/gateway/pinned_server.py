"""A small upstream for the pinning tests (and docs/gateway-pinning.md): a ``read_file``
tool whose description, schema and annotations come from the environment
(``PINNED_DESCRIPTION``, ``PINNED_PATH_TYPE``, ``PINNED_DESTRUCTIVE=true``), so that a
test can start it again with another definition (``python -m tests.gateway.pinned_server
--stdio``), or build it in-process with ``make_server``."""

from __future__ import annotations

import os

from mcpcore import Server, StreamableHTTP
from mcpcore.cli import serve


def make_server(description: str = "Read a file.", path_type: str = "string",
                destructive: bool = False, meta: dict[str, object] | None = None) -> Server:
    server = Server("pinned", "1.0.0")

    @server.tool(description=description, meta=meta,
                 input_schema={"type": "object",
                               "properties": {"path": {"type": path_type}},
                               "required": ["path"]},
                 annotations={"readOnlyHint": not destructive,
                              "destructiveHint": destructive})
    def read_file(path: str) -> str:
        return f"contents of {path}"

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return server


server = make_server(os.environ.get("PINNED_DESCRIPTION", "Read a file."),
                     os.environ.get("PINNED_PATH_TYPE", "string"),
                     os.environ.get("PINNED_DESTRUCTIVE", "") == "true")
app = StreamableHTTP(server)

if __name__ == "__main__":
    serve(server, app, description=__doc__)
