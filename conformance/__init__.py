"""Conformance tooling: drivers for the official MCP suite, scenarios, runners."""

# This folder is installed, and imported, as ``mcpcore.conformance`` (``mcpcore/conformance`` links
# here). Imported under any other name it would be a second copy of every class in it.
if __name__ != "mcpcore.conformance":  # pragma: no cover - only a mistaken import reaches this
    raise ImportError(f"import this package as mcpcore.conformance, not as {__name__}")

