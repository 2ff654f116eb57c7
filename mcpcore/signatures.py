"""Turning a handler's signature into a schema, a fast argument decoder, and a call.

Server authors write plain (async) functions with type hints; this module derives the
tool ``inputSchema`` (JSON Schema 2020-12, via msgspec) and a msgspec Struct type whose
decoder turns the ``arguments`` JSON straight into validated values, in C. A parameter
annotated ``Context`` receives the request context instead of an argument. ``invoke`` is
the one place a handler is called.

What cannot be served is a ``UsageError`` at registration, naming the handler and the
parameter: a hint msgspec cannot describe, or a ``ctx`` parameter without its hint.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from mcpcore.context import Context
from mcpcore.errors import UsageError

HandlerFunction = Callable[..., Any]
#: Unannotated parameters with these names are almost surely a forgotten ``Context``.
_CONTEXT_NAMES = frozenset({"ctx", "context"})


@dataclass(frozen=True, slots=True)
class Signature:
    """What the engine needs to call a handler."""

    #: Struct validating the arguments (None: no arguments at all).
    args_type: type[msgspec.Struct] | None
    #: Decodes ``arguments`` JSON into ``args_type`` (None with it).
    decoder: msgspec.json.Decoder[Any] | None
    #: Names of the argument parameters, in order.
    arg_names: tuple[str, ...]
    #: Parameter receiving the Context, if any.
    context_param: str | None
    #: Accepts arbitrary keyword arguments (``**kwargs``).
    var_keyword: bool
    is_async: bool
    return_type: Any


#: The signature of a raw handler (``ToolRegistry.add_raw`` and its kin): nothing is
#: bound to its parameters; the engine hands it the request's raw values itself.
RAW_SIGNATURE = Signature(args_type=None, decoder=None, arg_names=(), context_param=None,
                          var_keyword=True, is_async=True, return_type=Any)


def inspect_handler(fn: HandlerFunction, *, struct_name: str, what: str | None = None) -> Signature:
    """Read ``fn``'s parameters; raise ``UsageError`` (``what``: "tool 'x'") for ones we
    cannot serve."""
    what = what or f"handler {getattr(fn, '__name__', fn)!r}"
    if not callable(fn):
        raise UsageError(f"{what}: expected a function, got {fn!r}")
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # unresolvable forward references
        raise UsageError(f"{what}: cannot resolve its type hints: {exc}") from exc
    fields: list[tuple[str, Any, Any] | tuple[str, Any]] = []
    names: list[str] = []
    context_param: str | None = None
    var_keyword = False
    for param in sig.parameters.values():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            raise UsageError(f"{what}: *args and positional-only parameters are not "
                             "supported; use keyword parameters")
        annotation = hints.get(param.name, Any)
        if annotation is Context:
            context_param = param.name
            continue
        if param.name in _CONTEXT_NAMES and param.name not in hints:
            raise UsageError(f"{what}: parameter {param.name!r} has no type hint; write "
                             f"`{param.name}: Context` to receive the request context, or "
                             "give it a type to make it an argument")
        _check_hint(annotation, f"{what}: parameter {param.name!r}")
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
        decoder=msgspec.json.Decoder(args_type) if args_type is not None else None,
        arg_names=tuple(names),
        context_param=context_param,
        var_keyword=var_keyword,
        is_async=inspect.iscoroutinefunction(fn),
        return_type=hints.get("return", Any),
    )


def _check_hint(annotation: Any, where: str) -> None:
    """msgspec must be able to decode and describe the hint."""
    try:
        msgspec.json.Decoder(annotation)
        msgspec.json.schema(annotation)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{where}: unsupported type hint {annotation!r} ({_gist(exc)}); "
                         "use JSON types, msgspec Structs, dataclasses or TypedDicts") from None


def _gist(exc: Exception) -> str:
    """The last line of msgspec's message: what is wrong, without its list of options
    (a ``UsageError`` is one line, so the ``mcpcore`` command can print it as it is)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def context_parameter(fn: HandlerFunction) -> str | None:
    """The name of ``fn``'s parameter annotated ``Context`` (None: it takes none), for
    handlers whose other parameters are positional and fixed (completers). A callable
    whose hints cannot be read (a ``functools.partial``, an unresolvable forward
    reference) takes none, as before such parameters existed."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return None
    names = [name for name, hint in hints.items() if name != "return" and hint is Context]
    return names[0] if names else None


async def invoke(fn: HandlerFunction, signature: Signature, kwargs: dict[str, Any], ctx: Context
                 ) -> Any:
    """Call a handler with its validated arguments (and the context if it takes one)."""
    if signature.context_param is not None:
        kwargs[signature.context_param] = ctx
    value = await fn(**kwargs) if signature.is_async else fn(**kwargs)
    if ctx.unawaited:  # the handler asked the client something and did not await it
        ctx.check_asked()
    return value


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


def output_schema_for(return_type: Any, what: str = "handler") -> dict[str, Any] | None:
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
    try:
        (ref,), components = msgspec.json.schema_components(
            [return_type], ref_template="#/$defs/{name}"
        )
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{what}: unsupported return type {return_type!r} "
                         f"({_gist(exc)})") from None
    root_name = ref["$ref"].rsplit("/", 1)[1]
    root = dict(components.pop(root_name))
    if components:
        root["$defs"] = components
    return root


def summary_of(fn: HandlerFunction) -> str | None:
    """The first paragraph of ``fn``'s docstring on one line: the default description."""
    doc = getattr(fn, "__doc__", None)
    return " ".join(doc.strip().split("\n\n", 1)[0].split()) if doc else None


def no_op() -> None:
    """The default change hook of a registry (a Server replaces it)."""


__all__ = ["RAW_SIGNATURE", "HandlerFunction", "Signature", "context_parameter",
           "inspect_handler", "invoke", "no_op", "output_schema_for", "schema_for",
           "summary_of"]
