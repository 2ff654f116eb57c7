"""Every message our server sends, checked against the official 2026-07-28 schema.json.

``SchemaChecker.check`` discriminates results on the request method and ``resultType``
first (``InputRequiredResult`` accepts almost any object, so a malformed complete result
must not be allowed to pass as one). The peers and the ASGI ``Exchange`` run every
message they receive through it, so no test can forget to.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from tests.support.task_schema import TASK_DEFS, TASK_RESULT_DEFS

ROOT = Path(__file__).resolve().parents[2]
#: The official schema, shipped with ``mcpcore.conformance`` (provenance in its README).
SCHEMA_PATH = ROOT / "conformance" / "schemas" / "2026-07-28.json"

#: Request method → the ``$defs`` name of its complete result.
RESULT_DEFS: dict[str, str] = {
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
}
#: Request method → the ``$defs`` name of its whole response.
RESPONSE_DEFS: dict[str, str] = {
    "server/discover": "DiscoverResultResponse",
    "tools/list": "ListToolsResultResponse",
    "tools/call": "CallToolResultResponse",
    "resources/list": "ListResourcesResultResponse",
    "resources/templates/list": "ListResourceTemplatesResultResponse",
    "resources/read": "ReadResourceResultResponse",
    "prompts/list": "ListPromptsResultResponse",
    "prompts/get": "GetPromptResultResponse",
    "completion/complete": "CompleteResultResponse",
    "subscriptions/listen": "SubscriptionsListenResultResponse",
}
#: Only these may answer ``input_required`` (multi-round-trip.mdx).
MRTR_METHODS = frozenset({"tools/call", "resources/read", "prompts/get"})
CACHEABLE_METHODS = frozenset({"server/discover", "tools/list", "resources/list",
                               "resources/templates/list", "resources/read", "prompts/list"})
NOTIFICATION_DEFS: dict[str, str] = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/tasks": "TaskStatusNotification",
}
#: Error codes whose whole response has its own definition.
ERROR_RESPONSE_DEFS: dict[int, str] = {
    -32020: "HeaderMismatchError",
    -32021: "MissingRequiredClientCapabilityError",
    -32022: "UnsupportedProtocolVersionError",
}
#: Error codes whose ``error`` member has its own definition.
ERROR_OBJECT_DEFS: dict[int, str] = {
    -32700: "ParseError",
    -32600: "InvalidRequestError",
    -32601: "MethodNotFoundError",
    -32602: "InvalidParamsError",
    -32603: "InternalError",
}


class SchemaViolation(AssertionError):
    pass


class SchemaChecker:
    """Validate server messages against schema.json (draft 2020-12), compiled once."""

    def __init__(self, path: Path = SCHEMA_PATH) -> None:
        self.root = json.loads(path.read_text())
        # The tasks extension's types join the official ones (tests.support.task_schema).
        self.root["$defs"] = {**self.root["$defs"], **TASK_DEFS}
        Draft202012Validator.check_schema(self.root)
        self.defs = self.root["$defs"]
        self._validators: dict[str, Draft202012Validator] = {}
        self.checked = 0

    def validator(self, name: str) -> Draft202012Validator:
        found = self._validators.get(name)
        if found is None:
            if name not in self.defs:
                raise KeyError(f"schema.json has no $defs/{name}")
            found = Draft202012Validator({
                "$schema": self.root.get("$schema"),
                "$defs": self.defs,
                "$ref": f"#/$defs/{name}",
            })
            self._validators[name] = found
        return found

    def validate(self, name: str, instance: Any) -> None:
        error = best_match(self.validator(name).iter_errors(instance))
        if error is not None:
            path = "/".join(str(p) for p in error.absolute_path)
            raise SchemaViolation(
                f"not a valid {name} at /{path}: {error.message}\n"
                f"message: {json.dumps(instance)[:2000]}"
            )

    def check(self, message: Any, method: str | None = None) -> None:
        """Check one message the server sent; ``method`` is the request's, if known."""
        self.checked += 1
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise SchemaViolation(f"not a JSON-RPC 2.0 object: {message!r}")
        self.validate("JSONRPCMessage", message)
        if "method" in message:
            if "id" in message:
                raise SchemaViolation(f"a modern server sent a request: {message!r}")
            name = NOTIFICATION_DEFS.get(message["method"])
            if name is None:
                raise SchemaViolation(f"unexpected notification {message['method']!r}")
            self.validate(name, message)
            return
        if "error" in message:
            self.validate("JSONRPCErrorResponse", message)
            code = message["error"].get("code")
            if code in ERROR_RESPONSE_DEFS:
                self.validate(ERROR_RESPONSE_DEFS[code], message)
            elif code in ERROR_OBJECT_DEFS:
                self.validate(ERROR_OBJECT_DEFS[code], message["error"])
            elif -32099 <= code <= -32000:
                # Only codes the spec defines in its reserved range.
                raise SchemaViolation(f"undefined reserved error code {code}")
            return
        self.validate("JSONRPCResultResponse", message)
        result = message["result"]
        if method is None:
            raise SchemaViolation("a result whose request method is unknown cannot be checked")
        if result.get("resultType") == "input_required":
            if method not in MRTR_METHODS:
                raise SchemaViolation(f"{method} answered input_required")
            self.validate("InputRequiredResult", result)
            if "inputRequests" not in result and "requestState" not in result:
                raise SchemaViolation("input_required without inputRequests or requestState")
            if "ttlMs" in result or "cacheScope" in result:
                raise SchemaViolation("input_required carries cache hints")
            return
        if result.get("resultType") == "task":
            if method != "tools/call":  # SEP-2663, "Supported Methods"
                raise SchemaViolation(f"{method} answered with a task")
            self.validate("CreateTaskResult", result)
            return
        if result.get("resultType") != "complete":
            raise SchemaViolation(f"unexpected resultType in {result!r}")
        if method in TASK_RESULT_DEFS:
            self.validate(TASK_RESULT_DEFS[method], result)
        if method in RESPONSE_DEFS:
            self.validate(RESPONSE_DEFS[method], message)
            self.validate(RESULT_DEFS[method], result)
        if method in CACHEABLE_METHODS and not (
            isinstance(result.get("ttlMs"), int) and result.get("cacheScope")
        ):
            raise SchemaViolation(f"{method} result lacks ttlMs/cacheScope")


@cache
def schema_checker() -> SchemaChecker:
    """The one checker of the session (compiling validators is the slow part)."""
    return SchemaChecker()


__all__ = ["SCHEMA_PATH", "SchemaChecker", "SchemaViolation", "schema_checker"]
