"""The client's answers to the server's questions, the same in both eras.

A 2026-07-28 server asks inside a result (``inputRequests`` of an ``input_required``
result, patterns/mrtr); a 2025-era server sends a real request (``elicitation/create``,
``sampling/createMessage``, ``roots/list``). Either way the question reaches the same user
function, with the same params, and its answer is normalised the same way:

- a ``dict`` or an ``mcpcore.types`` Struct becomes a plain JSON object, without
  ``resultType`` (input responses carry bare results);
- an accepted form elicitation gets the ``default`` of every requested property the user
  left out (SEP-1034: "Clients that support defaults SHOULD pre-populate form fields with
  these values"), unless ``apply_defaults=False``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import msgspec

from mcpcore.client.errors import LocalProtocolError, RemoteProtocolError

ResolverResult = Mapping[str, Any] | msgspec.Struct
ElicitHandler = Callable[[dict[str, Any]], ResolverResult | Awaitable[ResolverResult]]
SampleHandler = Callable[[dict[str, Any]], ResolverResult | Awaitable[ResolverResult]]
RootsHandler = Callable[[], ResolverResult | Awaitable[ResolverResult]]

METHOD_NOT_FOUND: Final = -32601
#: Input requests answered in one MRTR round (or one task's ``input_required``): each
#: calls a resolver, and a sampling resolver may call a paid model; a server asking
#: more at once gets ``RemoteProtocolError``.
MAX_INPUT_REQUESTS: Final = 32
#: Server question → the client capability that allows it.
CAPABILITY: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class Unanswerable(LocalProtocolError):
    """The client cannot answer a server question (no capability declared, or no
    resolver); ``code`` is the JSON-RPC error a 2025-era server gets back."""

    def __init__(self, message: str, code: int = METHOD_NOT_FOUND) -> None:
        super().__init__(message)
        self.code = code


class Resolvers:
    """The user's ``on_elicit``/``on_sample``/``on_roots``, and how to call them."""

    def __init__(
        self,
        on_elicit: ElicitHandler | None = None,
        on_sample: SampleHandler | None = None,
        on_roots: RootsHandler | None = None,
        *,
        apply_defaults: bool = True,
    ) -> None:
        self.on_elicit = on_elicit
        self.on_sample = on_sample
        self.on_roots = on_roots
        self.apply_defaults = apply_defaults

    def capabilities(self) -> dict[str, Any]:
        """What these resolvers let the client declare."""
        derived: dict[str, Any] = {}
        if self.on_elicit is not None:
            derived["elicitation"] = {}
        if self.on_sample is not None:
            derived["sampling"] = {}
        if self.on_roots is not None:
            derived["roots"] = {}
        return derived

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one question; ``Unanswerable`` when no resolver handles ``method``."""
        outcome: object
        if method == "elicitation/create":
            if self.on_elicit is None:
                raise Unanswerable(f"the server asks for {method} but the client has no "
                                   "on_elicit resolver")
            outcome = self.on_elicit(params)
        elif method == "sampling/createMessage":
            if self.on_sample is None:
                raise Unanswerable(f"the server asks for {method} but the client has no "
                                   "on_sample resolver")
            outcome = self.on_sample(params)
        elif method == "roots/list":
            if self.on_roots is None:
                raise Unanswerable(f"the server asks for {method} but the client has no "
                                   "on_roots resolver")
            outcome = self.on_roots()
        else:
            raise Unanswerable(f"the client has no resolver for {method!r}")
        if inspect.isawaitable(outcome):
            outcome = await outcome
        answer = json_object(outcome, f"the {method} resolver's answer")
        answer.pop("resultType", None)
        if method == "elicitation/create" and self.apply_defaults:
            answer = with_defaults(params, answer)
        return answer


    async def answer_round(self, method: str, requests: dict[str, Any]) -> dict[str, Any]:
        """The answers to one round's ``inputRequests`` (of an ``input_required``
        ``method`` result, or of a task's), by key, all asked at once; at most
        ``MAX_INPUT_REQUESTS`` of them."""
        if len(requests) > MAX_INPUT_REQUESTS:
            raise RemoteProtocolError(
                f"{method}: the server asks {len(requests)} questions at once; the client "
                f"answers at most {MAX_INPUT_REQUESTS} per round")
        keys = list(requests)
        answers = await asyncio.gather(*(self._input(method, k, requests[k]) for k in keys))
        return dict(zip(keys, answers, strict=True))

    async def _input(self, method: str, key: str, request: object) -> dict[str, Any]:
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise RemoteProtocolError(f"{method}: inputRequests[{key!r}] is not an input request")
        params = request.get("params")
        try:
            return await self.answer(
                request["method"], dict(params) if isinstance(params, dict) else {})
        except Unanswerable as exc:
            raise LocalProtocolError(f"{method}: {exc} (input request {key!r})") from None


def with_defaults(params: Mapping[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """An accepted form answer, completed with the requested schema's defaults.

    >>> schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 3},
    ...                                             "s": {"type": "string"}}}
    >>> with_defaults({"requestedSchema": schema}, {"action": "accept", "content": {}})
    {'action': 'accept', 'content': {'n': 3}}
    """
    if answer.get("action") != "accept" or params.get("mode", "form") != "form":
        return answer
    schema = params.get("requestedSchema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return answer
    content = answer.get("content")
    content = dict(content) if isinstance(content, Mapping) else {}
    for name, prop in properties.items():
        if name not in content and isinstance(prop, Mapping) and "default" in prop:
            content[name] = prop["default"]
    return {**answer, "content": content}


def json_object(value: object, what: str) -> dict[str, Any]:
    """A plain dict from a mapping or a msgspec Struct (camelCase keys)."""
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if not isinstance(value, Mapping):
        raise LocalProtocolError(f"{what} must be a JSON object, not {type(value).__name__}")
    return dict(value)


__all__ = [
    "CAPABILITY",
    "MAX_INPUT_REQUESTS",
    "ElicitHandler",
    "ResolverResult",
    "Resolvers",
    "RootsHandler",
    "SampleHandler",
    "Unanswerable",
    "json_object",
    "with_defaults",
]
