"""What a conforming 2026-07-28 client puts on the wire: ``_meta``, headers, constants.

The tests build requests from these, so every transport test sends what a real client
would (the ``peer`` fixture, the ASGI ``Exchange``, the fleet tests).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

MODERN = "2026-07-28"
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

#: What a well-equipped client declares (the conformance harness default).
FULL_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
CLIENT = {"name": "mcpcore-tests", "version": "1.0.0"}

#: ``x-mcp-header`` arguments of the fixture tools: tool → {argument: header suffix}.
HEADER_PARAMS: dict[str, dict[str, str]] = {"test_custom_header": {"region": "Region"}}


def make_meta(caps: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A valid request ``_meta``; ``extra`` adds or overrides keys (None removes)."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION: MODERN,
        CLIENT_CAPABILITIES: dict(FULL_CAPS if caps is None else caps),
        CLIENT_INFO: CLIENT,
    }
    for key, value in extra.items():
        key = {"log_level": LOG_LEVEL, "progress_token": "progressToken",
               "version": PROTOCOL_VERSION}.get(key, key)
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    return meta


def sentinel(value: str) -> str:
    """The Base64 sentinel form of a header value (streamable-http.mdx, "Value
    Encoding")."""
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def header_value(value: str) -> str:
    plain = value.isascii() and value.isprintable() and value == value.strip()
    return value if plain and not value.startswith("=?base64?") else sentinel(value)


#: The params field ``Mcp-Name`` mirrors, per method (streamable-http.mdx, "Standard
#: Headers"; SEP-2663, "Streamable HTTP: Routing Headers" for the three task methods).
NAME_FIELDS: dict[str, str] = {"tools/call": "name", "prompts/get": "name",
                               "resources/read": "uri", "tasks/get": "taskId",
                               "tasks/update": "taskId", "tasks/cancel": "taskId"}
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: ``FULL_CAPS`` plus the tasks extension (SEP-2663, "Capability Negotiation").
TASK_CAPS: dict[str, Any] = {**FULL_CAPS, "extensions": {TASKS_EXTENSION: {}}}


def standard_headers(method: str, params: Mapping[str, Any] | None) -> dict[str, str]:
    """The headers a conforming client sends for this body (streamable-http.mdx,
    "Standard Headers" and "Custom Headers")."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Mcp-Method": header_value(method),
    }
    params = params or {}
    meta = params.get("_meta")
    version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
    headers["MCP-Protocol-Version"] = header_value(version) if isinstance(version, str) else MODERN
    name = params.get(NAME_FIELDS.get(method, "name"))
    if method in NAME_FIELDS and isinstance(name, str):
        headers["Mcp-Name"] = header_value(name)
    arguments = params.get("arguments")
    if method == "tools/call" and isinstance(arguments, dict):
        for arg, suffix in HEADER_PARAMS.get(str(name), {}).items():
            value = arguments.get(arg)
            if isinstance(value, str):
                headers[f"Mcp-Param-{suffix}"] = header_value(value)
    return headers


__all__ = [
    "CLIENT",
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "FULL_CAPS",
    "HEADER_PARAMS",
    "LOG_LEVEL",
    "MODERN",
    "NAME_FIELDS",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "TASKS_EXTENSION",
    "TASK_CAPS",
    "header_value",
    "make_meta",
    "sentinel",
    "standard_headers",
]
