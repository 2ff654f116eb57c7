"""Arguments made from a tool's ``inputSchema``: one valid example, and invalid variants.

Only what the checks need: a value for each required property (and each ``x-mcp-header``
property, so header checks have something to mirror), following ``type``, ``enum``,
``const``, ``default``, ``minimum``, ``minLength`` and ``format`` where they are simple.
``None`` means "no confident example" (the check then skips rather than guess).
"""

from __future__ import annotations

from typing import Any

_FORMATS = {"email": "someone@example.com", "uri": "https://example.com/x",
            "date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "uuid":
            "00000000-0000-4000-8000-000000000000"}


def example_value(schema: Any, depth: int = 0) -> tuple[bool, Any]:
    """``(True, value)`` for a value ``schema`` accepts, ``(False, None)`` if unsure."""
    if depth > 6 or not isinstance(schema, dict):
        return (schema is True or schema == {}), "x"
    for key in ("const", "default"):
        if key in schema:
            return True, schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return True, schema["enum"][0]
    if isinstance(schema.get("oneOf"), list) and schema["oneOf"]:
        return example_value(schema["oneOf"][0], depth + 1)
    if isinstance(schema.get("anyOf"), list) and schema["anyOf"]:
        return example_value(schema["anyOf"][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "string":
        if schema.get("format") in _FORMATS:
            return True, _FORMATS[schema["format"]]
        if "pattern" in schema:
            return False, None
        length = max(int(schema.get("minLength", 1) or 1), 1)
        return True, "x" * length
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        if not isinstance(low, int | float):
            return False, None
        value = low + (1 if "exclusiveMinimum" in schema else 0)
        return True, int(value) if kind == "integer" else value
    if kind == "boolean":
        return True, False
    if kind == "array":
        count = int(schema.get("minItems", 0) or 0)
        if count == 0:
            return True, []
        ok, item = example_value(schema.get("items", {}), depth + 1)
        return ok, [item] * count
    if kind == "object" or "properties" in schema:
        nested = example_arguments(schema, depth + 1)
        return nested is not None, nested
    if kind == "null":
        return True, None
    return False, None


def example_arguments(schema: Any, depth: int = 0) -> dict[str, Any] | None:
    """A small ``arguments`` object ``schema`` accepts, or ``None`` when unsure."""
    if not isinstance(schema, dict):
        return None
    if any(k in schema for k in ("allOf", "if", "not", "dependentRequired",
                                 "dependentSchemas", "$ref", "patternProperties")):
        return None
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"),
                                                              dict) else {}
    wanted = [p for p in schema.get("required") or [] if isinstance(p, str)]
    wanted += [p for p, s in props.items()
               if isinstance(s, dict) and "x-mcp-header" in s and p not in wanted]
    out: dict[str, Any] = {}
    for name in wanted:
        ok, value = example_value(props.get(name, {}), depth)
        if not ok:
            return None
        out[name] = value
    return out


def invalid_variants(schema: Any) -> list[tuple[str, Any]]:
    """``(what is wrong, arguments)`` pairs that break ``schema`` at its top level."""
    variants: list[tuple[str, Any]] = []
    if not isinstance(schema, dict):
        return variants
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"),
                                                              dict) else {}
    required = [p for p in schema.get("required") or [] if isinstance(p, str)]
    base = example_arguments(schema) or {}
    if required:
        variants.append((f"required property {required[0]!r} missing",
                         {k: v for k, v in base.items() if k != required[0]}))
    for name, prop in props.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        wrong: Any = {"string": 12345, "integer": "not-a-number", "number": "not-a-number",
                      "boolean": "not-a-boolean", "array": "not-an-array",
                      "object": "not-an-object"}.get(kind) if isinstance(kind, str) else None
        if wrong is not None:
            variants.append((f"property {name!r} has the wrong type", {**base, name: wrong}))
            break
    return variants


__all__ = ["example_arguments", "example_value", "invalid_variants"]
