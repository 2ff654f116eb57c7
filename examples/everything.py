"""The "everything" server: every fixture the official conformance suite drives.

Serve it and point the suite at it::

    python -m examples.everything --port 8000
    scripts/official-suite.sh server --url http://127.0.0.1:8000/mcp --requirements 2026-07-28

or run ``make conformance``, which does both eras.

Names and argument names are the suite's (``test_*``); texts are ours. ``tools/list``
keeps registration order, so ``test_simple_text`` (which succeeds with ``{}``) comes
first, as the header-validation probes expect.
"""

from __future__ import annotations

import asyncio
import base64
import math
import os
from typing import Any

from mcpcore import (
    AdmissionLimits,
    CacheHint,
    Context,
    InternalError,
    MemoryStore,
    MrtrConfig,
    Server,
    StreamableHTTP,
    TaskManager,
    ToolError,
)
from mcpcore import elicitation as ask_form
from mcpcore import roots as ask_roots
from mcpcore import sampling as ask_sampling
from mcpcore.cli import allowed_hosts_from_env, serve
from mcpcore.errors import ConfigError
from mcpcore.stores import Store

# A 1x1 transparent PNG and a tiny silent WAV (both valid base64).
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
    "60e6kgAAAABJRU5ErkJggg=="
)
WAV_SILENT = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00"
    b"\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
).decode()

def _store() -> Store:
    """``MCPCORE_REDIS_URL`` shares listen events, legacy sessions and tasks across a
    fleet; without it everything stays in this process (in-memory)."""
    url = os.environ.get("MCPCORE_REDIS_URL")
    if not url:
        return MemoryStore()
    from mcpcore.stores import RedisStore

    return RedisStore.from_url(url)


def _tasks(store: Store) -> TaskManager:
    """Tasks in the same store; ``MCPCORE_TASK_LEASE`` and ``MCPCORE_TASK_TTL`` (seconds)
    set the lease (how soon a dead instance's tasks end ``failed``) and ``ttlMs``."""
    return TaskManager(store, lease=_seconds("MCPCORE_TASK_LEASE", 30.0),
                       ttl=_seconds("MCPCORE_TASK_TTL", 3600.0))


def _seconds(name: str, default: float) -> float:
    """A positive number of seconds from the environment variable ``name``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{name}={raw!r} is not a positive number of seconds; set one, "
                          f"or unset it for the default ({default:g})")
    return value


_STORE = _store()
server = Server(
    "mcpcore-everything",
    "0.1.0",
    title="mcpcore everything server",
    instructions="Test fixtures for MCP conformance runs; every tool is harmless.",
    mrtr=MrtrConfig.from_env(),
    store=_STORE,
    tasks=_tasks(_STORE),
)

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}


# -- plain tools (both eras) -------------------------------------------------------------
@server.tool(annotations={"readOnlyHint": True})
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@server.tool(annotations={"readOnlyHint": True})
def test_image_content() -> list[dict[str, Any]]:
    """Returns a small PNG image."""
    return [{"type": "image", "data": PNG_1X1, "mimeType": "image/png"}]


@server.tool(annotations={"readOnlyHint": True})
def test_audio_content() -> list[dict[str, Any]]:
    """Returns a short WAV clip."""
    return [{"type": "audio", "data": WAV_SILENT, "mimeType": "audio/wav"}]


@server.tool(annotations={"readOnlyHint": True})
def test_embedded_resource() -> list[dict[str, Any]]:
    """Returns an embedded text resource."""
    return [{"type": "resource", "resource": {
        "uri": "test://embedded-resource", "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }}]


@server.tool(annotations={"readOnlyHint": True})
def test_multiple_content_types() -> list[Any]:
    """Returns text, an image and an embedded resource."""
    return [
        "Multiple content types test:",
        {"type": "image", "data": PNG_1X1, "mimeType": "image/png"},
        {"type": "resource", "resource": {
            "uri": "test://mixed-content-resource", "mimeType": "application/json",
            "text": '{"test":"data","value":123}',
        }},
    ]


@server.tool(annotations={"readOnlyHint": True})
def test_error_handling() -> str:
    """Always fails as a tool (isError), never as a protocol error."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool(annotations={"readOnlyHint": True})
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50, 100 before answering."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, total=100, message=f"step {step}")
        await asyncio.sleep(0.05)
    return "Progress test completed."


@server.tool(annotations={"readOnlyHint": True})
async def test_tool_with_logging(ctx: Context) -> str:
    """Logs three info messages (only when the request set a log level)."""
    for phase in ("started", "processing", "completed"):
        await ctx.log("info", f"Tool execution {phase}", logger="everything")
        await asyncio.sleep(0.05)
    return "Logging test completed."


@server.tool(annotations={"readOnlyHint": True})
async def test_logging_tool(ctx: Context) -> str:
    """Emits a log message only if the request asked for logs."""
    await ctx.log("info", "test_logging_tool ran", logger="everything")
    return "Logging tool completed."


@server.tool(annotations={"readOnlyHint": True})
def test_streaming_elicitation() -> str:
    """Answers normally; never sends a request on the response stream."""
    return "No server-initiated requests on a response stream."


@server.tool(annotations={"readOnlyHint": True})
def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability (-32021 without it)."""
    ctx.require_capability("sampling")
    return "The client declared sampling."


@server.tool(
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}},
               "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    },
    annotations={"readOnlyHint": True},
)
def json_schema_2020_12_tool(**arguments: Any) -> str:
    """Accepts a JSON Schema 2020-12 input (composition, conditionals, $defs)."""
    return f"Received {sorted(arguments)}"


@server.tool(
    input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region",
                       "description": "Routing region, mirrored in Mcp-Param-Region"},
            "query": {"type": "string"},
        },
        "required": ["region"],
    },
    annotations={"readOnlyHint": True},
)
def test_custom_header(region: str, query: str = "") -> str:
    """Echoes a parameter that clients also send as the Mcp-Param-Region header."""
    return f"region={region} query={query}"


# -- list-changed triggers -----------------------------------------------------------------
@server.tool(annotations={"readOnlyHint": False, "destructiveHint": False,
                          "idempotentHint": True})
async def test_trigger_tool_change() -> str:
    """Announces a tool-list change to listeners (the list itself stays stable)."""
    await server.notify_list_changed("tools")
    return "Tool list change announced."


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": False,
                          "idempotentHint": True})
async def test_trigger_prompt_change() -> str:
    """Announces a prompt-list change to listeners."""
    await server.notify_list_changed("prompts")
    return "Prompt list change announced."


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": False,
                          "idempotentHint": True})
async def test_trigger_resource_update(uri: str = "test://watched-resource") -> str:
    """Announces that a resource changed (resources/updated to its subscribers)."""
    await server.notify_resource_updated(uri)
    return f"Update of {uri} announced."


# -- asking the client (MRTR in 2026-07-28, server requests in legacy sessions) --------
@server.tool(input_schema={"type": "object", "properties": {"prompt": {"type": "string"}},
                           "required": ["prompt"]})
async def test_sampling(ctx: Context, prompt: str) -> str:
    """Asks the client's model to answer a prompt."""
    answer = await ctx.sample([{"role": "user", "content": {"type": "text", "text": prompt}}],
                              max_tokens=100)
    return f"LLM response: {answer.text}"


@server.tool(input_schema={"type": "object", "properties": {"message": {"type": "string"}},
                           "required": ["message"]})
async def test_elicitation(ctx: Context, message: str) -> str:
    """Asks the user for a username and an email."""
    answer = await ctx.elicit(message, {
        "type": "object",
        "properties": {"username": {"type": "string", "description": "User's response"},
                       "email": {"type": "string", "description": "User's email address"}},
        "required": ["username", "email"],
    })
    return f"User response: action={answer.action}, content={answer.content}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicitation whose fields carry defaults (SEP-1034)."""
    answer = await ctx.elicit("Please review your information", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"],
                       "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    })
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicitation with the five enum shapes (SEP-1330)."""
    titled = [{"const": f"value{i}", "title": f"Value {i}"} for i in (1, 2, 3)]
    answer = await ctx.elicit("Please pick options", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option 1", "Option 2", "Option 3"]},
            "untitledMulti": {"type": "array", "items": {
                "type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": titled}},
        },
    })
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """MRTR: asks for the user's name under the key user_name."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    if not answer.accepted:
        return f"No name given ({answer.action})."
    return f"Hello, {answer.content['name']}!"


@server.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """MRTR: asks the client's model a question."""
    answer = await ctx.sample(
        [{"role": "user", "content": {"type": "text",
                                      "text": "What is the capital of France?"}}],
        max_tokens=100, key="capital")
    return f"The model said: {answer.text}"


@server.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """MRTR: asks for the client's roots."""
    answer = await ctx.list_roots(key="roots")
    return "Roots: " + ", ".join(r["uri"] for r in answer.roots)


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """MRTR: confirms through sealed requestState."""
    answer = await ctx.elicit("Proceed?", {
        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm")
    return "state-ok" if answer.accepted and answer.content.get("ok") else "state-declined"


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """MRTR: one round asking for elicitation, sampling and roots together."""
    name, reply, root_list = await ctx.ask(
        ask_form("What is your name?", NAME_SCHEMA, key="user_name"),
        ask_sampling([{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
                     max_tokens=50, key="greeting"),
        ask_roots(key="roots"),
    )
    return (f"name={name.content and name.content.get('name')} "
            f"greeting={reply.text} roots={len(root_list.roots)}")


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """MRTR: asks for a name, then (next round) a favourite colour."""
    name = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    color = await ctx.elicit("What is your favourite colour?", {
        "type": "object", "properties": {"color": {"type": "string"}},
        "required": ["color"]}, key="favorite_color")
    return (f"{(name.content or {}).get('name')} likes "
            f"{(color.content or {}).get('color')}")


@server.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """MRTR: its requestState is sealed; a tampered one is rejected."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {(answer.content or {}).get('name')}!"


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """MRTR: asks only for what the client declared (elicitation, else sampling)."""
    if ctx.has_capability("elicitation"):
        answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Hello, {(answer.content or {}).get('name')}!"
    if ctx.has_capability("sampling"):
        reply = await ctx.sample(
            [{"role": "user", "content": {"type": "text", "text": "Pick a name"}}],
            max_tokens=20, key="name_suggestion")
        return f"The model suggested: {reply.text}"
    ctx.require_capability("elicitation")
    return "unreachable"


# -- resources ----------------------------------------------------------------------------
@server.resource("test://static-text", name="static-text", mime_type="text/plain",
                 description="A static text resource",
                 cache=CacheHint(ttl_ms=60_000, scope="public"))
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png",
                 description="A static binary resource (PNG)",
                 cache=CacheHint(ttl_ms=60_000, scope="public"))
def static_binary() -> bytes:
    return base64.b64decode(PNG_1X1)


@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain",
                 description="A resource clients may subscribe to")
def watched_resource() -> str:
    return "Watched resource content."


@server.resource_template("test://template/{id}/data", name="template-data",
                          mime_type="application/json",
                          description="Data for an id")
def template_data(id: str) -> str:
    return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'


# -- prompts and completion ------------------------------------------------------------
@server.prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
    """A prompt embedding a resource."""
    return [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": resourceUri, "mimeType": "text/plain",
            "text": "Embedded resource content for testing."}}},
        {"role": "user", "content": {"type": "text",
                                     "text": "Please process the embedded resource above."}},
    ]


@server.prompt()
def test_prompt_with_image() -> list[dict[str, Any]]:
    """A prompt with an image."""
    return [
        {"role": "user", "content": {"type": "image", "data": PNG_1X1,
                                     "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]


@server.prompt()
async def test_input_required_result_prompt(ctx: Context) -> str:
    """MRTR inside prompts/get: asks for context first."""
    answer = await ctx.elicit("What context should the prompt use?", {
        "type": "object", "properties": {"context": {"type": "string"}},
        "required": ["context"]}, key="prompt_context")
    return f"Prompt built with context: {(answer.content or {}).get('context')}"


@server.completion(prompt="test_prompt_with_arguments")
def complete_prompt_arguments(argument: str, value: str, context: dict[str, str]) -> list[str]:
    options = {"arg1": ["test", "testing", "tested"], "arg2": ["alpha", "beta"]}
    return [o for o in options.get(argument, []) if o.startswith(value)]


# -- the tasks extension (SEP-2663; the suite's tasks-* scenarios), appended -----------
CONFIRM_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
                  "required": ["confirm"]}
NAME_AND_CONFIRM = {"type": "object", "properties": {"name": {"type": "string"},
                                                     "confirm": {"type": "boolean"}}}


@server.tool(annotations={"readOnlyHint": True})
def greet(name: str) -> str:
    """Greets by name; never a task."""
    return f"Hello, {name}!"


@server.tool(annotations={"readOnlyHint": True}, task="optional")
async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
    """Sleeps `seconds` (at most an hour), then answers; a task for clients that declare
    the tasks extension."""
    await asyncio.sleep(min(max(seconds, 0.0), 3600.0))
    return f"Computed {label or 'a result'} in {seconds:g} s."


@server.tool(annotations={"readOnlyHint": True}, task="required")
async def failing_job() -> str:
    """Runs only as a task; after about a second it reports a tool error (the task
    still ends completed, with isError)."""
    await asyncio.sleep(1.0)
    raise ToolError("The job failed: its input could not be processed")


@server.tool(annotations={"destructiveHint": False}, task="optional")
async def protocol_error_job() -> str:
    """Fails with a protocol error (the task ends failed, with the error). Not marked
    read-only: checkers call read-only tools expecting them to work."""
    await asyncio.sleep(0.1)
    raise InternalError("The job hit an internal protocol error")


@server.tool(task="optional")
async def confirm_delete(ctx: Context, filename: str) -> str:
    """Asks for confirmation, then "deletes" the file (nothing is touched)."""
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA, key="confirm")
    if answer.accepted and (answer.content or {}).get("confirm") is True:
        return f"Deleted {filename}."
    return f"Kept {filename}."


@server.tool(annotations={"readOnlyHint": True}, task="optional")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once: both are outstanding until each is answered."""
    first, second = await asyncio.gather(
        ctx.elicit("Your name, please?", NAME_AND_CONFIRM, key="first"),
        ctx.elicit("And once more, to be sure?", NAME_AND_CONFIRM, key="second"))
    names = [(a.content or {}).get("name") for a in (first, second) if a.accepted]
    return f"Answers: {', '.join(str(n) for n in names) or 'none'}"


@server.tool(annotations={"readOnlyHint": True}, task="required", task_start="handler")
async def test_tool_with_task(ctx: Context) -> str:
    """Asks for a name synchronously (MRTR), then goes on as a task."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    name = (answer.content or {}).get("name") if answer.accepted else None
    await ctx.start_task()
    await asyncio.sleep(0.2)
    return f"Hello, {name or 'stranger'}, from a task."


app = StreamableHTTP(
    server,
    allowed_hosts=allowed_hosts_from_env(),  # MCPCORE_ALLOWED_HOSTS, else loopback names
    # MCPCORE_MAX_REQUESTS, MCPCORE_MAX_STREAMS, MCPCORE_BODY_TIMEOUT, MCPCORE_RETRY_AFTER
    admission=AdmissionLimits.from_env(),
)

if __name__ == "__main__":
    serve(server, app, description=__doc__)
