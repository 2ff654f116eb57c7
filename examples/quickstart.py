"""The smallest useful MCP server: one tool.

    python -m examples.quickstart --port 8000        # Streamable HTTP on 127.0.0.1:8000/mcp
    python -m examples.quickstart --stdio            # stdio
    uvicorn examples.quickstart:app                  # any ASGI server
"""

from mcpcore import Server, StreamableHTTP
from mcpcore.cli import serve

server = Server("quickstart", "1.0.0")


@server.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Echo the text back."""
    return text


app = StreamableHTTP(server)

if __name__ == "__main__":
    serve(server, app, description=__doc__)
