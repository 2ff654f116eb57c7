"""Prompts and completions: registration, listing, rendering, argument completion.

Prompt arguments are strings (``prompts/get`` sends ``{string: string}``); the handler's
parameters become the published ``arguments`` (required when they have no default).
A missing required argument or an unknown prompt is -32602 (prompts.mdx, "Error
Handling").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from mcpcore import types
from mcpcore.context import Context
from mcpcore.errors import InvalidParams, UnknownPrompt, UsageError
from mcpcore.signatures import (
    RAW_SIGNATURE,
    HandlerFunction,
    Signature,
    context_parameter,
    inspect_handler,
    no_op,
    summary_of,
)
from mcpcore.tools import Category, published

#: The handler of a prompt whose definition was given as JSON (``add_raw``): it gets
#: the request's ``arguments`` (strings, checked against the definition's) and the
#: Context, and returns the ``GetPromptResult`` as is.
RawPromptHandler = Callable[[dict[str, str], Context], Awaitable[dict[str, Any]]]


@dataclass(slots=True)
class PromptDef:
    name: str
    fn: HandlerFunction
    signature: Signature
    arguments: list[dict[str, Any]]
    title: str | None = None
    description: str | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    wire: dict[str, Any] = field(default_factory=dict)
    #: Set by ``add_raw``: the engine hands it the arguments and relays its result.
    raw: RawPromptHandler | None = None
    #: What a policy that gates ``prompts/get`` knows of it (``Policy(methods=...)``):
    #: a read, reaching systems outside the server unless said otherwise, and the
    #: server a gateway forwards it to (``add_raw``).
    category: Category = "read"
    external: bool = True
    required_scopes: frozenset[str] = frozenset()
    upstream: str | None = None

    def publish(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name}
        for key, value in (("title", self.title), ("description", self.description)):
            if value is not None:
                entry[key] = value
        if self.arguments:
            entry["arguments"] = self.arguments
        if self.icons:
            entry["icons"] = self.icons
        if self.meta:
            entry["_meta"] = self.meta
        return entry

    def check_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        for name, value in arguments.items():
            if not isinstance(value, str):
                raise InvalidParams(f"Prompt argument {name!r} must be a string")
        missing = [a["name"] for a in self.arguments
                   if a.get("required") and a["name"] not in arguments]
        if missing:
            raise InvalidParams(f"Missing required arguments: {', '.join(missing)}")
        if self.signature.var_keyword:  # also every raw prompt: all of them go through
            return dict(arguments)
        return {k: v for k, v in arguments.items() if k in self.signature.arg_names}


class PromptRegistry:
    def __init__(self) -> None:
        self._prompts: dict[str, PromptDef] = {}
        #: Called after every change (the server announces list changes through it).
        self.on_change: Callable[[], None] = no_op

    def __len__(self) -> int:
        return len(self._prompts)

    def add(self, fn: HandlerFunction, *, name: str | None = None, title: str | None = None,
            description: str | None = None,
            arguments: Sequence[Mapping[str, Any]] | None = None,
            icons: Sequence[Mapping[str, Any]] | None = None,
            meta: Mapping[str, Any] | None = None) -> PromptDef:
        prompt_name = str(name or getattr(fn, "__name__", ""))
        if prompt_name in self._prompts:
            raise ValueError(f"prompt {prompt_name!r} is already registered")
        what = f"prompt {prompt_name!r}"
        sig = inspect_handler(fn, struct_name=f"{prompt_name}_arguments", what=what)
        args = (_arguments_from(fn, sig) if arguments is None
                else [dict(a) for a in arguments])
        prompt = PromptDef(
            name=prompt_name, fn=fn, signature=sig, arguments=args, title=title,
            description=description if description is not None else summary_of(fn),
            icons=[dict(i) for i in icons] if icons else None,
            meta=dict(meta) if meta else None,
        )
        prompt.wire = published(prompt.publish(), types.Prompt, what)
        self._prompts[prompt_name] = prompt
        self.on_change()
        return prompt

    def add_raw(self, definition: Mapping[str, Any], handler: RawPromptHandler, *,
                upstream: str | None = None) -> PromptDef:
        """Add a prompt whose definition is a ``Prompt`` JSON object, published as given,
        rendered by ``handler`` (see ``RawPromptHandler``); ``upstream``: the server it
        is forwarded to (policy rules' ``upstreams``). ``ValueError`` for a name
        taken, ``UsageError`` for a definition the spec's ``Prompt`` type rejects."""
        wire = dict(definition)
        name = wire.get("name")
        try:
            msgspec.convert(wire, types.Prompt)
        except msgspec.ValidationError as exc:
            raise UsageError(f"prompt {name!r} is not a valid Prompt: {exc}") from None
        assert isinstance(name, str)  # the spec's type requires it
        if name in self._prompts:
            raise ValueError(f"prompt {name!r} is already registered")
        prompt = PromptDef(
            name=name, fn=handler, signature=RAW_SIGNATURE,
            arguments=[dict(a) for a in wire.get("arguments") or ()],
            title=wire.get("title"), description=wire.get("description"),
            icons=wire.get("icons"), meta=wire.get("_meta"), wire=wire, raw=handler,
            upstream=upstream)
        self._prompts[name] = prompt
        self.on_change()
        return prompt

    def remove(self, name: str) -> None:
        del self._prompts[name]
        self.on_change()

    def get(self, name: str) -> PromptDef:
        prompt = self._prompts.get(name)
        if prompt is None:
            raise UnknownPrompt(name)
        return prompt

    def __contains__(self, name: object) -> bool:
        return name in self._prompts

    def published(self) -> list[dict[str, Any]]:
        return [p.wire for p in self._prompts.values()]

    def entries(self) -> list[tuple[PromptDef, dict[str, Any]]]:
        """Each prompt with its listed definition, in list order."""
        return [(p, p.wire) for p in self._prompts.values()]


def _arguments_from(fn: HandlerFunction, sig: Signature) -> list[dict[str, Any]]:
    import inspect

    params = inspect.signature(fn).parameters
    out: list[dict[str, Any]] = []
    for name in sig.arg_names:
        entry: dict[str, Any] = {"name": name}
        if params[name].default is inspect.Parameter.empty:
            entry["required"] = True
        out.append(entry)
    return out


def prompt_result(value: Any, description: str | None) -> dict[str, Any]:
    """Normalise a prompt handler's value into a ``GetPromptResult`` (no resultType)."""
    if isinstance(value, dict) and "messages" in value:
        return value
    if isinstance(value, str):
        messages = [{"role": "user", "content": {"type": "text", "text": value}}]
    elif isinstance(value, (list, tuple)):
        messages = [_message(m) for m in value]
    else:
        messages = [_message(value)]
    result: dict[str, Any] = {"messages": messages}
    if description is not None:
        result["description"] = description
    return result


def _message(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"role": "user", "content": {"type": "text", "text": value}}
    built = msgspec.to_builtins(value)
    if isinstance(built, dict) and "role" in built:
        return built
    return {"role": "user", "content": built}


#: ``(argument name, value, context arguments) -> suggestions``; it may also take the
#: request's ``Context`` as a parameter annotated ``Context`` (``CompletionRegistry``).
Completer = Callable[..., Any]


class CompletionRegistry:
    """Completers keyed by reference: ``("ref/prompt", name)`` or ``("ref/resource", uri)``.

    A completer is ``fn(argument, value, context)``; one with a parameter annotated
    ``Context`` (any name, any position after those three) also gets the request's
    context: who asks, the request's metadata (``call``)."""

    def __init__(self) -> None:
        self._completers: dict[tuple[str, str], tuple[Completer, str | None]] = {}

    def __len__(self) -> int:
        return len(self._completers)

    def add(self, ref_type: str, ref: str, fn: Completer) -> None:
        if ref_type not in ("ref/prompt", "ref/resource"):
            raise ValueError("ref_type must be 'ref/prompt' or 'ref/resource'")
        self._completers[(ref_type, ref)] = (fn, context_parameter(fn))

    def get(self, ref_type: str, ref: str) -> Completer | None:
        found = self._completers.get((ref_type, ref))
        return found[0] if found is not None else None

    def call(self, ref_type: str, ref: str, argument: str, value: str,
             context: dict[str, str], ctx: Context) -> Any:
        """The completer's answer (awaitable if it is async); ``LookupError`` if there is
        none for the reference."""
        fn, context_param = self._completers[(ref_type, ref)]
        if context_param is None:
            return fn(argument, value, context)
        return fn(argument, value, context, **{context_param: ctx})


__all__ = ["Completer", "CompletionRegistry", "PromptDef", "PromptRegistry",
           "RawPromptHandler", "prompt_result"]
