"""Bad input against the HTTP app in-process: a table of edges, then properties.

Each row: what is wrong, the HTTP method, header changes (``None`` removes a header), the
body → the status, the JSON-RPC error code (``None``: no JSON-RPC error, e.g. 202 or an
accepted request) and the id the error must echo (``NO_ID``: the error has no id).
Every body is schema-checked; none may be a 500. Random generation never nests deeply or
forges headers, so those edges live in the table.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import examples.everything as everything
from tests.support.budgets import budget
from tests.support.peers import parse_http_reply
from tests.support.schema import SchemaChecker, schema_checker
from tests.support.wire import (
    CLIENT_CAPABILITIES,
    LOG_LEVEL,
    MODERN,
    PROTOCOL_VERSION,
    make_meta,
    sentinel,
    standard_headers,
)

NO_ID = object()
LIMIT = everything.app.limits.max_body_bytes


def rpc(method: str = "tools/list", params: Any = "default", *, id: Any = 1,
        meta: Any = "default", **envelope: Any) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params == "default":
        params = {}
    if isinstance(params, dict) and meta != "absent":
        params = {**params, "_meta": make_meta() if meta == "default" else meta}
    if params != "absent":
        body["params"] = params
    if id == "absent":
        del body["id"]
    if method == "absent":
        del body["method"]
    for key, value in envelope.items():
        if value == "absent":
            body.pop(key, None)
        else:
            body[key] = value
    return json.dumps(body).encode()


def call_tool(name: str, arguments: Any = "absent", **params: Any) -> bytes:
    body: dict[str, Any] = {"name": name, **params}
    if arguments != "absent":
        body["arguments"] = arguments
    return rpc("tools/call", body)


def headers_for(body: bytes) -> dict[str, str]:
    """What a conforming client would send with this body (when it can tell)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        message = None
    if isinstance(message, dict) and isinstance(message.get("method"), str) and message[
            "method"]:
        params = message.get("params")
        return standard_headers(message["method"], params if isinstance(params, dict) else None)
    return standard_headers("tools/list", None)


@dataclass
class Case:
    why: str
    body: bytes
    status: int
    code: int | None = None
    id: Any = NO_ID
    method: str = "POST"
    headers: dict[str, str | None] = field(default_factory=dict)
    data: Any = None


def deep(n: int) -> bytes:
    return (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{},"x":'
            + b"[" * n + b"]" * n + b"}}")


FORGED_STATE = base64.urlsafe_b64encode(b"\x01\x05tests" + bytes(60)).rstrip(b"=").decode()

CASES: list[Case] = [
    # -- not JSON ------------------------------------------------------------------------
    Case("bad JSON", b"{bad json}", 400, -32700),
    Case("truncated JSON", rpc()[:-7], 400, -32700),
    Case("empty body", b"", 400, -32700),
    Case("whitespace body", b" \r\n\t ", 400, -32700),
    Case("non-UTF-8 bytes", b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', 400, -32700),
    Case("NUL bytes", b"\x00" * 16, 400, -32700),
    Case("trailing garbage", rpc() + b"}", 400, -32700),
    # -- JSON, not a JSON-RPC request ------------------------------------------------
    Case("JSON array (batch)", b"[" + rpc() + b"]", 400, -32600),
    Case("empty array", b"[]", 400, -32600),
    Case("scalar body", b"42", 400, -32600),
    Case("string body", b'"tools/list"', 400, -32600),
    Case("null body", b"null", 400, -32600),
    Case("id null", rpc(id=None), 400, -32600),
    Case("id true", rpc(id=True), 400, -32600),
    Case("id 1.5", rpc(id=1.5), 400, -32600),
    Case("id an object", rpc(id={"a": 1}), 400, -32600),
    Case("missing jsonrpc", rpc(jsonrpc="absent"), 400, -32600, 1),
    Case('jsonrpc "1.0"', rpc(jsonrpc="1.0"), 400, -32600, 1),
    Case("jsonrpc a number", rpc(jsonrpc=2.0), 400, -32600, 1),
    Case("method not a string", rpc(method=7), 400, -32600, 1,  # type: ignore[arg-type]
         headers={"Mcp-Method": "7"}),
    Case("empty method", rpc(method=""), 400, -32600, 1, headers={"Mcp-Method": ""}),
    Case("missing method and result", rpc(method="absent"), 400, -32600, 1),
    Case("params an array", rpc(params=[1, 2]), 400, -32600, 1),
    Case("params a string", rpc(params="x"), 400, -32600, 1),
    Case("params a number", rpc(params=3), 400, -32600, 1),
    Case("request with result", rpc(result={}), 400, -32600, 1),
    Case("deeply nested (10,000 brackets)", deep(10_000), 400, -32600),
    Case("array over the item limit",
         rpc("tools/call", {"name": "test_simple_text", "arguments": {"x": list(range(10_001))}}),
         400, -32600, 1),
    Case("string over the size limit",
         rpc("tools/call", {"name": "test_simple_text", "arguments": {"x": "y" * 1_100_000}}),
         400, -32600, 1),
    # Valid JSON, so its id is readable and echoed, though it nests too deep for us.
    Case("nested just past the limit", deep(everything.app.limits.max_depth), 400, -32600, 1),
    Case("JSON-RPC response POSTed", b'{"jsonrpc":"2.0","id":1,"result":{}}', 400, -32600),
    Case("JSON-RPC error response POSTed",
         b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}', 400, -32600),
    # -- size, media types, HTTP methods -----------------------------------------------
    Case("oversized body with Content-Length", b" " * (LIMIT + 1), 413, -32600),
    Case("wrong Content-Type", rpc(), 415, -32600, headers={"Content-Type": "application/xml"}),
    Case("missing Content-Type", rpc(), 415, -32600, headers={"Content-Type": None}),
    Case("text/plain", rpc(), 415, -32600, headers={"Content-Type": "text/plain"}),
    Case("form encoded", rpc(), 415, -32600,
         headers={"Content-Type": "application/x-www-form-urlencoded"}),
    Case("Content-Type with charset", rpc(), 200,
         headers={"Content-Type": "application/json; charset=utf-8"}),
    Case("Accept: image/png", rpc(), 406, -32600, 1, headers={"Accept": "image/png"}),
    Case("Accept missing", rpc(), 200, headers={"Accept": None}),
    Case("Accept SSE only", rpc(), 200, headers={"Accept": "text/event-stream"}),
    Case("GET", b"", 405, -32600, method="GET"),
    Case("DELETE", b"", 405, -32600, method="DELETE"),
    Case("PUT", rpc(), 405, -32600, method="PUT"),
    Case("PATCH", rpc(), 405, -32600, method="PATCH"),
    # -- _meta ---------------------------------------------------------------------------
    Case("missing _meta", rpc(meta="absent"), 400, -32602, 1),
    Case("params missing", rpc(params="absent"), 400, -32602, 1),
    Case("params null", rpc(params=None), 400, -32602, 1),
    Case("_meta not an object", rpc(meta="x"), 400, -32602, 1),
    Case("missing protocolVersion", rpc(meta={CLIENT_CAPABILITIES: {}}), 400, -32602, 1),
    Case("missing clientCapabilities", rpc(meta={PROTOCOL_VERSION: MODERN}), 400, -32602, 1),
    Case("clientCapabilities not an object",
         rpc(meta={PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: []}), 400, -32602, 1),
    Case("invalid logLevel", rpc(meta=make_meta(**{LOG_LEVEL: "loud"})), 400, -32602, 1),
    Case("progressToken bool", rpc(meta=make_meta(progressToken=False)), 400, -32602, 1),
    Case("progressToken object", rpc(meta=make_meta(progressToken={})), 400, -32602, 1),
    Case("clientInfo a string", rpc(meta=make_meta(**{
        "io.modelcontextprotocol/clientInfo": "me"})), 400, -32602, 1),
    Case("traceparent a number", rpc(meta=make_meta(traceparent=1)), 400, -32602, 1),
    # -- versions ------------------------------------------------------------------------
    Case("missing MCP-Protocol-Version", rpc(), 400, -32020, 1,
         headers={"MCP-Protocol-Version": None}),
    Case("unsupported version in header and body",
         rpc(meta=make_meta(version="1900-01-01")), 400, -32022, 1,
         data={"supported": [MODERN], "requested": "1900-01-01"}),
    Case("unsupported version in header only", rpc(), 400, -32022, 1,
         headers={"MCP-Protocol-Version": "2099-12-31"},
         data={"supported": [MODERN], "requested": "2099-12-31"}),
    Case("unsupported version in body only", rpc(meta=make_meta(version="2025-11-25")),
         400, -32020, 1, headers={"MCP-Protocol-Version": MODERN}),
    Case("legacy version in both", rpc(meta=make_meta(version="2025-11-25")), 400, -32022, 1,
         data={"supported": [MODERN], "requested": "2025-11-25"}),
    Case("version header with OWS", rpc(), 200,
         headers={"MCP-Protocol-Version": f" {MODERN} "}),
    # -- Mcp-Method / Mcp-Name / Mcp-Param-* ---------------------------------------------
    Case("missing Mcp-Method", rpc(), 400, -32020, 1, headers={"Mcp-Method": None}),
    Case("Mcp-Method mismatch", rpc(), 400, -32020, 1, headers={"Mcp-Method": "prompts/list"}),
    Case("Mcp-Method wrong case", rpc(), 400, -32020, 1, headers={"Mcp-Method": "TOOLS/LIST"}),
    Case("Mcp-Method with OWS", rpc(), 200, headers={"Mcp-Method": " tools/list\t"}),
    Case("Mcp-Name missing", call_tool("test_simple_text"), 400, -32020, 1,
         headers={"Mcp-Name": None}),
    Case("Mcp-Name mismatched", call_tool("test_simple_text"), 400, -32020, 1,
         headers={"Mcp-Name": "test_image_content"}),
    Case("Mcp-Name base64 sentinel (correct)", call_tool("test_simple_text"), 200,
         headers={"Mcp-Name": sentinel("test_simple_text")}),
    Case("Mcp-Name with OWS", call_tool("test_simple_text"), 200,
         headers={"Mcp-Name": "  test_simple_text "}),
    Case("Mcp-Name bad base64", call_tool("test_simple_text"), 400, -32020, 1,
         headers={"Mcp-Name": "=?base64?not*base64?="}),
    Case("Mcp-Name sentinel of another name", call_tool("test_simple_text"), 400, -32020, 1,
         headers={"Mcp-Name": sentinel("test_simple_tex")}),
    Case("Mcp-Name for resources/read mismatched", rpc("resources/read",
         {"uri": "test://static-text"}), 400, -32020, 1, headers={"Mcp-Name": "test://other"}),
    Case("Mcp-Name for prompts/get missing", rpc("prompts/get",
         {"name": "test_simple_prompt"}), 400, -32020, 1, headers={"Mcp-Name": None}),
    Case("Mcp-Param-Region missing", call_tool("test_custom_header", {"region": "eu"}),
         400, -32020, 1, headers={"Mcp-Param-Region": None}),
    Case("Mcp-Param-Region mismatched", call_tool("test_custom_header", {"region": "eu"}),
         400, -32020, 1, headers={"Mcp-Param-Region": "us"}),
    Case("Mcp-Param-Region sent for an absent value",
         call_tool("test_custom_header", {"query": "q"}), 400, -32020, 1,
         headers={"Mcp-Param-Region": "eu"}),
    Case("Mcp-Param-Region as a sentinel (correct)",
         call_tool("test_custom_header", {"region": "eu"}), 200,
         headers={"Mcp-Param-Region": sentinel("eu")}),
    Case("unknown Mcp-Param header is ignored", call_tool("test_simple_text"), 200,
         headers={"Mcp-Param-Colour": "red"}),
    # -- methods, notifications, responses -------------------------------------------------
    Case("unknown method", rpc("no/such/method"), 404, -32601, 1),
    Case("initialize with modern _meta", rpc("initialize", {
        "protocolVersion": MODERN, "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"}}), 404, -32601, 1),
    Case("ping", rpc("ping"), 404, -32601, 1),
    Case("notification", rpc("notifications/initialized", id="absent"), 202),
    Case("notification without MCP headers", rpc("notifications/x", id="absent"), 202,
         headers={"Mcp-Method": None, "MCP-Protocol-Version": None}),
    Case("notifications/cancelled over HTTP", rpc("notifications/cancelled",
         {"requestId": 1}, id="absent"), 202),
    # -- Origin / Host (DNS rebinding) ---------------------------------------------------
    Case("Origin evil", rpc(), 403, -32600, headers={"Origin": "https://evil.example"}),
    Case("Origin null", rpc(), 403, -32600, headers={"Origin": "null"}),
    Case("Origin localhost with another port", rpc(), 200,
         headers={"Origin": "http://localhost:3000"}),
    Case("Host evil", rpc(), 403, -32600, headers={"Host": "evil.example"}),
    Case("Host evil with a port", rpc(), 403, -32600, headers={"Host": "evil.example:80"}),
    # -- params of tools/call --------------------------------------------------------------
    Case("unknown tool", call_tool("nope", {}), 200, -32602, 1),
    Case("arguments not an object", call_tool("test_simple_text", [1]), 200, -32602, 1),
    Case("arguments a string", call_tool("test_simple_text", "{}"), 200, -32602, 1),
    Case("name missing in tools/call", rpc("tools/call", {"arguments": {}}), 400, -32020, 1,
         headers={"Mcp-Name": "test_simple_text"}),
    Case("name not a string", rpc("tools/call", {"name": 5}), 400, -32020, 1,
         headers={"Mcp-Name": "5"}),
    Case("inputResponses null", call_tool("test_input_required_result_elicitation", {},
         inputResponses=None), 200, -32602, 1),
    Case("inputResponses an array", call_tool("test_input_required_result_elicitation", {},
         inputResponses=[]), 200, -32602, 1),
    Case("requestState not a string", call_tool("test_input_required_result_elicitation", {},
         requestState=123), 200, -32602, 1),
    Case("requestState empty", call_tool("test_input_required_result_elicitation", {},
         requestState=""), 200, -32602, 1),
    Case("tampered (forged) requestState",
         call_tool("test_input_required_result_elicitation", {}, requestState=FORGED_STATE,
                   inputResponses={"user_name": {"action": "accept",
                                                 "content": {"name": "x"}}}), 200, -32602, 1),
    Case("cursor not a string", rpc("tools/list", {"cursor": 5}), 200, -32602, 1),
    Case("resources/read without uri", rpc("resources/read", {}), 400, -32020, 1),
]

def _param(case: Case) -> Any:
    return pytest.param(case, id=case.why)


async def post(case: Case, client: httpx.AsyncClient) -> httpx.Response:
    headers = headers_for(case.body)
    lowered = {k.lower(): k for k in headers}
    for key, value in case.headers.items():
        headers.pop(lowered.get(key.lower(), key), None)
        if value is not None:
            headers[key] = value
    return await client.request(case.method, "/mcp", content=case.body, headers=headers)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=everything.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        yield c


def check_answer(response: httpx.Response, checker: SchemaChecker,
                 request_method: str | None) -> dict[str, Any] | None:
    """The shared contract: no 500, an empty 202, otherwise a checked JSON-RPC body."""
    assert response.status_code != 500, response.text
    if response.status_code == 202:
        assert response.content == b""
        return None
    ctype = response.headers["content-type"]
    if ctype.startswith("text/event-stream"):
        return parse_http_reply(response, checker, request_method).response
    assert ctype.startswith("application/json"), ctype
    body = response.json()
    checker.check(body, request_method)
    return body  # type: ignore[no-any-return]


def method_of(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 40
    assert len({c.why for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
async def test_bad_input(case: Case, client: httpx.AsyncClient, checker: SchemaChecker) -> None:
    response = await post(case, client)
    assert response.status_code == case.status, response.text
    body = check_answer(response, checker, method_of(case.body))
    if case.code is None:
        assert body is None or "result" in body
        return
    assert body is not None and body["error"]["code"] == case.code, body
    if case.id is NO_ID:
        assert "id" not in body
    else:
        assert body.get("id") == case.id
    if case.data is not None:
        assert body["error"]["data"] == case.data
    if response.status_code == 405:
        assert response.headers["allow"] == "POST"


async def test_oversized_body_without_content_length(client: httpx.AsyncClient,
                                                     checker: SchemaChecker) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(LIMIT // 65536 + 2):
            yield b" " * 65536

    response = await client.post("/mcp", content=chunks(), headers=headers_for(rpc()))
    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    body = check_answer(response, checker, None)
    assert body is not None and body["error"]["code"] == -32600


async def test_repeated_mcp_method_header_is_a_mismatch(client: httpx.AsyncClient,
                                                        checker: SchemaChecker) -> None:
    headers = [(k, v) for k, v in headers_for(rpc()).items() if k != "Mcp-Method"]
    headers += [("Mcp-Method", "tools/list"), ("Mcp-Method", "tools/list")]
    response = await client.post("/mcp", content=rpc(), headers=headers)
    assert response.status_code == 400
    body = check_answer(response, checker, "tools/list")
    assert body is not None and body["error"]["code"] == -32020


async def test_other_paths_are_not_found(client: httpx.AsyncClient) -> None:
    response = await client.post("/elsewhere", content=rpc(), headers=headers_for(rpc()))
    assert response.status_code == 404


async def test_the_app_keeps_serving_after_the_whole_table(client: httpx.AsyncClient,
                                                           checker: SchemaChecker) -> None:
    for case in CASES:
        await post(case, client)
    good = rpc("tools/call", {"name": "test_simple_text", "arguments": {}})
    response = await client.post("/mcp", content=good, headers=headers_for(good))
    assert response.status_code == 200
    body = check_answer(response, checker, "tools/call")
    assert body is not None
    assert body["result"]["content"][0]["text"] == "This is a simple text response for testing."


# -- properties ------------------------------------------------------------------------------

ALLOWED = {202, 400, 403, 404, 405, 406, 413, 415}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)
METHODS = ["server/discover", "tools/list", "tools/call", "resources/list", "resources/read",
           "resources/templates/list", "prompts/list", "prompts/get", "completion/complete",
           "initialize", "notifications/cancelled", "x"]


def envelopes() -> st.SearchStrategy[bytes]:
    """Mostly-JSON-RPC bodies: what random bytes almost never are."""
    entry = st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"])},
        optional={"id": st.one_of(st.integers(), st.text(max_size=5), json_values),
                  "method": st.sampled_from(METHODS) | st.text(max_size=10),
                  "params": json_values | st.fixed_dictionaries(
                      {"_meta": st.just(make_meta()) | json_values},
                      optional={"name": st.text(max_size=10), "cursor": json_values})},
    )
    return entry.map(lambda d: json.dumps(d).encode())


async def post_bytes(body: bytes, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=everything.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        return await c.post("/mcp", content=body, headers=headers)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=300) | envelopes())
async def test_any_bytes_posted_get_an_allowed_status(body: bytes) -> None:
    response = await post_bytes(body, headers_for(body))
    status = response.status_code
    assert status in ALLOWED or status == 200, (status, response.text)
    answer = check_answer(response, schema_checker(), method_of(body))
    if status != 202:
        assert answer is not None


MRTR_TOOLS = [
    "test_input_required_result_elicitation", "test_input_required_result_sampling",
    "test_input_required_result_list_roots", "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round", "test_input_required_result_request_state",
    "test_input_required_result_capabilities", "test_input_required_result_tampered_state",
]
INPUT_KEYS = ["user_name", "capital", "roots", "greeting", "favorite_color", "confirm",
              "name_suggestion"]


@st.composite
def mrtr_calls(draw: st.DrawFn) -> dict[str, Any]:
    params: dict[str, Any] = {"name": draw(st.sampled_from(MRTR_TOOLS))}
    if draw(st.booleans()):
        params["arguments"] = draw(json_values)
    responses = draw(st.one_of(
        json_values,
        st.dictionaries(st.sampled_from(INPUT_KEYS), json_values, max_size=3),
        st.dictionaries(st.sampled_from(INPUT_KEYS), st.fixed_dictionaries(
            {"action": st.sampled_from(["accept", "decline", "cancel", "x"])},
            optional={"content": json_values, "roots": json_values, "role": json_values,
                      "model": json_values}), max_size=3),
    ))
    if draw(st.booleans()):
        params["inputResponses"] = responses
    if draw(st.booleans()):
        params["requestState"] = draw(json_values | st.just(FORGED_STATE))
    caps = draw(st.sampled_from([{}, {"elicitation": {}}, {"sampling": {}}, None]))
    params["_meta"] = make_meta(caps=caps)
    return params


# A slow property (each example is a sealed MRTR round through the app):
# tests/support/budgets.py.
@budget(small=25, full=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=mrtr_calls())
async def test_arbitrary_mrtr_params_never_cause_an_internal_error(params: dict[str, Any]
                                                                   ) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": params}).encode()
    response = await post_bytes(body, standard_headers("tools/call", params))
    answer = check_answer(response, schema_checker(), "tools/call")
    assert answer is not None
    assert answer.get("error", {}).get("code") != -32603, answer


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(METHODS[:9]), params=json_values)
async def test_arbitrary_params_never_cause_an_internal_error(method: str, params: Any) -> None:
    if isinstance(params, dict):
        params = {**params, "_meta": make_meta()}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    response = await post_bytes(body, standard_headers(
        method, params if isinstance(params, dict) else None))
    answer = check_answer(response, schema_checker(), method)
    assert answer is not None
    assert answer.get("error", {}).get("code") != -32603, answer
