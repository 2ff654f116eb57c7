"""The engine's behaviour, written once and run over every transport (``peer``).

Each test talks to ``examples.everything`` through ``direct`` (``Server.handle``), ``http``
(the ASGI app in-process) and ``stdio`` (a subprocess). The peers schema-check every
message they receive, so these tests also prove that every result, error and
notification validates against schema.json.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import examples.everything as everything
from mcpcore import Server, StreamableHTTP
from tests.support.peers import DirectPeer, HttpPeer, Peer, Reply
from tests.support.wire import (
    CLIENT_CAPABILITIES,
    LOG_LEVEL,
    MODERN,
    PROTOCOL_VERSION,
    SERVER_INFO,
    SUBSCRIPTION_ID,
    make_meta,
)

INVALID_PARAMS = -32602
#: The tasks extension's fixtures, exercised by tests/tasks/test_engine.py.
TASK_FIXTURES = {"greet", "slow_compute", "failing_job", "protocol_error_job",
                 "confirm_delete", "multi_input", "test_tool_with_task"}


def http_status(peer: Peer, reply: Reply, status: int) -> None:
    """On HTTP the status is part of the contract; other transports have none."""
    if peer.has_headers:
        assert reply.status == status, reply.response


def text_of(result: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in result["content"] if b["type"] == "text")


async def call(peer: Peer, tool: str, arguments: dict[str, Any] | None = None,
               **kwargs: Any) -> Reply:
    params: dict[str, Any] = {"name": tool}
    if arguments is not None:
        params["arguments"] = arguments
    return await peer.request("tools/call", params, **kwargs)


# -- discovery -------------------------------------------------------------------------

async def test_discover_advertises_capabilities_versions_and_cache_hints(peer: Peer) -> None:
    reply = await peer.request("server/discover")
    result = reply.result
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [MODERN]
    caps = result["capabilities"]
    assert set(caps) >= {"tools", "resources", "prompts", "completions", "logging"}
    assert caps["resources"].get("subscribe") is True
    assert caps["tools"].get("listChanged") is True
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")
    assert result["_meta"][SERVER_INFO] == {"name": "mcpcore-everything", "version": "0.1.0",
                                            "title": "mcpcore everything server"}
    assert result["instructions"]
    assert reply.messages == []
    http_status(peer, reply, 200)


async def test_client_info_is_optional(peer: Peer) -> None:
    reply = await peer.request("server/discover", meta=make_meta(**{
        "io.modelcontextprotocol/clientInfo": None}))
    assert reply.result["resultType"] == "complete"


async def test_unknown_meta_keys_are_ignored(peer: Peer) -> None:
    meta = make_meta(**{"com.example/trace": {"x": 1}, "traceparent":
                        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
    reply = await peer.request("tools/list", meta=meta)
    assert reply.result["tools"]


# -- tools -----------------------------------------------------------------------------

FIXTURE_TOOLS = [
    "test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
    "test_multiple_content_types", "test_error_handling", "test_tool_with_progress",
    "test_tool_with_logging", "test_logging_tool", "test_streaming_elicitation",
    "test_missing_capability", "json_schema_2020_12_tool", "test_custom_header",
    "test_input_required_result_elicitation", "test_input_required_result_sampling",
    "test_input_required_result_list_roots", "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state", "test_input_required_result_capabilities",
]


async def test_tools_list_is_deterministic_and_complete(peer: Peer) -> None:
    first = (await peer.request("tools/list")).result
    second = (await peer.request("tools/list")).result
    assert first["tools"] == second["tools"]
    names = [t["name"] for t in first["tools"]]
    assert names[0] == "test_simple_text"  # succeeds with {}: header probes call it
    assert set(FIXTURE_TOOLS) <= set(names)
    assert len(names) == len(set(names))
    assert "nextCursor" not in first  # fits the default page
    for tool in first["tools"]:
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object"


async def test_tools_list_preserves_authored_input_schema(peer: Peer) -> None:
    tools = (await peer.request("tools/list")).result["tools"]
    listed = next(t for t in tools if t["name"] == "json_schema_2020_12_tool")
    registered = everything.server.tools.get("json_schema_2020_12_tool").input_schema
    assert listed["inputSchema"] == json.loads(json.dumps(registered))
    assert listed["inputSchema"]["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def _is_b64(data: str) -> bool:
    return base64.b64encode(base64.b64decode(data, validate=True)).decode() == data


TOOL_RESULTS: list[tuple[str, dict[str, Any] | None, Any]] = [
    ("test_simple_text", None,
     lambda r: r["content"] == [{"type": "text",
                                 "text": "This is a simple text response for testing."}]),
    ("test_simple_text", {}, lambda r: r["content"][0]["type"] == "text"),
    ("test_image_content", {},
     lambda r: r["content"][0]["type"] == "image"
     and r["content"][0]["mimeType"] == "image/png" and _is_b64(r["content"][0]["data"])),
    ("test_audio_content", {},
     lambda r: r["content"][0]["mimeType"] == "audio/wav" and _is_b64(r["content"][0]["data"])),
    ("test_embedded_resource", {},
     lambda r: r["content"][0]["resource"]["uri"] == "test://embedded-resource"
     and r["content"][0]["resource"]["text"]),
    ("test_multiple_content_types", {},
     lambda r: [b["type"] for b in r["content"]] == ["text", "image", "resource"]),
    ("test_error_handling", {},
     lambda r: r["isError"] is True and r["content"][0]["text"]),
    ("test_streaming_elicitation", {}, lambda r: "isError" not in r),
    ("test_logging_tool", {}, lambda r: text_of(r) == "Logging tool completed."),
    ("test_missing_capability", {}, lambda r: text_of(r) == "The client declared sampling."),
    ("test_custom_header", {"region": "us-west1", "query": "q"},
     lambda r: text_of(r) == "region=us-west1 query=q"),
    ("test_custom_header", {"region": "Zürich"}, lambda r: text_of(r) == "region=Zürich query="),
    ("json_schema_2020_12_tool", {"name": "n", "contactMethod": "email", "email": "a@b.c"},
     lambda r: text_of(r) == "Received ['contactMethod', 'email', 'name']"),
    ("test_trigger_tool_change", {}, lambda r: text_of(r) == "Tool list change announced."),
    ("test_trigger_prompt_change", {}, lambda r: "isError" not in r),
    ("test_trigger_resource_update", {"uri": "test://x"},
     lambda r: text_of(r) == "Update of test://x announced."),
]


@pytest.mark.parametrize(("tool", "arguments", "check"), TOOL_RESULTS,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(TOOL_RESULTS)])
async def test_fixture_tool_result_shape(peer: Peer, tool: str, arguments: dict[str, Any] | None,
                                         check: Any) -> None:
    reply = await call(peer, tool, arguments)
    result = reply.result
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO]["name"] == "mcpcore-everything"
    assert "ttlMs" not in result  # tool results are not cacheable
    assert check(result), result
    assert reply.messages == []
    http_status(peer, reply, 200)


async def test_tool_error_is_a_result_and_unknown_tool_a_protocol_error(peer: Peer) -> None:
    failed = await call(peer, "test_error_handling", {})
    assert failed.result["isError"] is True
    unknown = await call(peer, "no_such_tool", {})
    assert unknown.error["code"] == INVALID_PARAMS
    assert "no_such_tool" in unknown.error["message"]
    http_status(peer, unknown, 200)  # only _meta problems are 400


ARGUMENT_VIOLATIONS = [
    ("test_custom_header", {}),                                   # required missing
    ("test_custom_header", {"region": None}),                     # null is not a string
    ("json_schema_2020_12_tool", {"name": "n"}),                  # anyOf phone/email
    ("json_schema_2020_12_tool", {"email": "e", "extra": 1}),     # additionalProperties
    ("json_schema_2020_12_tool", {"contactMethod": "phone", "email": "e"}),  # if/then
    ("test_sampling", {"prompt": ["not", "a", "string"]}),
    ("test_trigger_resource_update", {"uri": 42}),                # hint-derived schema
    ("test_elicitation", {}),
]


@pytest.mark.parametrize(("tool", "arguments"), ARGUMENT_VIOLATIONS)
async def test_argument_schema_violation_is_a_tool_error(peer: Peer, tool: str,
                                                         arguments: dict[str, Any]) -> None:
    """The model must see the violation (isError), not a JSON-RPC error."""
    headers = None
    if tool == "test_custom_header":
        region = arguments.get("region")
        headers = {"Mcp-Param-Region": None if region is None else json.dumps(region)}
    reply = await call(peer, tool, arguments, headers=headers)
    assert reply.result["isError"] is True
    assert "Invalid arguments" in text_of(reply.result)


async def test_header_mirrored_argument_of_the_wrong_type(peer: Peer) -> None:
    reply = await call(peer, "test_custom_header", {"region": 5},
                       headers={"Mcp-Param-Region": "5"})
    if peer.has_headers:
        # A header cannot mirror a non-string value of a string parameter.
        assert reply.error["code"] == -32020
        http_status(peer, reply, 400)
    else:
        assert reply.result["isError"] is True


async def test_call_without_name_is_invalid_params(peer: Peer) -> None:
    reply = await peer.request("tools/call", {"arguments": {}})
    if peer.has_headers:
        # No name, so Mcp-Name cannot match it: header validation comes first.
        assert reply.error["code"] == -32020
        http_status(peer, reply, 400)
    else:
        assert reply.error["code"] == INVALID_PARAMS


async def test_arguments_must_be_an_object(peer: Peer) -> None:
    reply = await call(peer, "test_simple_text", ["a"])  # type: ignore[arg-type]
    assert reply.error["code"] == INVALID_PARAMS


async def test_missing_client_capability_is_32021(peer: Peer) -> None:
    reply = await call(peer, "test_missing_capability", {},
                       meta=make_meta(caps={"elicitation": {}}))
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"sampling": {}}}
    http_status(peer, reply, 400)


# -- pagination (a dedicated server with a small page) ----------------------------------

def paged_server() -> Server:
    server = Server("paged", "1.0.0", page_size=2)
    for i in range(5):
        server.tool(f"tool_{i}")(lambda: "ok")
    for i in range(3):
        server.prompt(f"prompt_{i}")(lambda: "hi")
    return server


@pytest.fixture(params=["direct", "http"])
def paged_peer(request: pytest.FixtureRequest) -> Peer:
    server = paged_server()
    return DirectPeer(server) if request.param == "direct" else HttpPeer(StreamableHTTP(server))


async def test_pagination_walks_every_page_once(paged_peer: Peer) -> None:
    names: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {} if cursor is None else {"cursor": cursor}
        result = (await paged_peer.request("tools/list", params)).result
        pages += 1
        assert len(result["tools"]) <= 2
        assert result["cacheScope"] == "public"
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        assert isinstance(cursor, str)
    assert pages == 3
    assert names == [f"tool_{i}" for i in range(5)]


@pytest.mark.parametrize("cursor", ["garbage", "", "!!!", "eyJ4IjoxfQ", "WyJ0b29scyIsLTFd"])
async def test_invalid_cursor_is_invalid_params(paged_peer: Peer, cursor: str) -> None:
    reply = await paged_peer.request("tools/list", {"cursor": cursor})
    assert reply.error["code"] == INVALID_PARAMS
    http_status(paged_peer, reply, 200)


async def test_cursor_of_another_list_is_rejected(paged_peer: Peer) -> None:
    cursor = (await paged_peer.request("tools/list")).result["nextCursor"]
    reply = await paged_peer.request("prompts/list", {"cursor": cursor})
    assert reply.error["code"] == INVALID_PARAMS


async def test_invalid_cursor_on_the_fixture_server(peer: Peer) -> None:
    reply = await peer.request("tools/list", {"cursor": "not-a-cursor"})
    assert reply.error["code"] == INVALID_PARAMS


async def test_capability_not_offered_is_method_not_found() -> None:
    server = Server("tools-only")
    server.tool("t")(lambda: "x")
    peer = HttpPeer(StreamableHTTP(server))
    discovered = (await peer.request("server/discover")).result["capabilities"]
    assert "prompts" not in discovered and "resources" not in discovered
    for method in ("prompts/list", "resources/list", "completion/complete"):
        reply = await peer.request(method, {})
        assert reply.error["code"] == -32601, method
        assert reply.status == 404


# -- resources ---------------------------------------------------------------------------

async def test_resources_list_and_templates(peer: Peer) -> None:
    listed = (await peer.request("resources/list")).result
    uris = [r["uri"] for r in listed["resources"]]
    assert uris == ["test://static-text", "test://static-binary", "test://watched-resource"]
    assert all(r["name"] for r in listed["resources"])
    templates = (await peer.request("resources/templates/list")).result
    assert templates["resourceTemplates"] == [{
        "uriTemplate": "test://template/{id}/data", "name": "template-data",
        "description": "Data for an id", "mimeType": "application/json"}]


async def test_read_text_binary_and_templated_resources(peer: Peer) -> None:
    text = (await peer.request("resources/read", {"uri": "test://static-text"})).result
    assert text["contents"] == [{"uri": "test://static-text", "mimeType": "text/plain",
                                 "text": "This is the content of the static text resource."}]
    assert (text["ttlMs"], text["cacheScope"]) == (60_000, "public")
    blob = (await peer.request("resources/read", {"uri": "test://static-binary"})).result
    assert base64.b64decode(blob["contents"][0]["blob"]).startswith(b"\x89PNG")
    templated = (await peer.request("resources/read", {"uri": "test://template/42/data"})).result
    assert json.loads(templated["contents"][0]["text"])["id"] == "42"
    assert templated["cacheScope"] == "private"  # the default for reads


@pytest.mark.parametrize("uri", ["test://missing", "test://template//data/x", "file:///etc/passwd",
                                 "test://static-text/"])
async def test_missing_resource_is_invalid_params_with_uri(peer: Peer, uri: str) -> None:
    reply = await peer.request("resources/read", {"uri": uri})
    assert reply.error["code"] == INVALID_PARAMS
    assert reply.error["data"] == {"uri": uri}
    http_status(peer, reply, 200)


async def test_resource_uri_with_non_ascii_uses_the_name_sentinel(peer: Peer) -> None:
    reply = await peer.request("resources/read", {"uri": "test://template/café/data"})
    assert json.loads(reply.result["contents"][0]["text"])["id"] == "café"


# -- prompts and completion --------------------------------------------------------------

async def test_prompts_list(peer: Peer) -> None:
    prompts = (await peer.request("prompts/list")).result["prompts"]
    by_name = {p["name"]: p for p in prompts}
    assert by_name["test_prompt_with_arguments"]["arguments"] == [
        {"name": "arg1", "required": True}, {"name": "arg2", "required": True}]
    assert all(p["description"] for p in prompts)


async def test_prompts_get(peer: Peer) -> None:
    simple = (await peer.request("prompts/get", {"name": "test_simple_prompt"})).result
    assert simple["messages"] == [{"role": "user", "content": {
        "type": "text", "text": "This is a simple prompt for testing."}}]
    args = (await peer.request("prompts/get", {"name": "test_prompt_with_arguments",
                                               "arguments": {"arg1": "a", "arg2": "b"}})).result
    assert args["messages"][0]["content"]["text"] == "Prompt with arguments: arg1='a', arg2='b'"
    embedded = (await peer.request("prompts/get", {
        "name": "test_prompt_with_embedded_resource",
        "arguments": {"resourceUri": "test://x"}})).result
    assert embedded["messages"][0]["content"]["resource"]["uri"] == "test://x"
    image = (await peer.request("prompts/get", {"name": "test_prompt_with_image"})).result
    assert image["messages"][0]["content"]["type"] == "image"


@pytest.mark.parametrize(("name", "arguments"), [
    ("test_prompt_with_arguments", {"arg1": "a"}),           # arg2 missing
    ("test_prompt_with_arguments", None),
    ("test_prompt_with_arguments", {"arg1": "a", "arg2": 2}),  # not a string
    ("no_such_prompt", {}),
])
async def test_prompt_errors_are_invalid_params(peer: Peer, name: str,
                                                arguments: dict[str, Any] | None) -> None:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    reply = await peer.request("prompts/get", params)
    assert reply.error["code"] == INVALID_PARAMS


async def test_completion(peer: Peer) -> None:
    params = {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
              "argument": {"name": "arg1", "value": "tes"}}
    result = (await peer.request("completion/complete", params)).result
    assert result["completion"]["values"] == ["test", "testing", "tested"]
    other = {"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
             "argument": {"name": "id", "value": ""}}
    assert (await peer.request("completion/complete", other)).result["completion"] == {
        "values": []}


@pytest.mark.parametrize("params", [
    {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}},
    {"ref": {"type": "ref/other", "name": "x"}, "argument": {"name": "a", "value": ""}},
    {"ref": {"type": "ref/prompt"}, "argument": {"name": "a", "value": ""}},
    {"ref": {"type": "ref/prompt", "name": "test_simple_prompt"}},
])
async def test_completion_errors_are_invalid_params(peer: Peer, params: dict[str, Any]) -> None:
    reply = await peer.request("completion/complete", params)
    assert reply.error["code"] == INVALID_PARAMS


# -- progress and logging ------------------------------------------------------------------

@pytest.mark.parametrize("token", ["tok-1", 7])
async def test_progress_only_with_a_token_and_increasing(peer: Peer, token: Any) -> None:
    reply = await call(peer, "test_tool_with_progress", {}, meta=make_meta(progress_token=token))
    assert reply.result["content"][0]["text"] == "Progress test completed."
    assert reply.methods() == ["notifications/progress"] * 3
    progress = [m["params"] for m in reply.messages]
    assert all(p["progressToken"] == token and type(p["progressToken"]) is type(token)
               for p in progress)
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values)) == [0, 50, 100]
    assert all(p["total"] == 100 for p in progress)
    assert all("_meta" not in p for p in progress)  # request-scoped: no subscriptionId
    if peer.has_headers:
        assert reply.content_type == "text/event-stream"
    silent = await call(peer, "test_tool_with_progress", {})
    assert silent.messages == []
    if peer.has_headers:
        assert silent.content_type == "application/json"


@pytest.mark.parametrize(("level", "expected"), [
    ("debug", 3), ("info", 3), ("notice", 0), ("error", 0), (None, 0),
])
async def test_log_messages_only_with_log_level_and_filtered(peer: Peer, level: str | None,
                                                             expected: int) -> None:
    reply = await call(peer, "test_tool_with_logging", {}, meta=make_meta(log_level=level))
    assert reply.result["content"][0]["text"] == "Logging test completed."
    assert reply.methods() == ["notifications/message"] * expected
    for message in reply.messages:
        assert message["params"]["level"] == "info"
        assert message["params"]["logger"] == "everything"


async def test_logging_tool_logs_only_when_asked(peer: Peer) -> None:
    asked = await call(peer, "test_logging_tool", {}, meta=make_meta(log_level="info"))
    assert asked.methods() == ["notifications/message"]
    unasked = await call(peer, "test_logging_tool", {})
    assert unasked.messages == []


# -- request validation ----------------------------------------------------------------------

@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel",
                                    "resources/subscribe", "resources/unsubscribe",
                                    "tasks/result", "tasks/list", "no/such/method"])
async def test_removed_and_unknown_methods_are_method_not_found(peer: Peer, method: str) -> None:
    params = {"protocolVersion": MODERN, "capabilities": {},
              "clientInfo": {"name": "x", "version": "1"}} if method == "initialize" else {}
    reply = await peer.request(method, params)
    assert reply.error["code"] == -32601
    http_status(peer, reply, 404)


META_PROBLEMS: list[tuple[str, Any]] = [
    ("missing _meta", "absent"),
    ("_meta null", None),
    ("_meta not an object", [1]),
    ("no protocolVersion", {CLIENT_CAPABILITIES: {}}),
    ("no clientCapabilities", {PROTOCOL_VERSION: MODERN}),
    ("clientCapabilities a string", {PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: "all"}),
    ("protocolVersion a number", {PROTOCOL_VERSION: 2026, CLIENT_CAPABILITIES: {}}),
    ("bad logLevel", make_meta(log_level="verbose")),
    ("logLevel upper case", make_meta(log_level="INFO")),
    ("progressToken bool", make_meta(progress_token=True)),
    ("progressToken float", make_meta(progress_token=1.5)),
    ("clientInfo without version", make_meta(**{"io.modelcontextprotocol/clientInfo":
                                                {"name": "x"}})),
]


@pytest.mark.parametrize(("why", "meta"), META_PROBLEMS, ids=[m[0] for m in META_PROBLEMS])
async def test_malformed_meta_is_invalid_params(peer: Peer, why: str, meta: Any) -> None:
    params: dict[str, Any] = {} if meta == "absent" else {"_meta": meta}
    version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
    headers = {"MCP-Protocol-Version": version if isinstance(version, str) else MODERN}
    reply = await peer.request("tools/list", params, raw=True, headers=headers)
    assert reply.error["code"] == INVALID_PARAMS, why
    http_status(peer, reply, 400)


async def test_missing_params_is_invalid_params(peer: Peer) -> None:
    reply = await peer.request("server/discover", None, raw=True)
    assert reply.error["code"] == INVALID_PARAMS
    http_status(peer, reply, 400)


@pytest.mark.parametrize("version", ["1900-01-01", "2025-11-25", "2099-01-01"])
async def test_unsupported_version_is_32022(peer: Peer, version: str) -> None:
    reply = await peer.request("tools/list", meta=make_meta(version=version))
    assert reply.error["code"] == -32022
    assert reply.error["data"] == {"supported": [MODERN], "requested": version}
    http_status(peer, reply, 400)


async def test_ids_keep_their_json_type(peer: Peer) -> None:
    for request_id in ("abc", "7", 0, -5, 2**53):
        reply = await peer.request("tools/list", id=request_id)
        assert reply.response["id"] == request_id
        assert type(reply.response["id"]) is type(request_id)


# -- MRTR --------------------------------------------------------------------------------

NAME_TOOL = "test_input_required_result_elicitation"


async def test_mrtr_round_trip(peer: Peer) -> None:
    first = await call(peer, NAME_TOOL, {})
    result = first.result
    assert result["resultType"] == "input_required"
    assert set(result["inputRequests"]) == {"user_name"}
    ask = result["inputRequests"]["user_name"]
    assert ask["method"] == "elicitation/create"
    assert "id" not in ask and "jsonrpc" not in ask
    assert ask["params"]["requestedSchema"]["required"] == ["name"]
    assert isinstance(result["requestState"], str)
    assert result["_meta"][SERVER_INFO]["name"] == "mcpcore-everything"
    http_status(peer, first, 200)
    retry = await peer.request("tools/call", {
        "name": NAME_TOOL, "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": result["requestState"]})
    assert retry.response["id"] != first.response["id"]
    assert retry.result["resultType"] == "complete"
    assert text_of(retry.result) == "Hello, Ada!"


async def test_mrtr_decline_completes(peer: Peer) -> None:
    state = (await call(peer, NAME_TOOL, {})).result["requestState"]
    retry = await peer.request("tools/call", {
        "name": NAME_TOOL, "arguments": {}, "requestState": state,
        "inputResponses": {"user_name": {"action": "decline"}}})
    assert text_of(retry.result) == "No name given (decline)."


def tamper(state: str) -> str:
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]


@pytest.mark.parametrize("mutate", [tamper, lambda s: s[:-4], lambda s: s + "AAAA",
                                    lambda s: "x", lambda s: ""])
async def test_mrtr_tampered_state_is_invalid_params(peer: Peer, mutate: Any) -> None:
    tool = "test_input_required_result_tampered_state"
    state = (await call(peer, tool, {})).result["requestState"]
    reply = await peer.request("tools/call", {
        "name": tool, "arguments": {}, "requestState": mutate(state),
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Eve"}}}})
    assert reply.error["code"] == INVALID_PARAMS


async def test_mrtr_state_is_bound_to_the_request(peer: Peer) -> None:
    state = (await call(peer, NAME_TOOL, {})).result["requestState"]
    other = await peer.request("tools/call", {
        "name": "test_input_required_result_tampered_state", "arguments": {},
        "requestState": state,
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Eve"}}}})
    assert other.error["code"] == INVALID_PARAMS


async def test_mrtr_multi_round_changes_state(peer: Peer) -> None:
    tool = "test_input_required_result_multi_round"
    one = (await call(peer, tool, {})).result
    assert set(one["inputRequests"]) == {"user_name"}
    two = (await peer.request("tools/call", {
        "name": tool, "arguments": {}, "requestState": one["requestState"],
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}})).result
    assert two["resultType"] == "input_required"
    assert set(two["inputRequests"]) == {"favorite_color"}
    assert two["requestState"] != one["requestState"]
    three = (await peer.request("tools/call", {
        "name": tool, "arguments": {}, "requestState": two["requestState"],
        "inputResponses": {"favorite_color": {"action": "accept",
                                              "content": {"color": "teal"}}}})).result
    assert text_of(three) == "Ada likes teal"


async def test_mrtr_asks_only_for_declared_capabilities(peer: Peer) -> None:
    tool = "test_input_required_result_capabilities"
    sampling_only = (await call(peer, tool, {}, meta=make_meta(caps={"sampling": {}}))).result
    assert [r["method"] for r in sampling_only["inputRequests"].values()] == [
        "sampling/createMessage"]
    none = await call(peer, tool, {}, meta=make_meta(caps={}))
    assert none.error["code"] == -32021
    assert none.error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    http_status(peer, none, 400)


async def test_mrtr_in_prompts_get(peer: Peer) -> None:
    first = (await peer.request("prompts/get",
                                {"name": "test_input_required_result_prompt"})).result
    assert first["resultType"] == "input_required"
    done = (await peer.request("prompts/get", {
        "name": "test_input_required_result_prompt", "requestState": first["requestState"],
        "inputResponses": {"prompt_context": {"action": "accept",
                                              "content": {"context": "tests"}}}})).result
    assert done["messages"][0]["content"]["text"] == "Prompt built with context: tests"


ANSWER_NAME = {"action": "accept", "content": {"name": "Ada"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}

MRTR_FIXTURES: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("test_input_required_result_elicitation", {}, {"user_name": ANSWER_NAME}, "Hello, Ada!"),
    ("test_input_required_result_sampling", {}, {"capital": SAMPLED},
     "The model said: Paris"),
    ("test_input_required_result_list_roots", {}, {"roots": ROOTS}, "Roots: file:///work"),
    ("test_input_required_result_request_state", {},
     {"confirm": {"action": "accept", "content": {"ok": True}}}, "state-ok"),
    ("test_input_required_result_multiple_inputs", {},
     {"user_name": ANSWER_NAME, "greeting": SAMPLED, "roots": ROOTS},
     "name=Ada greeting=Paris roots=1"),
    ("test_input_required_result_tampered_state", {}, {"user_name": ANSWER_NAME},
     "Hello, Ada!"),
    ("test_input_required_result_capabilities", {}, {"user_name": ANSWER_NAME},
     "Hello, Ada!"),
    ("test_sampling", {"prompt": "Capital?"}, {"sampling_1": SAMPLED}, "LLM response: Paris"),
    ("test_elicitation", {"message": "Who?"},
     {"elicitation_1": {"action": "accept", "content": {"username": "ada",
                                                        "email": "a@example.com"}}},
     "User response: action=accept, content={'username': 'ada', 'email': 'a@example.com'}"),
    ("test_elicitation_sep1034_defaults", {}, {"elicitation_1": {"action": "accept",
                                                                 "content": {"age": 31}}},
     "Elicitation completed: action=accept, content={'age': 31}"),
    ("test_elicitation_sep1330_enums", {}, {"elicitation_1": {"action": "decline"}},
     "Elicitation completed: action=decline, content=None"),
]


@pytest.mark.parametrize(("tool", "arguments", "answers", "expected"), MRTR_FIXTURES,
                         ids=[m[0] for m in MRTR_FIXTURES])
async def test_mrtr_fixture_tools_ask_then_complete(peer: Peer, tool: str,
                                                    arguments: dict[str, Any],
                                                    answers: dict[str, Any],
                                                    expected: str) -> None:
    first = (await call(peer, tool, arguments)).result
    assert first["resultType"] == "input_required"
    assert set(first["inputRequests"]) == set(answers)
    done = await peer.request("tools/call", {"name": tool, "arguments": arguments,
                                             "inputResponses": answers,
                                             "requestState": first["requestState"]})
    assert done.result["resultType"] == "complete"
    assert text_of(done.result) == expected


async def test_every_listed_tool_is_exercised(peer: Peer) -> None:
    tools = {t["name"] for t in (await peer.request("tools/list")).result["tools"]}
    covered = ({t[0] for t in TOOL_RESULTS} | {m[0] for m in MRTR_FIXTURES}
               | {"test_tool_with_progress", "test_tool_with_logging",
                  "test_input_required_result_multi_round"}  # test_mrtr_multi_round_changes_state
               | TASK_FIXTURES)  # tests/tasks/test_engine.py
    assert tools <= covered, tools - covered


@pytest.mark.parametrize(("extra", "why"), [
    ({"inputResponses": None}, "null"),
    ({"inputResponses": [1]}, "an array"),
    ({"inputResponses": "x"}, "a string"),
    ({"requestState": 5}, "state not a string"),
    ({"requestState": None}, "state null"),
    ({"inputResponses": {"user_name": "yes"}}, "entry not an object"),
    ({"inputResponses": {"user_name": {"action": "maybe"}}}, "bad action"),
    ({"inputResponses": {"user_name": {"action": "accept", "content": {"name": 5}}}},
     "content breaks the requested schema"),
])
async def test_malformed_mrtr_params_are_invalid_params(peer: Peer, extra: dict[str, Any],
                                                        why: str) -> None:
    reply = await peer.request("tools/call", {"name": NAME_TOOL, "arguments": {}, **extra})
    assert reply.error["code"] == INVALID_PARAMS, why


# -- subscriptions/listen ------------------------------------------------------------------
@pytest.mark.parametrize("listen_id", [9001, "9001"])
async def test_listen_acks_first_and_delivers_tools_changes(peer: Peer, listen_id: Any) -> None:
    async with peer.listen({"toolsListChanged": True, "promptsListChanged": True},
                           id=listen_id) as sub:
        ack = await sub.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        tag = ack["params"]["_meta"][SUBSCRIPTION_ID]
        assert tag == listen_id and type(tag) is type(listen_id)
        assert ack["params"]["notifications"] == {"toolsListChanged": True,
                                                  "promptsListChanged": True}
        assert (await call(peer, "test_trigger_tool_change", {})).result["resultType"]
        changed = await sub.next()
        assert changed["method"] == "notifications/tools/list_changed"
        tag = changed["params"]["_meta"][SUBSCRIPTION_ID]
        assert tag == listen_id and type(tag) is type(listen_id)


async def test_listen_filter_is_honoured(peer: Peer) -> None:
    async with peer.listen({"promptsListChanged": True,
                            "resourceSubscriptions": ["test://watched-resource"]},
                           id="filtered") as sub:
        ack = await sub.next()
        assert ack["params"]["notifications"] == {
            "promptsListChanged": True, "resourceSubscriptions": ["test://watched-resource"]}
        await call(peer, "test_trigger_tool_change", {})            # not asked for
        await call(peer, "test_trigger_resource_update", {"uri": "test://other"})
        await call(peer, "test_trigger_prompt_change", {})
        first = await sub.next()
        assert first["method"] == "notifications/prompts/list_changed"
        await call(peer, "test_trigger_resource_update", {"uri": "test://watched-resource"})
        updated = await sub.next()
        assert updated["method"] == "notifications/resources/updated"
        assert updated["params"]["uri"] == "test://watched-resource"
        assert updated["params"]["_meta"] == {SUBSCRIPTION_ID: "filtered"}


async def test_listen_with_task_ids_needs_the_extension(peer: Peer) -> None:
    reply = await peer.request("subscriptions/listen", {"notifications": {"taskIds": ["t"]}})
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


async def test_listen_without_filter_is_invalid_params(peer: Peer) -> None:
    reply = await peer.request("subscriptions/listen", {})
    assert reply.error["code"] == INVALID_PARAMS


async def test_log_level_never_reaches_a_result_meta(peer: Peer) -> None:
    reply = await call(peer, "test_simple_text", {}, meta=make_meta(log_level="debug"))
    assert LOG_LEVEL not in reply.result["_meta"]
    assert reply.messages == []


# -- the schema checker itself: it must be able to fail -----------------------------------

CHECKER_REJECTS: list[tuple[str, dict[str, Any], str | None]] = [
    ("result without resultType", {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}},
     "tools/list"),
    ("list without cache hints", {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "tools": []}}, "tools/list"),
    ("input_required from a list", {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "input_required", "requestState": "s"}}, "tools/list"),
    ("input_required with cache hints", {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "input_required", "requestState": "s", "ttlMs": 1,
        "cacheScope": "public"}}, "resources/read"),
    ("input_required with nothing", {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "input_required"}}, "tools/call"),
    ("tool result without content", {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete"}}, "tools/call"),
    ("a server request", {"jsonrpc": "2.0", "id": 1, "method": "roots/list"}, None),
    ("unknown notification", {"jsonrpc": "2.0", "method": "notifications/x"}, None),
    ("progress without token", {"jsonrpc": "2.0", "method": "notifications/progress",
                                "params": {"progress": 1}}, None),
    ("-32022 without data", {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32022, "message": "m"}}, None),
    ("-32021 with an array", {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32021, "message": "m", "data": {"requiredCapabilities": ["sampling"]}}}, None),
    ("undefined reserved code", {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32042, "message": "m"}}, None),
    ("id null", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "m"}},
     None),
    ("result for an unknown request", {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete"}}, None),
]


@pytest.mark.parametrize(("why", "message", "method"), CHECKER_REJECTS,
                         ids=[c[0] for c in CHECKER_REJECTS])
def test_schema_checker_rejects(why: str, message: dict[str, Any], method: str | None) -> None:
    from tests.support.schema import SchemaViolation, schema_checker

    with pytest.raises(SchemaViolation):
        schema_checker().check(message, method)


async def test_both_doors_are_observed_through_one_wrapper(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``handle`` and ``dispatch`` share one observer wrapper (issue 25): each request
    is begun, started (with the observation current), and finished once."""
    import msgspec

    import mcpcore.server
    from mcpcore import observe
    from mcpcore.context import Context
    from mcpcore.headers import LenientParams
    from mcpcore.jsonrpc import Request
    from mcpcore.legacy.bridge import NoBridge
    from mcpcore.meta import parse_request_meta

    events: list[tuple[str, Any]] = []

    class Seen:
        def started(self, ctx: Context) -> None:
            events.append(("started", observe.CURRENT.get() is self))

        def timed_out(self, tool: str, seconds: float) -> None:
            events.append(("timed_out", tool))

        def finished(self, result: Any, error: BaseException | None) -> None:
            events.append(("finished", dict(result or {}).get("resultType")))

    class Watch:
        def begin(self, method: str, headers: Any) -> Seen:
            events.append(("begin", method))
            return Seen()

    wrapped: list[str] = []
    real = mcpcore.server._observed

    def counted(observer: Any, method: str, *args: Any) -> Any:
        wrapped.append(method)
        return real(observer, method, *args)

    monkeypatch.setattr(mcpcore.server, "_observed", counted)
    server = Server("observed")

    @server.tool()
    def echo(text: str) -> str:
        return text

    server.observer = Watch()
    raw = msgspec.json.encode({"name": "echo", "arguments": {"text": "hi"},
                               "_meta": make_meta()})
    request = Request(id=1, method="tools/call", params=msgspec.Raw(raw))
    assert (await server.handle(request))["content"][0]["text"] == "hi"
    meta = parse_request_meta(msgspec.json.decode(raw, type=LenientParams).meta)
    outcome = await server.dispatch(request, meta=meta, inputs=NoBridge())
    assert outcome.body["content"][0]["text"] == "hi"
    assert wrapped == ["tools/call", "tools/call"]
    assert events == [("begin", "tools/call"), ("started", True), ("finished", "complete")] * 2
