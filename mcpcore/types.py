"""Wire types of MCP revision 2026-07-28, one msgspec Struct per object in schema.json.

What lives here: the shapes of JSON that crosses the wire, named exactly as the ``$defs``
keys of ``schema/2026-07-28/schema.json`` (``TextContent``, ``CallToolRequestParams``,
``CallToolResult``, ...), the ``Literal`` aliases for its enumerated strings and the
aliases for its unions. A handful of extra names cover objects the schema writes inline
(``ToolsCapability``, ``Completion``, ``ElicitRequestedSchema``, the error ``...Object``
and ``...Data`` bodies); each says so in its docstring.

What it is for: the one description of each wire message. The client decodes what it
receives into these types and builds what it sends from them; the engine checks every
tool, resource and prompt it publishes against them at registration
(``mcpcore.tools.published``), and the tests check both sides' messages against the
official schema. The engine decodes *incoming* params with its own Structs
(``mcpcore.params``), shaped for the order in which it must report problems (hand-made
-32602 messages for ``_meta``, ``arguments`` kept as raw JSON); those describe a subset
of these messages, not other messages.

What must not live here: I/O, transports, dispatch, validation beyond what msgspec does
while decoding, or any engine logic. The module imports nothing but msgspec and typing.

Conventions:

* ``Wire`` holds the shared settings: camelCase on the wire, defaults left out.
  msgspec does not inherit ``kw_only``, so every subclass repeats ``kw_only=True``.
* Optional fields are ``X | UnsetType = UNSET``: "absent" differs from ``null`` and an
  absent field is never emitted. Required fields have no default (a default would vanish
  under ``omit_defaults``), so ``jsonrpc="2.0"`` and error ``code`` values are passed
  explicitly.
* ``_meta`` is always a plain ``dict[str, Any]`` so unknown keys (``traceparent``, vendor
  keys) survive; ``RequestMetaObject`` and friends give the typed view
  (``msgspec.convert(params.meta, RequestMetaObject)``).
* A ``const`` string that tells members of a union apart becomes a msgspec tag: ``type``
  on content blocks, ``method`` on requests and notifications, ``resultType`` on results.
  A tag is always encoded, so it cannot be forgotten.
* ``resultType``: schema.json types it as a required plain string on every server result
  and leaves it out of client results (``ElicitResult``, ``CreateMessageResult``,
  ``ListRootsResult``). Each concrete server result here is tagged with its
  one legal value: ``"complete"``, or ``"input_required"`` for ``InputRequiredResult``.
  So ``resultType`` is always emitted, and ``CallToolResult | InputRequiredResult``
  decodes by it (discriminate on ``resultType`` first: ``InputRequiredResult`` accepts
  almost any object, so trying it last would swallow malformed complete results).
  Decoding one result type on its own accepts an absent ``resultType``, which the schema
  says a client must read as ``"complete"``; inside a union it is required. ``Result`` is
  the open form (``result_type: str``) for anything else, e.g. extension values such as ``"task"``.
* Unknown fields are ignored when decoding (msgspec's default), as the schema allows
  extra properties almost everywhere.
* Unions msgspec cannot express (two or more untagged objects) are aliased to
  ``dict[str, Any]``, or, where one type can honestly hold every member, to that type:
  ``ResourceContents`` (text or blob) and ``ElicitRequestParams`` (form or URL). Each
  such alias has a comment.
"""

from typing import Any, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "Annotations",
    "AudioContent",
    "BaseMetadata",
    "BlobResourceContents",
    "BooleanSchema",
    "CacheScope",
    "CacheableResult",
    "CallToolRequest",
    "CallToolRequestParams",
    "CallToolResult",
    "CallToolResultResponse",
    "CancelledNotification",
    "CancelledNotificationParams",
    "ClientCapabilities",
    "ClientNotification",
    "ClientRequest",
    "ClientResult",
    "CompleteRequest",
    "CompleteRequestParams",
    "CompleteResult",
    "CompleteResultResponse",
    "Completion",
    "CompletionArgument",
    "CompletionContext",
    "CompletionReference",
    "ContentBlock",
    "CreateMessageRequest",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "Cursor",
    "DiscoverRequest",
    "DiscoverResult",
    "DiscoverResultResponse",
    "ElicitAction",
    "ElicitRequest",
    "ElicitRequestFormParams",
    "ElicitRequestParams",
    "ElicitRequestURLParams",
    "ElicitRequestedSchema",
    "ElicitResult",
    "ElicitationCapability",
    "EmbeddedResource",
    "EmptyResult",
    "EnumOption",
    "EnumSchema",
    "Error",
    "GetPromptRequest",
    "GetPromptRequestParams",
    "GetPromptResult",
    "GetPromptResultResponse",
    "HeaderMismatchError",
    "HeaderMismatchErrorObject",
    "Icon",
    "IconTheme",
    "Icons",
    "ImageContent",
    "Implementation",
    "IncludeContext",
    "InputRequest",
    "InputRequests",
    "InputRequiredResult",
    "InputResponse",
    "InputResponseRequestParams",
    "InputResponses",
    "InternalError",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONArray",
    "JSONObject",
    "JSONRPCErrorResponse",
    "JSONRPCMessage",
    "JSONRPCNotification",
    "JSONRPCRequest",
    "JSONRPCResponse",
    "JSONRPCResultResponse",
    "JSONValue",
    "LegacyTitledEnumSchema",
    "ListPromptsRequest",
    "ListPromptsResult",
    "ListPromptsResultResponse",
    "ListResourceTemplatesRequest",
    "ListResourceTemplatesResult",
    "ListResourceTemplatesResultResponse",
    "ListResourcesRequest",
    "ListResourcesResult",
    "ListResourcesResultResponse",
    "ListRootsRequest",
    "ListRootsRequestParams",
    "ListRootsResult",
    "ListToolsRequest",
    "ListToolsResult",
    "ListToolsResultResponse",
    "LoggingLevel",
    "LoggingMessageNotification",
    "LoggingMessageNotificationParams",
    "MetaObject",
    "MethodNotFoundError",
    "MissingRequiredClientCapabilityError",
    "MissingRequiredClientCapabilityErrorData",
    "MissingRequiredClientCapabilityErrorObject",
    "ModelHint",
    "ModelPreferences",
    "MultiSelectEnumSchema",
    "Notification",
    "NotificationMetaObject",
    "NotificationParams",
    "NumberSchema",
    "PaginatedRequest",
    "PaginatedRequestParams",
    "PaginatedResult",
    "ParseError",
    "PrimitiveSchemaDefinition",
    "ProgressNotification",
    "ProgressNotificationParams",
    "ProgressToken",
    "Prompt",
    "PromptArgument",
    "PromptListChangedNotification",
    "PromptMessage",
    "PromptReference",
    "PromptsCapability",
    "ReadResourceRequest",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    "ReadResourceResultResponse",
    "Request",
    "RequestId",
    "RequestMetaObject",
    "RequestParams",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceListChangedNotification",
    "ResourceRequestParams",
    "ResourceTemplate",
    "ResourceTemplateReference",
    "ResourceUpdatedNotification",
    "ResourceUpdatedNotificationParams",
    "ResourcesCapability",
    "Result",
    "ResultMetaObject",
    "ResultType",
    "Role",
    "Root",
    "RootsCapability",
    "SamplingCapability",
    "SamplingContent",
    "SamplingMessage",
    "SamplingMessageContentBlock",
    "ServerCapabilities",
    "ServerNotification",
    "ServerResult",
    "SingleSelectEnumSchema",
    "StringFormat",
    "StringSchema",
    "SubscriptionFilter",
    "SubscriptionsAcknowledgedNotification",
    "SubscriptionsAcknowledgedNotificationParams",
    "SubscriptionsListenRequest",
    "SubscriptionsListenRequestParams",
    "SubscriptionsListenResult",
    "SubscriptionsListenResultMetaObject",
    "SubscriptionsListenResultResponse",
    "TextContent",
    "TextResourceContents",
    "TitledMultiSelectEnumSchema",
    "TitledMultiSelectItems",
    "TitledSingleSelectEnumSchema",
    "Tool",
    "ToolAnnotations",
    "ToolChoice",
    "ToolChoiceMode",
    "ToolListChangedNotification",
    "ToolResultContent",
    "ToolUseContent",
    "ToolsCapability",
    "UnsupportedProtocolVersionError",
    "UnsupportedProtocolVersionErrorData",
    "UnsupportedProtocolVersionErrorObject",
    "UntitledMultiSelectEnumSchema",
    "UntitledMultiSelectItems",
    "UntitledSingleSelectEnumSchema",
    "Wire",
]


class Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Settings every wire type shares: camelCase on the wire, defaults left out."""


# --------------------------------------------------------------------------------------
# Scalars, enumerations and free-form JSON
# --------------------------------------------------------------------------------------

RequestId: TypeAlias = int | str
"""A JSON-RPC id: string or integer, never null. ``1`` and ``"1"`` stay distinct."""

ProgressToken: TypeAlias = int | str
Cursor: TypeAlias = str

ResultType: TypeAlias = str
"""Open in schema.json. Core values: ``"complete"``, ``"input_required"`` (the tasks
extension adds ``"task"``). Concrete result Structs carry theirs as a msgspec tag."""

Role: TypeAlias = Literal["user", "assistant"]
LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
CacheScope: TypeAlias = Literal["public", "private"]
IconTheme: TypeAlias = Literal["light", "dark"]
IncludeContext: TypeAlias = Literal["none", "thisServer", "allServers"]
ToolChoiceMode: TypeAlias = Literal["auto", "required", "none"]
ElicitAction: TypeAlias = Literal["accept", "decline", "cancel"]
StringFormat: TypeAlias = Literal["email", "uri", "date", "date-time"]

# Free-form JSON. schema.json's JSONValue happens to leave out numbers and null; values
# are passed through untouched here, so ``Any`` is the honest type.
JSONValue: TypeAlias = Any
JSONObject: TypeAlias = dict[str, Any]
JSONArray: TypeAlias = list[Any]

MetaObject: TypeAlias = dict[str, Any]
"""A ``_meta`` map. Open: any key, reserved prefixes ``io.modelcontextprotocol/`` etc."""


# --------------------------------------------------------------------------------------
# _meta views (typed reading of the open ``_meta`` maps)
# --------------------------------------------------------------------------------------


class BaseMetadata(Wire, kw_only=True):
    name: str
    title: str | UnsetType = UNSET


class Icon(Wire, kw_only=True):
    src: str
    mime_type: str | UnsetType = UNSET
    sizes: list[str] | UnsetType = UNSET
    theme: IconTheme | UnsetType = UNSET


class Icons(Wire, kw_only=True):
    icons: list[Icon] | UnsetType = UNSET


class Implementation(Wire, kw_only=True):
    """Name and version of a client or server (``clientInfo`` / ``serverInfo``)."""

    name: str
    version: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    website_url: str | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET


class ElicitationCapability(Wire, kw_only=True):
    """``ClientCapabilities.elicitation`` (inline in the schema). ``{}`` means form only."""

    form: dict[str, Any] | UnsetType = UNSET
    url: dict[str, Any] | UnsetType = UNSET


class RootsCapability(Wire, kw_only=True):
    """``ClientCapabilities.roots`` (inline in the schema; no properties in 2026-07-28)."""


class SamplingCapability(Wire, kw_only=True):
    """``ClientCapabilities.sampling`` (inline in the schema)."""

    context: dict[str, Any] | UnsetType = UNSET
    tools: dict[str, Any] | UnsetType = UNSET


class ClientCapabilities(Wire, kw_only=True):
    elicitation: ElicitationCapability | UnsetType = UNSET
    roots: RootsCapability | UnsetType = UNSET
    sampling: SamplingCapability | UnsetType = UNSET
    experimental: dict[str, dict[str, Any]] | UnsetType = UNSET
    extensions: dict[str, dict[str, Any]] | UnsetType = UNSET


class PromptsCapability(Wire, kw_only=True):
    """``ServerCapabilities.prompts`` (inline in the schema)."""

    list_changed: bool | UnsetType = UNSET


class ResourcesCapability(Wire, kw_only=True):
    """``ServerCapabilities.resources`` (inline in the schema)."""

    subscribe: bool | UnsetType = UNSET
    list_changed: bool | UnsetType = UNSET


class ToolsCapability(Wire, kw_only=True):
    """``ServerCapabilities.tools`` (inline in the schema)."""

    list_changed: bool | UnsetType = UNSET


class ServerCapabilities(Wire, kw_only=True):
    completions: dict[str, Any] | UnsetType = UNSET
    experimental: dict[str, dict[str, Any]] | UnsetType = UNSET
    extensions: dict[str, dict[str, Any]] | UnsetType = UNSET
    logging: dict[str, Any] | UnsetType = UNSET
    prompts: PromptsCapability | UnsetType = UNSET
    resources: ResourcesCapability | UnsetType = UNSET
    tools: ToolsCapability | UnsetType = UNSET


class RequestMetaObject(Wire, kw_only=True):
    """Typed view of a request's ``_meta``; required on every client request
    (basic/index.mdx, "_meta")."""

    protocol_version: str = msgspec.field(name="io.modelcontextprotocol/protocolVersion")
    client_capabilities: ClientCapabilities = msgspec.field(
        name="io.modelcontextprotocol/clientCapabilities"
    )
    client_info: Implementation | UnsetType = msgspec.field(
        default=UNSET, name="io.modelcontextprotocol/clientInfo"
    )
    log_level: LoggingLevel | UnsetType = msgspec.field(
        default=UNSET, name="io.modelcontextprotocol/logLevel"
    )
    progress_token: ProgressToken | UnsetType = UNSET


class ResultMetaObject(Wire, kw_only=True):
    """Typed view of a result's ``_meta``."""

    server_info: Implementation | UnsetType = msgspec.field(
        default=UNSET, name="io.modelcontextprotocol/serverInfo"
    )


class NotificationMetaObject(Wire, kw_only=True):
    """Typed view of a notification's ``_meta``; ``subscriptionId`` on listen streams."""

    subscription_id: RequestId | UnsetType = msgspec.field(
        default=UNSET, name="io.modelcontextprotocol/subscriptionId"
    )


class SubscriptionsListenResultMetaObject(Wire, kw_only=True):
    subscription_id: RequestId = msgspec.field(name="io.modelcontextprotocol/subscriptionId")
    server_info: Implementation | UnsetType = msgspec.field(
        default=UNSET, name="io.modelcontextprotocol/serverInfo"
    )


# --------------------------------------------------------------------------------------
# Content
# --------------------------------------------------------------------------------------


class Annotations(Wire, kw_only=True):
    audience: list[Role] | UnsetType = UNSET
    priority: int | float | UnsetType = UNSET
    last_modified: str | UnsetType = UNSET


class ResourceContents(Wire, kw_only=True):
    """Contents of a resource: the common base, and the decode type for "text or blob".

    schema.json's ``ResourceContents`` has only ``uri``/``mimeType``/``_meta``. Wherever
    the schema says ``TextResourceContents | BlobResourceContents`` (``contents`` of
    ``ReadResourceResult``, ``EmbeddedResource.resource``) the two differ only by which
    of ``text``/``blob`` is present, with no tag, which msgspec cannot discriminate. So
    this base carries both as optional fields and is the type of those fields: decoded
    values are ``ResourceContents`` with ``text`` or ``blob`` set. Build with
    ``TextResourceContents``/``BlobResourceContents`` (subclasses, same wire form).
    """

    uri: str
    mime_type: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")
    text: str | UnsetType = UNSET
    blob: str | UnsetType = UNSET


class TextResourceContents(ResourceContents, kw_only=True):
    text: str


class BlobResourceContents(ResourceContents, kw_only=True):
    blob: str
    """Base64-encoded bytes."""


class TextContent(Wire, tag_field="type", tag="text", kw_only=True):
    text: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ImageContent(Wire, tag_field="type", tag="image", kw_only=True):
    data: str
    """Base64-encoded image bytes."""
    mime_type: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class AudioContent(Wire, tag_field="type", tag="audio", kw_only=True):
    data: str
    """Base64-encoded audio bytes."""
    mime_type: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ResourceLink(Wire, tag_field="type", tag="resource_link", kw_only=True):
    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class EmbeddedResource(Wire, tag_field="type", tag="resource", kw_only=True):
    resource: ResourceContents
    """``TextResourceContents | BlobResourceContents``; see ``ResourceContents``."""
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


ContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
)
"""Tagged on ``type``."""


class ToolUseContent(Wire, tag_field="type", tag="tool_use", kw_only=True):
    id: str
    name: str
    input: dict[str, Any]
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ToolResultContent(Wire, tag_field="type", tag="tool_result", kw_only=True):
    tool_use_id: str
    content: list[ContentBlock]
    structured_content: Any = UNSET
    is_error: bool = False
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


SamplingMessageContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent
)
"""Tagged on ``type``."""

SamplingContent: TypeAlias = SamplingMessageContentBlock | list[SamplingMessageContentBlock]
"""``content`` of a sampling message or result: one block or a list (inline in schema)."""


# --------------------------------------------------------------------------------------
# Tools, resources, prompts
# --------------------------------------------------------------------------------------


class ToolAnnotations(Wire, kw_only=True):
    title: str | UnsetType = UNSET
    read_only_hint: bool | UnsetType = UNSET
    destructive_hint: bool | UnsetType = UNSET
    idempotent_hint: bool | UnsetType = UNSET
    open_world_hint: bool | UnsetType = UNSET


class Tool(Wire, kw_only=True):
    name: str
    input_schema: dict[str, Any]
    """A JSON Schema object, kept verbatim (``$schema``, ``$defs``, ``x-mcp-header``...)."""
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    output_schema: dict[str, Any] | UnsetType = UNSET
    """A JSON Schema, kept verbatim."""
    annotations: ToolAnnotations | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class Resource(Wire, kw_only=True):
    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ResourceTemplate(Wire, kw_only=True):
    uri_template: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class PromptArgument(Wire, kw_only=True):
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    required: bool | UnsetType = UNSET


class Prompt(Wire, kw_only=True):
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    arguments: list[PromptArgument] | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class PromptMessage(Wire, kw_only=True):
    role: Role
    content: ContentBlock


class PromptReference(Wire, tag_field="type", tag="ref/prompt", kw_only=True):
    name: str
    title: str | UnsetType = UNSET


class ResourceTemplateReference(Wire, tag_field="type", tag="ref/resource", kw_only=True):
    uri: str
    """A URI or URI template."""


CompletionReference: TypeAlias = PromptReference | ResourceTemplateReference
"""``CompleteRequestParams.ref`` (inline in the schema); tagged on ``type``."""


class Root(Wire, kw_only=True):
    uri: str
    name: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


# --------------------------------------------------------------------------------------
# Elicitation schemas (restricted JSON Schema for forms)
# --------------------------------------------------------------------------------------
# The eight primitive shapes cannot be a msgspec union: five share ``"type": "string"``
# and two share ``"array"``, telling them apart needs ``enum``/``oneOf``/``enumNames``/
# ``items`` presence, not a tag. So the union aliases are ``dict[str, Any]`` (decoded
# values stay verbatim); read one with ``msgspec.convert(value, StringSchema)`` etc.,
# build one with the Structs and ``msgspec.to_builtins``.


class StringSchema(Wire, tag_field="type", tag="string", kw_only=True):
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_length: int | UnsetType = UNSET
    max_length: int | UnsetType = UNSET
    format: StringFormat | UnsetType = UNSET
    default: str | UnsetType = UNSET


class NumberSchema(Wire, kw_only=True):
    type: Literal["integer", "number"]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    minimum: int | float | UnsetType = UNSET
    maximum: int | float | UnsetType = UNSET
    default: int | float | UnsetType = UNSET


class BooleanSchema(Wire, tag_field="type", tag="boolean", kw_only=True):
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: bool | UnsetType = UNSET


class EnumOption(Wire, kw_only=True):
    """One ``{const, title}`` choice of a titled enum (inline in the schema)."""

    const: str
    title: str


class UntitledSingleSelectEnumSchema(Wire, tag_field="type", tag="string", kw_only=True):
    enum: list[str]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


class TitledSingleSelectEnumSchema(Wire, tag_field="type", tag="string", kw_only=True):
    one_of: list[EnumOption]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


class UntitledMultiSelectItems(Wire, tag_field="type", tag="string", kw_only=True):
    """``items`` of ``UntitledMultiSelectEnumSchema`` (inline in the schema)."""

    enum: list[str]


class TitledMultiSelectItems(Wire, kw_only=True):
    """``items`` of ``TitledMultiSelectEnumSchema`` (inline in the schema)."""

    any_of: list[EnumOption]


class UntitledMultiSelectEnumSchema(Wire, tag_field="type", tag="array", kw_only=True):
    items: UntitledMultiSelectItems
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_items: int | UnsetType = UNSET
    max_items: int | UnsetType = UNSET
    default: list[str] | UnsetType = UNSET


class TitledMultiSelectEnumSchema(Wire, tag_field="type", tag="array", kw_only=True):
    items: TitledMultiSelectItems
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_items: int | UnsetType = UNSET
    max_items: int | UnsetType = UNSET
    default: list[str] | UnsetType = UNSET


class LegacyTitledEnumSchema(Wire, tag_field="type", tag="string", kw_only=True):
    """Deprecated: ``enum`` plus parallel ``enumNames``."""

    enum: list[str]
    enum_names: list[str] | UnsetType = UNSET
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


# Untagged unions of the Structs above; see the comment at the top of this section.
PrimitiveSchemaDefinition: TypeAlias = dict[str, Any]
EnumSchema: TypeAlias = dict[str, Any]
SingleSelectEnumSchema: TypeAlias = dict[str, Any]
MultiSelectEnumSchema: TypeAlias = dict[str, Any]


class ElicitRequestedSchema(Wire, kw_only=True):
    """``ElicitRequestFormParams.requestedSchema`` (inline in the schema): a flat object
    schema whose ``properties`` are ``PrimitiveSchemaDefinition`` maps."""

    type: Literal["object"]
    properties: dict[str, PrimitiveSchemaDefinition]
    required: list[str] | UnsetType = UNSET
    schema: str | UnsetType = msgspec.field(default=UNSET, name="$schema")


# --------------------------------------------------------------------------------------
# Embedded input requests (MRTR) and client results
# --------------------------------------------------------------------------------------


class ElicitRequestParams(Wire, kw_only=True):
    """Params of ``elicitation/create``: form mode or URL mode.

    schema.json: ``ElicitRequestFormParams | ElicitRequestURLParams``. ``mode`` is
    optional for forms (the spec's examples omit it), so it cannot be a msgspec tag, and
    msgspec cannot union untagged Structs. This type holds either shape (``mode`` absent
    or ``"form"`` with ``requestedSchema``; ``"url"`` with ``url``) and is what
    ``ElicitRequest.params`` decodes to. Build with the two subclasses.
    """

    message: str
    mode: Literal["form", "url"] | UnsetType = UNSET
    requested_schema: ElicitRequestedSchema | UnsetType = UNSET
    url: str | UnsetType = UNSET


class ElicitRequestFormParams(ElicitRequestParams, kw_only=True):
    mode: Literal["form"] | UnsetType = UNSET
    requested_schema: ElicitRequestedSchema


class ElicitRequestURLParams(ElicitRequestParams, kw_only=True):
    mode: Literal["url"]
    url: str


class ElicitRequest(Wire, tag_field="method", tag="elicitation/create", kw_only=True):
    """Embedded in ``inputRequests``: no ``jsonrpc``, no ``id``."""

    params: ElicitRequestParams


class ModelHint(Wire, kw_only=True):
    name: str | UnsetType = UNSET


class ModelPreferences(Wire, kw_only=True):
    hints: list[ModelHint] | UnsetType = UNSET
    cost_priority: int | float | UnsetType = UNSET
    speed_priority: int | float | UnsetType = UNSET
    intelligence_priority: int | float | UnsetType = UNSET


class ToolChoice(Wire, kw_only=True):
    mode: ToolChoiceMode | UnsetType = UNSET


class SamplingMessage(Wire, kw_only=True):
    role: Role
    content: SamplingContent
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class CreateMessageRequestParams(Wire, kw_only=True):
    messages: list[SamplingMessage]
    max_tokens: int
    model_preferences: ModelPreferences | UnsetType = UNSET
    system_prompt: str | UnsetType = UNSET
    include_context: IncludeContext | UnsetType = UNSET
    temperature: int | float | UnsetType = UNSET
    stop_sequences: list[str] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    tools: list[Tool] | UnsetType = UNSET
    tool_choice: ToolChoice | UnsetType = UNSET


class CreateMessageRequest(Wire, tag_field="method", tag="sampling/createMessage", kw_only=True):
    """Embedded in ``inputRequests``: no ``jsonrpc``, no ``id``."""

    params: CreateMessageRequestParams


class ListRootsRequestParams(Wire, kw_only=True):
    """``ListRootsRequest.params`` (inline in the schema)."""

    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ListRootsRequest(Wire, tag_field="method", tag="roots/list", kw_only=True):
    """Embedded in ``inputRequests``: no ``jsonrpc``, no ``id``."""

    params: ListRootsRequestParams | UnsetType = UNSET


InputRequest: TypeAlias = CreateMessageRequest | ListRootsRequest | ElicitRequest
"""Tagged on ``method``."""

InputRequests: TypeAlias = dict[str, InputRequest]


class CreateMessageResult(Wire, kw_only=True):
    """Client's answer to ``sampling/createMessage``; no ``resultType``."""

    role: Role
    content: SamplingContent
    model: str
    stop_reason: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ListRootsResult(Wire, kw_only=True):
    """Client's answer to ``roots/list``; no ``resultType``."""

    roots: list[Root]


class ElicitResult(Wire, kw_only=True):
    """Client's answer to ``elicitation/create``; no ``resultType``."""

    action: ElicitAction
    content: dict[str, str | int | float | bool | list[str]] | UnsetType = UNSET
    """Form values; absent for URL mode and usually for decline/cancel. schema.json
    allows string, integer, boolean or string list; floats are accepted too, since a
    ``NumberSchema`` field of type ``"number"`` can only be answered with one."""


# ``CreateMessageResult | ListRootsResult | ElicitResult`` share no tag and their
# ``content`` fields clash, so msgspec cannot decode the union. Entries stay verbatim;
# the server knows what it asked under each key, so it converts with
# ``msgspec.convert(value, ElicitResult)`` etc.
InputResponse: TypeAlias = dict[str, Any]
InputResponses: TypeAlias = dict[str, InputResponse]


# --------------------------------------------------------------------------------------
# Request params
# --------------------------------------------------------------------------------------


class RequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    """Required on every client request; see ``RequestMetaObject``."""


class PaginatedRequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    cursor: Cursor | UnsetType = UNSET


class InputResponseRequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    input_responses: InputResponses | UnsetType = UNSET
    request_state: str | UnsetType = UNSET


class CallToolRequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    name: str
    arguments: dict[str, Any] | UnsetType = UNSET
    input_responses: InputResponses | UnsetType = UNSET
    request_state: str | UnsetType = UNSET


class GetPromptRequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    name: str
    arguments: dict[str, str] | UnsetType = UNSET
    input_responses: InputResponses | UnsetType = UNSET
    request_state: str | UnsetType = UNSET


class ResourceRequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    uri: str


class ReadResourceRequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    uri: str
    input_responses: InputResponses | UnsetType = UNSET
    request_state: str | UnsetType = UNSET


class CompletionArgument(Wire, kw_only=True):
    """``CompleteRequestParams.argument`` (inline in the schema)."""

    name: str
    value: str


class CompletionContext(Wire, kw_only=True):
    """``CompleteRequestParams.context`` (inline in the schema)."""

    arguments: dict[str, str] | UnsetType = UNSET


class CompleteRequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | UnsetType = UNSET


class SubscriptionFilter(Wire, kw_only=True):
    tools_list_changed: bool | UnsetType = UNSET
    prompts_list_changed: bool | UnsetType = UNSET
    resources_list_changed: bool | UnsetType = UNSET
    resource_subscriptions: list[str] | UnsetType = UNSET


class SubscriptionsListenRequestParams(Wire, kw_only=True):
    meta: dict[str, Any] = msgspec.field(name="_meta")
    notifications: SubscriptionFilter


# --------------------------------------------------------------------------------------
# JSON-RPC requests (client -> server), tagged on ``method``
# --------------------------------------------------------------------------------------


class Request(Wire, kw_only=True):
    """Any request shape without the envelope; ``params`` kept as a plain map."""

    method: str
    params: dict[str, Any] | UnsetType = UNSET


class JSONRPCRequest(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    method: str
    params: dict[str, Any] | UnsetType = UNSET


class PaginatedRequest(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    method: str
    params: PaginatedRequestParams


class DiscoverRequest(Wire, tag_field="method", tag="server/discover", kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: RequestParams


class ListToolsRequest(Wire, tag_field="method", tag="tools/list", kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: PaginatedRequestParams


class CallToolRequest(Wire, tag_field="method", tag="tools/call", kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: CallToolRequestParams


class ListResourcesRequest(Wire, tag_field="method", tag="resources/list", kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: PaginatedRequestParams


class ListResourceTemplatesRequest(
    Wire, tag_field="method", tag="resources/templates/list", kw_only=True
):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: PaginatedRequestParams


class ReadResourceRequest(Wire, tag_field="method", tag="resources/read", kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: ReadResourceRequestParams


class ListPromptsRequest(Wire, tag_field="method", tag="prompts/list", kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: PaginatedRequestParams


class GetPromptRequest(Wire, tag_field="method", tag="prompts/get", kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: GetPromptRequestParams


class CompleteRequest(Wire, tag_field="method", tag="completion/complete", kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: CompleteRequestParams


class SubscriptionsListenRequest(
    Wire, tag_field="method", tag="subscriptions/listen", kw_only=True
):
    jsonrpc: Literal["2.0"]
    id: RequestId
    params: SubscriptionsListenRequestParams


ClientRequest: TypeAlias = (
    DiscoverRequest
    | ListResourcesRequest
    | ListResourceTemplatesRequest
    | ReadResourceRequest
    | SubscriptionsListenRequest
    | ListPromptsRequest
    | GetPromptRequest
    | ListToolsRequest
    | CallToolRequest
    | CompleteRequest
)
"""Every modern client request, tagged on ``method``."""


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


class Result(Wire, kw_only=True):
    """Any result, with an open ``resultType``. Extra properties are allowed by the schema
    but dropped when decoding into this type; use the concrete result types."""

    result_type: ResultType
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


# schema.json: ``EmptyResult`` and ``ClientResult`` are both ``$ref: Result``.
EmptyResult: TypeAlias = Result
ClientResult: TypeAlias = Result

# Any server result, verbatim. The members (``Result`` and every concrete result) share
# ``resultType: "complete"``, so no tag separates them; see the ``...ResultResponse``
# types for typed decoding.
ServerResult: TypeAlias = dict[str, Any]


class InputRequiredResult(Wire, tag_field="resultType", tag="input_required", kw_only=True):
    """MRTR round trip: the client must answer ``inputRequests`` and retry.

    At least one of ``inputRequests``/``requestState`` must be present (checked on
    construction and decode). Never carries ``ttlMs``/``cacheScope`` (caching.mdx).
    """

    input_requests: InputRequests | UnsetType = UNSET
    request_state: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")

    def __post_init__(self) -> None:
        if self.input_requests is UNSET and self.request_state is UNSET:
            raise ValueError("InputRequiredResult needs inputRequests or requestState")


class PaginatedResult(Wire, tag_field="resultType", tag="complete", kw_only=True):
    next_cursor: Cursor | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class CacheableResult(Wire, tag_field="resultType", tag="complete", kw_only=True):
    """Base of results that carry cache hints (``ttlMs`` integer >= 0, caching.mdx)."""

    ttl_ms: int
    cache_scope: CacheScope
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class DiscoverResult(CacheableResult, kw_only=True):
    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | UnsetType = UNSET


class ListToolsResult(CacheableResult, kw_only=True):
    tools: list[Tool]
    next_cursor: Cursor | UnsetType = UNSET


class ListResourcesResult(CacheableResult, kw_only=True):
    resources: list[Resource]
    next_cursor: Cursor | UnsetType = UNSET


class ListResourceTemplatesResult(CacheableResult, kw_only=True):
    resource_templates: list[ResourceTemplate]
    next_cursor: Cursor | UnsetType = UNSET


class ListPromptsResult(CacheableResult, kw_only=True):
    prompts: list[Prompt]
    next_cursor: Cursor | UnsetType = UNSET


class ReadResourceResult(CacheableResult, kw_only=True):
    contents: list[ResourceContents]
    """Each entry is text or blob; see ``ResourceContents``."""


class CallToolResult(Wire, tag_field="resultType", tag="complete", kw_only=True):
    content: list[ContentBlock]
    structured_content: Any = UNSET
    """Any JSON value (``null`` included) matching the tool's ``outputSchema``."""
    is_error: bool = False
    """Absent on the wire means ``false`` (schema default); left out when encoding."""
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class GetPromptResult(Wire, tag_field="resultType", tag="complete", kw_only=True):
    messages: list[PromptMessage]
    description: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class Completion(Wire, kw_only=True):
    """``CompleteResult.completion`` (inline in the schema); at most 100 values."""

    values: list[str]
    total: int | UnsetType = UNSET
    has_more: bool | UnsetType = UNSET


class CompleteResult(Wire, tag_field="resultType", tag="complete", kw_only=True):
    completion: Completion
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class SubscriptionsListenResult(Wire, tag_field="resultType", tag="complete", kw_only=True):
    """Graceful end of a listen stream. ``_meta`` is required and carries
    ``io.modelcontextprotocol/subscriptionId`` (see
    ``SubscriptionsListenResultMetaObject``)."""

    meta: dict[str, Any] = msgspec.field(name="_meta")


# --------------------------------------------------------------------------------------
# JSON-RPC responses
# --------------------------------------------------------------------------------------


class JSONRPCResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: dict[str, Any]
    """Any ``Result`` object, verbatim; the per-method ``...ResultResponse`` types below
    decode it typed."""


class DiscoverResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: DiscoverResult


class ListToolsResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: ListToolsResult


class ListResourcesResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: ListResourcesResult


class ListResourceTemplatesResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: ListResourceTemplatesResult


class ListPromptsResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: ListPromptsResult


class CallToolResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: InputRequiredResult | CallToolResult
    """Tagged on ``resultType``."""


class GetPromptResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: InputRequiredResult | GetPromptResult
    """Tagged on ``resultType``."""


class ReadResourceResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: InputRequiredResult | ReadResourceResult
    """Tagged on ``resultType``. A ``"complete"`` result without ``ttlMs``/``cacheScope``
    is rejected, though schema.json lets it through the InputRequired branch."""


class CompleteResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: CompleteResult


class SubscriptionsListenResultResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: SubscriptionsListenResult


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


class Error(Wire, kw_only=True):
    """The ``error`` member of a JSON-RPC error response."""

    code: int
    message: str
    data: Any = UNSET


class ParseError(Wire, kw_only=True):
    code: Literal[-32700]
    message: str
    data: Any = UNSET


class InvalidRequestError(Wire, kw_only=True):
    code: Literal[-32600]
    message: str
    data: Any = UNSET


class MethodNotFoundError(Wire, kw_only=True):
    code: Literal[-32601]
    message: str
    data: Any = UNSET


class InvalidParamsError(Wire, kw_only=True):
    code: Literal[-32602]
    message: str
    data: Any = UNSET


class InternalError(Wire, kw_only=True):
    code: Literal[-32603]
    message: str
    data: Any = UNSET


class JSONRPCErrorResponse(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    error: Error
    id: RequestId | UnsetType = UNSET
    """Absent only when the request id could not be read (never ``null``: MCP's
    ``RequestId`` excludes it)."""


class HeaderMismatchErrorObject(Wire, kw_only=True):
    """``HeaderMismatchError.error`` (inline in the schema)."""

    code: Literal[-32020]
    message: str
    data: Any = UNSET


class HeaderMismatchError(Wire, kw_only=True):
    """Full error response, code -32020: headers disagree with the body."""

    jsonrpc: Literal["2.0"]
    error: HeaderMismatchErrorObject
    id: RequestId | UnsetType = UNSET


class MissingRequiredClientCapabilityErrorData(Wire, kw_only=True):
    required_capabilities: ClientCapabilities
    """The missing capabilities, as a ClientCapabilities object (not a list)."""


class MissingRequiredClientCapabilityErrorObject(Wire, kw_only=True):
    """``MissingRequiredClientCapabilityError.error`` (inline in the schema)."""

    code: Literal[-32021]
    message: str
    data: MissingRequiredClientCapabilityErrorData


class MissingRequiredClientCapabilityError(Wire, kw_only=True):
    """Full error response, code -32021."""

    jsonrpc: Literal["2.0"]
    error: MissingRequiredClientCapabilityErrorObject
    id: RequestId | UnsetType = UNSET


class UnsupportedProtocolVersionErrorData(Wire, kw_only=True):
    supported: list[str]
    requested: str


class UnsupportedProtocolVersionErrorObject(Wire, kw_only=True):
    """``UnsupportedProtocolVersionError.error`` (inline in the schema)."""

    code: Literal[-32022]
    message: str
    data: UnsupportedProtocolVersionErrorData


class UnsupportedProtocolVersionError(Wire, kw_only=True):
    """Full error response, code -32022."""

    jsonrpc: Literal["2.0"]
    error: UnsupportedProtocolVersionErrorObject
    id: RequestId | UnsetType = UNSET


# Request, notification, result or error: no common tag, so msgspec cannot decode these
# unions into Structs. Decode the envelope first (mcpcore.jsonrpc), then the parts.
JSONRPCResponse: TypeAlias = dict[str, Any]
JSONRPCMessage: TypeAlias = dict[str, Any]


# --------------------------------------------------------------------------------------
# Notifications, tagged on ``method``
# --------------------------------------------------------------------------------------


class Notification(Wire, kw_only=True):
    """Any notification shape without the envelope; ``params`` kept as a plain map."""

    method: str
    params: dict[str, Any] | UnsetType = UNSET


class JSONRPCNotification(Wire, kw_only=True):
    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] | UnsetType = UNSET


class NotificationParams(Wire, kw_only=True):
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")
    """On listen streams carries ``io.modelcontextprotocol/subscriptionId``."""


class CancelledNotificationParams(Wire, kw_only=True):
    request_id: RequestId
    reason: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class CancelledNotification(Wire, tag_field="method", tag="notifications/cancelled", kw_only=True):
    """stdio only, plus listen teardown (cancellation.mdx)."""

    jsonrpc: Literal["2.0"]
    params: CancelledNotificationParams


# schema.json defines ClientNotification as an object identical to CancelledNotification
# (the only modern client notification).
ClientNotification: TypeAlias = CancelledNotification


class ProgressNotificationParams(Wire, kw_only=True):
    progress_token: ProgressToken
    progress: int | float
    total: int | float | UnsetType = UNSET
    message: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ProgressNotification(Wire, tag_field="method", tag="notifications/progress", kw_only=True):
    jsonrpc: Literal["2.0"]
    params: ProgressNotificationParams


class LoggingMessageNotificationParams(Wire, kw_only=True):
    level: LoggingLevel
    data: Any
    """Any JSON value, ``null`` included."""
    logger: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class LoggingMessageNotification(
    Wire, tag_field="method", tag="notifications/message", kw_only=True
):
    jsonrpc: Literal["2.0"]
    params: LoggingMessageNotificationParams


class ResourceUpdatedNotificationParams(Wire, kw_only=True):
    uri: str
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ResourceUpdatedNotification(
    Wire, tag_field="method", tag="notifications/resources/updated", kw_only=True
):
    jsonrpc: Literal["2.0"]
    params: ResourceUpdatedNotificationParams


class ResourceListChangedNotification(
    Wire, tag_field="method", tag="notifications/resources/list_changed", kw_only=True
):
    jsonrpc: Literal["2.0"]
    params: NotificationParams | UnsetType = UNSET


class ToolListChangedNotification(
    Wire, tag_field="method", tag="notifications/tools/list_changed", kw_only=True
):
    jsonrpc: Literal["2.0"]
    params: NotificationParams | UnsetType = UNSET


class PromptListChangedNotification(
    Wire, tag_field="method", tag="notifications/prompts/list_changed", kw_only=True
):
    jsonrpc: Literal["2.0"]
    params: NotificationParams | UnsetType = UNSET


class SubscriptionsAcknowledgedNotificationParams(Wire, kw_only=True):
    notifications: SubscriptionFilter
    """The honoured subset of the requested filter (subscriptions.mdx)."""
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class SubscriptionsAcknowledgedNotification(
    Wire, tag_field="method", tag="notifications/subscriptions/acknowledged", kw_only=True
):
    jsonrpc: Literal["2.0"]
    params: SubscriptionsAcknowledgedNotificationParams


ServerNotification: TypeAlias = (
    CancelledNotification
    | ProgressNotification
    | ResourceListChangedNotification
    | SubscriptionsAcknowledgedNotification
    | ResourceUpdatedNotification
    | PromptListChangedNotification
    | ToolListChangedNotification
    | LoggingMessageNotification
)
"""Every server notification, tagged on ``method``."""
