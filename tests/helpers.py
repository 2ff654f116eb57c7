"""Shared test doubles for the engine and transport tests.

- ``SchemaChecker``: validates every JSON-RPC message our server sends against the
  2026-07-28 ``schema.json``, discriminating results on the request method and
  ``resultType`` first (trap T7: ``InputRequiredResult`` accepts almost anything).
- ``Peer`` and its three transports (``DirectPeer`` calls ``Server.handle``; ``HttpPeer``
  posts to the ASGI app through httpx in-process; ``StdioPeer`` talks to a real
  ``python -m examples.everything --stdio`` subprocess). Every message a peer receives
  goes through the checker, so no test can forget it.
- ``AsgiCall``: drives an ASGI app by hand for long-lived streams (``subscriptions/listen``)
  that httpx's ``ASGITransport`` cannot deliver incrementally, and for disconnects.
- ``SseParser``: a sans-I/O ``text/event-stream`` framer for response bodies.
"""

from __future__ import annotations

import abc
import asyncio
import base64
import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from mcpcore import jsonrpc
from mcpcore.errors import McpError
from mcpcore.server import Server

ROOT = Path(__file__).resolve().parent.parent
#: The official schema, shipped with ``mcpcore.conformance`` (provenance in its README).
SCHEMA_PATH = ROOT / "conformance" / "schemas" / "2026-07-28.json"

MODERN = "2026-07-28"
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

#: What a well-equipped client declares (the conformance harness default).
FULL_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
CLIENT = {"name": "mcpcore-tests", "version": "1.0.0"}

#: ``x-mcp-header`` arguments of the fixture tools: tool → {argument: header suffix}.
HEADER_PARAMS: dict[str, dict[str, str]] = {"test_custom_header": {"region": "Region"}}


def make_meta(caps: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A valid request ``_meta``; ``extra`` adds or overrides keys (None removes)."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION: MODERN,
        CLIENT_CAPABILITIES: dict(FULL_CAPS if caps is None else caps),
        CLIENT_INFO: CLIENT,
    }
    for key, value in extra.items():
        key = {"log_level": LOG_LEVEL, "progress_token": "progressToken",
               "version": PROTOCOL_VERSION}.get(key, key)
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    return meta


def sentinel(value: str) -> str:
    """The Base64 sentinel form of a header value (R5.14)."""
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def header_value(value: str) -> str:
    plain = value.isascii() and value.isprintable() and value == value.strip()
    return value if plain and not value.startswith("=?base64?") else sentinel(value)


def standard_headers(method: str, params: Mapping[str, Any] | None) -> dict[str, str]:
    """The headers a conforming client sends for this body (R5.11, R5.18)."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Mcp-Method": header_value(method),
    }
    params = params or {}
    meta = params.get("_meta")
    version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
    headers["MCP-Protocol-Version"] = header_value(version) if isinstance(version, str) else MODERN
    name = params.get("uri" if method == "resources/read" else "name")
    if method in ("tools/call", "prompts/get", "resources/read") and isinstance(name, str):
        headers["Mcp-Name"] = header_value(name)
    arguments = params.get("arguments")
    if method == "tools/call" and isinstance(arguments, dict):
        for arg, suffix in HEADER_PARAMS.get(str(name), {}).items():
            value = arguments.get(arg)
            if isinstance(value, str):
                headers[f"Mcp-Param-{suffix}"] = header_value(value)
    return headers


# -- schema ------------------------------------------------------------------------------

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
#: Only these may answer ``input_required`` (R7.1).
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
                # R1.10: only codes the spec defines in the reserved range.
                raise SchemaViolation(f"undefined reserved error code {code}")
            return
        self.validate("JSONRPCResultResponse", message)
        result = message["result"]
        if method is None:
            raise SchemaViolation("a result whose request method is unknown cannot be checked")
        if result.get("resultType") == "input_required":
            if method not in MRTR_METHODS:
                raise SchemaViolation(f"{method} answered input_required (R7.1)")
            self.validate("InputRequiredResult", result)
            if "inputRequests" not in result and "requestState" not in result:
                raise SchemaViolation("input_required without inputRequests or requestState")
            if "ttlMs" in result or "cacheScope" in result:
                raise SchemaViolation("input_required carries cache hints (T15)")
            return
        if result.get("resultType") != "complete":
            raise SchemaViolation(f"unexpected resultType in {result!r}")
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


# -- SSE framing ---------------------------------------------------------------------------

class SseParser:
    """Feed ``text/event-stream`` bytes, get the ``data`` of each complete event."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
        self.comments = 0

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk
        out: list[str] = []
        while True:
            cut = self._buffer.find(b"\n")
            if cut == -1:
                return out
            line, self._buffer = self._buffer[:cut].rstrip(b"\r"), self._buffer[cut + 1:]
            if not line:
                if self._data:
                    out.append(b"\n".join(self._data).decode("utf-8"))
                    self._data = []
            elif line.startswith(b":"):
                self.comments += 1
            else:
                name, _, value = line.partition(b":")
                if name == b"data":
                    self._data.append(value[1:] if value.startswith(b" ") else value)

    @property
    def pending(self) -> bool:
        return bool(self._buffer or self._data)


# -- peers -------------------------------------------------------------------------------

@dataclass
class Reply:
    """What one request produced: notifications on its stream, then the response."""

    messages: list[dict[str, Any]]
    response: dict[str, Any]
    status: int | None = None
    content_type: str | None = None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.messages, self.response))

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.response, f"expected a result, got {self.response}"
        result: dict[str, Any] = self.response["result"]
        return result

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.response, f"expected an error, got {self.response}"
        error: dict[str, Any] = self.response["error"]
        return error

    @property
    def code(self) -> int | None:
        error = self.response.get("error")
        return error["code"] if isinstance(error, dict) else None

    def methods(self) -> list[str]:
        return [m["method"] for m in self.messages]


class Subscription:
    """An open ``subscriptions/listen`` stream, whatever the transport."""

    def __init__(self, listen_id: Any, close: Callable[[], Any]) -> None:
        self.id = listen_id
        self.received: list[dict[str, Any]] = []
        self._close = close
        self._cursor = 0
        self.refresh: Callable[[], None] = lambda: None

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            self.refresh()
            if self._cursor < len(self.received):
                self._cursor += 1
                return self.received[self._cursor - 1]
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing more on listen stream {self.id!r}")
            await asyncio.sleep(0.002)

    async def close(self) -> None:
        result = self._close()
        if asyncio.iscoroutine(result):
            await result


class Peer(abc.ABC):
    """A client of the engine over one transport.

    ``await peer.request(method, params)`` adds ``_meta`` (``meta=`` overrides it,
    ``raw=True`` sends ``params`` untouched) and returns a ``Reply``.
    """

    name = "peer"
    has_headers = False

    def __init__(self) -> None:
        self.checker = schema_checker()
        self._ids = 0

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def build(self, method: str, params: Mapping[str, Any] | None, *, meta: Any = None,
              raw: bool = False, id: Any = None) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id() if id is None else id,
                                "method": method}
        if raw:
            if params is not None:
                body["params"] = params
        else:
            body["params"] = {**(params or {}), "_meta": make_meta() if meta is None else meta}
        return body

    async def request(self, method: str, params: Mapping[str, Any] | None = None, *,
                      meta: Any = None, headers: Mapping[str, str | None] | None = None,
                      raw: bool = False, id: Any = None) -> Reply:
        body = self.build(method, params, meta=meta, raw=raw, id=id)
        reply = await self.send(body, headers=headers)
        if "id" in reply.response:
            assert reply.response["id"] == body["id"]
            assert type(reply.response["id"]) is type(body["id"])
        return reply

    @abc.abstractmethod
    async def send(self, body: dict[str, Any], *,
                   headers: Mapping[str, str | None] | None = None) -> Reply:
        """Deliver one message over this peer's transport and collect the reply."""

    @abc.abstractmethod
    def listen(self, notifications: Mapping[str, Any], *, id: Any = None,
               meta: Any = None) -> contextlib.AbstractAsyncContextManager[Subscription]:
        """Open a subscriptions/listen stream."""

    def check(self, message: dict[str, Any], method: str | None) -> dict[str, Any]:
        self.checker.check(message, method)
        return message


class DirectPeer(Peer):
    """``Server.handle`` called directly, errors encoded as the transports do."""

    name = "direct"

    def __init__(self, server: Server) -> None:
        super().__init__()
        self.server = server

    async def send(self, body: dict[str, Any], *,
                   headers: Mapping[str, str | None] | None = None) -> Reply:
        messages: list[dict[str, Any]] = []

        async def sink(data: bytes) -> None:
            messages.append(self.check(json.loads(data), None))

        payload = await self._serve(json.dumps(body).encode(), sink)
        response = self.check(json.loads(payload), body.get("method"))
        return Reply(messages, response)

    async def _serve(self, raw: bytes, sink: Callable[[bytes], Any]) -> bytes:
        try:
            message = jsonrpc.decode_message(raw)
        except McpError as exc:
            return jsonrpc.encode_error(jsonrpc.peek_id(raw), exc)
        assert isinstance(message, jsonrpc.Request)
        try:
            result = await self.server.handle(message, sink=sink)
        except McpError as exc:
            return jsonrpc.encode_error(message.id, exc)
        return jsonrpc.encode_result(message.id, result)

    @contextlib.asynccontextmanager
    async def listen(self, notifications: Mapping[str, Any], *, id: Any = None,
                     meta: Any = None) -> AsyncIterator[Subscription]:
        body = self.build("subscriptions/listen", {"notifications": dict(notifications)},
                          meta=meta, id=id)
        sub: Subscription

        async def sink(data: bytes) -> None:
            sub.received.append(self.check(json.loads(data), None))

        async def run() -> None:
            payload = await self._serve(json.dumps(body).encode(), sink)
            sub.received.append(self.check(json.loads(payload), "subscriptions/listen"))

        task = asyncio.ensure_future(run())

        async def close() -> None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        sub = Subscription(body["id"], close)
        try:
            yield sub
        finally:
            await close()


class HttpPeer(Peer):
    """POSTs to the ASGI app in-process (httpx ``ASGITransport``) with standard headers."""

    name = "http"
    has_headers = True

    def __init__(self, app: Any, path: str = "/mcp") -> None:
        super().__init__()
        self.app = app
        self.path = path

    def headers_for(self, body: Mapping[str, Any],
                    overrides: Mapping[str, str | None] | None) -> dict[str, str]:
        params = body.get("params")
        headers = standard_headers(str(body.get("method")),
                                   params if isinstance(params, dict) else None)
        lowered = {k.lower(): k for k in headers}
        for key, value in (overrides or {}).items():
            headers.pop(lowered.get(key.lower(), key), None)
            if value is not None:
                headers[key] = value
        return headers

    async def post(self, content: bytes, headers: Mapping[str, str], *,
                   method: str = "POST") -> httpx.Response:
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.request(method, self.path, content=content, headers=dict(headers))

    async def send(self, body: dict[str, Any], *,
                   headers: Mapping[str, str | None] | None = None) -> Reply:
        response = await self.post(json.dumps(body).encode(), self.headers_for(body, headers))
        return parse_http_reply(response, self.checker, body.get("method"))

    @contextlib.asynccontextmanager
    async def listen(self, notifications: Mapping[str, Any], *, id: Any = None,
                     meta: Any = None) -> AsyncIterator[Subscription]:
        body = self.build("subscriptions/listen", {"notifications": dict(notifications)},
                          meta=meta, id=id)
        call = AsgiCall(self.app, "POST", self.path, self.headers_for(body, None),
                        json.dumps(body).encode())
        call.start()
        sub = Subscription(body["id"], call.disconnect)

        def refresh() -> None:
            while len(sub.received) < len(call.events):
                message = json.loads(call.events[len(sub.received)])
                method = None if "method" in message else "subscriptions/listen"
                sub.received.append(self.check(message, method))

        sub.refresh = refresh
        try:
            yield sub
            assert call.status == 200
            assert call.header("content-type") == "text/event-stream"
        finally:
            await call.disconnect()


def parse_http_reply(response: httpx.Response, checker: SchemaChecker,
                     method: str | None) -> Reply:
    """Split an HTTP answer into notifications and the final response, all checked."""
    ctype = response.headers.get("content-type", "")
    assert response.status_code != 500, response.text
    if response.status_code == 202:
        assert response.content == b""
        return Reply([], {}, 202, ctype or None)
    if ctype.startswith("text/event-stream"):
        assert response.status_code == 200
        parser = SseParser()
        events = [json.loads(e) for e in parser.feed(response.content)]
        assert not parser.pending, "SSE body ends mid-event"
        assert events, "empty SSE stream"
        *messages, final = events
        for m in messages:
            checker.check(m, None)
            assert "method" in m, f"response before the end of the stream: {m}"
        checker.check(final, method)
        return Reply(messages, final, 200, ctype)
    assert ctype.startswith("application/json"), (response.status_code, ctype, response.text)
    final = response.json()
    checker.check(final, method)
    return Reply([], final, response.status_code, ctype)


class AsgiCall:
    """One HTTP exchange with an ASGI app, by hand: body in, messages out as they come,
    and a client disconnect on demand (which httpx's ``ASGITransport`` cannot do)."""

    def __init__(self, app: Any, method: str, path: str, headers: Mapping[str, str],
                 body: bytes) -> None:
        self.app = app
        self.scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": b"", "root_path": "",
            "headers": [(b"host", b"localhost")] + [
                (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()
            ],
            "client": ("127.0.0.1", 50000), "server": ("localhost", 80),
        }
        self.body = body
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            parsed = None
        self.method = parsed.get("method") if isinstance(parsed, dict) else None
        self.status: int | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.events: list[str] = []
        self.complete = False
        self._parser = SseParser()
        self._sent_body = False
        self._gone = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.ensure_future(self.app(self.scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        if not self._sent_body:
            self._sent_body = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if self._gone.is_set():
            raise OSError("client disconnected")
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            self.chunks.append(chunk)
            self.events.extend(self._parser.feed(chunk))
            if not message.get("more_body", False):
                self.complete = True

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.decode("latin-1").lower() == name:
                return value.decode("latin-1")
        return None

    async def disconnect(self, timeout: float = 5.0) -> None:
        self._gone.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, timeout)
        self.messages()

    async def run(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Start, wait for the app to finish, and return the checked messages."""
        self.start()
        assert self.task is not None
        await asyncio.wait_for(self.task, timeout)
        return self.messages()

    def messages(self) -> list[dict[str, Any]]:
        """Every JSON-RPC message received so far, each schema-checked."""
        ctype = self.header("content-type") or ""
        if ctype.startswith("text/event-stream"):
            out = [json.loads(e) for e in self.events]
        elif ctype.startswith("application/json") and self.complete:
            out = [json.loads(b"".join(self.chunks))]
        else:
            return []
        checker = schema_checker()
        for message in out:
            checker.check(message, None if "method" in message else self.method)
        return out

    async def wait_events(self, n: int, timeout: float = 5.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.events) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self.events)} SSE events arrived")
            await asyncio.sleep(0.002)
        return self.events


# -- stdio ---------------------------------------------------------------------------------

def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


class StdioProcess:
    """``python -m examples.everything --stdio`` with a thread reading its stdout.

    Every stdout line is kept in ``lines``; one that is not a JSON object is recorded in
    ``garbage`` (R6.1: nothing but MCP messages on stdout). Loop-agnostic: the async
    side polls, so one process can serve tests running on different event loops.
    """

    def __init__(self, module: str = "examples.everything") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "--stdio"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=ROOT, env=subprocess_env(),
        )
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.lines: list[bytes] = []
        self.garbage: list[bytes] = []
        self.stderr = bytearray()
        self._lock = threading.Lock()
        self._ids = 0
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()

    def next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                self.garbage.append(line)
                continue
            if not isinstance(message, dict) or not line.endswith(b"\n"):
                self.garbage.append(line)
                continue
            self.inbox.put(message)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.extend(line)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def drain(self) -> list[dict[str, Any]]:
        out = []
        while True:
            try:
                out.append(self.inbox.get_nowait())
            except queue.Empty:
                return out

    def close(self, timeout: float = 5.0) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(timeout)
        self._out.join(timeout)
        self._err.join(timeout)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


def _key(value: Any) -> tuple[str, Any]:
    """Ids compare with their JSON type: ``1`` and ``"1"`` are different ids."""
    return (type(value).__name__, value)


@dataclass
class _Pending:
    method: str
    token: Any
    messages: list[dict[str, Any]] = field(default_factory=list)
    response: dict[str, Any] | None = None


class StdioPeer(Peer):
    """Requests as stdin lines, answers demultiplexed from stdout lines."""

    name = "stdio"

    def __init__(self, process: StdioProcess, timeout: float = 10.0) -> None:
        super().__init__()
        self.process = process
        self.timeout = timeout
        self.pending: dict[tuple[str, Any], _Pending] = {}
        self.subscriptions: dict[tuple[str, Any], Subscription] = {}
        self.stray: list[dict[str, Any]] = []
        self.unmatched_responses: list[dict[str, Any]] = []

    def next_id(self) -> int:
        return self.process.next_id()

    def pump(self) -> None:
        for message in self.process.drain():
            if "method" in message:
                self._route_notification(message)
                continue
            key = _key(message.get("id"))
            pending = self.pending.get(key)
            if pending is None:
                sub = self.subscriptions.get(key)
                if sub is not None:
                    sub.received.append(self.check(message, "subscriptions/listen"))
                else:
                    if "error" in message:
                        self.check(message, None)
                    self.unmatched_responses.append(message)
                continue
            pending.response = self.check(message, pending.method)

    def _route_notification(self, message: dict[str, Any]) -> None:
        self.check(message, None)
        params = message.get("params") or {}
        meta = params.get("_meta") or {}
        if SUBSCRIPTION_ID in meta:
            sub = self.subscriptions.get(_key(meta[SUBSCRIPTION_ID]))
            if sub is None:
                self.stray.append(message)
            else:
                sub.received.append(message)
            return
        targets = [p for p in self.pending.values() if p.response is None]
        if message["method"] == "notifications/progress":
            targets = [p for p in targets if p.token == params.get("progressToken")]
        if not targets:
            self.stray.append(message)
        for target in targets:
            target.messages.append(message)

    async def send(self, body: dict[str, Any], *,
                   headers: Mapping[str, str | None] | None = None) -> Reply:
        key = _key(body.get("id"))
        params = body.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        pending = _Pending(str(body.get("method")), token)
        self.pending[key] = pending
        try:
            self.process.send(body)
            await self.wait_for(lambda: pending.response is not None,
                                f"response to {body.get('id')!r}")
        finally:
            del self.pending[key]
        assert pending.response is not None
        return Reply(pending.messages, pending.response)

    async def wait_for(self, condition: Callable[[], bool], what: str,
                       timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            self.pump()
            if condition():
                return
            if self.process.proc.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError(f"no {what}; stderr: "
                                   f"{bytes(self.process.stderr[-2000:]).decode(errors='replace')}")
            await asyncio.sleep(0.002)

    @contextlib.asynccontextmanager
    async def listen(self, notifications: Mapping[str, Any], *, id: Any = None,
                     meta: Any = None) -> AsyncIterator[Subscription]:
        body = self.build("subscriptions/listen", {"notifications": dict(notifications)},
                          meta=meta, id=id)
        key = _key(body["id"])

        def close() -> None:
            stdin = self.process.proc.stdin
            if self.subscriptions.pop(key, None) is not None and stdin and not stdin.closed:
                self.process.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": body["id"],
                                              "reason": "test done"}})

        sub = Subscription(body["id"], close)
        sub.refresh = self.pump
        self.subscriptions[key] = sub
        self.process.send(body)
        try:
            yield sub
        finally:
            close()


__all__ = [
    "CLIENT_CAPABILITIES",
    "FULL_CAPS",
    "LOG_LEVEL",
    "MODERN",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "AsgiCall",
    "DirectPeer",
    "HttpPeer",
    "Peer",
    "Reply",
    "SchemaChecker",
    "SchemaViolation",
    "SseParser",
    "StdioPeer",
    "StdioProcess",
    "Subscription",
    "make_meta",
    "parse_http_reply",
    "schema_checker",
    "sentinel",
    "standard_headers",
    "subprocess_env",
]
