"""The params of every request the engine serves, as the route table decodes them.

Each route names one of these Structs; ``Server`` decodes a request's params into it
once, and everything after (``_meta``, ``Mcp-Name``, the handler, the MRTR binding)
reads that one object. They are the engine's view, not the schema's: ``mcpcore.types``
describes every message exactly as schema.json does (the client decodes into it, the
engine checks what it publishes against it), while these are shaped for the order in
which the engine must report problems:

- ``_meta`` is kept as decoded JSON (``meta``) and checked by hand
  (``mcpcore.meta.parse_request_meta``), so each fault gets its own -32602/400 message;
- ``tools/call`` keeps ``arguments`` as raw JSON, decoded once straight into the tool's
  argument Struct (``mcpcore.tools.Arguments``);
- ``inputResponses``/``requestState`` are ``Any``: the MRTR strategy checks them.

Unknown fields are ignored, as the schema allows extra properties.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, cast

import msgspec
from msgspec import UNSET, UnsetType


class Params(msgspec.Struct, kw_only=True, rename="camel"):
    """What every request's params may carry: ``_meta``. (msgspec does not inherit
    ``kw_only``, so each subclass repeats it.)"""

    meta: Any = msgspec.field(default=None, name="_meta")


class PaginatedParams(Params, kw_only=True):
    cursor: str | None = None


class RetryParams(Params, kw_only=True):
    """Params of the methods that may answer ``input_required`` (multi-round-trip.mdx)."""

    input_responses: Any = UNSET
    request_state: Any = UNSET

    def salient(self) -> dict[str, Any]:
        """What sealed state binds: the method's own params, without ``_meta`` and the
        retry's ``inputResponses``/``requestState`` (so a retry digests as its original)."""
        raise NotImplementedError


class CallToolParams(RetryParams, kw_only=True):
    name: str
    arguments: msgspec.Raw | UnsetType = UNSET

    def salient(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.arguments is not UNSET:
            out["arguments"] = msgspec.json.decode(self.arguments)
        return out


def direct_call_params(args_type: type[msgspec.Struct]) -> type[CallToolParams]:
    """``CallToolParams`` whose ``arguments`` decode straight into ``args_type``: for a
    tool whose arguments nothing but its handler reads, so the whole body is decoded in
    one pass (``Server.params_type``). A body whose arguments do not fit is decoded the
    usual way, where the tool reports the problem as its result."""

    def salient(self: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.arguments is not UNSET:
            out["arguments"] = msgspec.to_builtins(self.arguments)
        return out

    direct = msgspec.defstruct(
        f"CallToolParams_{args_type.__name__}",
        [("arguments", args_type | UnsetType, UNSET)],
        bases=(CallToolParams,), kw_only=True, rename="camel",
        namespace={"salient": salient})
    return cast("type[CallToolParams]", direct)


class ReadResourceParams(RetryParams, kw_only=True):
    uri: str

    def salient(self) -> dict[str, Any]:
        return {"uri": self.uri}


class GetPromptParams(RetryParams, kw_only=True):
    name: str
    arguments: dict[str, Any] | UnsetType | None = UNSET

    def salient(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.arguments is not UNSET:
            out["arguments"] = self.arguments
        return out


class Reference(msgspec.Struct):
    type: str
    name: str | None = None
    uri: str | None = None


class CompletionArgument(msgspec.Struct):
    name: str
    value: str


class CompletionContext(msgspec.Struct):
    arguments: dict[str, str] | None = None


class CompleteParams(Params, kw_only=True):
    ref: Reference
    argument: CompletionArgument
    context: CompletionContext | UnsetType = UNSET


#: Resource URIs one listen stream may name: each is held for the stream's life (and, in
#: a gateway, may become an upstream subscription), so a client cannot make the server
#: hold an unbounded set (a longer list is -32602).
MAX_RESOURCE_SUBSCRIPTIONS: Final = 1000


class SubscriptionFilter(msgspec.Struct, rename="camel"):
    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: Annotated[
        list[str], msgspec.Meta(max_length=MAX_RESOURCE_SUBSCRIPTIONS)] | None = None
    task_ids: list[str] | None = None


class ListenParams(Params, kw_only=True):
    notifications: SubscriptionFilter


class TaskParams(Params, kw_only=True):
    """``tasks/get`` and ``tasks/cancel`` (the tasks extension, SEP-2663)."""

    task_id: str


class UpdateTaskParams(TaskParams, kw_only=True):
    """``tasks/update``: each answer is checked against the request it answers."""

    input_responses: dict[str, Any]


__all__ = [
    "CallToolParams",
    "CompleteParams",
    "CompletionArgument",
    "CompletionContext",
    "GetPromptParams",
    "ListenParams",
    "PaginatedParams",
    "Params",
    "ReadResourceParams",
    "Reference",
    "RetryParams",
    "SubscriptionFilter",
    "TaskParams",
    "UpdateTaskParams",
    "direct_call_params",
]
