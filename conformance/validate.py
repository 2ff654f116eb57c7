"""Every message the server sends, checked against the official schema of its era.

``Validator(era).check(message, method)`` returns a list of problems (empty when the
message is valid). Results are discriminated on the request method and ``resultType``
before validating: ``InputRequiredResult`` accepts almost any object with a
``resultType``, so validating a result against the ``ServerResult`` union would pass
nearly everything (basic/patterns/mrtr.mdx "InputRequiredResult"). Schemas are the ones
``mcpcore.conformance.schemas`` ships; validators are compiled once per definition.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from mcpcore.conformance import schemas
from mcpcore.conformance.wire import CACHEABLE, MODERN

#: Request method → ``$defs`` name of its complete result, per era.
_RESULTS: Final = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
}
#: Notification method → ``$defs`` name (both eras use the same names).
_NOTIFICATIONS: Final = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/elicitation/complete": "ElicitationCompleteNotification",
    "notifications/tasks/status": "TaskStatusNotification",
}
#: Server→client requests a legacy session may carry.
_LEGACY_REQUESTS: Final = {
    "sampling/createMessage": "CreateMessageRequest",
    "elicitation/create": "ElicitRequest",
    "roots/list": "ListRootsRequest",
    "ping": "PingRequest",
}
#: Error codes whose whole response (2026-07-28) or error object has its own definition.
_ERROR_RESPONSES: Final = {-32020: "HeaderMismatchError",
                           -32021: "MissingRequiredClientCapabilityError",
                           -32022: "UnsupportedProtocolVersionError"}
_ERROR_OBJECTS: Final = {-32700: "ParseError", -32600: "InvalidRequestError",
                         -32601: "MethodNotFoundError", -32602: "InvalidParamsError",
                         -32603: "InternalError"}
#: Methods that may answer ``input_required`` (basic/patterns/mrtr.mdx "Supported requests").
MRTR_METHODS: Final = frozenset({"tools/call", "resources/read", "prompts/get"})


class Validator:
    """Schema checks for one era's messages; see the module docstring."""

    def __init__(self, era: str) -> None:
        self.era = era
        self.modern = era == MODERN
        root = schemas.load(era)
        self._root = root
        self._defs: dict[str, Any] = root["$defs"]
        self._compiled: dict[str, Draft202012Validator] = {}

    def _validator(self, name: str) -> Draft202012Validator:
        found = self._compiled.get(name)
        if found is None:
            found = Draft202012Validator({"$schema": self._root.get("$schema"),
                                          "$defs": self._defs, "$ref": f"#/$defs/{name}"})
            self._compiled[name] = found
        return found

    def _against(self, name: str, instance: Any, problems: list[str]) -> None:
        if name not in self._defs:
            return
        error = best_match(self._validator(name).iter_errors(instance))
        if error is not None:
            where = "/" + "/".join(str(p) for p in error.absolute_path)
            problems.append(f"not a valid {name} at {where}: {error.message[:300]}")

    def check(self, message: Any, method: str | None = None) -> list[str]:
        """Problems with one server message; ``method`` is the request it answers."""
        problems: list[str] = []
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return [f"not a JSON-RPC 2.0 object: {_short(message)}"]
        self._against("JSONRPCMessage", message, problems)
        if problems:
            return problems
        if "method" in message:
            name = message["method"]
            if "id" in message:
                if self.modern:
                    return [f"a 2026-07-28 server sent a JSON-RPC request ({name!r})"]
                if name in _LEGACY_REQUESTS:
                    self._against(_LEGACY_REQUESTS[name], message, problems)
                else:
                    problems.append(f"unexpected server request {name!r}")
                return problems
            if name in _NOTIFICATIONS:
                self._against(_NOTIFICATIONS[name], message, problems)
            else:
                problems.append(f"unexpected notification {name!r}")
            return problems
        if "error" in message:
            self._check_error(message, problems)
            return problems
        self._check_result(message, method, problems)
        return problems

    def _check_error(self, message: dict[str, Any], problems: list[str]) -> None:
        self._against("JSONRPCErrorResponse", message, problems)
        error = message.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        if not isinstance(code, int) or problems:
            return
        if self.modern and code in _ERROR_RESPONSES:
            self._against(_ERROR_RESPONSES[code], message, problems)
        elif self.modern and code in _ERROR_OBJECTS:
            self._against(_ERROR_OBJECTS[code], error, problems)
        if self.modern and -32099 <= code <= -32020 and code not in _ERROR_RESPONSES:
            problems.append(f"error code {code} is in the range reserved for the spec "
                            "but is not one it defines (basic/index.mdx, Error codes)")
        if self.modern and code in (-32002, -32042):
            problems.append(f"error code {code} was retired in 2026-07-28")

    def _check_result(self, message: dict[str, Any], method: str | None,
                      problems: list[str]) -> None:
        self._against("JSONRPCResultResponse", message, problems)
        result = message.get("result")
        if problems or not isinstance(result, dict) or method is None:
            return
        if not self.modern:
            name = _RESULTS.get(method)
            if name:
                self._against(name, result, problems)
            return
        kind = result.get("resultType")
        if kind == "input_required":
            if method not in MRTR_METHODS:
                problems.append(f"{method} answered input_required; only tools/call, "
                                "resources/read and prompts/get may")
                return
            self._against("InputRequiredResult", result, problems)
            if "inputRequests" not in result and "requestState" not in result:
                problems.append("input_required without inputRequests or requestState")
            if "ttlMs" in result or "cacheScope" in result:
                problems.append("input_required result carries cache hints")
            return
        if kind != "complete":
            problems.append(f"resultType is {kind!r}, expected 'complete' or "
                            "'input_required'")
            return
        name = _RESULTS.get(method)
        if name:
            self._against(name, result, problems)
        if method in CACHEABLE and not problems and not (
            isinstance(result.get("ttlMs"), int) and result.get("cacheScope")
        ):
            problems.append(f"{method} result lacks ttlMs/cacheScope")


@cache
def validator(era: str) -> Validator:
    """The shared validator of ``era`` (compiling is the slow part)."""
    return Validator(era)


def check_schema(schema: Any) -> str | None:
    """``None`` when ``schema`` is a valid JSON Schema (2020-12 unless it declares
    another dialect this validator knows), else the reason."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    if not isinstance(schema, dict | bool):
        return f"a schema must be an object, got {type(schema).__name__}"
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        return str(exc.message)[:300]
    return None


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "…"


__all__ = ["MRTR_METHODS", "Validator", "check_schema", "validator"]
