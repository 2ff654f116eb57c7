"""Tools: registration, the published ``Tool`` objects, argument validation and results.

Arguments are validated before the handler runs. Hint-derived schemas decode the
``arguments`` JSON straight into a msgspec Struct (in C, one pass); explicit schemas go
through ``mcpcore.schema`` (JSON Schema 2020-12, compiled once at registration). Schema
violations become a *tool execution error* (``isError: true``) so the model can correct
itself; only an unknown tool or params that break ``CallToolRequest`` itself are JSON-RPC
errors (tools.mdx, "Error Handling").

A tool the spec's ``Tool`` type would reject (annotations or icons of the wrong shape) is
a ``UsageError`` at registration, not something clients silently drop. So is a key of the
author's dicts (annotations, icons, prompt arguments) that misspells one the spec defines
(``readonlyHint``: the policy would read no ``readOnlyHint`` and file the tool as
destructive); another unknown key is published as given, with a warning (the schema
allows extra properties), and so is a ``_meta`` key under the prefix MCP reserves.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from mcpcore import types
from mcpcore.context import Context
from mcpcore.errors import InvalidParams, McpError, UnknownTool, UsageError
from mcpcore.headers import HeaderParam, check_header_params, find_header_params
from mcpcore.meta import RESERVED_PREFIX
from mcpcore.params import CallToolParams, direct_call_params
from mcpcore.schema import CompiledSchema, SchemaError, compile_schema
from mcpcore.signatures import (
    RAW_SIGNATURE,
    HandlerFunction,
    Signature,
    inspect_handler,
    no_op,
    output_schema_for,
    schema_for,
    summary_of,
)
from mcpcore.spelling import closest, did_you_mean

log = logging.getLogger("mcpcore.tools")

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_to_builtins = msgspec.to_builtins
_json_encode = msgspec.json.encode
_decode_mapping = msgspec.json.Decoder(dict[str, Any] | None).decode
_asdict = msgspec.structs.asdict
_EMPTY = b"{}"

#: Policy categories (see mcpcore.policy and docs/policy.md), least to most risky. A tool's
#: category is its explicit declaration, else derived from its own annotations, else the
#: strictest. Whether it reaches the outside world (``external``) is a separate flag.
Category = Literal["read", "write_idempotent", "write_additive", "destructive"]
CATEGORIES: tuple[Category, ...] = ("read", "write_idempotent", "write_additive", "destructive")
#: Whether a call may become a task (the tasks extension, SEP-2663): never; when the
#: client declared the extension (else it runs synchronously); or only as a task (a
#: client without the extension gets -32021).
TaskSupport = Literal["never", "optional", "required"]
#: When a call that may become a task does: before the handler's first line (``"call"``)
#: or when the handler calls ``await ctx.start_task()`` (``"handler"``).
TaskStart = Literal["call", "handler"]
_TASK_SUPPORT: tuple[TaskSupport, ...] = ("never", "optional", "required")
#: The handler of a tool whose definition was given as JSON (``ToolRegistry.add_raw``):
#: it receives the call's ``arguments`` as sent and the request's Context, and returns
#: the ``CallToolResult`` as is (a gateway's forwarding tool: docs/gateway.md).
RawToolHandler = Callable[[dict[str, Any], Context], Awaitable[dict[str, Any]]]
_TASK_START: tuple[TaskStart, ...] = ("call", "handler")


def valid_tool_name(name: object) -> bool:
    """Whether ``name`` is inside the spec's tool-name rules (server/tools.mdx, "Tool
    Names": 1 to 128 of A-Z a-z 0-9 ``_`` ``-`` ``.``)."""
    return isinstance(name, str) and _NAME_RE.match(name) is not None


class ToolError(Exception):
    """Raise inside a tool to return ``isError: true`` with this message.

    >>> raise ToolError("the city was not found")        # doctest: +SKIP
    """

    def __init__(self, message: str, *, content: Sequence[Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.content = content


@dataclass(slots=True)
class ToolDef:
    name: str
    fn: HandlerFunction
    signature: Signature
    input_schema: dict[str, Any]
    description: str | None = None
    title: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    category: Category = "destructive"
    external: bool = True
    required_scopes: frozenset[str] = frozenset()
    #: The server a gateway forwards this tool to (``add_raw``; policy rules'
    #: ``upstreams``); ``None`` for the server's own tools.
    upstream: str | None = None
    #: The name policy rules match when it is not ``name``: a gateway's alias is
    #: judged as the served name it stands for (``add_raw``).
    policy_name: str | None = None
    compiled: CompiledSchema | None = None
    output_compiled: CompiledSchema | None = None
    header_params: tuple[HeaderParam, ...] = ()
    wire: dict[str, Any] = field(default_factory=dict)
    #: Params whose arguments decode straight into this tool's Struct, with the body
    #: (``None``: something besides the handler reads them: a schema of the author's,
    #: ``Mcp-Param-*`` headers, a task, or a handler taking the Context, which may ask).
    direct_params: type[CallToolParams] | None = None
    task: TaskSupport = "never"
    task_start: TaskStart = "call"
    #: Set for a tool added with ``add_raw``: the engine calls it with the raw
    #: arguments instead of binding them to ``fn`` (which is the same function).
    raw: RawToolHandler | None = None

    def publish(self) -> dict[str, Any]:
        tool: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            tool["title"] = self.title
        if self.description is not None:
            tool["description"] = self.description
        if self.icons:
            tool["icons"] = self.icons
        tool["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            tool["outputSchema"] = self.output_schema
        if self.annotations:
            tool["annotations"] = self.annotations
        if self.meta:
            tool["_meta"] = self.meta
        return tool

    def bind(self, arguments: Arguments) -> tuple[dict[str, Any] | None, str | None]:
        """Validated keyword arguments, or an error message for the model."""
        if arguments.struct is not None:  # decoded with the body, already validated
            return _asdict(arguments.struct), None
        if self.compiled is not None:
            mapping = arguments.mapping()
            errors = self.compiled.validate(mapping)
            if errors:
                return None, "Invalid arguments: " + "; ".join(errors)
            if self.signature.var_keyword:
                return dict(mapping), None
            names = self.signature.arg_names
            return {k: v for k, v in mapping.items() if k in names}, None
        decoder = self.signature.decoder
        if decoder is None:
            return {}, None
        try:
            if arguments.decoded is not None:  # someone needed the mapping: convert it
                obj = msgspec.convert(arguments.decoded, self.signature.args_type)
            else:
                obj = decoder.decode(arguments.raw or _EMPTY)
        except msgspec.ValidationError as exc:
            return None, f"Invalid arguments: {exc}"
        return _asdict(obj), None


class Arguments(msgspec.Struct, gc=False):
    """A call's ``arguments`` JSON, decoded once: straight into the tool's Struct, or
    into a mapping when something reads it first (the policy, ``Mcp-Param-*`` checks,
    an explicit schema), then converted from that.

    A Struct (made for every ``tools/call``): msgspec builds it in C, where a class with
    an ``__init__`` costs a Python call. Nothing it holds can point back to it, so the
    garbage collector need not track it (``gc=False``)."""

    #: The JSON text (``None``: absent or ``null``, i.e. no arguments).
    raw: msgspec.Raw | None
    #: The tool's argument Struct, when the body was decoded straight into it.
    struct: msgspec.Struct | None = None
    #: The mapping, once something asked for it (``mapping``).
    decoded: dict[str, Any] | None = None

    def mapping(self) -> dict[str, Any]:
        if self.decoded is None:
            if self.struct is not None:
                self.decoded = msgspec.to_builtins(self.struct)
            else:
                self.decoded = (_decode_mapping(self.raw) if self.raw is not None
                                else None) or {}
        return self.decoded

    @classmethod
    def of(cls, raw: msgspec.Raw | Any, tool: ToolDef | None = None) -> Arguments:
        """From ``params.arguments``: an object or ``null``, else -32602; or the Struct
        of ``tool``'s arguments the body was decoded into (``ToolDef.direct_params``)."""
        if isinstance(raw, msgspec.Struct):
            if tool is not None and type(raw) is tool.signature.args_type:
                return cls(None, raw)
            # Another tool's (it was replaced meanwhile): its JSON, bound the usual way.
            return cls(msgspec.Raw(_json_encode(raw)))
        if not isinstance(raw, msgspec.Raw):
            return cls(None)
        first = memoryview(raw)[0]
        if first == ord("n"):
            return cls(None)
        if first != ord("{"):
            raise InvalidParams("Invalid params: `arguments` must be an object - at "
                                "`$.arguments`")
        return cls(raw)


def category_from_annotations(annotations: Mapping[str, Any] | None) -> Category:
    """The category the server's *own* annotations imply (never the client's say).

    Hint defaults (schema ``ToolAnnotations``): ``readOnlyHint`` false,
    ``destructiveHint`` true, ``idempotentHint`` false. So only an explicit
    ``destructiveHint: false`` makes a write non-destructive, and a tool without
    annotations is destructive. A hint that is not a boolean counts as unset.

    >>> category_from_annotations({"readOnlyHint": False, "destructiveHint": False})
    'write_additive'
    """
    ann = annotations or {}
    if ann.get("readOnlyHint") is True:
        return "read"
    if ann.get("destructiveHint") is False:
        return "write_idempotent" if ann.get("idempotentHint") is True else "write_additive"
    return "destructive"


def external_from_annotations(annotations: Mapping[str, Any] | None) -> bool:
    """The ``EXTERNAL`` flag: ``openWorldHint`` defaults to true, so only an explicit
    ``false`` marks a tool as closed-world."""
    return (annotations or {}).get("openWorldHint") is not False


def checked_category(category: str, tool_name: str) -> Category:
    """An explicit category, or the strictest if it is not one we know."""
    for known in CATEGORIES:
        if category == known:
            return known
    log.warning("tool %s: unknown category %r, treated as destructive", tool_name, category)
    return "destructive"


class ToolRegistry:
    """Tools in registration order (so ``tools/list`` is deterministic)."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolDef] = {}
        #: The registered names, a live view (its ``len`` is no Python call: the server
        #: asks it on every request whether tools exist).
        self.names = self._tools.keys()
        self._published: list[dict[str, Any]] = []
        #: How many of the tools may become tasks (the tasks extension is offered then).
        self.task_tools = 0
        #: Called after every change (the server announces list changes through it).
        self.on_change: Callable[[], None] = no_op

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def add(
        self,
        fn: HandlerFunction,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        category: Category | None = None,
        external: bool | None = None,
        required_scopes: Sequence[str] = (),
        task: TaskSupport = "never",
        task_start: TaskStart = "call",
    ) -> ToolDef:
        tool_name = str(name or getattr(fn, "__name__", ""))
        if not _NAME_RE.match(tool_name):
            raise ValueError(f"invalid tool name {tool_name!r}: use 1-128 of A-Z a-z 0-9 _ - .")
        if tool_name in self._tools:
            raise ValueError(f"tool {tool_name!r} is already registered")
        what = f"tool {tool_name!r}"
        if task not in _TASK_SUPPORT:
            raise UsageError(f"{what}: task must be one of {', '.join(_TASK_SUPPORT)}, "
                             f"not {task!r}{did_you_mean(str(task), _TASK_SUPPORT)}")
        if task_start not in _TASK_START:
            raise UsageError(f"{what}: task_start must be 'call' or 'handler', not "
                             f"{task_start!r}{did_you_mean(str(task_start), _TASK_START)}")
        signature = inspect_handler(fn, struct_name=f"{tool_name.replace('.', '_')}_arguments",
                                    what=what)
        compiled: CompiledSchema | None = None
        if input_schema is not None:
            schema = dict(input_schema)
            if schema.get("type") != "object":
                raise ValueError(f"{what}: inputSchema must have type 'object'")
            compiled = compile_schema(schema)
        else:
            schema = schema_for(signature.args_type)
        check_header_params(schema)
        out = dict(output_schema) if output_schema is not None else output_schema_for(
            signature.return_type, what
        )
        try:
            output_compiled = compile_schema(out) if out is not None else None
        except SchemaError as exc:
            raise UsageError(f"{what}: invalid outputSchema: {exc}") from None
        tool = ToolDef(
            name=tool_name,
            fn=fn,
            signature=signature,
            input_schema=schema,
            description=description if description is not None else summary_of(fn),
            title=title,
            output_schema=out,
            annotations=dict(annotations) if annotations else None,
            icons=[dict(i) for i in icons] if icons else None,
            meta=dict(meta) if meta else None,
            category=(checked_category(category, tool_name) if category is not None
                      else category_from_annotations(annotations)),
            external=external if external is not None else external_from_annotations(annotations),
            required_scopes=frozenset(required_scopes),
            compiled=compiled,
            output_compiled=output_compiled,
            header_params=find_header_params(schema),
            task=task,
            task_start=task_start,
        )
        if (compiled is None and not tool.header_params and task == "never"
                and signature.context_param is None and signature.args_type is not None):
            tool.direct_params = direct_call_params(signature.args_type)
        tool.wire = published(tool.publish(), types.Tool, what)
        self._tools[tool_name] = tool
        self._published.append(tool.wire)
        self.task_tools += tool.task != "never"
        self.on_change()
        return tool

    def add_raw(self, definition: Mapping[str, Any], handler: RawToolHandler, *,
                category: Category | None = None, external: bool | None = None,
                listed: bool = True, upstream: str | None = None,
                policy_name: str | None = None) -> ToolDef:
        """Add a tool whose definition is given as a ``Tool`` JSON object (name,
        description, schemas, annotations... published as given) and whose ``handler``
        takes the call's raw arguments and returns its ``CallToolResult`` (a gateway
        forwarding the call to the server that defined the tool). Arguments are not
        validated here: the handler's side owns the schema. ``listed=False``: callable
        by name but left out of ``tools/list`` (a gateway's quarantined tool, whose
        handler answers why it cannot run). ``category``/``external``: for the policy
        (unset: from the definition's annotations); ``upstream``: the server it is
        forwarded to, which policy rules can match; ``policy_name``: the name rules
        match instead of its own (an alias). ``ValueError`` for a name
        outside the spec's rules or taken, ``UsageError`` for a definition the spec's
        ``Tool`` type rejects or invalid ``x-mcp-header`` annotations."""
        wire = dict(definition)
        tool_name = wire.get("name")
        if not isinstance(tool_name, str) or not _NAME_RE.match(tool_name):
            raise ValueError(f"invalid tool name {tool_name!r}: use 1-128 of A-Z a-z 0-9 _ - .")
        if tool_name in self._tools:
            raise ValueError(f"tool {tool_name!r} is already registered")
        what = f"tool {tool_name!r}"
        try:
            msgspec.convert(wire, types.Tool)
        except msgspec.ValidationError as exc:
            raise UsageError(f"{what} is not a valid Tool: {exc}") from None
        schema = wire["inputSchema"]
        header_params = check_header_params(schema)  # HeaderAnnotationError: a ValueError
        annotations = wire.get("annotations")
        tool = ToolDef(
            name=tool_name, fn=handler, signature=RAW_SIGNATURE, input_schema=schema,
            description=wire.get("description"), title=wire.get("title"),
            output_schema=wire.get("outputSchema"), annotations=annotations,
            icons=wire.get("icons"), meta=wire.get("_meta"),
            category=(checked_category(category, tool_name) if category is not None
                      else category_from_annotations(annotations)),
            external=(external if external is not None
                      else external_from_annotations(annotations)),
            header_params=header_params, wire=wire, raw=handler, upstream=upstream,
            policy_name=policy_name)
        self._tools[tool_name] = tool
        if listed:
            self._published.append(wire)
        self.on_change()
        return tool

    def remove(self, name: str) -> None:
        tool = self._tools.pop(name)
        if tool.wire in self._published:  # an unlisted tool (``add_raw``) is not there
            self._published.remove(tool.wire)
        self.task_tools -= tool.task != "never"
        self.on_change()

    def find(self, name: str) -> ToolDef | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def get(self, name: str) -> ToolDef:
        tool = self._tools.get(name)
        if tool is None:
            raise UnknownTool(name)
        return tool

    def published(self) -> list[dict[str, Any]]:
        return self._published

    def all(self) -> list[ToolDef]:
        return list(self._tools.values())

    def listed(self) -> list[ToolDef]:
        """The tools ``tools/list`` shows, in its order (not those added with
        ``listed=False``)."""
        listed = {id(wire) for wire in self._published}
        return [t for t in self._tools.values() if id(t.wire) in listed]



def published(wire: dict[str, Any], wire_type: type[Any], what: str) -> dict[str, Any]:
    """``wire`` if the spec's type for it accepts it; else a ``UsageError`` now, rather
    than an entry every client drops (the fields an author gave: annotations, icons).
    Its keys are checked too (``check_keys``)."""
    try:
        msgspec.convert(wire, wire_type)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{what} is not a valid {wire_type.__name__}: {exc}") from None
    check_keys(wire, msgspec.inspect.type_info(wire_type), what, "")
    return wire


def check_keys(value: Any, info: msgspec.inspect.Type, what: str, path: str) -> None:
    """Every key of ``value`` (a wire object, nested objects and lists too) against the
    fields the spec defines for it: a misspelling of one (a close match, as the policy
    rule files judge it: ``mcpcore.spelling``) is a ``UsageError``, since what was meant
    would silently not happen; another unknown key, or a ``_meta`` key under the prefix
    MCP reserves (``io.modelcontextprotocol/``), is logged as a warning and kept."""
    if isinstance(info, msgspec.inspect.UnionType):
        for member in info.types:
            check_keys(value, member, what, path)
        return
    if isinstance(info, msgspec.inspect.ListType) and isinstance(value, list):
        for i, item in enumerate(value):
            check_keys(item, info.item_type, what, f"{path}[{i}]")
        return
    if not (isinstance(info, msgspec.inspect.StructType) and isinstance(value, dict)):
        return
    fields = {field.encode_name: field for field in info.fields}
    name = info.cls.__name__
    for key, item in value.items():
        field = fields.get(key)
        where = f"{path}.{key}" if path else key
        if field is None:
            close = closest(str(key), fields)
            if close is not None:
                raise UsageError(f"{what}: {where} is not a field of {name} (did you mean "
                                 f"{path + '.' if path else ''}{close}?)")
            log.warning("%s: %s is not a field of %s (known: %s); published as given",
                        what, where, name, ", ".join(fields))
        elif key == "_meta" and isinstance(item, dict):
            for reserved in (k for k in item if str(k).startswith(RESERVED_PREFIX)):
                log.warning("%s: _meta key %r: the prefix %s is reserved for MCP itself; "
                            "use a prefix of your own (com.example/...)", what, reserved,
                            RESERVED_PREFIX)
        else:
            check_keys(item, field.type, what, where)


def content_block(value: Any) -> Any:
    """One content block from a handler's value (str → text)."""
    if isinstance(value, str):
        return {"type": "text", "text": value}
    return value


def tool_result(tool: ToolDef, value: Any) -> dict[str, Any]:
    """Turn what a tool returned into a ``CallToolResult`` (without ``resultType``): always a
    new dict, which the engine may complete."""
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    if tool.output_schema is not None:
        structured = _to_builtins(value)
        if tool.output_compiled is not None:
            errors = tool.output_compiled.validate(structured)
            if errors:
                # Our bug, not the caller's: never send a result breaking our own schema.
                log.error("tool %s returned output violating its outputSchema: %s",
                          tool.name, errors)
                raise McpError("Tool produced invalid structured output")
        return {
            "content": [{"type": "text", "text": _json_encode(structured).decode()}],
            "structuredContent": structured,
        }
    if isinstance(value, dict) and "content" in value and isinstance(value["content"], list):
        return dict(value)  # a CallToolResult-shaped dict as the author built it (a copy:
        # the engine adds its fields to what it sends)
    if isinstance(value, (list, tuple)):
        return {"content": [content_block(v) for v in value]}
    if value is None:
        return {"content": []}
    if isinstance(value, (msgspec.Struct, dict)):
        block = _to_builtins(value)
        if isinstance(block, dict) and "type" in block:
            return {"content": [block]}
        return {"content": [{"type": "text", "text": _json_encode(block).decode()}],
                "structuredContent": block}
    return {"content": [{"type": "text", "text": str(value)}]}


def error_result(message: str, content: Sequence[Any] | None = None) -> dict[str, Any]:
    blocks = [content_block(c) for c in content] if content else [
        {"type": "text", "text": message}
    ]
    return {"content": blocks, "isError": True}


__all__ = ["CATEGORIES", "Arguments", "Category", "RawToolHandler", "TaskStart", "TaskSupport",
           "ToolDef",
           "ToolError", "ToolRegistry", "category_from_annotations", "check_keys",
           "checked_category", "error_result", "external_from_annotations", "published",
           "tool_result", "valid_tool_name"]
