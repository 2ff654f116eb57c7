"""mcpcore.schema: dialects, local-only $ref, bounds, messages, formats, elicitation forms."""

from __future__ import annotations

import copy
import doctest
import socket
import urllib.request
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpcore.schema
from mcpcore.schema import (
    DEFAULT_LIMITS,
    DRAFT7_URI,
    DRAFT202012_URI,
    SchemaError,
    SchemaLimits,
    check_elicitation_form,
    compile_schema,
    validate_elicitation_content,
    validate_elicitation_schema,
)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach the network fails the test loudly."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("schema code tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def test_docstring_examples_hold() -> None:
    result = doctest.testmod(mcpcore.schema, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


# -- dialects ---------------------------------------------------------------------------

SUPPORTED_DIALECTS = [
    None,
    DRAFT202012_URI,
    DRAFT202012_URI + "#",
    DRAFT7_URI,
    "http://json-schema.org/draft-07/schema",
]


@pytest.mark.parametrize("dialect", SUPPORTED_DIALECTS)
def test_supported_dialect_compiles_and_validates(dialect: str | None) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    if dialect is not None:
        schema["$schema"] = dialect
    compiled = compile_schema(schema)
    assert compiled.validate({"n": 1}) == []
    assert compiled.validate({"n": "one"}) == ["$.n: 'one' is not of type 'integer'"]


UNSUPPORTED_DIALECTS: list[object] = [
    "http://json-schema.org/draft-04/schema#",
    "http://json-schema.org/draft-06/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema/",
    "http://json-schema.org/draft/2020-12/schema",  # http, not https
    "https://example.com/my-dialect",
    "",
    7,
]


@pytest.mark.parametrize("dialect", UNSUPPORTED_DIALECTS)
def test_unsupported_dialect_is_refused_by_name(dialect: object) -> None:
    with pytest.raises(SchemaError, match="unsupported JSON Schema dialect") as info:
        compile_schema({"$schema": dialect, "type": "object"})
    assert repr(dialect) in str(info.value)


def test_unsupported_dialect_in_a_subschema_is_refused() -> None:
    schema = {"$defs": {"a": {"$schema": "http://json-schema.org/draft-04/schema#"}}}
    with pytest.raises(SchemaError, match="draft-04"):
        compile_schema(schema)


def test_draft07_semantics_apply_under_draft07() -> None:
    # Array-form "items" is tuple validation in draft-07 (prefixItems in 2020-12).
    schema = {"$schema": DRAFT7_URI, "items": [{"type": "string"}, {"type": "integer"}]}
    compiled = compile_schema(schema)
    assert compiled.validate(["a", 1]) == []
    assert compiled.validate([1, 1]) == ["$[0]: 1 is not of type 'string'"]


INVALID_SCHEMAS: list[tuple[object, str]] = [
    ({"type": "wat"}, "/type"),
    ({"pattern": "("}, "/pattern"),
    ({"required": "name"}, "/required"),
    ({"minimum": "3"}, "/minimum"),
    ({"properties": {"a": 5}}, "/properties/a"),
    ({"$schema": DRAFT7_URI, "type": "wat"}, "/type"),
]


@pytest.mark.parametrize("schema, where", INVALID_SCHEMAS)
def test_schema_invalid_for_its_dialect_is_refused(schema: object, where: str) -> None:
    with pytest.raises(SchemaError, match="invalid schema at " + where):
        compile_schema(schema)  # type: ignore[arg-type]


@pytest.mark.parametrize("schema", [[], "object", True, None, 3])
def test_non_object_schema_is_refused(schema: object) -> None:
    with pytest.raises(SchemaError, match="must be a JSON object"):
        compile_schema(schema)  # type: ignore[arg-type]


NON_JSON_SCHEMAS: list[dict[Any, Any]] = [
    {"const": float("nan")},
    {"const": float("inf")},
    {"enum": [{1, 2}]},
    {"default": object()},
    {"const": {1: "int key"}},
]


@pytest.mark.parametrize("schema", NON_JSON_SCHEMAS)
def test_schema_that_is_not_json_is_refused(schema: dict[Any, Any]) -> None:
    with pytest.raises(SchemaError):
        compile_schema(schema)


# -- $ref -------------------------------------------------------------------------------

LOCAL_REFS: list[tuple[dict[str, Any], object, object]] = [
    # (schema, a valid instance, an invalid instance)
    (
        {"$defs": {"n": {"type": "integer"}}, "properties": {"x": {"$ref": "#/$defs/n"}}},
        {"x": 1},
        {"x": "1"},
    ),
    (
        {"$defs": {"n": {"$anchor": "num", "type": "integer"}}, "items": {"$ref": "#num"}},
        [1, 2],
        [1, "2"],
    ),
    (
        {
            "$id": "https://example.com/root.json",
            "$defs": {"n": {"$id": "n.json", "type": "integer"}},
            "properties": {"x": {"$ref": "n.json"}},
        },
        {"x": 1},
        {"x": 1.5},
    ),
    (
        {
            "$id": "https://example.com/root.json",
            "$defs": {"n": {"type": "integer"}},
            "properties": {"x": {"$ref": "https://example.com/root.json#/$defs/n"}},
        },
        {"x": 1},
        {"x": None},
    ),
    (
        {
            "$schema": DRAFT7_URI,
            "definitions": {"n": {"type": "integer"}},
            "items": {"$ref": "#/definitions/n"},
        },
        [1],
        ["1"],
    ),
    (
        {"type": "object", "properties": {"child": {"$ref": "#"}}, "additionalProperties": False},
        {"child": {"child": {}}},
        {"child": {"other": 1}},
    ),
    (
        {
            "$dynamicAnchor": "node",
            "type": "object",
            "properties": {"next": {"$dynamicRef": "#node"}},
        },
        {"next": {"next": {}}},
        {"next": {"next": 3}},
    ),
]


@pytest.mark.parametrize("schema, good, bad", LOCAL_REFS)
def test_local_refs_resolve(schema: dict[str, Any], good: object, bad: object) -> None:
    compiled = compile_schema(schema)
    assert compiled.is_valid(good)
    assert compiled.validate(good) == []
    assert not compiled.is_valid(bad)
    assert len(compiled.validate(bad)) == 1


UNRESOLVABLE_REFS: list[dict[str, Any]] = [
    {"$ref": "https://example.com/x.json"},
    {"properties": {"a": {"$ref": "https://example.com/x.json#/$defs/a"}}},
    {"$ref": "http://169.254.169.254/latest/meta-data"},
    {"$ref": "file:///etc/passwd"},
    {"$ref": "other.json"},
    {"$ref": "#/$defs/missing"},
    {"$ref": "#missing-anchor"},
    {"$dynamicRef": "#missing"},
    {"$ref": DRAFT202012_URI},  # bundled with jsonschema, but not in the document
    {"$id": "https://example.com/root.json", "items": {"$ref": "sibling.json"}},
    {"anyOf": [{"type": "string"}, {"$ref": "https://example.com/x.json"}]},
    {"$schema": DRAFT7_URI, "items": {"$ref": "http://example.com/y.json"}},
]


@pytest.mark.parametrize("schema", UNRESOLVABLE_REFS)
def test_ref_outside_the_document_is_refused_without_fetching(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaError, match="does not resolve inside the schema"):
        compile_schema(schema)


def test_ref_inside_data_is_not_a_reference() -> None:
    # "const" holds data: its "$ref" key is a value to compare, not a reference.
    compiled = compile_schema({"const": {"$ref": "https://example.com/x.json"}})
    assert compiled.is_valid({"$ref": "https://example.com/x.json"})


# -- bounds -----------------------------------------------------------------------------


def nested_properties(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def test_default_limits_are_as_documented() -> None:
    assert SchemaLimits(
        max_depth=32, max_subschemas=1000, max_schema_bytes=256 * 1024,
        max_json_nesting=128, max_validation_errors=20, max_message_chars=300,
    ) == DEFAULT_LIMITS  # fmt: skip


def test_depth_at_the_limit_compiles() -> None:
    compile_schema(nested_properties(32))


def test_depth_over_the_limit_is_refused() -> None:
    with pytest.raises(SchemaError, match="deeper than 32"):
        compile_schema(nested_properties(33))


def test_depth_counts_composition_keywords() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5):
        schema = {"allOf": [{"anyOf": [schema]}]}
    compile_schema(schema, limits=SchemaLimits(max_depth=10))
    with pytest.raises(SchemaError, match="deeper than 9"):
        compile_schema(schema, limits=SchemaLimits(max_depth=9))


def test_subschema_count_is_bounded() -> None:
    compile_schema({"anyOf": [{"type": "string"}] * 1000})
    with pytest.raises(SchemaError, match="more than 1000 subschemas"):
        compile_schema({"anyOf": [{"type": "string"}] * 1001})


def test_subschema_count_includes_defs() -> None:
    schema = {"$defs": {f"d{i}": {"type": "string"} for i in range(11)}}
    with pytest.raises(SchemaError, match="more than 10 subschemas"):
        compile_schema(schema, limits=SchemaLimits(max_subschemas=10))


def test_schema_size_is_bounded() -> None:
    compile_schema({"description": "x" * 1000}, limits=SchemaLimits(max_schema_bytes=1100))
    with pytest.raises(SchemaError, match="over 1000 bytes"):
        compile_schema({"description": "x" * 1000}, limits=SchemaLimits(max_schema_bytes=1000))


def test_raw_json_nesting_is_bounded() -> None:
    # Deep data (not subschemas) is refused too: the validator compares it recursively.
    value: object = 1
    for _ in range(200):
        value = [value]
    with pytest.raises(SchemaError, match="deeper than 128 JSON levels"):
        compile_schema({"enum": [value]})


# -- validation -------------------------------------------------------------------------

# The conformance suite's json-schema-2020-12 scenario.
CONFORMANCE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

CONFORMANCE_VALID: list[dict[str, Any]] = [
    {"email": "a@example.com"},
    {"contactMethod": "phone", "phone": "+1 555"},
    {"contactMethod": "email", "email": "a@example.com", "phone": "1"},
    {"name": "Ada", "address": {"street": "1 Main", "city": "Oslo"}, "email": "a@b.c"},
]

CONFORMANCE_INVALID: list[tuple[object, list[str]]] = [
    (
        {},
        ["$: {} is not valid under any of the given schemas", "$: 'email' is a required property"],
    ),
    ({"contactMethod": "phone", "email": "a@b.c"}, ["$: 'phone' is a required property"]),
    ({"phone": "1"}, ["$: 'email' is a required property"]),
    (
        {"email": "a@b.c", "age": 3},
        ["$: Additional properties are not allowed ('age' was unexpected)"],
    ),
    ({"email": "a@b.c", "address": {"city": 5}}, ["$.address.city: 5 is not of type 'string'"]),
    (
        {"email": "a@b.c", "contactMethod": "fax"},
        ["$.contactMethod: 'fax' is not one of ['phone', 'email']"],
    ),
    ("not an object", ["$: 'not an object' is not of type 'object'"]),
]


@pytest.fixture(scope="module")
def conformance() -> mcpcore.schema.CompiledSchema:
    return compile_schema(CONFORMANCE_SCHEMA)


@pytest.mark.parametrize("instance", CONFORMANCE_VALID)
def test_conformance_schema_accepts(
    conformance: mcpcore.schema.CompiledSchema, instance: dict[str, Any]
) -> None:
    assert conformance.validate(instance) == []
    assert conformance.is_valid(instance)


@pytest.mark.parametrize("instance, messages", CONFORMANCE_INVALID)
def test_conformance_schema_rejects_with_messages(
    conformance: mcpcore.schema.CompiledSchema, instance: object, messages: list[str]
) -> None:
    assert conformance.validate(instance) == messages
    assert not conformance.is_valid(instance)


def test_read_only_mappings_are_accepted_and_kept() -> None:
    schema = MappingProxyType(
        {"type": "object", "properties": MappingProxyType({"a": {"type": "string"}})}
    )
    compiled = compile_schema(schema)
    assert compiled.schema is schema
    assert compiled.validate({"a": 1}) == ["$.a: 1 is not of type 'string'"]


def test_compiled_schema_keeps_the_schema_exactly_as_authored() -> None:
    original = copy.deepcopy(CONFORMANCE_SCHEMA)
    compiled = compile_schema(CONFORMANCE_SCHEMA)
    for instance in [*CONFORMANCE_VALID, *(i for i, _ in CONFORMANCE_INVALID)]:
        compiled.validate(instance)
        compiled.is_valid(instance)
    assert compiled.schema is CONFORMANCE_SCHEMA
    assert compiled.schema == original
    # What the suite checks on tools/list (sep-2106-*, json-schema-2020-12-*):
    assert compiled.schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert compiled.schema["$defs"]["address"]["$anchor"] == "addressDef"
    assert compiled.schema["additionalProperties"] is False
    assert "anyOf" in compiled.schema["allOf"][0]
    assert {"if", "then", "else"} <= compiled.schema.keys()


def test_messages_are_capped() -> None:
    schema = {"type": "object", "required": [f"p{i}" for i in range(50)]}
    assert len(compile_schema(schema).validate({})) == 20
    assert (
        len(compile_schema(schema, limits=SchemaLimits(max_validation_errors=3)).validate({})) == 3
    )


def test_long_messages_are_cut() -> None:
    message = compile_schema({"type": "integer"}).validate("x" * 10_000)[0]
    assert len(message) == DEFAULT_LIMITS.max_message_chars
    assert message.startswith("$: 'xxx") and message.endswith("...")


def test_deep_instance_gives_a_message_not_an_exception() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    compiled = compile_schema({"enum": [1]})
    assert compiled.validate(deep) == ["$: the value is nested too deeply to validate"]
    assert compiled.is_valid(deep) is False


def test_schema_recursing_without_end_gives_a_message() -> None:
    compiled = compile_schema({"$ref": "#"})
    assert compiled.validate(1) == ["$: the value is nested too deeply to validate"]
    assert not compiled.is_valid(1)


FORMATS: list[tuple[str, object, bool]] = [
    ("email", "user@example.com", True),
    ("email", "first.last+tag@sub.example.org", True),
    ("email", "no-at-sign", False),
    ("email", "two@@example.com", False),
    ("email", "@example.com", False),
    ("email", "user@", False),
    ("email", "us er@example.com", False),
    ("email", "user@.example.com", False),
    ("email", "user@example..com", False),
    ("uri", "https://example.com/a?b=c#d", True),
    ("uri", "urn:isbn:0451450523", True),
    ("uri", "mailto:someone@example.com", True),
    ("uri", "file:///tmp/x%20y", True),
    ("uri", "/relative/path", False),
    ("uri", "example.com", False),
    ("uri", "https://exa mple.com", False),
    ("uri", "https://example.com/%zz", False),
    ("uri", "1http://example.com", False),
    ("date", "2024-02-29", True),
    ("date", "2023-02-29", False),
    ("date", "2024-13-01", False),
    ("date", "2024-1-01", False),
    ("date", "20240101", False),
    ("date", "2024-01-01\n", False),
    ("date", "٢٠٢٤-01-01", False),  # non-ASCII digits
    ("date-time", "2024-01-01T12:30:00Z", True),
    ("date-time", "2024-01-01t12:30:00.123z", True),
    ("date-time", "2024-01-01T12:30:00+05:30", True),
    ("date-time", "2024-01-01T12:30:00-08:00", True),
    ("date-time", "2016-12-31T23:59:60Z", True),
    ("date-time", "2016-12-31T15:59:60-08:00", True),
    ("date-time", "2016-12-31T23:58:60Z", False),
    ("date-time", "2024-01-01T12:30:00", False),  # no offset
    ("date-time", "2024-01-01 12:30:00Z", False),
    ("date-time", "2024-01-01T24:00:00Z", False),
    ("date-time", "2024-01-01T12:60:00Z", False),
    ("date-time", "2024-01-01T12:00:00+24:00", False),
    ("date-time", "2024-02-30T12:00:00Z", False),
    ("date-time", "2024-01-01", False),
    # "format" applies to strings only.
    ("email", 42, True),
    ("date-time", None, True),
    # Other formats stay annotations.
    ("hostname", "not a hostname!", True),
    ("ipv4", "999.1.1.1", True),
]


@pytest.mark.parametrize("fmt, value, ok", FORMATS)
@pytest.mark.parametrize("dialect", [DRAFT202012_URI, DRAFT7_URI])
def test_format_assertions(dialect: str, fmt: str, value: object, ok: bool) -> None:
    compiled = compile_schema({"$schema": dialect, "format": fmt})
    assert compiled.is_valid(value) is ok
    assert (compiled.validate(value) == []) is ok


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=25,
)

PROPERTY_SCHEMAS: list[dict[str, Any]] = [
    CONFORMANCE_SCHEMA,
    {"type": "object", "properties": {"child": {"$ref": "#"}}, "required": ["child"]},
    {"uniqueItems": True, "items": {"enum": [1, [1], {"a": None}]}},
    {"format": "date-time", "pattern": "^[0-9]", "minLength": 2},
    {"$schema": DRAFT7_URI, "dependencies": {"a": ["b"]}, "propertyNames": {"maxLength": 3}},
]


@pytest.mark.parametrize("schema", PROPERTY_SCHEMAS)
@given(instance=json_values)
def test_validate_never_raises_and_agrees_with_is_valid(
    schema: dict[str, Any], instance: object
) -> None:
    compiled = compile_schema(schema)
    messages = compiled.validate(instance)
    assert all(isinstance(m, str) and m.startswith("$") for m in messages)
    assert len(messages) <= DEFAULT_LIMITS.max_validation_errors
    assert compiled.is_valid(instance) is (messages == [])


# -- elicitation ----------------------------------------------------------------

FORM_FIELDS: list[dict[str, Any]] = [
    {"type": "string"},
    {"type": "string", "title": "Name", "description": "Your name", "default": "Ada"},
    {"type": "string", "minLength": 1, "maxLength": 40},
    {"type": "string", "format": "email"},
    {"type": "string", "format": "uri"},
    {"type": "string", "format": "date"},
    {"type": "string", "format": "date-time"},
    {"type": "number", "minimum": 0.5, "maximum": 9.5, "default": 1},
    {"type": "integer", "minimum": 0, "maximum": 120, "default": 30},
    {"type": "integer", "default": 3.0},
    {"type": "boolean", "default": False},
    {"type": "string", "enum": ["red", "green"], "default": "red"},
    {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
    {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
    {
        "type": "array",
        "items": {"type": "string", "enum": ["a", "b"]},
        "minItems": 1,
        "maxItems": 2,
    },
    {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}, "default": ["a"]},
    {"type": "string", "x-ui-hint": "wide"},  # extensions are not keywords
]


@pytest.mark.parametrize("field", FORM_FIELDS)
def test_flat_form_fields_are_accepted(field: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {"f": field}, "required": ["f"]}
    validate_elicitation_schema(schema)
    compile_schema(schema)  # every accepted form is also a valid 2020-12 schema


def test_form_root_may_declare_2020_12_and_describe_itself() -> None:
    validate_elicitation_schema(
        {
            "$schema": DRAFT202012_URI,
            "type": "object",
            "title": "T",
            "description": "D",
            "properties": {},
        }
    )


BAD_FORMS: list[tuple[object, str]] = [
    ([], "must be a JSON object"),
    ({"properties": {}}, '"type": "object"'),
    ({"type": "array", "properties": {}}, '"type": "object"'),
    ({"type": "object"}, 'object "properties"'),
    ({"type": "object", "properties": []}, 'object "properties"'),
    ({"type": "object", "properties": {}, "required": "a"}, "array of strings"),
    ({"type": "object", "properties": {}, "required": ["a"]}, "not a property"),
    ({"type": "object", "properties": {}, "additionalProperties": False}, "'additionalProperties'"),
    ({"type": "object", "properties": {}, "$defs": {}}, "'$defs'"),
    ({"type": "object", "properties": {}, "allOf": []}, "'allOf'"),
    (
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {}},
        "dialect",
    ),
]

BAD_FIELDS: list[tuple[object, str]] = [
    (True, "must be a schema object"),
    ({}, "unsupported type None"),
    ({"type": "object", "properties": {}}, "unsupported type 'object'"),
    ({"type": "null"}, "unsupported type 'null'"),
    ({"type": ["string", "null"]}, "unsupported type"),
    ({"$ref": "#/$defs/x", "type": "string"}, "'$ref'"),
    ({"type": "string", "pattern": "^a"}, "'pattern'"),
    ({"type": "string", "format": "hostname"}, "format must be one of"),
    ({"type": "string", "minLength": -1}, "'minLength' must be a non-negative integer"),
    ({"type": "string", "maxLength": 1.5}, "'maxLength' must be a non-negative integer"),
    ({"type": "string", "default": 3}, "'default' must be a string"),
    ({"type": "string", "title": 3}, "'title' must be a string"),
    ({"type": "string", "enum": ["a", 1]}, "'enum' must be an array of strings"),
    ({"type": "string", "enum": ["a"], "oneOf": []}, "either 'enum' or 'oneOf'"),
    ({"type": "string", "enumNames": ["A"]}, "'enumNames'"),
    ({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}, "'enumNames'"),
    ({"type": "string", "oneOf": {"const": "a"}}, "array of {const, title}"),
    ({"type": "string", "oneOf": [{"const": "a"}]}, "each option"),
    ({"type": "string", "oneOf": [{"const": "a", "title": "A", "type": "string"}]}, "'type'"),
    ({"type": "number", "minimum": "0"}, "'minimum' must be a number"),
    ({"type": "number", "maximum": True}, "'maximum' must be a number"),
    ({"type": "number", "default": "1"}, "'default' must be a number"),
    ({"type": "integer", "default": 1.5}, "'default' must be a integer"),
    ({"type": "integer", "multipleOf": 2}, "'multipleOf'"),
    ({"type": "boolean", "default": "true"}, "'default' must be a boolean"),
    ({"type": "boolean", "enum": [True]}, "'enum'"),
    ({"type": "array"}, "needs an 'items' object"),
    ({"type": "array", "items": {"type": "integer", "enum": [1]}}, "/items: must be"),
    ({"type": "array", "items": {"type": "string"}}, "/items: must be"),
    ({"type": "array", "items": {"type": "string", "enum": ["a"], "minLength": 1}}, "'minLength'"),
    ({"type": "array", "items": {"anyOf": [{"const": "a"}]}}, "each option"),
    (
        {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}], "type": "string"}},
        "'type'",
    ),
    ({"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": -1}, "'minItems'"),
    ({"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": "a"}, "'default'"),
    (
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "uniqueItems": True},
        "'uniqueItems'",
    ),
]


@pytest.mark.parametrize("schema, problem", BAD_FORMS)
def test_non_flat_form_is_refused(schema: object, problem: str) -> None:
    with pytest.raises(SchemaError) as info:
        validate_elicitation_schema(schema)
    assert problem in str(info.value)


@pytest.mark.parametrize("field, problem", BAD_FIELDS)
def test_bad_form_field_is_refused(field: object, problem: str) -> None:
    with pytest.raises(SchemaError) as info:
        validate_elicitation_schema({"type": "object", "properties": {"f": field}})
    assert problem in str(info.value)
    assert "/properties/f" in str(info.value)


FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "born": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "ok": {"type": "boolean"},
        "color": {"type": "string", "enum": ["red", "green"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]},
        "legacy": {"type": "string", "enum": ["x"], "enumNames": ["Ex"]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b"]},
            "minItems": 1,
            "maxItems": 2,
        },
        "titled": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}]}},
    },
    "required": ["name", "email"],
}

GOOD_CONTENT: dict[str, Any] = {
    "name": "Ada",
    "email": "ada@example.com",
    "site": "https://example.com",
    "born": "1815-12-10",
    "at": "2024-01-01T00:00:00Z",
    "age": 36,
    "score": 0.5,
    "ok": True,
    "color": "red",
    "size": "s",
    "legacy": "x",
    "tags": ["a", "b"],
    "titled": ["p"],
}

KINDS = "values must be strings, numbers, booleans or arrays of strings"

BAD_CONTENT: list[tuple[dict[str, Any], str]] = [
    ({"name": None}, f"$.name: {KINDS}"),
    ({"name": {"a": 1}}, f"$.name: {KINDS}"),
    ({"tags": ["a", 1]}, f"$.tags: {KINDS}"),
    ({"extra": [None]}, f"$.extra: {KINDS}"),
    ({"name": "A"}, "$.name: 'A' is too short"),
    ({"name": "Adalovelace"}, "$.name: 'Adalovelace' is too long"),
    ({"name": 5}, "$.name: 5 is not of type 'string'"),
    ({"email": "not-an-email"}, "$.email: 'not-an-email' is not a 'email'"),
    ({"site": "nope"}, "$.site: 'nope' is not a 'uri'"),
    ({"born": "1815-13-10"}, "$.born: '1815-13-10' is not a 'date'"),
    ({"at": "yesterday"}, "$.at: 'yesterday' is not a 'date-time'"),
    ({"age": -1}, "$.age: -1 is less than the minimum of 0"),
    ({"age": 1.5}, "$.age: 1.5 is not of type 'integer'"),
    ({"age": True}, "$.age: True is not of type 'integer'"),
    ({"score": 2}, "$.score: 2 is greater than the maximum of 1"),
    ({"ok": "true"}, "$.ok: 'true' is not of type 'boolean'"),
    ({"color": "blue"}, "$.color: 'blue' is not one of ['red', 'green']"),
    ({"size": "xl"}, "$.size: 'xl' is not valid under any of the given schemas"),
    ({"legacy": "y"}, "$.legacy: 'y' is not one of ['x']"),
    ({"tags": []}, "$.tags: [] should be non-empty"),
    ({"tags": ["a", "b", "a"]}, "$.tags: ['a', 'b', 'a'] is too long"),
    ({"tags": ["c"]}, "$.tags[0]: 'c' is not one of ['a', 'b']"),
    ({"titled": ["q"]}, "$.titled[0]: 'q' is not valid under any of the given schemas"),
]


def test_good_content_passes() -> None:
    assert validate_elicitation_content(FORM, GOOD_CONTENT) == []
    assert validate_elicitation_content(FORM, {"name": "Ada", "email": "a@b.c", "extra": 1}) == []


@pytest.mark.parametrize("change, message", BAD_CONTENT)
def test_bad_content_is_reported(change: dict[str, Any], message: str) -> None:
    assert validate_elicitation_content(FORM, {**GOOD_CONTENT, **change}) == [message]


def test_missing_required_content_is_reported() -> None:
    assert validate_elicitation_content(FORM, {"name": "Ada"}) == [
        "$: 'email' is a required property"
    ]


@pytest.mark.parametrize("content", [None, [], "text"])
def test_content_must_be_an_object(content: object) -> None:
    assert validate_elicitation_content(FORM, content) == ["$: content must be an object"]


def test_content_check_refuses_a_non_flat_schema() -> None:
    with pytest.raises(SchemaError):
        validate_elicitation_content(
            {"type": "object", "properties": {"o": {"type": "object"}}}, {}
        )


_ANSWER_VALUES = st.one_of(
    st.text(max_size=12), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
    st.booleans(), st.lists(st.sampled_from(["a", "b", "c", "p", "q"]), max_size=4),
    st.sampled_from(["Ada", "ada@example.com", "https://example.com", "1815-12-10",
                     "2024-01-01T00:00:00Z", "red", "s", "x", "not-an-email"]),
)


@given(st.dictionaries(st.sampled_from([*GOOD_CONTENT, "extra"]), _ANSWER_VALUES, max_size=8)
       | st.builds(lambda change: {**GOOD_CONTENT, **change},
                   st.dictionaries(st.sampled_from(list(GOOD_CONTENT)), _ANSWER_VALUES,
                                   max_size=3)))
def test_the_quick_accept_path_agrees_with_jsonschema(content: dict[str, Any]) -> None:
    """Answers are first checked by a quick path for valid content; it may only ever
    accept what jsonschema accepts (anything else goes to jsonschema for its message)."""
    from mcpcore.schema import _accepts

    form = check_elicitation_form(FORM)
    if _accepts(form, content):
        assert form.compiled.validate(content) == []
