"""Tests for mcpcore.types: every schema example round-trips, fields match schema.json.

The official schema ships in ``conformance/schemas/``; its examples are test data in
``tests/data/`` (provenance of both in ``conformance/schemas/README.md``).
"""

from __future__ import annotations

import inspect
import json
import typing
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from msgspec import UNSET

from mcpcore import types
from tests.support.budgets import budget

# --------------------------------------------------------------------------------------
# Spec files
# --------------------------------------------------------------------------------------

VERSION = "2026-07-28"


ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "conformance" / "schemas" / f"{VERSION}.json"
EXAMPLES_DIR = ROOT / "tests" / "data" / f"schema-examples-{VERSION}"
EXAMPLE_FILES = sorted(EXAMPLES_DIR.glob("*/*.json"))
EXAMPLE_DEFS = sorted({p.parent.name for p in EXAMPLE_FILES})


def _example_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@cache
def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


@cache
def _defs() -> dict[str, Any]:
    defs: dict[str, Any] = _schema()["$defs"]
    return defs


@cache
def _validator(def_name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{def_name}", "$defs": _defs()})


def _canonical(value: Any) -> str:
    """Type-exact JSON text: ``1`` differs from ``1.0`` and ``true``, key order ignored."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _assert_same_json(actual: Any, expected: Any) -> None:
    assert actual == expected
    assert _canonical(actual) == _canonical(expected)


# --------------------------------------------------------------------------------------
# Examples that cannot round-trip as written, each with its reason.
# --------------------------------------------------------------------------------------


def _drop_stray_id(original: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in original.items() if k != "id"}


def _drop_false_is_error(value: Any) -> Any:
    """``isError`` defaults to false (schema.json): decoded as ``False``, it is left out
    when encoding again, which means the same."""
    if isinstance(value, dict):
        return {k: _drop_false_is_error(v) for k, v in value.items()
                if not (k == "isError" and v is False)}
    if isinstance(value, list):
        return [_drop_false_is_error(v) for v in value]
    return value


# The ListRootsRequest example carries an ``id``, but embedded input requests
# have neither ``jsonrpc`` nor ``id`` (ListRootsRequest defines no ``id``). The unknown
# field is ignored on decode, so it is absent from the re-encoded value, by design.
EXPECTED_TRANSFORMS = {
    ("ListRootsRequest", "list-roots-request.json"): _drop_stray_id,
    ("CallToolResult", "result-with-unstructured-text.json"): _drop_false_is_error,
    ("CallToolResultResponse", "call-tool-result-response.json"): _drop_false_is_error,
}

# A "complete" read result without ttlMs/cacheScope is not a
# valid ReadResourceResult; schema.json accepts it only through the loose
# InputRequiredResult branch. Discriminating on resultType rejects it, as it should.
EXPECTED_REJECTIONS = {
    ("ReadResourceResultResponse", "read-resource-result-response.json"): "ttlMs",
}


def test_spec_examples_are_present() -> None:
    assert SCHEMA_FILE.is_file(), f"schema.json not found at {SCHEMA_FILE}"
    assert EXAMPLE_FILES, f"no examples under {EXAMPLES_DIR}"
    for key in (*EXPECTED_TRANSFORMS, *EXPECTED_REJECTIONS):
        assert (EXAMPLES_DIR / key[0] / key[1]).is_file(), key


@pytest.mark.parametrize("def_name", EXAMPLE_DEFS)
def test_every_example_folder_has_a_type(def_name: str) -> None:
    assert def_name in types.__all__
    msgspec.json.Decoder(getattr(types, def_name))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=_example_id)
def test_example_round_trips(path: Path) -> None:
    def_name = path.parent.name
    raw = path.read_bytes()
    original = json.loads(raw)
    tp = getattr(types, def_name)

    expected_error = EXPECTED_REJECTIONS.get((def_name, path.name))
    if expected_error is not None:
        with pytest.raises(msgspec.ValidationError, match=expected_error):
            msgspec.json.decode(raw, type=tp)
        return

    decoded = msgspec.json.decode(raw, type=tp)
    again = json.loads(msgspec.json.encode(decoded))
    transform = EXPECTED_TRANSFORMS.get((def_name, path.name))
    expected = transform(original) if transform else original
    _assert_same_json(again, expected)
    # And once more from our own output: encoding is stable.
    assert msgspec.json.encode(msgspec.json.decode(msgspec.json.encode(decoded), type=tp)) == (
        msgspec.json.encode(decoded)
    )


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=_example_id)
def test_example_validates_against_schema_json(path: Path) -> None:
    instance = json.loads(path.read_bytes())
    errors = [e.message for e in _validator(path.parent.name).iter_errors(instance)]
    assert errors == []


# --------------------------------------------------------------------------------------
# The module against schema.json
# --------------------------------------------------------------------------------------

_IMPORTED = {"Any", "Literal", "TypeAlias", "msgspec", "UNSET", "UnsetType"}


def _public_names() -> set[str]:
    return {n for n in vars(types) if not n.startswith("_") and n not in _IMPORTED}


def test_all_lists_every_public_name() -> None:
    assert len(types.__all__) == len(set(types.__all__))
    assert set(types.__all__) == _public_names()


def test_every_schema_def_has_a_decodable_type() -> None:
    missing = [name for name in _defs() if name not in types.__all__]
    assert missing == []
    for name in _defs():
        msgspec.json.Decoder(getattr(types, name))  # raises TypeError if msgspec can't


def _object_defs() -> list[str]:
    return [n for n, d in _defs().items() if d.get("type") == "object" and "properties" in d]


# Fields a Struct has beyond its schema definition, and why.
_EXTRA_FIELDS = {
    # Base of Text/BlobResourceContents and the decode type of "text or blob".
    "ResourceContents": {"text", "blob"},
    "TextResourceContents": {"blob"},
    "BlobResourceContents": {"text"},
    # Subclasses of ElicitRequestParams, the decode type of "form or URL".
    "ElicitRequestFormParams": {"url"},
    "ElicitRequestURLParams": {"requestedSchema"},
}


def _struct_info(tp: Any) -> tuple[dict[str, bool], str | None, Any]:
    """Wire name -> required, plus the tag field and tag value."""
    fields = {f.encode_name: f.required for f in msgspec.structs.fields(tp)}
    config = tp.__struct_config__
    return fields, config.tag_field, config.tag


@pytest.mark.parametrize("def_name", _object_defs())
def test_struct_fields_match_schema(def_name: str) -> None:
    schema_def = _defs()[def_name]
    props = set(schema_def["properties"])
    required = set(schema_def.get("required", []))
    tp = getattr(types, def_name)
    assert isinstance(tp, type) and issubclass(tp, msgspec.Struct)
    fields, tag_field, tag = _struct_info(tp)

    wire_names = set(fields) | ({tag_field} if tag_field else set())
    assert wire_names - props == _EXTRA_FIELDS.get(def_name, set())
    assert props - wire_names == set()

    for name, is_required in fields.items():
        assert is_required == (name in required), name
    if tag_field is not None:
        # A tag is always encoded. Where the schema has a const, the tag is that const.
        assert tag_field in required
        const = schema_def["properties"][tag_field].get("const")
        if const is not None:
            assert tag == const


def test_no_struct_forbids_unknown_fields_and_all_are_keyword_only() -> None:
    structs = [
        obj
        for obj in vars(types).values()
        if isinstance(obj, type) and issubclass(obj, msgspec.Struct)
    ]
    assert len(structs) > 100
    for tp in structs:
        assert tp.__struct_config__.forbid_unknown_fields is False, tp
        assert tp.__struct_config__.omit_defaults is True, tp
        params = inspect.signature(tp).parameters.values()
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), tp


def test_result_types_follow_the_schema() -> None:
    defs = _defs()
    server_results = [
        n for n in defs if n.endswith("Result") and "resultType" in defs[n].get("properties", {})
    ]
    assert "CallToolResult" in server_results and "InputRequiredResult" in server_results
    for name in server_results:
        assert "resultType" in defs[name]["required"]
        tp = getattr(types, name)
        if name == "Result":  # the open form
            assert tp.__struct_config__.tag_field is None
            assert _struct_info(tp)[0]["resultType"] is True
            continue
        assert tp.__struct_config__.tag_field == "resultType", name
        expected = "input_required" if name == "InputRequiredResult" else "complete"
        assert tp.__struct_config__.tag == expected, name
    # Client results carry no resultType.
    for name in ("ElicitResult", "CreateMessageResult", "ListRootsResult"):
        assert "resultType" not in defs[name]["properties"]
        fields, tag_field, _ = _struct_info(getattr(types, name))
        assert tag_field is None and "resultType" not in fields
    # Cacheable results require integer ttlMs and the scope enum.
    for name in ("DiscoverResult", "ListToolsResult", "ReadResourceResult"):
        fields, _, _ = _struct_info(getattr(types, name))
        assert fields["ttlMs"] is True and fields["cacheScope"] is True


# --------------------------------------------------------------------------------------
# Behaviour the engine relies on
# --------------------------------------------------------------------------------------


def test_absent_is_not_null() -> None:
    result = types.CallToolResult(content=[types.TextContent(text="hi")])
    assert msgspec.json.decode(msgspec.json.encode(result)) == {
        "resultType": "complete",
        "content": [{"type": "text", "text": "hi"}],
    }
    with_null = types.CallToolResult(content=[], structured_content=None)
    assert msgspec.json.decode(msgspec.json.encode(with_null)) == {
        "resultType": "complete",
        "content": [],
        "structuredContent": None,
    }
    decoded = msgspec.json.decode(
        b'{"content":[],"structuredContent":null}', type=types.CallToolResult
    )
    assert decoded.structured_content is None
    decoded = msgspec.json.decode(b'{"content":[]}', type=types.CallToolResult)
    assert decoded.structured_content is UNSET


def test_result_union_discriminates_on_result_type() -> None:
    body = b'{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","requestState":"s"}}'
    response = msgspec.json.decode(body, type=types.CallToolResultResponse)
    assert isinstance(response.result, types.InputRequiredResult)
    assert response.id == 7
    body = b'{"jsonrpc":"2.0","id":"7","result":{"resultType":"complete","content":[]}}'
    response = msgspec.json.decode(body, type=types.CallToolResultResponse)
    assert isinstance(response.result, types.CallToolResult)
    assert response.id == "7"
    # Inside a union resultType is required ...
    with pytest.raises(msgspec.ValidationError, match="resultType"):
        msgspec.json.decode(
            b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', type=types.CallToolResultResponse
        )
    # ... on its own an absent resultType reads as "complete" (schema: backward compat).
    assert msgspec.json.decode(b'{"content":[]}', type=types.CallToolResult).content == []
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(
            b'{"resultType":"input_required","content":[]}', type=types.CallToolResult
        )


def test_input_required_result_needs_requests_or_state() -> None:
    with pytest.raises(ValueError, match="inputRequests or requestState"):
        types.InputRequiredResult()
    with pytest.raises(msgspec.ValidationError, match="inputRequests or requestState"):
        msgspec.json.decode(b'{"resultType":"input_required"}', type=types.InputRequiredResult)
    assert msgspec.json.encode(types.InputRequiredResult(request_state="x")) == (
        b'{"resultType":"input_required","requestState":"x"}'
    )


@pytest.mark.parametrize(
    ("alias", "def_name", "path"),
    [
        ("Role", "Role", ()),
        ("LoggingLevel", "LoggingLevel", ()),
        ("CacheScope", "CacheableResult", ("properties", "cacheScope")),
        ("IconTheme", "Icon", ("properties", "theme")),
        ("IncludeContext", "CreateMessageRequestParams", ("properties", "includeContext")),
        ("ToolChoiceMode", "ToolChoice", ("properties", "mode")),
        ("ElicitAction", "ElicitResult", ("properties", "action")),
        ("StringFormat", "StringSchema", ("properties", "format")),
    ],
)
def test_literal_aliases_match_schema_enums(
    alias: str, def_name: str, path: tuple[str, ...]
) -> None:
    node = _defs()[def_name]
    for key in path:
        node = node[key]
    assert set(typing.get_args(getattr(types, alias))) == set(node["enum"])


def test_elicit_requested_schema_keeps_dollar_schema() -> None:
    raw = (
        b'{"mode":"form","message":"m","requestedSchema":{"$schema":"x","type":"object",'
        b'"properties":{"n":{"type":"string","enum":["a"],"enumNames":["A"]}}}}'
    )
    params = msgspec.json.decode(raw, type=types.ElicitRequestFormParams)
    assert params.requested_schema.schema == "x"
    assert json.loads(msgspec.json.encode(params)) == json.loads(raw)
    prop = params.requested_schema.properties["n"]
    legacy = msgspec.convert(prop, types.LegacyTitledEnumSchema)
    assert legacy.enum_names == ["A"]


def test_unknown_fields_are_ignored() -> None:
    body = b'{"type":"text","text":"a","future":{"x":1}}'
    assert msgspec.json.decode(body, type=types.TextContent) == types.TextContent(text="a")


def test_client_request_union_dispatches_on_method() -> None:
    raw = (EXAMPLES_DIR / "CallToolRequest" / "call-tool-request.json").read_bytes()
    request = msgspec.json.decode(raw, type=types.ClientRequest)
    assert isinstance(request, types.CallToolRequest)
    meta = msgspec.convert(request.params.meta, types.RequestMetaObject)
    assert meta.protocol_version == VERSION
    assert meta.client_capabilities == types.ClientCapabilities()
    assert meta.client_info == types.Implementation(name="ExampleClient", version="1.0.0")
    # A missing required _meta field is a validation error (-32602 territory).
    with pytest.raises(msgspec.ValidationError, match="protocolVersion"):
        msgspec.convert({"io.modelcontextprotocol/clientCapabilities": {}}, types.RequestMetaObject)


def test_meta_keeps_unknown_keys() -> None:
    params = types.CallToolRequestParams(
        meta={"io.modelcontextprotocol/protocolVersion": VERSION, "traceparent": "00-ab-cd-01"},
        name="t",
    )
    again = msgspec.json.decode(msgspec.json.encode(params), type=types.CallToolRequestParams)
    assert again.meta["traceparent"] == "00-ab-cd-01"


def test_tool_schema_is_kept_verbatim() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"region": {"$anchor": "r", "type": "string", "x-mcp-header": "Region"}},
        "properties": {"region": {"$ref": "#/$defs/region", "x-mcp-header": "Region"}},
        "additionalProperties": False,
    }
    tool = types.Tool(name="t", input_schema=schema, output_schema={"type": "array"})
    wire = msgspec.json.decode(msgspec.json.encode(tool))
    assert wire["inputSchema"] == schema
    assert wire["outputSchema"] == {"type": "array"}


def test_subclasses_encode_like_their_decode_type() -> None:
    text = types.TextResourceContents(uri="file:///a", text="x")
    decoded = msgspec.json.decode(msgspec.json.encode(text), type=types.ResourceContents)
    assert decoded == types.ResourceContents(uri="file:///a", text="x")

    url = types.ElicitRequestURLParams(message="m", mode="url", url="https://x.example/")
    request = types.ElicitRequest(params=url)
    again = msgspec.json.decode(msgspec.json.encode(request), type=types.ElicitRequest)
    assert again.params == types.ElicitRequestParams(
        message="m", mode="url", url="https://x.example/"
    )
    assert msgspec.json.encode(again) == msgspec.json.encode(request)


def test_input_responses_convert_per_key() -> None:
    raw = EXAMPLES_DIR / "InputResponses" / "elicitation-and-sampling-input-responses.json"
    responses = msgspec.json.decode(raw.read_bytes(), type=types.InputResponses)
    elicit = msgspec.convert(responses["github_login"], types.ElicitResult)
    assert elicit.action == "accept" and elicit.content == {"name": "octocat"}
    sampled = msgspec.convert(responses["capital_of_france"], types.CreateMessageResult)
    assert isinstance(sampled.content, types.TextContent)


def test_error_codes_are_fixed() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"code":-32603,"message":"x"}', type=types.InvalidParamsError)
    err = types.UnsupportedProtocolVersionError(
        jsonrpc="2.0",
        id=1,
        error=types.UnsupportedProtocolVersionErrorObject(
            code=-32022,
            message="Unsupported protocol version",
            data=types.UnsupportedProtocolVersionErrorData(supported=[VERSION], requested="x"),
        ),
    )
    wire = msgspec.json.decode(msgspec.json.encode(err))
    assert wire["error"]["data"] == {"supported": [VERSION], "requested": "x"}
    # No id when it could not be read: the member is left out, never null.
    parse = types.JSONRPCErrorResponse(jsonrpc="2.0", error=types.Error(code=-32700, message="p"))
    assert msgspec.json.decode(msgspec.json.encode(parse)) == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "p"},
    }


# --------------------------------------------------------------------------------------
# Properties: encode -> decode is the identity
# --------------------------------------------------------------------------------------

# Slow properties (a whole generated message encoded, decoded and compared):
# tests/support/budgets.py.
PROPERTY_SETTINGS = budget(small=50, full=200, deadline=None)


def _opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(UNSET), strategy)


_text = st.text(max_size=12)
_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=8,
)
_json_objects = st.dictionaries(_text, _json_values, max_size=4)
_meta = st.one_of(
    _json_objects,
    st.fixed_dictionaries(
        {
            "io.modelcontextprotocol/protocolVersion": st.just(VERSION),
            "io.modelcontextprotocol/clientCapabilities": st.just({}),
        },
        optional={"progressToken": st.one_of(st.integers(), _text), "traceparent": _text},
    ),
)

_annotations = st.builds(
    types.Annotations,
    audience=_opt(st.lists(st.sampled_from(["user", "assistant"]), max_size=2)),
    priority=_opt(st.one_of(st.integers(0, 1), st.floats(0, 1))),
    last_modified=_opt(_text),
)
_icons = st.lists(
    st.builds(
        types.Icon,
        src=_text,
        mime_type=_opt(_text),
        sizes=_opt(st.lists(_text, max_size=2)),
        theme=_opt(st.sampled_from(["light", "dark"])),
    ),
    max_size=2,
)
_resource_contents = st.one_of(
    st.builds(types.ResourceContents, uri=_text, mime_type=_opt(_text), text=_text),
    st.builds(types.ResourceContents, uri=_text, blob=_text, meta=_opt(_json_objects)),
)
_content_blocks = st.one_of(
    st.builds(
        types.TextContent, text=_text, annotations=_opt(_annotations), meta=_opt(_json_objects)
    ),
    st.builds(types.ImageContent, data=_text, mime_type=_text, annotations=_opt(_annotations)),
    st.builds(types.AudioContent, data=_text, mime_type=_text, meta=_opt(_json_objects)),
    st.builds(
        types.ResourceLink,
        uri=_text,
        name=_text,
        title=_opt(_text),
        description=_opt(_text),
        mime_type=_opt(_text),
        size=_opt(st.integers(0, 2**40)),
        icons=_opt(_icons),
        annotations=_opt(_annotations),
    ),
    st.builds(types.EmbeddedResource, resource=_resource_contents, annotations=_opt(_annotations)),
)

# JSON Schemas with the keywords that must survive untouched.
_json_schemas = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "$schema": st.sampled_from(
            [
                "https://json-schema.org/draft/2020-12/schema",
                "http://json-schema.org/draft-07/schema#",
            ]
        ),
        "$defs": st.dictionaries(_text, _json_objects, max_size=2),
        "$anchor": _text,
        "properties": st.dictionaries(
            _text,
            st.fixed_dictionaries(
                {"type": st.sampled_from(["string", "integer", "boolean"])},
                optional={"x-mcp-header": _text, "description": _text},
            ),
            max_size=3,
        ),
        "required": st.lists(_text, max_size=2),
        "additionalProperties": st.one_of(st.booleans(), _json_objects),
        "x-vendor": _json_values,
    },
)

_tools = st.builds(
    types.Tool,
    name=_text,
    input_schema=_json_schemas,
    title=_opt(_text),
    description=_opt(_text),
    output_schema=_opt(st.one_of(_json_schemas, _json_objects)),
    annotations=_opt(
        st.builds(
            types.ToolAnnotations,
            title=_opt(_text),
            read_only_hint=_opt(st.booleans()),
            destructive_hint=_opt(st.booleans()),
            idempotent_hint=_opt(st.booleans()),
            open_world_hint=_opt(st.booleans()),
        )
    ),
    icons=_opt(_icons),
    meta=_opt(_json_objects),
)

_input_responses = st.dictionaries(
    _text,
    st.one_of(
        st.fixed_dictionaries(
            {"action": st.sampled_from(["accept", "decline", "cancel"])},
            optional={"content": st.dictionaries(_text, st.one_of(_text, st.booleans()))},
        ),
        _json_objects,
    ),
    max_size=3,
)

_call_tool_params = st.builds(
    types.CallToolRequestParams,
    meta=_meta,
    name=_text,
    arguments=_opt(_json_objects),
    input_responses=_opt(_input_responses),
    request_state=_opt(_text),
)

_call_tool_results = st.builds(
    types.CallToolResult,
    content=st.lists(_content_blocks, max_size=3),
    structured_content=_opt(_json_values),
    is_error=st.booleans(),
    meta=_opt(_json_objects),
)

_primitive_schemas = st.one_of(
    st.builds(types.StringSchema, title=_opt(_text), format=_opt(st.just("email"))),
    st.builds(types.NumberSchema, type=st.sampled_from(["integer", "number"])),
    st.builds(types.BooleanSchema, default=_opt(st.booleans())),
    st.builds(types.UntitledSingleSelectEnumSchema, enum=st.lists(_text, max_size=3)),
).map(msgspec.to_builtins)

_elicit_params = st.one_of(
    st.builds(
        types.ElicitRequestParams,
        message=_text,
        mode=st.sampled_from([UNSET, "form"]),
        requested_schema=st.builds(
            types.ElicitRequestedSchema,
            type=st.just("object"),
            properties=st.dictionaries(_text, _primitive_schemas, max_size=3),
            required=_opt(st.lists(_text, max_size=2)),
        ),
    ),
    st.builds(types.ElicitRequestParams, message=_text, mode=st.just("url"), url=_text),
)
_sampling_blocks = st.one_of(
    st.builds(types.TextContent, text=_text),
    st.builds(types.ToolUseContent, id=_text, name=_text, input=_json_objects),
    st.builds(
        types.ToolResultContent,
        tool_use_id=_text,
        content=st.lists(st.builds(types.TextContent, text=_text), max_size=2),
        is_error=st.booleans(),
    ),
)
_input_requests = st.one_of(
    st.builds(types.ElicitRequest, params=_elicit_params),
    st.builds(
        types.CreateMessageRequest,
        params=st.builds(
            types.CreateMessageRequestParams,
            messages=st.lists(
                st.builds(
                    types.SamplingMessage,
                    role=st.sampled_from(["user", "assistant"]),
                    content=st.one_of(_sampling_blocks, st.lists(_sampling_blocks, max_size=2)),
                ),
                max_size=2,
            ),
            max_tokens=st.integers(1, 10_000),
            system_prompt=_opt(_text),
            tools=_opt(st.lists(_tools, max_size=1)),
        ),
    ),
    st.builds(
        types.ListRootsRequest,
        params=_opt(st.builds(types.ListRootsRequestParams, meta=_opt(_json_objects))),
    ),
)
_input_required_results = st.one_of(
    st.builds(
        types.InputRequiredResult,
        input_requests=st.dictionaries(_text, _input_requests, min_size=1, max_size=3),
        request_state=_opt(_text),
        meta=_opt(_json_objects),
    ),
    st.builds(types.InputRequiredResult, request_state=_text, meta=_opt(_json_objects)),
)


def _assert_round_trip(value: msgspec.Struct) -> None:
    wire = msgspec.json.encode(value)
    decoded = msgspec.json.decode(wire, type=type(value))
    assert decoded == value
    assert msgspec.json.encode(decoded) == wire


@PROPERTY_SETTINGS
@given(_call_tool_params)
def test_call_tool_request_params_round_trip(value: types.CallToolRequestParams) -> None:
    _assert_round_trip(value)


@PROPERTY_SETTINGS
@given(_call_tool_results)
def test_call_tool_result_round_trip(value: types.CallToolResult) -> None:
    _assert_round_trip(value)
    # And inside the response union, picked by resultType.
    response = types.CallToolResultResponse(jsonrpc="2.0", id=1, result=value)
    _assert_round_trip(response)


@PROPERTY_SETTINGS
@given(_tools)
def test_tool_round_trip(value: types.Tool) -> None:
    _assert_round_trip(value)


@PROPERTY_SETTINGS
@given(_input_required_results)
def test_input_required_result_round_trip(value: types.InputRequiredResult) -> None:
    _assert_round_trip(value)
    response = types.CallToolResultResponse(jsonrpc="2.0", id="r", result=value)
    _assert_round_trip(response)
