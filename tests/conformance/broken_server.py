"""A deliberately broken MCP server: ``examples.everything`` behind a middleware that
plants defects, one switchable name each (``DEFECTS``).

It exists so that every check of ``mcpcore conformance`` can be shown to fail on the
fault it is about. The engine underneath is correct; each defect rewrites requests or
responses on the wire the way a careless server would behave (wrong codes, missing
``resultType``, header mismatches ignored, tampered state accepted, stack traces in
errors, ``alg: none`` tokens accepted, no Protected Resource Metadata, ...).

Serve it with every defect on (``python -m tests.conformance.broken_server --port N``),
or build ``broken_app({"missing-result-type"})`` in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mcpcore.asgi_types import ASGIApp, ASGIMessage, Receive, Scope, Send

#: A file tool the broken server adds when given a scratch directory (the destructive
#: audit's target): reads and writes files under that directory, and nowhere else.
FILE_TOOL: dict[str, Any] = {
    "name": "scratch_file",
    "description": "Reads or writes a text file under the scratch directory.",
    "inputSchema": {"type": "object", "properties": {
        "action": {"type": "string", "enum": ["read", "write"]},
        "path": {"type": "string", "description": "relative to the scratch directory"},
        "content": {"type": "string"}}, "required": ["action", "path"]},
    "annotations": {"readOnlyHint": False, "destructiveHint": True},
}
#: Tools of examples.everything that ask for input (``capabilities-assumed`` hides their
#: read-only annotation, as most real servers never annotate).
ASKING_TOOLS = ("multi_input", "test_tool_with_task")
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
TRACEBACK = ('Traceback (most recent call last):\n  File "/srv/app/server.py", line 42, '
             'in handle\nKeyError: \'name\'')
PAGE = 4

#: name → what is wrong with the server when it is switched on.
DEFECTS: dict[str, str] = {
    "discover-no-versions": "server/discover omits supportedVersions",
    "no-server-info": "results carry no serverInfo in _meta",
    "require-client-info": "requests without clientInfo are refused",
    "meta-ignored": "requests missing _meta fields are served anyway",
    "capability-error-shape": "-32021 lists requiredCapabilities as an array",
    "version-wrong-code": "an unsupported version is -32600, not -32022",
    "legacy-version-in-meta": "a _meta naming 2025-11-25 is served as 2026-07-28",
    "ignore-header-mismatch": "MCP headers are not compared with the body",
    "padded-header-refused": "Mcp-Name with surrounding whitespace is refused",
    "notification-needs-method": "notification POSTs without Mcp-Method get 400",
    "wrong-codes": "-32601 answers are -32600 with HTTP 400",
    "undeclared-prompts": "prompts are served but not declared in capabilities",
    "error-id-dropped": "error responses lose the request id",
    "parse-error-500": "malformed JSON is an HTTP 500",
    "invalid-request-accepted": "a request with jsonrpc 1.0 is served",
    "batch-processed": "JSON arrays are processed as batches",
    "origin-unchecked": "Origin is not validated",
    "host-unchecked": "Host is not validated (DNS rebinding)",
    "get-200": "GET without a session is 200",
    "session-id-minted": "modern responses carry an Mcp-Session-Id",
    "big-body-500": "an oversized body is an HTTP 500",
    "content-type-500": "a text/plain body is an HTTP 500",
    "missing-result-type": "results lack resultType",
    "no-cache-hints": "cacheable results lack ttlMs",
    "page-scope-varies": "the second page of tools/list has another cacheScope",
    "page-duplicates": "tools/list pages overlap (an item appears twice)",
    "invalid-cursor-accepted": "a forged cursor is ignored (first page served)",
    "tool-schema-not-object": "a tool's inputSchema root is type array",
    "invalid-input-schema": "a tool's inputSchema is not valid JSON Schema",
    "bad-tool-name": "a tool name has spaces and punctuation",
    "bad-x-mcp-header": "an x-mcp-header name is not an HTTP token",
    "annotation-types": "readOnlyHint is a string",
    "shuffle-tools": "tools/list order changes between calls",
    "unknown-tool-internal": "an unknown tool is -32603",
    "crash-on-bad-arguments": "non-object arguments crash the server (HTTP 500)",
    "tool-result-no-content": "tools/call results lack content",
    "blob-not-base64": "a resource blob is not base64",
    "missing-resource-empty": "a missing resource reads as empty contents",
    "bad-template": "a uriTemplate is unbalanced",
    "prompt-bad-role": "prompt messages use role 'system'",
    "unknown-prompt-ok": "an unknown prompt renders as empty messages",
    "completion-too-many": "completion returns 101 values",
    "listen-unsupported": "subscriptions/listen is -32601",
    "ack-everything": "the listen acknowledgement grants everything asked and more",
    "ack-id-stringified": "the listen acknowledgement carries the subscription id as a "
                          "string (an integer listen id comes back as \"9001\")",
    "schema-invalid": "discover's capabilities.completions is an array",
    "stack-traces": "error messages include a Python traceback",
    "path-traversal": "resources/read of .../etc/passwd returns the host's passwd",
    "nesting-500": "deeply nested JSON is an HTTP 500",
    "legacy-wrong-version": "initialize answers 2025-06-18 when asked for 2025-11-25",
    "legacy-fallback-modern": "initialize with an unknown version answers 2026-07-28",
    "session-id-bad": "session ids contain spaces",
    "initialized-200": "notifications/initialized is answered 200 with a body",
    "ping-nonempty": "ping answers a non-empty result",
    "legacy-tools-broken": "tools/list in a session answers tools as a string",
    "unknown-session-400": "an unknown session id is 400, not 404",
    "delete-ignored": "DELETE says 200 but the session lives on",
    "delete-500": "DELETE of a session is an HTTP 500",
    "no-session-ok": "a legacy request without a session id is served",
    "get-stream-json": "GET on a session answers JSON",
    "contents-stripped": "resources/read contents carry neither text nor blob",
    "prompt-messages-empty": "prompts/get renders no messages",
    "completion-missing": "completion/complete answers without completion",
    "schema-keywords-dropped": "tools/list drops allOf/if/then/else from input schemas",
    "notifications-dropped": "progress and log notifications never arrive",
    "request-on-stream": "a tools/call answer carries a server request",
    "logs-always": "log notifications are sent without a logLevel",
    "listen-filter-ignored": "every listener gets every kind of notification",
    "one-at-a-time": "a second concurrent request is refused with 503",
    "ignore-capabilities": "the declared client capabilities are ignored (all assumed)",
    "missing-response-error": "a retry missing an answer gets an error, not a new question",
    "extra-keys-rejected": "unknown inputResponses keys are an error",
    "input-not-validated": "malformed inputResponses are replaced by valid ones",
    "state-not-rotated": "every round returns the first round's requestState",
    "setlevel-nonempty": "logging/setLevel answers a non-empty result",
    "subscribe-unsupported": "resources/subscribe is -32601",
    "null-id-crash": "a request with id null is an HTTP 500",
    "header-crash": "an Mcp-Method that differs from the body is an HTTP 500",
    "tampered-state-accepted": "a requestState the server never issued is accepted",
    "state-reuse-accepted": "a requestState issued for another request is accepted",
    # Defects an earlier version of the suite missed (issue 24, "Defects it does not
    # catch"), one per class of miss:
    "capabilities-assumed": "declared client capabilities are ignored (all assumed), and "
                            "only tools that need none are annotated read-only",
    "listen-unsolicited": "every listener also gets tools/list_changed and log "
                          "notifications it never asked for",
    "state-readable": "requestState is plain base64url JSON; only its 'sealed' field is "
                      "checked, the others are trusted as sent",
    "elicitation-unvalidated": "form answers that break the requested schema are used "
                               "anyway",
    "input-required-as-complete": "results asking for input say resultType 'complete'",
    "file-path-traversal": "the scratch file tool follows ../ and absolute paths out of "
                           "its directory",
    "file-tool-crash": "the scratch file tool crashes (HTTP 500) on a non-string path",
    "host-only-unchecked": "Host is not validated (Origin still is)",
    "no-body-limit": "request bodies of any size are parsed and served",
}


class _Request:
    def __init__(self, scope: Scope, body: bytes) -> None:
        self.scope = scope
        self.headers: dict[str, str] = {k.decode("latin-1"): v.decode("latin-1")
                                        for k, v in scope.get("headers", [])}
        self.body = body
        self.page: str | None = None    # our own tools/list cursor (page-* defects)
        try:
            self.json: Any = json.loads(body) if body else None
        except (ValueError, RecursionError):
            self.json = None

    @property
    def message(self) -> dict[str, Any]:
        return self.json if isinstance(self.json, dict) else {}

    @property
    def method(self) -> str:
        return str(self.message.get("method", ""))

    @property
    def params(self) -> dict[str, Any]:
        params = self.message.get("params")
        return params if isinstance(params, dict) else {}

    @property
    def modern(self) -> bool:
        return isinstance(self.params.get("_meta"), dict) and any(
            str(k).startswith("io.modelcontextprotocol/") for k in self.params["_meta"])

    def set_json(self, value: Any) -> None:
        self.json = value
        self.body = json.dumps(value).encode()

    def scope_with_headers(self) -> Scope:
        scope = dict(self.scope)
        scope["headers"] = [(k.encode("latin-1"), v.encode("latin-1"))
                            for k, v in self.headers.items()]
        return scope


def _header_form(value: str) -> str:
    plain = value.isascii() and value.isprintable() and value == value.strip()
    if plain and not value.startswith("=?base64?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


class BrokenServer:
    """The middleware; see the module docstring."""

    def __init__(self, inner: ASGIApp, defects: Iterable[str],
                 scratch: str | Path | None = None) -> None:
        self.inner = inner
        self.scratch = Path(scratch).resolve() if scratch is not None else None
        self.forms: dict[str, dict[str, Any]] = {}   # tool -> {input key: requestedSchema}
        self.defects = set(defects)
        unknown = self.defects - set(DEFECTS)
        if unknown:
            raise ValueError(f"unknown defects {sorted(unknown)}")
        self.calls = 0
        self.sessions: dict[str, str] = {}   # shown id -> real id (session-id-bad)
        self.states: dict[str, str] = {}     # requestState issued -> tool it was for
        self.first_state: dict[str, str] = {}   # tool -> its first requestState
        self.in_flight = 0

    def on(self, name: str) -> bool:
        return name in self.defects

    # -- ASGI ----------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        request = _Request(scope, b"".join(chunks))
        canned = self._before(request)
        if canned is not None:
            status, body, extra = canned
            await _reply(send, status, body, extra)
            return
        if self.on("batch-processed") and isinstance(request.json, list):
            answers = []
            for item in request.json:
                sub = _Request(request.scope, json.dumps(item).encode())
                status, body = await self._collect(sub)
                if body:
                    answers.append(json.loads(body))
            await _reply(send, 200, json.dumps(answers).encode(), {})
            return
        if self.on("one-at-a-time") and self.in_flight and request.method == "tools/list":
            await _reply(send, 503, b"busy", {"content-type": "text/plain"})
            return
        self.in_flight += 1
        try:
            if self.on("one-at-a-time") and request.method == "tools/list":
                await asyncio.sleep(0.1)  # a slow listing, so concurrent ones overlap
            await self._forward(request, receive, send)
        finally:
            self.in_flight -= 1

    async def _collect(self, request: _Request) -> tuple[int, bytes]:
        sent: list[ASGIMessage] = []

        async def receive() -> ASGIMessage:
            return {"type": "http.request", "body": request.body, "more_body": False}

        async def capture(message: ASGIMessage) -> None:
            sent.append(message)

        await self.inner(request.scope_with_headers(), receive, capture)
        status = next(int(m["status"]) for m in sent if m["type"] == "http.response.start")
        return status, b"".join(m.get("body", b"") for m in sent
                                if m["type"] == "http.response.body")

    async def _forward(self, request: _Request, receive: Receive, send: Send) -> None:
        delivered = False

        async def inner_receive() -> ASGIMessage:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": request.body, "more_body": False}
            return await receive()

        state: dict[str, Any] = {"buffer": b""}

        async def inner_send(message: ASGIMessage) -> None:
            if message["type"] == "http.response.start":
                headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                           for k, v in message.get("headers", [])}
                state.update(status=int(message["status"]), headers=headers,
                             sse="text/event-stream" in headers.get("content-type", ""))
                if state["sse"]:
                    await send(self._start(request, state["status"], headers, None))
                return
            body = message.get("body", b"")
            if state["sse"]:
                await send({"type": "http.response.body", "body": self._sse(request, body),
                            "more_body": message.get("more_body", False)})
                return
            state["buffer"] += body
            if message.get("more_body"):
                return
            status, out = self._json(request, state["status"], state["buffer"])
            await send(self._start(request, status, state["headers"], len(out)))
            await send({"type": "http.response.body", "body": out, "more_body": False})

        await self.inner(request.scope_with_headers(), inner_receive, inner_send)

    def _start(self, request: _Request, status: int, headers: dict[str, str],
               length: int | None) -> ASGIMessage:
        out = {k: v for k, v in headers.items() if k != "content-length"}
        if length is not None:
            out["content-length"] = str(length)
        session = out.get("mcp-session-id")
        if session and self.on("session-id-bad"):
            shown = session[:8] + " " + session[8:]
            self.sessions[shown] = session
            out["mcp-session-id"] = shown
        if self.on("session-id-minted") and request.modern:
            out["mcp-session-id"] = "minted-by-a-broken-server"
        return {"type": "http.response.start", "status": status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out.items()]}

    # -- requests ------------------------------------------------------------------------
    def _before(self, request: _Request) -> tuple[int, bytes, dict[str, str]] | None:
        """Rewrite the request in place, or answer it directly."""
        headers, params, http_method = request.headers, request.params, request.scope["method"]
        session = headers.get("mcp-session-id")
        if session and session in self.sessions:
            headers["mcp-session-id"] = self.sessions[session]
            session = headers["mcp-session-id"]
        if self.on("origin-unchecked"):
            headers.pop("origin", None)
        if self.on("host-unchecked"):
            headers["host"] = "127.0.0.1"
            headers.pop("origin", None)
        if self.on("host-only-unchecked"):
            headers["host"] = "127.0.0.1"
        if len(request.body) > 4 * 1024 * 1024 and self.on("no-body-limit"):
            self._unpad(request)
        if http_method == "GET" and not session and self.on("get-200"):
            return 200, b"ok", {"content-type": "text/plain"}
        if http_method == "GET" and session and self.on("get-stream-json"):
            return 200, b"{}", {"content-type": "application/json"}
        if http_method == "DELETE" and session and self.on("delete-ignored"):
            return 200, b"", {}
        if http_method == "DELETE" and session and self.on("delete-500"):
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        if len(request.body) > 4 * 1024 * 1024 and self.on("big-body-500"):
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        if request.body.count(b"[") > 1000 and self.on("nesting-500"):
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        ctype = headers.get("content-type", "")
        if http_method == "POST" and ctype and "json" not in ctype and self.on("content-type-500"):
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        if http_method == "POST" and request.json is None and request.body and self.on(
                "parse-error-500"):
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        message = request.message
        if not message:
            return None
        if self.on("null-id-crash") and "id" in message and message["id"] is None:
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        if self.on("header-crash") and "mcp-method" in headers and "method" in message and \
                headers["mcp-method"] != message["method"]:
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        if self.on("invalid-request-accepted") and message.get("jsonrpc") != "2.0":
            message["jsonrpc"] = "2.0"
            request.set_json(message)
        if "method" in message and "id" not in message:
            if self.on("notification-needs-method") and "mcp-method" not in headers:
                return 400, b"", {}
            if self.on("initialized-200") and request.method == "notifications/initialized":
                return 200, json.dumps({"jsonrpc": "2.0", "result": {}}).encode(), {
                    "content-type": "application/json"}
            return None
        if not session and not request.modern and request.method not in ("initialize", "") \
                and self.on("no-session-ok") and "2025" in headers.get(
                    "mcp-protocol-version", ""):
            return 200, json.dumps({"jsonrpc": "2.0", "id": message.get("id"),
                                    "result": {"tools": []}}).encode(), {
                "content-type": "application/json"}
        if request.method == "subscriptions/listen" and self.on("listen-unsupported"):
            return 200, json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": {
                "code": -32601, "message": "Method not found"}}).encode(), {
                "content-type": "application/json"}
        if request.method == "tools/call" and self.scratch is not None and params.get(
                "name") == FILE_TOOL["name"]:
            return self._file_tool(message.get("id"), params.get("arguments"))
        if request.method == "tools/call" and not isinstance(params.get("arguments", {}), dict) \
                and self.on("crash-on-bad-arguments"):
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        if request.method == "initialize" and self.on("legacy-fallback-modern") and params.get(
                "protocolVersion") not in ("2025-11-25", "2025-06-18", "2025-03-26"):
            return 200, json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {
                "protocolVersion": "2026-07-28", "capabilities": {},
                "serverInfo": {"name": "broken", "version": "0"}}}).encode(), {
                "content-type": "application/json"}
        if request.method == "resources/read" and "etc/passwd" in str(params.get("uri")) \
                and self.on("path-traversal"):
            return 200, json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private", "contents": [
                    {"uri": params.get("uri"), "text": "root:x:0:0:root:/root:/bin/bash"}]}}
            ).encode(), {"content-type": "application/json"}
        answers = params.get("inputResponses", {})
        if request.method == "tools/call" and self.on("elicitation-unvalidated"):
            self._make_answers_fit(str(params.get("name")), answers)
        if request.method == "tools/call" and self.on("state-readable"):
            sealed = _unwrap_state(params.get("requestState"))
            if sealed is not None:
                params["requestState"] = sealed
        if request.method == "tools/call" and "inputResponses" in params:
            if self.on("extra-keys-rejected") and isinstance(answers, dict) and (
                    "unknown_extra_key" in answers):
                return 200, json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": {
                    "code": -32602, "message": "Unknown inputResponses key"}}).encode(), {
                    "content-type": "application/json"}
            if self.on("input-not-validated") and not (isinstance(answers, dict) and all(
                    isinstance(v, dict) for v in answers.values())):
                params["inputResponses"] = {"user_name": {"action": "accept",
                                                          "content": {"name": "Alice"}}}
        meta_block = params.get("_meta")
        if isinstance(meta_block, dict):
            if self.on("logs-always") and request.method == "tools/call":
                meta_block.setdefault("io.modelcontextprotocol/logLevel", "debug")
            if self.on("ignore-capabilities") or self.on("capabilities-assumed"):
                meta_block["io.modelcontextprotocol/clientCapabilities"] = {
                    "sampling": {}, "elicitation": {}, "roots": {}}
        if request.method == "subscriptions/listen" and self.on("listen-filter-ignored"):
            params["notifications"] = {"toolsListChanged": True, "promptsListChanged": True,
                                       "resourcesListChanged": True}
        if request.method == "resources/subscribe" and self.on("subscribe-unsupported"):
            return 200, json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": {
                "code": -32601, "message": "Method not found"}}).encode(), {
                "content-type": "application/json"}
        state = params.get("requestState")
        if request.method == "tools/call" and isinstance(state, str):
            tool = params.get("name")
            issued_for = self.states.get(state)
            latest = next((s for s, t in reversed(self.states.items()) if t == tool), None)
            if latest and ((issued_for is None and self.on("tampered-state-accepted")) or (
                    issued_for not in (None, tool) and self.on("state-reuse-accepted"))):
                params["requestState"] = latest
        meta = params.get("_meta")
        if isinstance(meta, dict):
            if self.on("require-client-info") and "io.modelcontextprotocol/clientInfo" not in meta:
                return 400, json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": {
                    "code": -32602, "message": "clientInfo is required"}}).encode(), {
                    "content-type": "application/json"}
            version = meta.get("io.modelcontextprotocol/protocolVersion")
            if self.on("legacy-version-in-meta") and version == "2025-11-25":
                meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
                headers["mcp-protocol-version"] = "2026-07-28"
        if self.on("meta-ignored") and "mcp-protocol-version" in headers and headers[
                "mcp-protocol-version"].startswith("2026"):
            block = params.setdefault("_meta", {})
            block.setdefault("io.modelcontextprotocol/protocolVersion", "2026-07-28")
            block.setdefault("io.modelcontextprotocol/clientCapabilities", {})
            message["params"] = params
        if self.on("ignore-header-mismatch") and request.modern:
            self._mirror_headers(request)
        if self.on("padded-header-refused") and headers.get("mcp-name", "") != headers.get(
                "mcp-name", "").strip():
            return 400, json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": {
                "code": -32020, "message": "Header mismatch: Mcp-Name"}}).encode(), {
                "content-type": "application/json"}
        if request.method.endswith("/list") and isinstance(params.get("cursor"), str):
            cursor = params["cursor"]
            if cursor.startswith("page:") and request.method == "tools/list":
                request.page = params.pop("cursor")  # our own pagination, see _tools
            elif self.on("invalid-cursor-accepted"):
                params.pop("cursor")
        request.set_json(message)
        return None

    def _mirror_headers(self, request: _Request) -> None:
        """Make every MCP header agree with the body, whatever the client sent."""
        headers, params = request.headers, request.params
        version = params.get("_meta", {}).get("io.modelcontextprotocol/protocolVersion")
        if isinstance(version, str):
            headers["mcp-protocol-version"] = version
        headers["mcp-method"] = request.method
        field = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(
            request.method)
        if field and isinstance(params.get(field), str):
            headers["mcp-name"] = _header_form(params[field])
        arguments = params.get("arguments")
        if request.method == "tools/call" and isinstance(arguments, dict):
            for key in [k for k in headers if k.startswith("mcp-param-")]:
                del headers[key]
            if isinstance(arguments.get("region"), str):
                headers["mcp-param-region"] = _header_form(arguments["region"])

    def _unpad(self, request: _Request) -> None:
        """``no-body-limit``: serve a huge body as if it were small (drop the big strings
        the server would have ignored anyway)."""
        meta = request.params.get("_meta")
        if isinstance(meta, dict):
            for key in [k for k, v in meta.items() if isinstance(v, str) and len(v) > 1 << 20]:
                del meta[key]
            request.set_json(request.json)
            request.headers["content-length"] = str(len(request.body))

    def _file_tool(self, request_id: Any, arguments: Any) -> tuple[int, bytes, dict[str, str]]:
        """``scratch_file``: confined to the scratch directory, unless
        ``file-path-traversal`` (joins the path as given) or ``file-tool-crash``."""
        assert self.scratch is not None
        if not isinstance(arguments, dict):
            return 200, json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32602, "message": "arguments must be an object"}}).encode(), {
                "content-type": "application/json"}
        path, action = arguments.get("path"), arguments.get("action")

        def answer(text: str, error: bool = False) -> tuple[int, bytes, dict[str, str]]:
            return 200, json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {
                "resultType": "complete", "isError": error,
                "content": [{"type": "text", "text": text}]}}).encode(), {
                "content-type": "application/json"}

        from jsonschema import Draft202012Validator

        if self.on("file-tool-crash") and not isinstance(path, str):
            return 500, b"Internal Server Error", {"content-type": "text/plain"}
        if not Draft202012Validator(FILE_TOOL["inputSchema"]).is_valid(arguments):
            return 200, json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32602, "message": "arguments do not match the inputSchema"}}
            ).encode(), {"content-type": "application/json"}
        target = self.scratch / path
        if not self.on("file-path-traversal"):
            target = target.resolve()
            if not target.is_relative_to(self.scratch):
                return answer(f"{path!r} is outside the scratch directory", error=True)
        try:
            if action == "read":
                return answer(target.read_text(encoding="utf-8", errors="replace")[:4096])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(str(arguments.get("content", "")), encoding="utf-8")
            return answer(f"wrote {len(str(arguments.get('content', '')))} characters")
        except OSError as exc:
            return answer(f"cannot {action} {path!r}: {exc.strerror}", error=True)

    def _make_answers_fit(self, tool: str, answers: Any) -> None:
        """``elicitation-unvalidated``: accept whatever the user typed, by swapping a
        non-conforming form answer for one that fits (the engine underneath validates)."""
        from jsonschema import Draft202012Validator

        from mcpcore.conformance.schema_values import example_arguments

        if not isinstance(answers, dict):
            return
        for key, schema in self.forms.get(tool, {}).items():
            answer = answers.get(key)
            if not isinstance(answer, dict) or answer.get("action") != "accept":
                continue
            content = answer.get("content")
            if not Draft202012Validator(schema).is_valid(content):
                answer["content"] = example_arguments(schema) or {}

    # -- responses -----------------------------------------------------------------------
    def _sse(self, request: _Request, chunk: bytes) -> bytes:
        def fix(match: re.Match[bytes]) -> bytes:
            try:
                message = json.loads(match.group(1))
            except ValueError:
                return match.group(0)
            if self.on("notifications-dropped") and message.get("method") in (
                    "notifications/progress", "notifications/message"):
                return b": dropped"
            out = b"data: " + json.dumps(self._message(request, message)).encode()
            if message.get("method") == "notifications/subscriptions/acknowledged" and \
                    self.on("listen-unsolicited"):
                tag = {SUBSCRIPTION_ID: message.get("params", {}).get("_meta", {}).get(
                    SUBSCRIPTION_ID)}
                for extra in ({"method": "notifications/tools/list_changed",
                               "params": {"_meta": tag}},
                              {"method": "notifications/message", "params": {
                                  "level": "info", "logger": "broken", "data": "hello, listener",
                                  "_meta": tag}}):
                    out += b"\n\ndata: " + json.dumps({"jsonrpc": "2.0", **extra}).encode()
            return out

        return re.sub(rb"data: (.+)", fix, chunk)

    def _json(self, request: _Request, status: int, body: bytes) -> tuple[int, bytes]:
        if self.on("unknown-session-400") and status == 404:
            status = 400
        try:
            message = json.loads(body) if body else None
        except ValueError:
            return status, body
        if not isinstance(message, dict):
            return status, body
        message = self._message(request, message)
        result = message.get("result")
        if isinstance(result, dict) and request.method == "tools/call":
            if self.on("request-on-stream"):
                asked = {"jsonrpc": "2.0", "id": "server-1", "method": "elicitation/create",
                         "params": {"message": "?", "requestedSchema": {"type": "object"}}}
                return status, json.dumps([asked, message]).encode()
            if self.on("missing-response-error") and "inputResponses" in request.params and \
                    result.get("resultType") == "input_required":
                message = {"jsonrpc": "2.0", "id": message.get("id"), "error": {
                    "code": -32602, "message": "Missing input response"}}
        error = message.get("error")
        if isinstance(error, dict):
            if self.on("wrong-codes") and error.get("code") == -32601 and request.modern:
                error["code"] = -32600
                status = 400
            if self.on("missing-resource-empty") and request.method == "resources/read" \
                    and error.get("code") == -32602:
                message = {"jsonrpc": "2.0", "id": message.get("id"), "result": {
                    "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "contents": []}}
            elif self.on("unknown-prompt-ok") and request.method == "prompts/get":
                message = {"jsonrpc": "2.0", "id": message.get("id"), "result": {
                    "resultType": "complete", "messages": []}}
            elif self.on("unknown-tool-internal") and request.method == "tools/call" and \
                    "nknown tool" in str(error.get("message")):
                error["code"] = -32603
        return status, json.dumps(message).encode()

    def _message(self, request: _Request, message: dict[str, Any]) -> dict[str, Any]:
        method = request.method
        error = message.get("error")
        if isinstance(error, dict):
            if self.on("version-wrong-code") and error.get("code") == -32022:
                error["code"] = -32600
            if self.on("capability-error-shape") and error.get("code") == -32021:
                error["data"] = {"requiredCapabilities": ["sampling"]}
            if self.on("stack-traces"):
                error["message"] = f"{error.get('message')}\n{TRACEBACK}"
            if self.on("error-id-dropped"):
                message.pop("id", None)
            return message
        if message.get("method") == "notifications/subscriptions/acknowledged" and self.on(
                "ack-everything"):
            message["params"]["notifications"] = {**request.params.get("notifications", {}),
                                                  "promptsListChanged": True,
                                                  "everythingElse": True}
        if message.get("method") == "notifications/subscriptions/acknowledged" and self.on(
                "ack-id-stringified"):
            meta = message["params"].setdefault("_meta", {})
            meta[SUBSCRIPTION_ID] = str(meta.get(SUBSCRIPTION_ID))
        result = message.get("result")
        if not isinstance(result, dict):
            return message
        if self.on("missing-result-type"):
            result.pop("resultType", None)
        if self.on("no-server-info"):
            result.get("_meta", {}).pop("io.modelcontextprotocol/serverInfo", None)
        if method == "server/discover":
            if self.on("discover-no-versions"):
                result.pop("supportedVersions", None)
            if self.on("undeclared-prompts"):
                result.get("capabilities", {}).pop("prompts", None)
            if self.on("schema-invalid"):
                result.setdefault("capabilities", {})["completions"] = []
        if method in ("server/discover", "tools/list", "prompts/list", "resources/list",
                      "resources/templates/list", "resources/read") and self.on("no-cache-hints"):
            result.pop("ttlMs", None)
        if method == "tools/list":
            self._tools(request, result)
        if method == "tools/call" and isinstance(result.get("requestState"), str):
            tool = str(request.params.get("name"))
            first = self.first_state.setdefault(tool, result["requestState"])
            if self.on("state-not-rotated"):
                result["requestState"] = first
            self.states[result["requestState"]] = tool
            if self.on("state-readable"):
                result["requestState"] = _wrap_state(tool, result["requestState"])
        if method == "tools/call" and isinstance(result.get("inputRequests"), dict):
            # (the forms are noted whatever resultType says: missing-result-type may
            # have removed it already)
            for key, asked in result["inputRequests"].items():
                schema = (asked.get("params") or {}).get("requestedSchema")
                if asked.get("method") == "elicitation/create" and isinstance(schema, dict):
                    self.forms.setdefault(str(request.params.get("name")), {})[key] = schema
            if self.on("input-required-as-complete"):
                result["resultType"] = "complete"
        if method == "resources/read" and self.on("contents-stripped"):
            result["contents"] = [{"uri": c.get("uri")} for c in result.get("contents", [])]
        if method == "prompts/get" and self.on("prompt-messages-empty"):
            result["messages"] = []
        if method == "completion/complete" and self.on("completion-missing"):
            result.pop("completion", None)
        if method == "tools/list" and self.on("schema-keywords-dropped"):
            for tool_def in result.get("tools", []):
                for key in ("allOf", "if", "then", "else"):
                    tool_def.get("inputSchema", {}).pop(key, None)
        if method == "logging/setLevel" and self.on("setlevel-nonempty"):
            result["ok"] = True
        if method == "tools/call" and self.on("tool-result-no-content"):
            result.pop("content", None)
        if method == "resources/read" and self.on("blob-not-base64"):
            for entry in result.get("contents", []):
                if "blob" in entry:
                    entry["blob"] = "%%% not base64 %%%"
        if method == "resources/templates/list" and self.on("bad-template"):
            for entry in result.get("resourceTemplates", []):
                entry["uriTemplate"] = entry["uriTemplate"].replace("}", "", 1)
        if method == "prompts/get" and self.on("prompt-bad-role"):
            for entry in result.get("messages", []):
                entry["role"] = "system"
        if method == "completion/complete" and self.on("completion-too-many"):
            result["completion"] = {"values": [f"v{i}" for i in range(101)]}
        if method == "initialize" and self.on("legacy-wrong-version"):
            result["protocolVersion"] = "2025-06-18"
        if method == "ping" and self.on("ping-nonempty"):
            result["ok"] = True
        if method == "tools/list" and not request.modern and self.on("legacy-tools-broken"):
            result["tools"] = "none"
        return message

    def _tools(self, request: _Request, result: dict[str, Any]) -> None:
        tools = result.get("tools")
        if not isinstance(tools, list) or not request.modern:
            return
        self.calls += 1
        by_name = {t.get("name"): t for t in tools}
        first = tools[0] if tools else {}
        if self.on("tool-schema-not-object") and first:
            first["inputSchema"] = {"type": "array"}
        if self.on("invalid-input-schema") and first:
            first["inputSchema"] = {"type": "object", "properties": "none"}
        if self.on("bad-tool-name") and first:
            first["name"] = "bad name, with spaces!"
        if self.on("bad-x-mcp-header") and "test_custom_header" in by_name:
            by_name["test_custom_header"]["inputSchema"]["properties"]["region"][
                "x-mcp-header"] = "Re gion"
        if self.on("annotation-types") and first:
            first.setdefault("annotations", {})["readOnlyHint"] = "yes"
        if self.on("capabilities-assumed"):
            for name in ASKING_TOOLS:
                by_name.get(name, {}).get("annotations", {}).pop("readOnlyHint", None)
        if self.scratch is not None and not request.page and not result.get("nextCursor"):
            tools.append(dict(FILE_TOOL))
        paged = self.on("page-scope-varies") or self.on("page-duplicates")
        if paged:
            start = int(request.page.split(":")[1]) if request.page else 0
            step = PAGE - 1 if self.on("page-duplicates") else PAGE
            result["tools"] = tools[start:start + PAGE]
            if start + PAGE < len(tools):
                result["nextCursor"] = f"page:{start + step}"
            if start and self.on("page-scope-varies"):
                result["cacheScope"] = "private" if result.get("cacheScope") == "public" \
                    else "public"
        if self.on("shuffle-tools"):
            # Rotate each answer by the call count: a page keeps its tools (paginating
            # still works) but their order changes on every call, so two listings differ
            # unless a whole page's worth of other listings happened in between. (An
            # order alternating with the count's parity could repeat for one check when
            # other checks listed in between.)
            page = result["tools"]
            if len(page) > 1:
                turn = self.calls % len(page)
                result["tools"] = page[turn:] + page[:turn]


def _wrap_state(tool: str, sealed: str) -> str:
    """``state-readable``: the state a careless server would issue, readable and editable
    (the engine's sealed state rides inside, so the flow still works)."""
    payload = {"tool": tool, "user": "alice", "role": "viewer", "sealed": sealed}
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()


def _unwrap_state(state: Any) -> str | None:
    """The sealed state inside a ``_wrap_state`` value (``None`` if it is not one)."""
    if not isinstance(state, str):
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(state + "=" * (-len(state) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    sealed = payload.get("sealed") if isinstance(payload, dict) else None
    return sealed if isinstance(sealed, str) else None


async def _reply(send: Send, status: int, body: bytes,
                 headers: dict[str, str]) -> None:
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


#: Defects of the protected server (``broken_auth``), name → what is wrong.
AUTH_DEFECTS: dict[str, str] = {
    "no-prm": "no Protected Resource Metadata, and challenges do not point at any",
    "challenge-error-without-token": "a request without a token gets error=invalid_token",
    "tools-open": "requests without a token are served",
    "accept-garbage": "an opaque garbage token is accepted",
    "accept-alg-none": "alg: none tokens are accepted",
    "accept-hs256": "HS256 tokens are accepted (key confusion)",
    "accept-self-signed": "any RS256 signature is accepted when the kid is known",
    "accept-unknown-kid": "tokens with an unknown kid are accepted",
    "fetch-jku": "keys are fetched from the token's jku/x5u URL and trusted",
    "accept-expired": "expired tokens are accepted",
    "accept-wrong-audience": "tokens for another resource are accepted",
    "query-token": "access_token in the query string is honoured",
    "trust-token-issuer": "keys are discovered from the token's own iss (any issuer with "
                          "metadata and a JWKS is trusted)",
}


class BrokenAuth:
    """In front of a protected app: turns a bad token into a good one, the way a server
    whose validation is broken would let it through (``mint`` makes the good one)."""

    def __init__(self, inner: ASGIApp, defects: Iterable[str], mint: Callable[[], str],
                 kids: Iterable[str], resource: str) -> None:
        self.inner, self.defects, self.mint = inner, set(defects), mint
        self.kids, self.resource = set(kids), resource
        unknown = self.defects - set(AUTH_DEFECTS)
        if unknown:
            raise ValueError(f"unknown defects {sorted(unknown)}")

    def _accept(self, token: str) -> bool:
        import time

        import jwt

        try:
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            return "accept-garbage" in self.defects
        alg, kid = header.get("alg"), header.get("kid")
        aud = claims.get("aud")
        checks = {
            "accept-alg-none": alg == "none",
            "accept-hs256": alg == "HS256",
            "accept-self-signed": alg == "RS256" and kid in self.kids,
            "accept-unknown-kid": kid is not None and kid not in self.kids and not (
                "jku" in header or "x5u" in header),
            "accept-expired": isinstance(claims.get("exp"), int) and claims["exp"] < time.time(),
            "accept-wrong-audience": aud != self.resource and aud is not None,
        }
        return any(self.defects & {name} and hit for name, hit in checks.items())

    async def _foreign_issuer_valid(self, token: str) -> bool:
        """``trust-token-issuer``: multi-tenant style validation gone wrong: fetch the
        metadata of whatever issuer the token names and verify against its JWKS."""
        import httpx
        import jwt

        try:
            header = jwt.get_unverified_header(token)
            issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        except jwt.PyJWTError:
            return False
        if not isinstance(issuer, str) or header.get("kid") in self.kids:
            return False
        try:
            async with httpx.AsyncClient(timeout=5) as client:
                meta = (await client.get(
                    f"{issuer}/.well-known/oauth-authorization-server")).json()
                keys = (await client.get(meta["jwks_uri"])).json()
            key = next(k for k in keys["keys"] if k.get("kid") == header.get("kid"))
            jwt.decode(token, jwt.PyJWK(key).key, algorithms=["RS256"], audience=self.resource)
        except (httpx.HTTPError, ValueError, KeyError, StopIteration, jwt.PyJWTError):
            return False
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        path = scope.get("path", "")
        if "no-prm" in self.defects and path.startswith("/.well-known/oauth-protected"):
            await _reply(send, 404, b"Not Found", {"content-type": "text/plain"})
            return
        headers = dict(scope.get("headers", []))
        auth = headers.get(b"authorization", b"").decode("latin-1")
        token = auth[7:] if auth.lower().startswith("bearer ") else None
        query = scope.get("query_string", b"").decode("latin-1")
        if token is None and "query-token" in self.defects and "access_token=" in query:
            token = query.split("access_token=", 1)[1].split("&")[0]
            scope = {**scope, "query_string": b""}
            headers[b"authorization"] = f"Bearer {token}".encode()
        if token is not None and "fetch-jku" in self.defects:
            import httpx
            import jwt

            try:
                url = jwt.get_unverified_header(token).get("jku") or jwt.get_unverified_header(
                    token).get("x5u")
            except jwt.PyJWTError:
                url = None
            if url:
                async with httpx.AsyncClient() as client:
                    await client.get(url)  # the SSRF itself
                token = "ACCEPT"
        if token is not None and "trust-token-issuer" in self.defects and \
                await self._foreign_issuer_valid(token):
            token = "ACCEPT"
        if (token is None and "tools-open" in self.defects) or (
                token is not None and (token == "ACCEPT" or self._accept(token))):
            headers[b"authorization"] = f"Bearer {self.mint()}".encode()
        scope = {**scope, "headers": list(headers.items())}

        async def patched(message: ASGIMessage) -> None:
            if message["type"] == "http.response.start":
                raw = [(k, v) for k, v in message.get("headers", [])]
                out = []
                for key, value in raw:
                    if key.lower() == b"www-authenticate":
                        text = value.decode("latin-1")
                        if "no-prm" in self.defects:
                            text = re.sub(r',?\s*resource_metadata="[^"]*"', "", text)
                        if "challenge-error-without-token" in self.defects and token is None:
                            text += ', error="invalid_token"'
                        value = text.encode("latin-1")
                    out.append((key, value))
                message = {**message, "headers": out}
            await send(message)

        await self.inner(scope, receive, patched)


def broken_app(defects: Iterable[str] = DEFECTS, inner: ASGIApp | None = None,
               scratch: str | Path | None = None) -> BrokenServer:
    """``examples.everything`` (or ``inner``) with ``defects`` planted (and, given a
    ``scratch`` directory, the ``scratch_file`` tool working in it)."""
    if inner is None:
        from examples.everything import app as everything

        inner = everything
    return BrokenServer(inner, defects, scratch)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="Serve the deliberately broken MCP server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--defects", default="all",
                        help="comma-separated defect names, or 'all' (default)")
    args = parser.parse_args()
    chosen = DEFECTS if args.defects == "all" else args.defects.split(",")
    uvicorn.run(broken_app(chosen), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
