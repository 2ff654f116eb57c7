"""Tool definitions and calls (server/tools.mdx, basic/index.mdx "JSON Schema Usage")."""

from __future__ import annotations

import re
from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive, expect_error, expect_result
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.schema_values import example_arguments, invalid_variants
from mcpcore.conformance.validate import check_schema

MODERN = [wire.MODERN]
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
#: RFC 9110 token characters (a header field name).
TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
MAX_SAFE = 2**53 - 1


async def _tools(ctx: AuditContext) -> list[dict[str, Any]]:
    if not await ctx.has_capability("tools"):
        ctx.skip("the server declares no tools capability")
    tools = await ctx.tools()
    if not tools:
        ctx.skip("tools/list is empty")
    return tools


@check("tools.definitions", title="tool definitions are well formed",
       requirement="“inputSchema … MUST be a valid JSON Schema object (not null)” (server/tools, "
                   "Tool); schema.ts types the root of inputSchema as type 'object'.",
       level=Level.MUST, spec=spec("server/tools", "tool"), eras=MODERN, tags=["tools"],
       fix="Give every tool a name and an inputSchema object whose root has type 'object'.")
async def definitions(ctx: AuditContext) -> None:
    for tool in await _tools(ctx):
        name = tool.get("name")
        ctx.expect(isinstance(name, str) and name, f"a tool without a name: {tool!r:.200}")
        schema = tool.get("inputSchema")
        ctx.expect(isinstance(schema, dict) and schema.get("type") == "object",
                   f"{name}: inputSchema root is not type 'object': {schema!r:.200}")


@check("tools.names", title="tool names are short, unique and use the safe alphabet",
       requirement="“Tool names SHOULD be between 1 and 128 characters in length (inclusive).” … "
                   "“Tool names SHOULD be unique within a server.” (server/tools, Tool Names)",
       level=Level.SHOULD, spec=spec("server/tools", "tool-names"), eras=MODERN,
       tags=["tools"],
       fix="Use 1-128 characters of A-Z a-z 0-9 _ - . for tool names and keep them unique.")
async def names(ctx: AuditContext) -> None:
    seen: set[str] = set()
    for tool in await _tools(ctx):
        name = str(tool.get("name"))
        ctx.expect(NAME.match(name), f"tool name {name!r} breaks the naming rules")
        ctx.expect(name not in seen, f"tool name {name!r} appears twice")
        seen.add(name)


@check("tools.input-schema", title="input schemas are valid JSON Schema",
       requirement="“Schemas MUST be valid according to their declared or default dialect” and "
                   "“Clients and servers MUST support JSON Schema 2020-12 for schemas without an "
                   "explicit $schema field” (basic/index, JSON Schema Usage)",
       level=Level.MUST, spec=spec("basic", "json-schema-usage"), eras=MODERN,
       tags=["tools", "schema"],
       fix="Validate inputSchema and outputSchema with a JSON Schema 2020-12 validator (or their "
           "declared dialect) before publishing them.")
async def input_schema(ctx: AuditContext) -> None:
    checked = 0
    for tool in await _tools(ctx):
        for key in ("inputSchema", "outputSchema"):
            if key in tool:
                checked += 1
                problem = check_schema(tool[key])
                ctx.expect(problem is None, f"{tool.get('name')}: {key} is not a valid JSON "
                           f"Schema: {problem}")
    if not checked:
        ctx.skip("no tool carries an inputSchema or outputSchema (tools.definitions judges "
                 "that)")


def _header_problems(schema: Any) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()

    def walk(node: Any, path: str, reachable: bool) -> None:
        if isinstance(node, dict):
            if "x-mcp-header" in node:
                name = node["x-mcp-header"]
                kind = node.get("type")
                if not reachable:
                    problems.append(f"{path}: x-mcp-header on a property that is not "
                                    "statically reachable through 'properties'")
                if not isinstance(name, str) or not TOKEN.match(name):
                    problems.append(f"{path}: x-mcp-header {name!r} is not an HTTP token")
                elif name.lower() in seen:
                    problems.append(f"{path}: x-mcp-header {name!r} is used twice")
                else:
                    seen.add(name.lower())
                if kind not in ("string", "integer", "boolean"):
                    problems.append(f"{path}: x-mcp-header on type {kind!r} (only string, "
                                    "integer and boolean)")
                for bound in ("minimum", "maximum"):
                    if kind == "integer" and isinstance(node.get(bound), int | float) and abs(
                            node[bound]) > MAX_SAFE:
                        problems.append(f"{path}: integer {bound} outside ±(2^53-1)")
            for key, child in node.items():
                if key == "properties" and isinstance(child, dict):
                    for prop, sub in child.items():
                        walk(sub, f"{path}/properties/{prop}", reachable)
                elif key != "x-mcp-header":
                    walk(child, f"{path}/{key}", False)
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, f"{path}/{index}", False)

    walk(schema, "", True)
    return problems


@check("tools.x-mcp-header", title="x-mcp-header annotations follow the rules",
       requirement="x-mcp-header values “MUST NOT be empty”, “MUST match HTTP field-name token "
                   "syntax”, “MUST be case-insensitively unique among all x-mcp-header values”, "
                   "“MUST only be applied to parameters with primitive types (integer, string, "
                   "boolean)” and “MUST only be applied to properties that are statically "
                   "reachable” (server/tools, x-mcp-header)",
       level=Level.MUST, spec=spec("server/tools", "x-mcp-header"), eras=MODERN,
       tags=["tools", "headers"],
       fix="Use x-mcp-header only on top-level string, integer or boolean properties, with unique, "
           "non-empty HTTP token names.")
async def x_mcp_header(ctx: AuditContext) -> None:
    annotated = 0
    for tool in await _tools(ctx):
        problems = _header_problems(tool.get("inputSchema"))
        annotated += bool(wire.header_params(tool.get("inputSchema"))) or bool(problems)
        ctx.expect(not problems, f"{tool.get('name')}: {problems[0] if problems else ''}")
    if not annotated:
        ctx.skip("no tool uses x-mcp-header")


@check("tools.annotations", title="tool annotations are typed hints",
       requirement="“All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 "
                   "specification” and the schema: ToolAnnotations types title as a string and "
                   "readOnlyHint, destructiveHint, idempotentHint and openWorldHint as booleans "
                   "(schema.ts ToolAnnotations).",
       level=Level.MUST, spec=spec("server/tools", "tool"), eras=MODERN, tags=["tools"],
       fix="Give annotation hints boolean values (true/false, not strings) and title a string.")
async def annotations_typed(ctx: AuditContext) -> None:
    annotated = 0
    for tool in await _tools(ctx):
        notes = tool.get("annotations")
        if notes is None:
            continue
        annotated += 1
        ctx.expect(isinstance(notes, dict), f"{tool.get('name')}: annotations is not an object")
        for key in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
            ctx.expect(key not in notes or isinstance(notes[key], bool),
                       f"{tool.get('name')}: {key} is {notes.get(key)!r}, not a boolean")
        ctx.expect("title" not in notes or isinstance(notes["title"], str),
                   f"{tool.get('name')}: annotations.title is not a string")
    if not annotated:
        ctx.skip("no tool carries annotations")


@check("tools.deterministic-order", title="tools/list is stable",
       requirement="“Servers SHOULD return tools in a deterministic order (i.e., the same ordering "
                   "across” requests (server/tools, Listing Tools)",
       level=Level.SHOULD, spec=spec("server/tools", "listing-tools"), eras=MODERN,
       tags=["tools"],
       fix="Sort tools (by name or registration order) so tools/list returns them in the same "
           "order every time.")
async def deterministic(ctx: AuditContext) -> None:
    await _tools(ctx)
    first = await ctx.request("tools/list", label="tools/list again")
    second = await ctx.request("tools/list", label="tools/list a third time")
    if first.result is None or second.result is None:
        ctx.skip(f"tools/list did not answer twice with a result ({first.describe()}; "
                 f"{second.describe()}): no two orders to compare")
    orders = [[t.get("name") for t in (e.result or {}).get("tools") or []]
              for e in (first, second)]
    ctx.expect(orders[0] == orders[1], f"two listings differ: {orders[0]} vs {orders[1]}")


@check("tools.unknown", title="calling an unknown tool is -32602",
       requirement="“However, any errors in finding the tool, an error indicating that the "
                   "server does not support tool calls, or any other exceptional conditions, "
                   "should be reported as an MCP error response.” (schema.ts, "
                   "CallToolResult.isError) server/tools, Error Handling, lists \"Unknown "
                   "tool\" among the protocol errors, answered -32602.",
       level=Level.SHOULD, spec=spec("server/tools", "error-handling"), eras=MODERN,
       tags=["tools", "errors"],
       fix="Answer tools/call of a name you do not serve with JSON-RPC error -32602 "
           "(\"Unknown tool: <name>\"), not a tool result with isError.")
async def unknown_tool(ctx: AuditContext) -> None:
    if not await ctx.has_capability("tools"):
        ctx.skip("the server declares no tools capability")
    exchange = await ctx.request("tools/call", {"name": "conformance_no_such_tool",
                                                "arguments": {}}, label="unknown tool")
    expect_error(ctx, exchange, -32602)


@check("tools.invalid-arguments", title="invalid arguments get a clean error",
       requirement="“Servers MUST: Validate all tool inputs” (server/tools, Security "
                   "Considerations); invalid input is a tool execution error (isError) or a "
                   "protocol error (-32602), never a crash.",
       level=Level.MUST, spec=spec("server/tools", "error-handling"), eras=MODERN,
       tags=["tools", "errors", "robustness"],
       fix="Validate arguments against inputSchema before running the tool; answer a mismatch with "
           "a tool error (isError: true) or -32602.")
async def invalid_arguments(ctx: AuditContext) -> None:
    tools = await ctx.read_only_tools()
    if not tools:
        ctx.skip("no tool is annotated readOnlyHint: true (only those are called)")
    tried = 0
    for tool in tools[: ctx.options.max_items]:
        schema = tool.get("inputSchema")
        props = wire.header_params(schema)
        for what, arguments in invalid_variants(schema):
            tried += 1
            exchange = await ctx.request("tools/call", {"name": tool["name"],
                                                        "arguments": arguments},
                                         header_props=props,
                                         label=f"{tool['name']}: {what}")
            _clean(ctx, exchange, f"{tool['name']} with {what}")
        exchange = await ctx.request("tools/call", {"name": tool["name"],
                                                    "arguments": "not-an-object"},
                                     label=f"{tool['name']}: arguments is a string")
        expect_error(ctx, exchange, -32602, what=f"{tool['name']} with string arguments")
        tried += 1
    ctx.expect(tried, "nothing to try")


def _clean(ctx: AuditContext, exchange: Any, what: str) -> None:
    expect_alive(ctx, exchange, what)
    if exchange.error is not None:
        ctx.expect(exchange.code == -32602 or exchange.code == -32020,
                   f"{what}: error {exchange.code} (expected a tool error or -32602)")
        return
    result = as_dict(exchange.result)
    if result.get("resultType") == "input_required":
        return
    ctx.expect(result.get("isError") is True,
               f"{what}: the call succeeded with arguments that break the schema "
               f"({exchange.describe()})")


@check("tools.read-only-call", title="read-only tools answer valid arguments",
       requirement="“Servers MUST provide structured results that conform to this schema.” "
                   "(server/tools, Output Schema) and CallToolResult's content is “A list of "
                   "content objects that represent the unstructured result of the tool call.” "
                   "(schema.ts, a required field)",
       level=Level.MUST, spec=spec("server/tools", "calling-tools"), eras=MODERN,
       tags=["tools"],
       fix="Return a content array from every tool call, and structuredContent that validates "
           "against outputSchema when you declare one.")
async def read_only_call(ctx: AuditContext) -> None:
    from jsonschema import Draft202012Validator

    tried = judged = 0
    for tool in (await ctx.read_only_tools())[: ctx.options.max_items]:
        schema = tool.get("inputSchema")
        arguments = example_arguments(schema)
        if arguments is None:
            continue
        tried += 1
        exchange = await ctx.request("tools/call", {"name": tool["name"], "arguments": arguments},
                                     header_props=wire.header_params(schema),
                                     label=f"{tool['name']} with {arguments}")
        data = as_dict(as_dict(exchange.error).get("data"))
        if exchange.code == -32021 and isinstance(data.get("requiredCapabilities"), dict):
            continue  # it needs a capability we did not declare (a task-only tool): fine
        result = expect_result(ctx, exchange, f"{tool['name']} with valid arguments")
        if result.get("resultType") == "input_required":
            continue
        judged += 1
        ctx.expect(isinstance(result.get("content"), list),
                   f"{tool['name']}: result has no content array")
        output = tool.get("outputSchema")
        if isinstance(output, dict) and not result.get("isError"):
            ctx.expect("structuredContent" in result,
                       f"{tool['name']}: declares outputSchema but returned no structuredContent")
            errors = list(Draft202012Validator(output).iter_errors(result["structuredContent"]))
            ctx.expect(not errors, f"{tool['name']}: structuredContent breaks outputSchema: "
                       f"{errors[0].message if errors else ''}")
    if not tried:
        ctx.skip("no read-only tool callable with generated arguments")
    if not judged:
        ctx.skip(f"each of the {tried} read-only tool(s) called needed a capability or "
                 "asked for input: no CallToolResult to judge")
