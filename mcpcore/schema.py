"""JSON Schema for tool arguments and elicitation forms: compiled once, validated often.

What lives here: ``compile_schema`` (called once per tool at registration), the
``CompiledSchema`` it returns, the bounds it enforces (``SchemaLimits``), and the checks
for the restricted form-elicitation schemas (elicitation.mdx, "Requested Schema").
What must not: any I/O. A ``$ref`` is resolved only inside the schema document itself;
nothing here opens a socket or a file, whatever URI a schema names (basic/index.mdx,
"$ref Resolution": "MUST NOT auto-dereference network URIs").

Validation itself is the ``jsonschema`` library's; this module decides the dialect,
refuses what it cannot bound, and turns errors into short messages for a tool result
(tools.mdx, "Error Handling": argument violations are ``isError: true`` results, not
-32602).

Dialects (basic/index.mdx, "JSON Schema Usage"; documented as the spec asks):

- no ``$schema``: JSON Schema 2020-12;
- ``https://json-schema.org/draft/2020-12/schema`` (a trailing ``#`` is tolerated);
- ``http://json-schema.org/draft-07/schema#`` (with or without the ``#``);
- anything else: ``SchemaError`` naming the dialect.

Formats: ``format`` is an assertion (not only an annotation) for ``email``, ``uri``,
``date`` and ``date-time``, checked by the functions below (RFC 3339 / RFC 3986 shapes);
every other format stays an annotation.

Bounds (basic/index.mdx asks for depth, subschema count and a per-validation time
budget): a
time budget cannot be enforced from outside ``jsonschema`` without threads or signals,
so the work of one validation is bounded by bounding the schema instead: its encoded
size, its raw JSON nesting, its subschema nesting depth and its subschema count, all
checked once at compile time. The number of error messages is capped too, and errors
are produced lazily, so a bad instance stops the walk at the cap. Not bounded: the cost
of one ``pattern`` (jsonschema uses Python's ``re``, close to but not exactly ECMA-262,
and a backtracking-prone pattern is not detected) and the size of the instance, which
the transport's body-size limit bounds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from itertools import islice
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from referencing import Registry, Resource, Specification

__all__ = [
    "DEFAULT_LIMITS",
    "DRAFT7_URI",
    "DRAFT202012_URI",
    "CompiledSchema",
    "ElicitationForm",
    "SchemaError",
    "SchemaLimits",
    "check_elicitation_form",
    "compile_schema",
    "validate_elicitation_content",
    "validate_elicitation_schema",
]

DRAFT202012_URI: Final = "https://json-schema.org/draft/2020-12/schema"
DRAFT7_URI: Final = "http://json-schema.org/draft-07/schema#"


class SchemaError(ValueError):
    """A schema we will not compile: unsupported dialect, invalid, unbounded or with a
    ``$ref`` that does not resolve inside the document.

    >>> compile_schema({"$schema": "http://json-schema.org/draft-04/schema#"})
    Traceback (most recent call last):
    ...
    mcpcore.schema.SchemaError: unsupported JSON Schema dialect ...
    """


@dataclass(frozen=True)
class SchemaLimits:
    """What ``compile_schema`` bounds, and how much.

    - ``max_depth``: subschemas nested deeper than this below the root (the root is
      depth 0; ``properties`` → a property's schema is one level, so is ``allOf`` → an
      item, ``$defs`` → a definition, and so on) are refused.
    - ``max_subschemas``: more subschemas than this in the document (root excluded).
    - ``max_schema_bytes``: the schema's size as compact UTF-8 JSON.
    - ``max_json_nesting``: raw JSON nesting of the document, counting data such as
      ``const``/``enum``/``default`` values, which the validator compares recursively.
    - ``max_validation_errors``: at most this many messages from ``validate``.
    - ``max_message_chars``: each message is cut to this length (messages quote the
      offending instance, which may be large).
    """

    max_depth: int = 32
    max_subschemas: int = 1000
    max_schema_bytes: int = 256 * 1024
    max_json_nesting: int = 128
    max_validation_errors: int = 20
    max_message_chars: int = 300


DEFAULT_LIMITS: Final = SchemaLimits()


# -- formats ----------------------------------------------------------------------------
# jsonschema's own "uri" and "date-time" checkers need optional packages we do not
# depend on, so the four formats we assert are checked here. Non-strings pass: "format"
# applies to strings only.

_EMAIL = re.compile(r"[^@\s\x00-\x1f\x7f]+@[^@\s\x00-\x1f\x7f.][^@\s\x00-\x1f\x7f]*")
# RFC 3986 §3: scheme ":" then URI characters (unreserved, reserved, pct-encoded).
_URI = re.compile(
    r"[A-Za-z][A-Za-z0-9+.\-]*:(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*"
)
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
# RFC 3339 §5.6 date-time; "T" and "Z" may be lower case (§5.6 NOTE).
_DATE_TIME = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)


def _is_email(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    return _EMAIL.fullmatch(instance) is not None and ".." not in instance.split("@")[1]


def _is_uri(instance: object) -> bool:
    return not isinstance(instance, str) or _URI.fullmatch(instance) is not None


def _is_date(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    if _DATE.fullmatch(instance) is None:
        return False
    try:
        date.fromisoformat(instance)
    except ValueError:
        return False
    return True


def _is_date_time(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    match = _DATE_TIME.fullmatch(instance)
    if match is None or not _is_date(match[1]):
        return False
    hour, minute, second = int(match[2]), int(match[3]), int(match[4])
    sign, off_hour, off_minute = match[5], int(match[6] or 0), int(match[7] or 0)
    if hour > 23 or minute > 59 or second > 60 or off_hour > 23 or off_minute > 59:
        return False
    if second == 60:
        # A leap second exists only at 23:59:60 UTC.
        offset = (off_hour * 60 + off_minute) * (-1 if sign == "-" else 1)
        return (hour * 60 + minute - offset) % (24 * 60) == 23 * 60 + 59
    return True


@cache
def _engine() -> SimpleNamespace:
    """jsonschema and referencing, imported when the first schema is compiled.

    They are a third of the engine's import time, and a server that declares no JSON
    Schema (or a client-only program) should not pay for them at ``import mcpcore``.
    """
    from jsonschema import Draft7Validator, Draft202012Validator, FormatChecker
    from jsonschema.exceptions import SchemaError as JsonSchemaError
    from referencing import Registry
    from referencing.exceptions import NoSuchResource, Unresolvable
    from referencing.jsonschema import DRAFT7, DRAFT202012

    checker = FormatChecker(formats=())
    checker.checks("email")(_is_email)
    checker.checks("uri")(_is_uri)
    checker.checks("date")(_is_date)
    checker.checks("date-time")(_is_date_time)
    dialects = {
        DRAFT202012_URI: (Draft202012Validator, DRAFT202012),
        DRAFT202012_URI + "#": (Draft202012Validator, DRAFT202012),
        DRAFT7_URI: (Draft7Validator, DRAFT7),
        DRAFT7_URI.rstrip("#"): (Draft7Validator, DRAFT7),
    }
    return SimpleNamespace(
        format_checker=checker, dialects=dialects, JsonSchemaError=JsonSchemaError,
        Registry=Registry, NoSuchResource=NoSuchResource, Unresolvable=Unresolvable)


# -- dialects ---------------------------------------------------------------------------


def _dialect(schema: Mapping[str, Any]) -> tuple[Any, Specification[Any]]:
    uri = schema.get("$schema", DRAFT202012_URI)
    dialects: dict[str, tuple[Any, Specification[Any]]] = _engine().dialects
    found = dialects.get(uri) if isinstance(uri, str) else None
    if found is None:
        raise SchemaError(
            f"unsupported JSON Schema dialect {uri!r}: supported are 2020-12 "
            f"({DRAFT202012_URI}, the default) and draft-07 ({DRAFT7_URI})"
        )
    return found


def _refuse_retrieval(uri: str) -> Resource[Any]:
    # The registry's only way out of the document: never fetch, always fail.
    raise _engine().NoSuchResource(uri)


# -- compile ----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CompiledSchema:
    """A schema checked once and ready to validate many instances.

    ``schema`` is the mapping given to ``compile_schema``, untouched, so ``tools/list``
    can publish it exactly as authored.

    >>> compiled = compile_schema({"type": "object", "required": ["city"]})
    >>> compiled.validate({})
    ["$: 'city' is a required property"]
    >>> compiled.is_valid({"city": "Oslo"})
    True
    """

    schema: Mapping[str, Any]
    limits: SchemaLimits = field(repr=False)
    _validator: Any = field(repr=False)

    def validate(self, instance: object) -> list[str]:
        """Messages (``<JSON path>: <problem>``) for what is wrong, ``[]`` when valid.

        At most ``limits.max_validation_errors`` messages; never raises.
        """
        try:
            errors = list(
                islice(self._validator.iter_errors(instance), self.limits.max_validation_errors)
            )
        except RecursionError:
            # A very deep instance, or a schema whose $refs recurse without consuming it.
            return ["$: the value is nested too deeply to validate"]
        except _engine().Unresolvable as exc:  # pragma: no cover - compile resolves every $ref
            return [f"$: schema reference could not be resolved: {exc}"]
        return [self._message(error) for error in errors]

    def is_valid(self, instance: object) -> bool:
        """``True`` when ``instance`` is valid; the fast path, without messages."""
        try:
            return bool(self._validator.is_valid(instance))
        except (RecursionError, _engine().Unresolvable):
            return False

    def _message(self, error: Any) -> str:
        text = f"{error.json_path}: {error.message}"
        limit = self.limits.max_message_chars
        return text if len(text) <= limit else text[: limit - 3] + "..."


def compile_schema(
    schema: Mapping[str, Any], *, limits: SchemaLimits = DEFAULT_LIMITS
) -> CompiledSchema:
    """Check ``schema`` once and return a validator for it; ``SchemaError`` if refused.

    Refused: a non-object schema, an unsupported ``$schema``, a schema invalid for its
    dialect, one over ``limits``, and any ``$ref``/``$dynamicRef`` that does not
    resolve inside the document (unresolved external refs are rejected, never
    fetched and never treated as permissive).

    >>> compile_schema({"$ref": "https://example.com/x.json"})
    Traceback (most recent call last):
    ...
    mcpcore.schema.SchemaError: $ref 'https://example.com/x.json' does not resolve ...
    """
    if not isinstance(schema, Mapping):
        raise SchemaError("a schema must be a JSON object")
    # ``schema`` stays untouched for publishing; jsonschema works on a dict copy if needed.
    plain = schema if _check_json_shape(schema, limits) else _as_dicts(schema)
    validator_cls, specification = _dialect(schema)
    engine = _engine()
    try:
        validator_cls.check_schema(plain)
    except engine.JsonSchemaError as exc:
        where = "/" + "/".join(str(part) for part in exc.path)
        raise SchemaError(f"invalid schema at {where}: {exc.message}") from None
    root = specification.create_resource(plain)
    # referencing's attrs aliases are invisible to mypy, hence the ignore.
    registry: Registry[Any] = engine.Registry(retrieve=_refuse_retrieval)
    registry = registry.with_resource(root.id() or "", root).crawl()
    _check_subschemas(root, registry, limits)
    validator = validator_cls(plain, registry=registry, format_checker=engine.format_checker)
    return CompiledSchema(schema=schema, limits=limits, _validator=validator)


def _check_json_shape(schema: Mapping[str, Any], limits: SchemaLimits) -> bool:
    """JSON types only; raw nesting and compact UTF-8 JSON size within limits.

    Iterative, so a hostile nesting depth cannot overflow the stack, and it stops as soon
    as the size passes the limit. Returns whether every object in it is a ``dict``.
    """
    size, all_dicts = 0, True
    stack: list[tuple[object, int]] = [(schema, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping | list):
            if depth > limits.max_json_nesting:
                raise SchemaError(f"schema nests deeper than {limits.max_json_nesting} JSON levels")
            size += 2 + max(len(value) - 1, 0)  # brackets and commas
            all_dicts = all_dicts and isinstance(value, dict | list)
            if isinstance(value, Mapping):
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise SchemaError(f"schema object keys must be strings, got {key!r}")
                    size += _json_size(key) + 1  # the colon
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in value)
        elif value is None or isinstance(value, str | int | float | bool):
            size += _json_size(value)
        else:
            raise SchemaError(f"schema holds a non-JSON value of type {type(value).__name__}")
        if size > limits.max_schema_bytes:
            raise SchemaError(
                f"schema is over {limits.max_schema_bytes} bytes as JSON; that is the limit"
            )
    return all_dicts


def _as_dicts(value: object) -> object:
    # jsonschema sees only dicts as objects; recursion is safe once nesting is bounded.
    if isinstance(value, Mapping):
        return {key: _as_dicts(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_dicts(item) for item in value]
    return value


def _json_size(scalar: object) -> int:
    try:
        encoded = json.dumps(scalar, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise SchemaError(f"schema holds {scalar!r}, which JSON cannot represent") from None
    return len(encoded.encode("utf-8", "surrogatepass"))


def _check_subschemas(root: Resource[Any], registry: Registry[Any], limits: SchemaLimits) -> None:
    """Walk every subschema: depth, count, nested ``$schema`` and every reference."""
    count = 0
    stack = [(root, registry.resolver_with_root(root), 0)]
    while stack:
        resource, resolver, depth = stack.pop()
        contents = resource.contents
        if isinstance(contents, Mapping):
            if depth and "$schema" in contents:
                _dialect(contents)
            for keyword in ("$ref", "$dynamicRef"):
                ref = contents.get(keyword)
                if isinstance(ref, str):
                    try:
                        resolver.lookup(ref)
                    except _engine().Unresolvable:
                        raise SchemaError(
                            f"{keyword} {ref!r} does not resolve inside the schema; "
                            "external references are never fetched"
                        ) from None
        for sub in resource.subresources():
            count += 1
            if count > limits.max_subschemas:
                raise SchemaError(f"schema has more than {limits.max_subschemas} subschemas")
            if depth + 1 > limits.max_depth:
                raise SchemaError(f"schema nests subschemas deeper than {limits.max_depth}")
            stack.append((sub, resolver.in_subresource(sub), depth + 1))


# -- elicitation forms (elicitation.mdx, "Requested Schema") ----------------------------

_ELICIT_FORMATS: Final = frozenset({"email", "uri", "date", "date-time"})
_ANNOTATIONS: Final = frozenset({"title", "description", "default"})
# Keywords each kind of form field may carry. Any other JSON Schema keyword makes the
# field something a form cannot render; "x-..." extensions and unknown words pass.
_FIELD_KEYWORDS: Final = {
    "string": frozenset({"type", "minLength", "maxLength", "format", "enum", "enumNames", "oneOf"}),
    "number": frozenset({"type", "minimum", "maximum"}),
    "integer": frozenset({"type", "minimum", "maximum"}),
    "boolean": frozenset({"type"}),
    "array": frozenset({"type", "items", "minItems", "maxItems"}),
}
_JSON_SCHEMA_KEYWORDS: Final = frozenset(
    {
        "$anchor", "$comment", "$defs", "$dynamicAnchor", "$dynamicRef", "$id", "$ref",
        "$schema", "$vocabulary", "additionalItems", "additionalProperties", "allOf",
        "anyOf", "const", "contains", "contentEncoding", "contentMediaType",
        "contentSchema", "definitions", "dependencies", "dependentRequired",
        "dependentSchemas", "deprecated", "else", "enum", "enumNames", "examples",
        "exclusiveMaximum", "exclusiveMinimum", "format", "if", "items", "maxContains",
        "maxItems", "maxLength", "maxProperties", "maximum", "minContains", "minItems",
        "minLength", "minProperties", "minimum", "multipleOf", "not", "oneOf", "pattern",
        "patternProperties", "prefixItems", "properties", "propertyNames", "readOnly",
        "required", "then", "type", "unevaluatedItems", "unevaluatedProperties",
        "uniqueItems", "writeOnly",
    }
)  # fmt: skip


def validate_elicitation_schema(schema: object) -> None:
    """Raise ``SchemaError`` unless ``schema`` is the flat form elicitation allows.

    That is ``{"type": "object", "properties": {...}, "required"?: [...]}`` whose
    properties are each a string (``minLength``, ``maxLength``, ``format`` ∈ email/uri/
    date/date-time), a number or integer (``minimum``, ``maximum``), a boolean, or an
    enum: untitled ``enum``, titled ``oneOf: [{const, title}]``, legacy ``enumNames``,
    or a multi-select ``type: "array"`` with ``items.enum`` or
    ``items.anyOf: [{const, title}]`` and ``minItems``/``maxItems``. All may carry
    ``title``, ``description`` and ``default``.

    >>> validate_elicitation_schema({"type": "object", "properties": {"n": {"type": "object"}}})
    Traceback (most recent call last):
    ...
    mcpcore.schema.SchemaError: /properties/n: unsupported type 'object'; use ...
    """
    if not isinstance(schema, Mapping):
        raise SchemaError("an elicitation schema must be a JSON object")
    if schema.get("type") != "object":
        raise SchemaError('an elicitation schema must have "type": "object"')
    if "$schema" in schema:
        _dialect(schema)
    allowed_root = {"$schema", "type", "properties", "required", "title", "description"}
    _no_other_keywords(schema, allowed_root, "/")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        raise SchemaError('an elicitation schema must have an object "properties"')
    required = schema.get("required", [])
    if not _is_str_list(required):
        raise SchemaError('"required" must be an array of strings')
    for name in required:
        if name not in properties:
            raise SchemaError(f'"required" names {name!r}, which is not a property')
    for name, prop in properties.items():
        _check_field(prop, f"/properties/{name}")


def validate_elicitation_content(schema: Mapping[str, Any], content: object) -> list[str]:
    """Messages for what is wrong with an accepted elicitation's ``content``; ``[]`` if ok.

    ``schema`` must be a valid elicitation form (``SchemaError`` otherwise). Values must be
    strings, numbers, booleans or arrays of strings; required keys present; types,
    enum membership, bounds, lengths, item counts and formats as the schema says. Keys
    the schema does not name are allowed (the schema does not forbid them) but must
    still be of those kinds.

    >>> form = {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}}
    >>> validate_elicitation_content(form, {"age": -1})
    ['$.age: -1 is less than the minimum of 0']
    """
    return check_elicitation_form(schema).problems(content)


_FORMATS: Final = {"email": _is_email, "uri": _is_uri, "date": _is_date,
                   "date-time": _is_date_time}


def _accepts(form: ElicitationForm, content: Mapping[str, Any]) -> bool:
    """``True`` only if jsonschema would accept ``content`` for this (checked, flat) form,
    read from the form's own copy of its fields; ``False`` means "let jsonschema say
    why", never a verdict by itself."""
    for name in form.required:
        if name not in content:
            return False
    fields = form.fields
    for key, value in content.items():
        field = fields.get(key)
        if field is None:
            if not _is_content_value(value):
                return False
        elif field is str or field is bool:  # no constraint but the type
            if not isinstance(value, field):
                return False
        elif not _field_accepts(field, value):  # type: ignore[arg-type]
            return False
    return True


def _field_accepts(field: Mapping[str, Any], value: object) -> bool:
    kind = field["type"]
    if kind == "string":
        if not isinstance(value, str):
            return False
        if len(value) < field.get("minLength", 0) or (
            "maxLength" in field and len(value) > field["maxLength"]):
            return False
        if "format" in field and not _FORMATS[field["format"]](value):
            return False
        if "enum" in field and value not in field["enum"]:
            return False
        return "oneOf" not in field or sum(o["const"] == value for o in field["oneOf"]) == 1
    if kind in ("number", "integer"):
        if not _is_number(value) or (kind == "integer" and not _is_integral(value)):
            return False
        assert isinstance(value, int | float)
        return not (("minimum" in field and value < field["minimum"])
                    or ("maximum" in field and value > field["maximum"]))
    if kind == "boolean":
        return isinstance(value, bool)
    if not isinstance(value, list) or len(value) < field.get("minItems", 0) or (
            "maxItems" in field and len(value) > field["maxItems"]):
        return False
    items = field["items"]
    allowed = (items["enum"] if "enum" in items else [o["const"] for o in items["anyOf"]])
    return all(v in allowed for v in value)


class ElicitationForm:
    """A checked elicitation form (``check_elicitation_form`` returns it): what its
    answers are held to, taken from the canonical JSON the form was checked as, so that
    a later change to the caller's dicts cannot change it."""

    __slots__ = ("compiled", "fields", "required")

    def __init__(self, compiled: CompiledSchema, plain: Mapping[str, Any]) -> None:
        self.compiled = compiled
        self.required: tuple[str, ...] = tuple(plain.get("required", ()))
        #: Per property: ``str``/``bool`` when its type is all there is to check, else
        #: the property's schema (for ``_field_accepts``).
        self.fields: dict[str, type | Mapping[str, Any]] = {
            name: _bare_type(field) or field for name, field in plain["properties"].items()}

    def problems(self, content: object) -> list[str]:
        """What is wrong with an accepted answer's ``content`` (``[]``: nothing), as
        ``validate_elicitation_content`` says it for this form's schema."""
        # A valid form is flat, so a valid answer is quick to recognise; only an answer
        # that is not goes through jsonschema, for its messages.
        if type(content) is dict and _accepts(self, content):
            return []
        if not isinstance(content, Mapping):
            return ["$: content must be an object"]
        problems = [
            f"$.{key}: values must be strings, numbers, booleans or arrays of strings"
            for key, value in content.items()
            if not _is_content_value(value)
        ]
        return problems or self.compiled.validate(content)


def _bare_type(field: Mapping[str, Any]) -> type | None:
    if field["type"] == "boolean":
        return bool
    if field["type"] == "string" and _STRING_CONSTRAINTS.isdisjoint(field):
        return str
    return None


_STRING_CONSTRAINTS: Final = frozenset({"minLength", "maxLength", "format", "enum", "oneOf"})
_FORM_CACHE: dict[bytes, ElicitationForm] = {}
_FORM_CACHE_SIZE = 256


def check_elicitation_form(schema: object) -> ElicitationForm:
    """Raise ``SchemaError`` unless ``schema`` is a valid elicitation form; else the
    checked form, whose ``problems(content)`` validates an answer to it. Compiled forms
    are cached, so asking the same form again costs a look-up."""
    if type(schema) is not dict and not isinstance(schema, Mapping):
        raise SchemaError("an elicitation schema must be a JSON object")
    # Handlers re-ask the same forms on every MRTR round, so a small cache keyed by the
    # canonical JSON pays for itself.
    try:
        key = msgspec.json.encode(schema, order="sorted")
    except (TypeError, msgspec.EncodeError):
        validate_elicitation_schema(schema)
        return ElicitationForm(compile_schema(schema), schema)
    form = _FORM_CACHE.get(key)
    if form is None:
        validate_elicitation_schema(schema)
        form = ElicitationForm(compile_schema(schema), msgspec.json.decode(key))
        if len(_FORM_CACHE) >= _FORM_CACHE_SIZE:
            _FORM_CACHE.pop(next(iter(_FORM_CACHE)))
        _FORM_CACHE[key] = form
    return form


def _is_content_value(value: object) -> bool:
    return isinstance(value, str | int | float | bool) or _is_str_list(value)


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _no_other_keywords(node: Mapping[str, Any], allowed: Set[str], at: str) -> None:
    for key in node:
        if key in _JSON_SCHEMA_KEYWORDS and key not in allowed:
            raise SchemaError(f"{at}: keyword {key!r} is not allowed in an elicitation schema")


def _check_field(prop: object, at: str) -> None:
    if not isinstance(prop, Mapping):
        raise SchemaError(f"{at}: each property must be a schema object")
    kind = prop.get("type")
    if not isinstance(kind, str) or kind not in _FIELD_KEYWORDS:
        raise SchemaError(
            f"{at}: unsupported type {kind!r}; use string, number, integer, boolean or an "
            "array of enum values"
        )
    _no_other_keywords(prop, _FIELD_KEYWORDS[kind] | _ANNOTATIONS, at)
    for word in ("title", "description"):
        if word in prop and not isinstance(prop[word], str):
            raise SchemaError(f"{at}: {word!r} must be a string")
    default = prop.get("default")
    if kind == "string":
        _check_string_field(prop, at)
        ok_default = isinstance(default, str)
    elif kind in ("number", "integer"):
        for word in ("minimum", "maximum"):
            if word in prop and not _is_number(prop[word]):
                raise SchemaError(f"{at}: {word!r} must be a number")
        ok_default = _is_number(default) and (kind == "number" or _is_integral(default))
    elif kind == "boolean":
        ok_default = isinstance(default, bool)
    else:
        _check_multi_select(prop, at)
        ok_default = _is_str_list(default)
    if "default" in prop and not ok_default:
        raise SchemaError(f"{at}: 'default' must be a {kind} value")


def _check_string_field(prop: Mapping[str, Any], at: str) -> None:
    for word in ("minLength", "maxLength"):
        if word in prop and not _is_count(prop[word]):
            raise SchemaError(f"{at}: {word!r} must be a non-negative integer")
    if "format" in prop and prop["format"] not in _ELICIT_FORMATS:
        raise SchemaError(f"{at}: format must be one of {sorted(_ELICIT_FORMATS)}")
    if "enum" in prop and "oneOf" in prop:
        raise SchemaError(f"{at}: use either 'enum' or 'oneOf', not both")
    if "enum" in prop and not _is_str_list(prop["enum"]):
        raise SchemaError(f"{at}: 'enum' must be an array of strings")
    if "enumNames" in prop:
        names = prop["enumNames"]
        if "enum" not in prop or not _is_str_list(names) or len(names) != len(prop["enum"]):
            raise SchemaError(f"{at}: 'enumNames' must be strings, one per 'enum' value")
    if "oneOf" in prop:
        _check_titled_options(prop["oneOf"], f"{at}/oneOf")


def _check_multi_select(prop: Mapping[str, Any], at: str) -> None:
    for word in ("minItems", "maxItems"):
        if word in prop and not _is_count(prop[word]):
            raise SchemaError(f"{at}: {word!r} must be a non-negative integer")
    items = prop.get("items")
    if not isinstance(items, Mapping):
        raise SchemaError(f"{at}: a multi-select needs an 'items' object")
    if "anyOf" in items:
        _no_other_keywords(items, {"anyOf"}, f"{at}/items")
        _check_titled_options(items["anyOf"], f"{at}/items/anyOf")
    elif items.get("type") == "string" and _is_str_list(items.get("enum")):
        _no_other_keywords(items, {"type", "enum"}, f"{at}/items")
    else:
        raise SchemaError(
            f"{at}/items: must be {{'type': 'string', 'enum': [...]}} or {{'anyOf': [...]}}"
        )


def _check_titled_options(options: object, at: str) -> None:
    if not isinstance(options, list):
        raise SchemaError(f"{at}: must be an array of {{const, title}} options")
    for index, option in enumerate(options):
        if not (
            isinstance(option, Mapping)
            and isinstance(option.get("const"), str)
            and isinstance(option.get("title"), str)
        ):
            raise SchemaError(f"{at}/{index}: each option must be {{const: string, title: string}}")
        _no_other_keywords(option, {"const", "title", "description"}, f"{at}/{index}")


def _is_integral(value: object) -> bool:
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
