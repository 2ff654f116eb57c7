"""Conformance tooling: drivers for the official MCP suite, scenarios, runners."""
