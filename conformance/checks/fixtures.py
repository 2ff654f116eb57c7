"""``--fixtures official``: the scenarios of the official suite, for servers that expose its
fixture tools, prompts and resources (``test_simple_text``, ``test://static-text``, …).

Most scenarios are one call and one judgement, so they are data: ``CALLS`` lists
(id, method, params, judge, requirement) and a loop registers a check for each, in both
eras (2026-07-28 directly; 2025-11-25 inside a session, where server requests such as
sampling arrive on the call's stream). Multi-step scenarios (MRTR, listen, progress)
are written out below.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.audit_state import answers, tamper
from mcpcore.conformance.checks.common import expect_error
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.legacy import LegacySession, default_answer, shared_session
from mcpcore.conformance.model import CheckFn, Level, as_dict, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.transport import RecordedExchange

Judge = Callable[[dict[str, Any]], str | None]
MODERN, LEGACY = [wire.MODERN], [wire.LEGACY]
TOOLS = spec("server/tools", "tool-result")
MRTR = spec("basic/patterns/mrtr", "server-requirements-basic-workflow")
COMMON: dict[str, Any] = {"pack": "fixtures", "tags": ["fixtures"]}
TEMPLATE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]}, "else": {"required": ["email"]},
    "additionalProperties": False,
}


#: The rule (level, the spec sentence it rests on, how to fix) of each check registered in a
#: loop below; the scenario text comes first in each requirement.
RULES: dict[str, tuple[Level, str, str]] = {
    "fixtures.tools-call-simple-text": (Level.MUST,
        "CallToolResult.content is “A list of content objects that represent the unstructured "
        "result of the tool call.” (schema.ts, a required field); the official suite's fixture "
        "defines what this tool returns.",
        "Return the fixture's text block from test_simple_text."),
    "fixtures.tools-call-image": (Level.MUST,
        "CallToolResult.content is “A list of content objects that represent the unstructured "
        "result of the tool call.” (schema.ts, a required field); the official suite's fixture "
        "defines what this tool returns.",
        "Return an image block with base64 data and mimeType from test_image_content."),
    "fixtures.tools-call-audio": (Level.MUST,
        "CallToolResult.content is “A list of content objects that represent the unstructured "
        "result of the tool call.” (schema.ts, a required field); the official suite's fixture "
        "defines what this tool returns.",
        "Return an audio block (audio/wav, base64 data) from test_audio_content."),
    "fixtures.tools-call-embedded-resource": (Level.MUST,
        "CallToolResult.content is “A list of content objects that represent the unstructured "
        "result of the tool call.” (schema.ts, a required field); the official suite's fixture "
        "defines what this tool returns.",
        "Return an embedded resource block with uri, mimeType and text or blob."),
    "fixtures.tools-call-mixed-content": (Level.MUST,
        "CallToolResult.content is “A list of content objects that represent the unstructured "
        "result of the tool call.” (schema.ts, a required field); the official suite's fixture "
        "defines what this tool returns.",
        "Return text, image and resource blocks together from test_multiple_content_types."),
    "fixtures.tools-call-error": (Level.SHOULD,
        "“Any errors that originate from the tool SHOULD be reported inside the result object, "
        "with isError set to true, not as an MCP protocol-level error response.” (schema.ts "
        "CallToolResult.isError)",
        "Report a tool's own failure as a result with isError: true and a text block, not as a "
        "JSON-RPC error."),
    "fixtures.resources-read-text": (Level.MUST,
        "ReadResourceResult requires contents (schema.ts); “Binary data MUST be properly encoded” "
        "(server/resources, Security Considerations); the official suite's fixture defines the "
        "resource.",
        "Serve test://static-text as a text entry with uri and mimeType."),
    "fixtures.resources-read-binary": (Level.MUST,
        "ReadResourceResult requires contents (schema.ts); “Binary data MUST be properly encoded” "
        "(server/resources, Security Considerations); the official suite's fixture defines the "
        "resource.",
        "Serve test://static-binary as a base64 blob entry."),
    "fixtures.resources-templates-read": (Level.MUST,
        "ReadResourceResult requires contents (schema.ts); “Binary data MUST be properly encoded” "
        "(server/resources, Security Considerations); the official suite's fixture defines the "
        "resource.",
        "Resolve test://template/{id}/data through the template and return its text."),
    "fixtures.prompts-get-simple": (Level.MUST,
        "GetPromptResult requires messages, each PromptMessage a role and content (schema.ts); "
        "“The image data MUST be base64-encoded and include a valid MIME type.” (server/prompts); "
        "the official suite's fixture defines the prompt.",
        "Return test_simple_prompt's messages with role and content."),
    "fixtures.prompts-get-with-args": (Level.MUST,
        "GetPromptResult requires messages, each PromptMessage a role and content (schema.ts); "
        "“The image data MUST be base64-encoded and include a valid MIME type.” (server/prompts); "
        "the official suite's fixture defines the prompt.",
        "Substitute both arguments into test_prompt_with_arguments' messages."),
    "fixtures.prompts-get-embedded-resource": (Level.MUST,
        "GetPromptResult requires messages, each PromptMessage a role and content (schema.ts); "
        "“The image data MUST be base64-encoded and include a valid MIME type.” (server/prompts); "
        "the official suite's fixture defines the prompt.",
        "Embed the named resource in test_prompt_with_embedded_resource's messages."),
    "fixtures.prompts-get-with-image": (Level.MUST,
        "GetPromptResult requires messages, each PromptMessage a role and content (schema.ts); "
        "“The image data MUST be base64-encoded and include a valid MIME type.” (server/prompts); "
        "the official suite's fixture defines the prompt.",
        "Return an image content block in test_prompt_with_image's messages."),
    "fixtures.completion-complete": (Level.MUST,
        "CompleteResult's values are “An array of completion values. Must not exceed 100 items.” "
        "(schema.ts CompleteResult)",
        "Answer completion/complete for the fixture prompt's argument with completion.values."),
    "fixtures.json-schema-2020-12": (Level.MUST,
        "“Clients and servers MUST support JSON Schema 2020-12 for schemas without an explicit "
        "$schema field” (basic/index, JSON Schema Usage)",
        "Publish the tool's inputSchema exactly as authored: keep $schema, $defs, composition and "
        "conditional keywords."),
    "fixtures.mrtr-elicitation": (Level.MUST,
        "“Servers MUST include at least one of inputRequests or requestState in every "
        "InputRequiredResult response.” (basic/patterns/mrtr, Server Requirements); the retry "
        "carrying the answers completes (the official suite's fixture defines the inputs).",
        "Answer input_required with the elicitation under key user_name, then complete when the "
        "retry carries the answer."),
    "fixtures.mrtr-sampling": (Level.MUST,
        "“Servers MUST include at least one of inputRequests or requestState in every "
        "InputRequiredResult response.” (basic/patterns/mrtr, Server Requirements); the retry "
        "carrying the answers completes (the official suite's fixture defines the inputs).",
        "Answer input_required with a sampling request, then complete when the retry carries the "
        "answer."),
    "fixtures.mrtr-list-roots": (Level.MUST,
        "“Servers MUST include at least one of inputRequests or requestState in every "
        "InputRequiredResult response.” (basic/patterns/mrtr, Server Requirements); the retry "
        "carrying the answers completes (the official suite's fixture defines the inputs).",
        "Answer input_required with a roots/list request, then complete when the retry carries the "
        "answer."),
    "fixtures.mrtr-request-state": (Level.MUST,
        "“Servers MUST include at least one of inputRequests or requestState in every "
        "InputRequiredResult response.” (basic/patterns/mrtr, Server Requirements); the retry "
        "carrying the answers completes (the official suite's fixture defines the inputs).",
        "Return a requestState with the input request and accept it back on the retry."),
    "fixtures.mrtr-multiple-inputs": (Level.MUST,
        "“Servers MUST include at least one of inputRequests or requestState in every "
        "InputRequiredResult response.” (basic/patterns/mrtr, Server Requirements); the retry "
        "carrying the answers completes (the official suite's fixture defines the inputs).",
        "Ask for elicitation, sampling and roots in one input_required result and complete with "
        "all three answers."),
    "fixtures.mrtr-non-tool-request": (Level.MUST,
        "“Servers MUST include at least one of inputRequests or requestState in every "
        "InputRequiredResult response.” (basic/patterns/mrtr, Server Requirements); the retry "
        "carrying the answers completes (the official suite's fixture defines the inputs).",
        "Support input_required inside prompts/get as inside tools/call."),
    "fixtures.tools-call-sampling-2025": (Level.MUST,
        "“Clients that support sampling MUST declare the sampling capability during” "
        "initialization (2025-11-25 client/sampling); the server sends sampling/createMessage on "
        "the call's stream and uses the answer (the official suite's fixture).",
        "In a 2025 session send sampling/createMessage on the call's stream and use the client's "
        "answer."),
    "fixtures.tools-call-elicitation-2025": (Level.MUST,
        "“Servers MUST NOT use form mode elicitation to request sensitive information” (2025-11-25 "
        "client/elicitation); the server sends elicitation/create on the call's stream and uses "
        "the answer (the official suite's fixture).",
        "In a 2025 session send elicitation/create on the call's stream and use the client's "
        "answer."),
}


def _blocks(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in result.get("content") or [] if as_dict(b).get("type") == kind]


def _text(result: dict[str, Any]) -> str | None:
    ok = any(b.get("text") for b in _blocks(result, "text"))
    return None if ok else "no non-empty text block"


def _image(result: dict[str, Any]) -> str | None:
    ok = any(b.get("data") and b.get("mimeType") for b in _blocks(result, "image"))
    return None if ok else "no image block with data and mimeType"


def _audio(result: dict[str, Any]) -> str | None:
    ok = any(b.get("data") and b.get("mimeType") == "audio/wav" for b in _blocks(result, "audio"))
    return None if ok else "no audio block with data and mimeType audio/wav"


def _embedded(result: dict[str, Any]) -> str | None:
    for block in _blocks(result, "resource"):
        res = as_dict(block.get("resource"))
        if res.get("uri") and res.get("mimeType") and ("text" in res or "blob" in res):
            return None
    return "no embedded resource with uri, mimeType and text or blob"


def _mixed(result: dict[str, Any]) -> str | None:
    kinds = {as_dict(b).get("type") for b in result.get("content") or []}
    return None if {"text", "image", "resource"} <= kinds else f"content types {kinds}"


def _tool_error(result: dict[str, Any]) -> str | None:
    ok = result.get("isError") is True and _text(result) is None
    return None if ok else "not a tool error (isError: true with a text)"


def _contents(kind: str, needle: str | None = None) -> Judge:
    def judge(result: dict[str, Any]) -> str | None:
        first = as_dict((result.get("contents") or [{}])[0])
        if not first.get("uri") or kind not in first:
            return f"contents[0] lacks uri or {kind}"
        if needle and needle not in str(first.get(kind)):
            return f"contents[0].{kind} does not mention {needle}"
        return None
    return judge


def _messages(*, contains: tuple[str, ...] = (), kind: str | None = None) -> Judge:
    def judge(result: dict[str, Any]) -> str | None:
        messages = result.get("messages") or []
        if not messages or not all(as_dict(m).get("role") and as_dict(m).get("content")
                                   for m in messages):
            return "no messages with role and content"
        text = str(messages)
        missing = [c for c in contains if c not in text]
        if missing:
            return f"the messages do not mention {missing}"
        if kind and not any(as_dict(as_dict(m).get("content")).get("type") == kind
                            for m in messages):
            return f"no {kind} content"
        return None
    return judge


def _completion(result: dict[str, Any]) -> str | None:
    values = as_dict(result.get("completion")).get("values")
    return None if isinstance(values, list) else "completion.values is not an array"


def _schema_preserved(result: dict[str, Any]) -> str | None:
    tool = next((t for t in result.get("tools") or []
                 if as_dict(t).get("name") == "json_schema_2020_12_tool"), None)
    if tool is None:
        return "json_schema_2020_12_tool is not listed"
    schema = as_dict(tool.get("inputSchema"))
    for key in ("$schema", "$defs", "allOf", "if", "then", "else", "additionalProperties"):
        if schema.get(key) != TEMPLATE_SCHEMA[key]:
            return f"inputSchema {key} was not returned as authored"
    return None


#: (id suffix, method, params, judge, requirement, spec)
CALLS: list[tuple[str, str, dict[str, Any], Judge, str, str]] = [
    ("tools-call-simple-text", "tools/call", {"name": "test_simple_text"}, _text,
     "test_simple_text (called without arguments) returns a text block.", TOOLS),
    ("tools-call-image", "tools/call", {"name": "test_image_content", "arguments": {}}, _image,
     "test_image_content returns an image block with data and mimeType.", TOOLS),
    ("tools-call-audio", "tools/call", {"name": "test_audio_content", "arguments": {}}, _audio,
     "test_audio_content returns an audio block (audio/wav).", TOOLS),
    ("tools-call-embedded-resource", "tools/call", {"name": "test_embedded_resource",
                                                    "arguments": {}}, _embedded,
     "test_embedded_resource returns an embedded resource with uri, mimeType and content.",
     TOOLS),
    ("tools-call-mixed-content", "tools/call", {"name": "test_multiple_content_types",
                                                "arguments": {}}, _mixed,
     "test_multiple_content_types returns text, image and resource blocks.", TOOLS),
    ("tools-call-error", "tools/call", {"name": "test_error_handling", "arguments": {}},
     _tool_error, "test_error_handling fails as a tool (isError: true), not a protocol error.",
     spec("server/tools", "error-handling")),
    ("resources-read-text", "resources/read", {"uri": "test://static-text"}, _contents("text"),
     "test://static-text reads as text with uri and mimeType.",
     spec("server/resources", "reading-resources")),
    ("resources-read-binary", "resources/read", {"uri": "test://static-binary"},
     _contents("blob"), "test://static-binary reads as a blob.",
     spec("server/resources", "reading-resources")),
    ("resources-templates-read", "resources/read", {"uri": "test://template/123/data"},
     _contents("text", "123"), "test://template/123/data reads through its template.",
     spec("server/resources", "resource-templates")),
    ("prompts-get-simple", "prompts/get", {"name": "test_simple_prompt"}, _messages(),
     "test_simple_prompt renders messages with role and content.",
     spec("server/prompts", "getting-a-prompt")),
    ("prompts-get-with-args", "prompts/get", {"name": "test_prompt_with_arguments",
                                              "arguments": {"arg1": "testValue1",
                                                            "arg2": "testValue2"}},
     _messages(contains=("testValue1", "testValue2")),
     "test_prompt_with_arguments uses both arguments.", spec("server/prompts",
                                                             "getting-a-prompt")),
    ("prompts-get-embedded-resource", "prompts/get", {
        "name": "test_prompt_with_embedded_resource",
        "arguments": {"resourceUri": "test://example-resource"}}, _messages(kind="resource"),
     "test_prompt_with_embedded_resource embeds a resource.", spec("server/prompts",
                                                                   "embedded-resources")),
    ("prompts-get-with-image", "prompts/get", {"name": "test_prompt_with_image"},
     _messages(kind="image"), "test_prompt_with_image carries an image.",
     spec("server/prompts", "image-content")),
    ("completion-complete", "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "test"}}, _completion,
     "completion/complete for test_prompt_with_arguments returns completion.values.",
     spec("server/utilities/completion")),
    ("json-schema-2020-12", "tools/list", {}, _schema_preserved,
     "json_schema_2020_12_tool's inputSchema is listed exactly as authored (2020-12 keywords, "
     "composition and conditionals preserved).", spec("basic", "json-schema-usage")),
]


async def call(ctx: AuditContext, method: str, params: dict[str, Any],
               **kw: Any) -> RecordedExchange:
    """``method`` in this era: a modern request, or a request in the shared session."""
    if ctx.session.modern:
        return await ctx.request(method, params, **kw)
    session = await shared_session(ctx)
    return await session.request(ctx, method, params, **{
        k: v for k, v in kw.items() if k in ("answer", "label", "timeout")})


def _simple(method: str, params: dict[str, Any], judge: Judge) -> CheckFn:
    async def run(ctx: AuditContext) -> None:
        exchange = await call(ctx, method, params)
        result = exchange.result
        if result is None:
            ctx.fail(f"{method} {params.get('name') or params.get('uri') or ''}: "
                     f"{exchange.describe()}")
        problem = judge(result)
        ctx.expect(problem is None, f"{problem} ({exchange.describe()})")
    return run


for _id, _method, _params, _judge, _requirement, _spec in CALLS:
    _level, _rule, _fix = RULES[f"fixtures.{_id}"]
    check(f"fixtures.{_id}", title=_requirement.split(" (")[0].rstrip("."),
          requirement=f"{_requirement} {_rule}", level=_level, spec=_spec, fix=_fix,
          **COMMON)(_simple(_method, _params, _judge))


@check("fixtures.tools-call-with-progress", title="progress notifications precede the result",
       requirement="“The progress value MUST increase with each notification, even if the total is "
                   "unknown.” (basic/patterns/progress)",
       level=Level.MUST, spec=spec("basic/patterns/progress", "progress-flow"), **COMMON,
       fix="Send notifications/progress for the request's progressToken, with increasing progress, "
           "before the result.")
async def with_progress(ctx: AuditContext) -> None:
    params: dict[str, Any] = {"name": "test_tool_with_progress", "arguments": {}}
    if ctx.session.modern:
        exchange = await ctx.request("tools/call", params, meta=wire.meta(
            extra={"progressToken": "progress-test-1"}))
    else:
        params["_meta"] = {"progressToken": "progress-test-1"}
        exchange = await call(ctx, "tools/call", params)
    ticks = [as_dict(n.get("params")) for n in exchange.notifications
             if n.get("method") == "notifications/progress"
             and as_dict(n.get("params")).get("progressToken") == "progress-test-1"]
    ctx.expect(len(ticks) >= 3, f"{len(ticks)} progress notifications, expected >= 3")
    values = [t.get("progress", 0) for t in ticks]
    ctx.expect(values == sorted(values), f"progress went backwards: {values}")
    ctx.expect(exchange.result is not None, f"no result after the progress ({exchange.describe()})")


@check("fixtures.missing-capability", title="an undeclared capability is -32021",
       requirement="“If processing a request requires a capability the client did not include in "
                   "io.modelcontextprotocol/clientCapabilities, the server MUST return a "
                   "MissingRequiredClientCapabilityError (-32021) whose data.requiredCapabilities "
                   "lists the missing capabilities. On HTTP, the response status MUST be 400 Bad "
                   "Request.” (basic/index, _meta)",
       level=Level.MUST, spec=spec("basic", "meta"), eras=MODERN, **COMMON,
       fix="Answer -32021 with data.requiredCapabilities.sampling and HTTP 400 when the request "
           "did not declare sampling.")
async def missing_capability(ctx: AuditContext) -> None:
    exchange = await ctx.request("tools/call", {"name": "test_missing_capability",
                                                "arguments": {}}, meta=wire.meta({}))
    expect_error(ctx, exchange, -32021, 400)
    required = as_dict(as_dict((exchange.error or {}).get("data")).get("requiredCapabilities"))
    ctx.expect(isinstance(required.get("sampling"), dict),
               f"data.requiredCapabilities is {required!r}, expected a sampling object")


@check("fixtures.no-requests-on-stream", title="no server requests on a response stream",
       requirement="“Servers MUST send server-to-client requests (such as roots/list, "
                   "sampling/createMessage, or elicitation/create) using the MRTR pattern.” "
                   "(basic/patterns/mrtr)",
       level=Level.MUST, spec=spec("basic/transports/streamable-http", "receiving-messages"),
       eras=MODERN, **COMMON,
       fix="Ask for input with an input_required result, never with a JSON-RPC request on the "
           "response stream.")
async def no_requests_on_stream(ctx: AuditContext) -> None:
    exchange = await ctx.request("tools/call", {"name": "test_streaming_elicitation",
                                                "arguments": {}},
                                 meta=wire.meta({"elicitation": {}}))
    requests = [m for m in exchange.messages if "method" in m and "id" in m]
    ctx.expect(not requests, f"the stream carried a request: {requests[:1]}")
    ctx.expect(exchange.result is not None, exchange.describe())


@check("fixtures.no-log-without-level", title="no log notifications without logLevel",
       requirement="“The server MUST NOT emit notifications/message for a request that does not "
                   "include this field.” (server/utilities/logging, Per-request log level)",
       level=Level.MUST, spec=spec("server/utilities/logging", "per-request-log-level"),
       eras=MODERN, **COMMON,
       fix="Emit notifications/message only for requests whose _meta carries "
           "io.modelcontextprotocol/logLevel.")
async def no_log_without_level(ctx: AuditContext) -> None:
    exchange = await ctx.request("tools/call", {"name": "test_logging_tool", "arguments": {}})
    logs = [m for m in exchange.notifications if m.get("method") == "notifications/message"]
    ctx.expect(not logs, f"{len(logs)} log notification(s) without a logLevel")
    with_level = await ctx.request("tools/call", {"name": "test_logging_tool", "arguments": {}},
                                   meta=wire.meta(extra={wire.LOG_LEVEL: "debug"}),
                                   label="test_logging_tool with logLevel debug")
    ctx.expect(any(m.get("method") == "notifications/message"
                   for m in with_level.notifications),
               "no log notification even with logLevel debug")


async def _listen_for(ctx: AuditContext, notifications: dict[str, Any], trigger: str,
                      window: float) -> list[dict[str, Any]]:
    async with ctx.listen(notifications) as stream:
        first = await stream.next(5)
        if first is None or first.get("method") != "notifications/subscriptions/acknowledged":
            ctx.fail(f"no acknowledgement ({stream.exchange.describe()})")
        await ctx.request("tools/call", {"name": trigger, "arguments": {}}, label=trigger)
        seen = []
        deadline = asyncio.get_running_loop().time() + window
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            message = await stream.next(left)
            if message is None:
                break
            seen.append(message)
        return seen


@check("fixtures.listen-list-changed", title="list changes reach the matching listeners only",
       requirement="“The server MUST NOT send notification types the client has not explicitly "
                   "requested.” (basic/patterns/subscriptions)",
       level=Level.MUST, spec=spec("basic/patterns/subscriptions", "receiving-notifications"),
       eras=MODERN, **COMMON,
       fix="Deliver list_changed notifications only to listeners whose filter asked for them, "
           "tagged with their subscriptionId.")
async def listen_list_changed(ctx: AuditContext) -> None:
    seen = await _listen_for(ctx, {"toolsListChanged": True}, "test_trigger_tool_change", 1.5)
    changed = [m for m in seen if m.get("method") == "notifications/tools/list_changed"]
    ctx.expect(changed, "no notifications/tools/list_changed after the trigger")
    tag = as_dict(as_dict(changed[0].get("params")).get("_meta")).get(wire.SUBSCRIPTION_ID)
    ctx.expect(tag is not None, "the notification carries no subscriptionId")
    other = await _listen_for(ctx, {"promptsListChanged": True}, "test_trigger_tool_change", 1.0)
    ctx.expect(not any(m.get("method") == "notifications/tools/list_changed" for m in other),
               "a promptsListChanged listener received notifications/tools/list_changed")


@check("fixtures.sse-multiple-streams", title="concurrent requests are all served",
       requirement="“Servers SHOULD be prepared to handle requests associated with multiple tasks, "
                   "threads, or conversations.” (basic/index, Statelessness)",
       level=Level.SHOULD, spec=spec("basic/transports/streamable-http", "sending-messages"),
       needs=["http"], pack="fixtures", tags=["fixtures"],
       fix="Serve concurrent requests independently; do not refuse a request because another is in "
           "flight.")
async def multiple_streams(ctx: AuditContext) -> None:
    exchanges = await asyncio.gather(*(call(ctx, "tools/list", {}) for _ in range(3)))
    bad = [e.describe() for e in exchanges if e.status is None or not 200 <= e.status < 300]
    ctx.expect(not bad, f"not all concurrent requests were served: {bad}")


# -- MRTR (2026-07-28) -------------------------------------------------------------------
async def _round(ctx: AuditContext, name: str, *, method: str = "tools/call",
                 capabilities: dict[str, Any] | None = None, **extra: Any) -> RecordedExchange:
    params: dict[str, Any] = {"name": name, "arguments": {}, **extra}
    return await ctx.request(method, params, meta=wire.meta(capabilities),
                             label=f"{name} {'retry' if extra else 'round 1'}")


def _incomplete(ctx: AuditContext, exchange: RecordedExchange, what: str) -> dict[str, Any]:
    result = exchange.result or {}
    ctx.expect(result.get("resultType") == "input_required" and result.get("inputRequests"),
               f"{what}: expected input_required with inputRequests ({exchange.describe()})")
    return result


def _mrtr_flow(tool: str, method: str = "tools/call",
               answer: Callable[[str, dict[str, Any]], Any] | None = None) -> CheckFn:
    async def run(ctx: AuditContext) -> None:
        first = await _round(ctx, tool, method=method)
        result = _incomplete(ctx, first, tool)
        replies = answers(result)
        if answer is not None:
            replies = {k: answer(k, as_dict(v)) for k, v in as_dict(
                result.get("inputRequests")).items()}
        extra: dict[str, Any] = {"inputResponses": replies}
        if "requestState" in result:
            extra["requestState"] = result["requestState"]
        second = await _round(ctx, tool, method=method, **extra)
        done = second.result or {}
        ctx.expect(done.get("resultType") == "complete",
                   f"{tool}: the retry did not complete ({second.describe()})")
        key = "messages" if method == "prompts/get" else "content"
        ctx.expect(done.get(key), f"{tool}: the complete result has no {key}")
    return run


def _alice(key: str, request: dict[str, Any]) -> Any:
    if request.get("method") == "elicitation/create":
        return {"action": "accept", "content": {"name": "Alice"}}
    return default_answer(request)


for _name, _tool, _method, _answer, _what in [
    ("elicitation", "test_input_required_result_elicitation", "tools/call", _alice,
     "an elicitation under the key user_name"),
    ("sampling", "test_input_required_result_sampling", "tools/call", None,
     "a sampling request"),
    ("list-roots", "test_input_required_result_list_roots", "tools/call", None,
     "a roots/list request"),
    ("request-state", "test_input_required_result_request_state", "tools/call", None,
     "an elicitation and a requestState"),
    ("multiple-inputs", "test_input_required_result_multiple_inputs", "tools/call", None,
     "elicitation, sampling and roots at once"),
    ("non-tool-request", "test_input_required_result_prompt", "prompts/get", None,
     "an elicitation inside prompts/get"),
]:
    _level, _rule, _fix = RULES[f"fixtures.mrtr-{_name}"]
    check(f"fixtures.mrtr-{_name}", title=f"MRTR: {_what}",
          requirement=f"{_tool} answers input_required with {_what}; the retry with the "
                      f"answers (and the requestState, if any) completes. {_rule}",
          level=_level, spec=MRTR, eras=MODERN, tags=["fixtures", "mrtr"], fix=_fix,
          pack="fixtures")(_mrtr_flow(_tool, _method, _answer))


@check("fixtures.mrtr-multi-round", title="MRTR: several rounds, a new requestState each",
       requirement="“Servers MUST include at least one of inputRequests or requestState in every "
                   "InputRequiredResult response.” (basic/patterns/mrtr, Server Requirements); the "
                   "retry carrying the answers completes (the official suite's fixture defines the "
                   "inputs).",
       level=Level.MUST, spec=MRTR, eras=MODERN, **COMMON,
       fix="Issue a fresh requestState on each round of a multi-round call.")
async def multi_round(ctx: AuditContext) -> None:
    tool = "test_input_required_result_multi_round"
    r1 = _incomplete(ctx, await _round(ctx, tool), "round 1")
    second = await _round(ctx, tool, inputResponses=answers(r1),
                          requestState=r1.get("requestState"))
    r2 = _incomplete(ctx, second, "round 2")
    ctx.expect(r2.get("requestState") and r2.get("requestState") != r1.get("requestState"),
               "round 2 did not change the requestState")
    third = await _round(ctx, tool, inputResponses=answers(r2), requestState=r2["requestState"])
    ctx.expect(as_dict(third.result).get("resultType") == "complete",
               f"round 3 did not complete ({third.describe()})")


@check("fixtures.mrtr-result-type", title="MRTR: input_required is spelled out",
       requirement="“The result MUST include a resultType field to indicate the type of the "
                   "result.” (basic/index, Result Responses)",
       level=Level.MUST, spec=spec("basic/patterns/mrtr", "inputrequiredresult"), eras=MODERN,
       **COMMON,
       fix="Spell resultType: 'input_required' on the first round.")
async def mrtr_result_type(ctx: AuditContext) -> None:
    exchange = await _round(ctx, "test_input_required_result_elicitation")
    ctx.expect(b'"resultType":"input_required"' in exchange.body.replace(b" ", b""),
               f"no literal resultType input_required ({exchange.describe()})")


@check("fixtures.mrtr-tampered-state", title="MRTR: a tampered requestState is an error",
       requirement="“If a client request contains a requestState field, servers MUST treat "
                   "requestState as an attacker-controlled input.” … “and MUST reject state that "
                   "fails verification.” (basic/patterns/mrtr)",
       level=Level.MUST, spec=spec("basic/patterns/mrtr", "security-considerations"),
       eras=MODERN, **COMMON,
       fix="Integrity-protect requestState (MAC or AEAD) and answer a state that fails "
           "verification with a JSON-RPC error.")
async def mrtr_tampered(ctx: AuditContext) -> None:
    tool = "test_input_required_result_tampered_state"
    first = _incomplete(ctx, await _round(ctx, tool), tool)
    state = first.get("requestState")
    ctx.expect(isinstance(state, str), "round 1 carries no requestState")
    exchange = await _round(ctx, tool, inputResponses=answers(first),
                            requestState=tamper(str(state))[1])
    ctx.expect(exchange.error is not None, f"the tampered state was accepted "
               f"({exchange.describe()})")


@check("fixtures.mrtr-capability-check", title="MRTR: asks only for declared capabilities",
       requirement="“Servers MUST NOT send an inputRequests that the client has not declared "
                   "support for in its capabilities.” (basic/patterns/mrtr)",
       level=Level.MUST, spec=MRTR, eras=MODERN, **COMMON,
       fix="Ask only for input types whose client capability the request declared.")
async def mrtr_capabilities(ctx: AuditContext) -> None:
    exchange = await _round(ctx, "test_input_required_result_capabilities",
                            capabilities={"sampling": {}})
    result = _incomplete(ctx, exchange, "a sampling-only client")
    methods = {as_dict(r).get("method") for r in as_dict(result.get("inputRequests")).values()}
    ctx.expect("elicitation/create" not in methods,
               "asked for elicitation although only sampling was declared")


@check("fixtures.mrtr-missing-response", title="MRTR: a missing answer is asked again",
       requirement="“the server SHOULD respond with a new InputRequiredResult requesting the "
                   "missing information again, rather than returning an error.” "
                   "(basic/patterns/mrtr, Error Handling)",
       level=Level.SHOULD, spec=spec("basic/patterns/mrtr", "error-handling"), eras=MODERN,
       **COMMON,
       fix="When a retry lacks an answer, return input_required asking for it again.")
async def mrtr_missing(ctx: AuditContext) -> None:
    exchange = await _round(ctx, "test_input_required_result_elicitation",
                            inputResponses={"wrong_key": {"action": "accept",
                                                          "content": {"name": "x"}}})
    result = _incomplete(ctx, exchange, "a retry with the wrong key")
    ctx.expect("user_name" in as_dict(result.get("inputRequests")),
               "user_name was not asked for again")


@check("fixtures.mrtr-ignore-extra", title="MRTR: unknown answer keys are ignored",
       requirement="“If additional, unexpected parameters are provided in the InputResponses "
                   "object, the server SHOULD ignore any information it does not recognize or "
                   "need.” (basic/patterns/mrtr, Error Handling)",
       level=Level.SHOULD, spec=spec("basic/patterns/mrtr", "error-handling"), eras=MODERN,
       **COMMON,
       fix="Ignore inputResponses keys you did not ask for.")
async def mrtr_extra(ctx: AuditContext) -> None:
    exchange = await _round(ctx, "test_input_required_result_elicitation", inputResponses={
        "user_name": {"action": "accept", "content": {"name": "Alice"}},
        "unknown_extra_key": {"action": "accept"}, "another_unexpected": {"x": 1}})
    ctx.expect(as_dict(exchange.result).get("resultType") == "complete",
               f"did not complete ({exchange.describe()})")


@check("fixtures.mrtr-validate-input", title="MRTR: malformed answers do not complete",
       requirement="“Servers SHOULD validate that the data provided by the client is a valid "
                   "InputResponses object and that the information inside can be correctly "
                   "parsed.” (basic/patterns/mrtr, Error Handling)",
       level=Level.SHOULD, spec=spec("basic/patterns/mrtr", "error-handling"), eras=MODERN,
       **COMMON,
       fix="Validate each answer against what you asked for; answer malformed ones with an error "
           "or a new input_required.")
async def mrtr_validate(ctx: AuditContext) -> None:
    for value in ({"user_name": 12345}, None):
        exchange = await _round(ctx, "test_input_required_result_elicitation",
                                inputResponses=value)
        ctx.expect(as_dict(exchange.result).get("resultType") != "complete",
                   f"inputResponses {value!r} completed the call")
    ctx.expect(exchange.error is not None, "inputResponses null is not a JSON-RPC error")


# -- the 2025 wire ---------------------------------------------------------------------
@check("fixtures.logging-set-level", title="logging/setLevel answers {}",
       requirement="logging/setLevel is answered with an EmptyResult (2025-11-25 schema.ts "
                   "SetLevelRequest); “All messages between MCP clients and servers MUST follow "
                   "the JSON-RPC 2.0 specification.” (basic/index)",
       level=Level.MUST, spec=spec("server/utilities/logging", "setting-log-level", wire.LEGACY),
       eras=LEGACY, **COMMON,
       fix="Answer logging/setLevel with {}.")
async def set_level(ctx: AuditContext) -> None:
    exchange = await call(ctx, "logging/setLevel", {"level": "info"})
    ctx.expect(exchange.result == {}, f"expected {{}}, got {exchange.describe()}")


@check("fixtures.tools-call-with-logging", title="session log level drives notifications",
       requirement="“Servers that emit log message notifications MUST declare the logging "
                   "capability” (2025-11-25 server/utilities/logging); after setLevel the "
                   "session's log messages at or above the level are sent (the official suite's "
                   "fixture sends three).",
       level=Level.MUST, spec=spec("server/utilities/logging", "log-message-notifications",
                                   wire.LEGACY), eras=LEGACY, **COMMON,
       fix="Send the fixture's notifications/message on the call's stream after logging/setLevel "
           "debug.")
async def with_logging(ctx: AuditContext) -> None:
    session = await LegacySession.open(ctx) if ctx.http else await shared_session(ctx)
    await session.request(ctx, "logging/setLevel", {"level": "debug"})
    exchange = await session.request(ctx, "tools/call", {"name": "test_tool_with_logging",
                                                         "arguments": {}})
    logs = [m for m in exchange.notifications if m.get("method") == "notifications/message"]
    ctx.expect(len(logs) >= 3, f"{len(logs)} log notifications, expected >= 3")


def _server_request(tool: str, arguments: dict[str, Any], method: str,
                    reply: dict[str, Any]) -> CheckFn:
    async def run(ctx: AuditContext) -> None:
        asked: list[dict[str, Any]] = []

        def answer(request: dict[str, Any]) -> dict[str, Any] | None:
            asked.append(request)
            return reply if request.get("method") == method else default_answer(request)

        session = await shared_session(ctx)
        exchange = await session.request(ctx, "tools/call", {"name": tool,
                                                             "arguments": arguments},
                                         answer=answer, timeout=15)
        ctx.expect(any(r.get("method") == method for r in asked), f"no {method} was sent")
        ctx.expect(as_dict(exchange.result).get("content"),
                   f"no content after {method} ({exchange.describe()})")
    return run


for _name, _tool, _arguments, _method, _reply in [
    ("sampling", "test_sampling", {"prompt": "Test prompt for sampling"},
     "sampling/createMessage", {"role": "assistant", "model": "test-model",
                                "stopReason": "endTurn", "content": {
                                    "type": "text",
                                    "text": "This is a test response from the client"}}),
    ("elicitation", "test_elicitation", {"message": "Please provide your information"},
     "elicitation/create", {"action": "accept", "content": {"username": "testuser",
                                                           "email": "test@example.com"}}),
]:
    _level, _rule, _fix = RULES[f"fixtures.tools-call-{_name}-2025"]
    check(f"fixtures.tools-call-{_name}-2025", title=f"{_tool} sends {_method}",
          requirement=f"In a 2025-11-25 session {_tool} sends {_method} on the call's stream "
                      f"and uses the client's answer. {_rule}",
          level=_level, spec=spec(f"client/{_name}", "", wire.LEGACY), eras=LEGACY,
          fix=_fix, **COMMON)(_server_request(_tool, _arguments, _method, _reply))


@check("fixtures.resources-subscribe", title="resources/subscribe and unsubscribe answer {}",
       requirement="resources/subscribe and resources/unsubscribe are answered with an EmptyResult "
                   "(2025-11-25 schema.ts); “All messages between MCP clients and servers MUST "
                   "follow the JSON-RPC 2.0 specification.” (basic/index)",
       level=Level.MUST, spec=spec("server/resources", "subscriptions", wire.LEGACY),
       eras=LEGACY, **COMMON,
       fix="Answer resources/subscribe and resources/unsubscribe of the fixture resource with {}.")
async def subscribe(ctx: AuditContext) -> None:
    for method in ("resources/subscribe", "resources/unsubscribe"):
        exchange = await call(ctx, method, {"uri": "test://watched-resource"})
        ctx.expect(exchange.result is not None, f"{method}: {exchange.describe()}")


__all__ = ["CALLS", "call"]
