"""Turning a handler's signature into a schema and a fast argument decoder.

Server authors write plain (async) functions with type hints; this module derives the
tool ``inputSchema`` (JSON Schema 2020-12, via msgspec) and a msgspec Struct type that
validates and converts arguments in C. A parameter annotated ``Context`` receives the
request context instead of an argument.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from mcpcore.context import Context

Handler = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Signature:
    """What the engine needs to call a handler."""

    #: Struct validating the arguments (None: no arguments at all).
    args_type: type[msgspec.Struct] | None
    #: Names of the argument parameters, in order.
    arg_names: tuple[str, ...]
    #: Parameter receiving the Context, if any.
    context_param: str | None
    #: Accepts arbitrary keyword arguments (``**kwargs``).
    var_keyword: bool
    is_async: bool
    return_type: Any


def inspect_handler(fn: Handler, *, struct_name: str) -> Signature:
    """Read ``fn``'s parameters; raise ``TypeError`` for ones we cannot serve."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # unresolvable forward references
        raise TypeError(f"cannot resolve type hints of {fn!r}: {exc}") from exc
    fields: list[tuple[str, Any, Any] | tuple[str, Any]] = []
    names: list[str] = []
    context_param: str | None = None
    var_keyword = False
    for param in sig.parameters.values():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            raise TypeError(f"{fn.__name__}: *args and positional-only parameters are not "
                            "supported; use keyword parameters")
        annotation = hints.get(param.name, Any)
        if annotation is Context:
            context_param = param.name
            continue
        names.append(param.name)
        if param.default is inspect.Parameter.empty:
            fields.append((param.name, annotation))
        else:
            fields.append((param.name, annotation, param.default))
    args_type = (
        msgspec.defstruct(struct_name, fields, kw_only=True) if fields else None
    )
    return Signature(
        args_type=args_type,
        arg_names=tuple(names),
        context_param=context_param,
        var_keyword=var_keyword,
        is_async=inspect.iscoroutinefunction(fn),
        return_type=hints.get("return", Any),
    )


def schema_for(args_type: type[msgspec.Struct] | None) -> dict[str, Any]:
    """The JSON Schema (2020-12) of an argument Struct, with ``type: object`` at the root."""
    if args_type is None:
        return {"type": "object", "additionalProperties": False}
    (ref,), components = msgspec.json.schema_components(
        [args_type], ref_template="#/$defs/{name}"
    )
    root_name = ref["$ref"].rsplit("/", 1)[1]
    root = dict(components.pop(root_name))
    root.pop("title", None)
    if components:
        root["$defs"] = components
    return root


def output_schema_for(return_type: Any) -> dict[str, Any] | None:
    """An ``outputSchema`` for structured return types (Structs, dataclasses, TypedDicts)."""
    if return_type is Any or return_type is None or return_type is type(None):
        return None
    origin = typing.get_origin(return_type) or return_type
    structured = isinstance(origin, type) and (
        issubclass(origin, msgspec.Struct)
        or hasattr(origin, "__dataclass_fields__")
        or typing.is_typeddict(origin)
    )
    if not structured:
        return None
    (ref,), components = msgspec.json.schema_components(
        [return_type], ref_template="#/$defs/{name}"
    )
    root_name = ref["$ref"].rsplit("/", 1)[1]
    root = dict(components.pop(root_name))
    if components:
        root["$defs"] = components
    return root


def summary_of(fn: Handler) -> str | None:
    """The first paragraph of ``fn``'s docstring on one line: the default description."""
    doc = getattr(fn, "__doc__", None)
    return " ".join(doc.strip().split("\n\n", 1)[0].split()) if doc else None


def no_op() -> None:
    """The default change hook of a registry (a Server replaces it)."""


__all__ = ["Handler", "Signature", "inspect_handler", "no_op", "output_schema_for",
           "schema_for", "summary_of"]
