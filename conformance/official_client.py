"""Drive the official MCP conformance suite's client scenarios with ``mcpcore.client``.

The suite starts a mock server per scenario and runs this module with the server URL as
the last argument, the scenario name in ``MCP_CONFORMANCE_SCENARIO``, the wire version in
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for some scenarios, a JSON context in
``MCP_CONFORMANCE_CONTEXT`` (the conformance repository's README, "Client Testing")::

    scripts/official-suite.sh client \\
        --command ".venv/bin/python -m mcpcore.conformance.official_client" \\
        --scenario tools_call --spec-version 2025-11-25

The wire follows the version asked for: ``2026-07-28`` pins the stateless wire, a 2025
version the session wire asking for that version in ``initialize`` (the mocks validate
every message against their revision's schema, so the client must not probe with
``server/discover`` there); anything else lets the client negotiate (``mode="auto"``).

Each scenario is a small async function over one open ``Client`` (``SCENARIOS``);
unknown scenarios get the generic flow (discover, list and call every tool with
arguments filled from its schema, tolerating tool errors). The server's questions get
canned answers: an elicitation is accepted with every field filled that has no
``default`` (the client itself fills defaults, SEP-1034), sampling gets a fixed assistant
text, roots one ``file://`` root. Exit status 0 on success, 1 with a message on stderr
otherwise. ``auth/*`` scenarios go to ``mcpcore.conformance.official_auth``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from mcpcore.client import Client, ClientError, RemoteProtocolError
from mcpcore.versions import LEGACY, MODERN

ClientScenario = Callable[[Client, Any], Awaitable[None]]

CANNED_TEXT = "This is a canned answer from the mcpcore conformance client."
ROOT = {"uri": "file:///tmp/mcpcore-conformance", "name": "mcpcore-conformance"}
#: Errors a tools/call may get for reasons that are not the request's fault: Missing
#: Required Client Capability and Internal Error (basic/index, "Error Codes").
NOT_OUR_FAULT = frozenset({-32021, -32603})


def say(text: str) -> None:
    print(f"[official_client] {text}", file=sys.stderr, flush=True)


# -- canned MRTR answers ------------------------------------------------------------------


def sample_value(schema: Mapping[str, Any]) -> Any:
    """A value that satisfies a simple (elicitation-style) property schema (its default
    if it has one)."""
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and isinstance(options[0], Mapping):
            if "const" in options[0]:
                return options[0]["const"]
            return sample_value(options[0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum")
        value = 1 if low is None else int(low) + (1 if "exclusiveMinimum" in schema else 0)
        if high is not None and value > high:
            value = int(high)
        return value
    if kind == "array":
        items = schema.get("items")
        count = max(int(schema.get("minItems", 1)), 1)
        if isinstance(items, Mapping):
            return [sample_value(items)] * count
        return []
    if kind == "object":
        return fill_object(schema, required_only=True)
    text = {"email": "conformance@example.com", "uri": "https://example.com/conformance",
            "date": "2026-07-28", "date-time": "2026-07-28T00:00:00Z"}.get(
        str(schema.get("format")), "conformance")
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and len(text) < min_length:
        text += "x" * (min_length - len(text))
    max_length = schema.get("maxLength")
    if isinstance(max_length, int):
        text = text[:max_length]
    return text


def fill_object(schema: Mapping[str, Any], *, required_only: bool,
                skip_defaults: bool = False) -> dict[str, Any]:
    """Values for an object schema's properties (all of them, or just the required);
    ``skip_defaults`` leaves out the properties that have a ``default``."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    required = schema.get("required")
    names = (required if isinstance(required, list) else []) if required_only else properties
    out: dict[str, Any] = {}
    for name in names:
        prop = properties.get(name)
        if skip_defaults and isinstance(prop, Mapping) and "default" in prop:
            continue
        out[name] = sample_value(prop) if isinstance(prop, Mapping) else "conformance"
    return out


def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
    say(f"elicitation: {params.get('message')!r} -> accept")
    if params.get("mode") == "url":
        return {"action": "accept"}
    schema = params.get("requestedSchema")
    content = (fill_object(schema, required_only=False, skip_defaults=True)
               if isinstance(schema, Mapping) else {})
    return {"action": "accept", "content": content}


def on_sample(params: dict[str, Any]) -> dict[str, Any]:
    say("sampling -> canned assistant text")
    return {"role": "assistant", "content": {"type": "text", "text": CANNED_TEXT},
            "model": "mcpcore-conformance", "stopReason": "endTurn"}


def on_roots() -> dict[str, Any]:
    say("roots/list -> one file:// root")
    return {"roots": [ROOT]}


# -- flows --------------------------------------------------------------------------------


async def call_every_tool(client: Client, *, strict: bool) -> None:
    tools = [tool async for tool in client.iter_tools()]
    say(f"tools: {[tool.name for tool in tools]}")
    for tool in tools:
        arguments = fill_object(tool.input_schema, required_only=True)
        try:
            result = await client.call_tool(tool.name, arguments)
        except RemoteProtocolError as exc:
            # Strict: an error saying our request was wrong fails the flow. Not so one the
            # server has for reasons of its own: -32021 (the tool needs a capability we
            # do not declare: a task-only tool) or -32603 (the tool failed inside).
            if strict and exc.code not in NOT_OUR_FAULT:
                raise
            say(f"tools/call {tool.name}: {exc} (tolerated)")
            continue
        say(f"tools/call {tool.name}: {len(result.content)} content block(s)")


async def tools_call(client: Client, context: Any) -> None:
    names = [tool.name async for tool in client.iter_tools()]
    if "add_numbers" not in names:
        raise SystemExit(f"tools_call: add_numbers is not listed (got {names})")
    result = await client.call_tool("add_numbers", {"a": 2, "b": 3})
    text = " ".join(getattr(block, "text", "") for block in result.content)
    say(f"add_numbers -> {text!r}")


async def initialize(client: Client, context: Any) -> None:
    # Opening the client did the handshake (initialize, then notifications/initialized).
    say(f"initialized: {client.protocol_version}, server {client.server and client.server.meta}")
    page = await client.list_tools()
    say(f"tools/list: {len(page.tools)} tool(s)")


async def request_metadata(client: Client, context: Any) -> None:
    info = await client.discover()
    say(f"discover: versions {info.supported_versions}")
    page = await client.list_tools()
    say(f"tools/list: {len(page.tools)} tool(s)")


async def mrtr(client: Client, context: Any) -> None:
    await call_every_tool(client, strict=True)


async def standard_headers(client: Client, context: Any) -> None:
    await call_every_tool(client, strict=True)
    async for resource in client.iter_resources():
        read = await client.read_resource(resource.uri)
        say(f"resources/read {resource.uri}: {len(read.contents)} item(s)")
    async for prompt in client.iter_prompts():
        arguments = {a.name: "conformance" for a in prompt.arguments or [] if a.required}
        got = await client.get_prompt(prompt.name, arguments)
        say(f"prompts/get {prompt.name}: {len(got.messages)} message(s)")


async def custom_headers(client: Client, context: Any) -> None:
    names = [tool.name async for tool in client.iter_tools()]
    say(f"tools: {names}")
    calls = context.get("toolCalls") if isinstance(context, Mapping) else None
    if not isinstance(calls, list):
        raise SystemExit("http-custom-headers: MCP_CONFORMANCE_CONTEXT has no toolCalls")
    for call in calls:
        await client.call_tool(call["name"], call.get("arguments") or {})
        say(f"tools/call {call['name']}: ok")


async def invalid_tool_headers(client: Client, context: Any) -> None:
    await call_every_tool(client, strict=True)


async def no_deref(client: Client, context: Any) -> None:
    # Listing is the whole test: the schema holds a network $ref we must never fetch.
    tools = [tool async for tool in client.iter_tools()]
    say(f"tools: {[tool.name for tool in tools]} (schemas kept as given, $refs untouched)")


async def schema_preservation(client: Client, context: Any) -> None:
    # Echo the focal tool's inputSchema back verbatim: the client must keep every
    # 2020-12 keyword ($schema, $defs, $anchor, composition, conditionals) it received.
    tools = {tool.name: tool async for tool in client.iter_tools()}
    focal = tools["json_schema_2020_12_tool"]
    await client.call_tool("json_schema_echo", {"schema": focal.input_schema})
    say("echoed json_schema_2020_12_tool's inputSchema")


async def generic(client: Client, context: Any) -> None:
    try:
        await client.discover()
    except RemoteProtocolError as exc:
        say(f"server/discover: {exc} (tolerated)")
    await call_every_tool(client, strict=False)


async def every_tool(client: Client, context: Any) -> None:
    # elicitation-sep1034-client-defaults: the one tool elicits a form whose fields all
    # have defaults, which the client fills in. sse-retry: the tool's stream closes before
    # the response; the client resumes it (GET, Last-Event-ID, after `retry` ms).
    await call_every_tool(client, strict=True)


SCENARIOS: dict[str, ClientScenario] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": every_tool,
    "sse-retry": every_tool,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": mrtr,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": no_deref,
    "json-schema-2020-12-preservation": schema_preservation,
}


def mode_for(version: str) -> str:
    """The client mode for the suite's wire version (see the module docstring)."""
    if version == MODERN:
        return MODERN
    return version if version in LEGACY else "auto"


async def run(url: str, scenario: str, version: str, context: Any) -> None:
    flow = SCENARIOS.get(scenario, generic)
    async with Client.http(
        url,
        mode=mode_for(version),
        client_info={"name": "mcpcore-conformance-client", "version": "0.1.0"},
        capabilities={"elicitation": {}, "sampling": {}, "roots": {}},
        on_elicit=on_elicit, on_sample=on_sample, on_roots=on_roots,
        timeout=20.0,  # the suite kills us at 30 s; parallel runs on small machines are slow
        heartbeat=None,  # a scenario is over in seconds; pings would only add noise
    ) as client:
        say(f"era {client.era}, protocol version {client.protocol_version}")
        await flow(client, context)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        say("usage: python -m mcpcore.conformance.official_client SERVER_URL")
        return 2
    url = args[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", MODERN)
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "null")
    except json.JSONDecodeError as exc:
        say(f"MCP_CONFORMANCE_CONTEXT is not JSON: {exc}")
        return 1
    if scenario.startswith("auth/"):  # authorization scenarios: official_auth.py
        from mcpcore.conformance import official_auth

        return official_auth.main(url, scenario, context, version)
    say(f"scenario {scenario or '(none)'} at {url}")
    try:
        asyncio.run(run(url, scenario, version, context))
    except ClientError as exc:
        say(f"{scenario}: failed: {type(exc).__name__}: {exc}")
        return 1
    say(f"{scenario}: done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
