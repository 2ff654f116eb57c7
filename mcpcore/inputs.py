"""What a handler may ask the client, the answers, and one round's ``InputFlow``.

A handler asks with ``await ctx.elicit(...)`` (or ``sample``, ``list_roots``, ``ask``):
each question is an ``InputRequest`` (``elicitation``, ``url_elicitation``, ``sampling``,
``roots`` build them), checked at once against the request's declared client
capabilities (``check_capability``) and, for a form, against what elicitation allows
(``check_form``); each answer is checked against its question (``parse_answer``) into an
``ElicitAnswer``, ``SamplingAnswer`` or ``RootsAnswer``.

Where the answers come from is a ``Flow``: ``InputFlow`` holds one round's answers (the
retry's ``inputResponses`` and those carried in the sealed ``requestState``, see
``mcpcore.mrtr``) and raises ``InputRequired`` for a question it has no answer to; a
task's flow (``mcpcore.tasks.inputs``) makes the question an input request of the task.

This module knows no ``Context`` (``mcpcore.context`` imports it): what a flow needs of
the request it serves is an ``Asker``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol

import msgspec

from mcpcore.errors import InvalidInputResponses, MissingRequiredClientCapability, UsageError
from mcpcore.meta import RequestMeta
from mcpcore.schema import (
    ElicitationForm,
    SchemaError,
    check_elicitation_form,
    validate_elicitation_content,
)

InputMethod = Literal["elicitation/create", "sampling/createMessage", "roots/list"]


class InputRequired(Exception):
    """Raised inside a handler when an answer is missing; carries nothing itself —
    the flow knows what is pending."""


class InputRequest(msgspec.Struct, frozen=True):  # Structs: made on every round
    """One thing to ask the client, with the key its answer will come back under."""

    method: InputMethod
    params: dict[str, Any]
    key: str | None = None
    #: Accept an answer only as a reply to this very question: it must arrive with the
    #: sealed requestState of the round that asked it. For approvals (e.g. a policy's
    #: confirmation), where an answer volunteered up front must not count.
    bound: bool = False

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method}
        if self.params or self.method != "roots/list":
            out["params"] = self.params
        return out


def elicitation(message: str, schema: Mapping[str, Any], *, key: str | None = None,
                bound: bool = False) -> InputRequest:
    """A form elicitation request (for ``ctx.ask``)."""
    return InputRequest("elicitation/create",
                        {"mode": "form", "message": message, "requestedSchema": dict(schema)},
                        key, bound)


def url_elicitation(message: str, url: str, *, key: str | None = None) -> InputRequest:
    return InputRequest("elicitation/create", {"mode": "url", "message": message, "url": url},
                        key)


def sampling(messages: list[dict[str, Any]], *, max_tokens: int, key: str | None = None,
             **params: Any) -> InputRequest:
    body: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens}
    body.update({_camel(k): v for k, v in params.items()})
    return InputRequest("sampling/createMessage", body, key)


def roots(*, key: str | None = None) -> InputRequest:
    return InputRequest("roots/list", {}, key)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


class ElicitAnswer(msgspec.Struct, frozen=True):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


class SamplingAnswer(msgspec.Struct, frozen=True):
    role: str
    content: Any
    model: str
    stop_reason: str | None = None

    @property
    def text(self) -> str | None:
        blocks = self.content if isinstance(self.content, list) else [self.content]
        texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        return "".join(t for t in texts if isinstance(t, str)) if texts else None


class RootsAnswer(msgspec.Struct, frozen=True):
    roots: list[dict[str, Any]]


Answer = ElicitAnswer | SamplingAnswer | RootsAnswer

class Asker(Protocol):
    """What a flow needs of the request whose handler asks (a ``Context``): what the
    request declared, and how to name the handler in an error."""

    @property
    def meta(self) -> RequestMeta: ...

    def describe(self) -> str: ...


class InputFlow:
    """The answers a handler can see in this round, and what it asked for."""

    __slots__ = ("_checked", "_counters", "_ctx", "asked", "carried", "fresh", "pending",
                 "used")

    def __init__(self, ctx: Asker, carried: dict[str, Any], fresh: dict[str, Any],
                 asked: frozenset[str] = frozenset()) -> None:
        self._ctx = ctx
        self.carried = carried
        self.fresh = fresh
        #: Keys the previous round asked, as its sealed requestState proves.
        self.asked = asked
        self.used: dict[str, Any] = {}
        self.pending: dict[str, InputRequest] = {}
        self._counters: dict[str, int] | None = None  # made for the first keyless request
        #: The last request whose form ``check_form`` checked, and that form: the answer
        #: to it (``ctx.elicit`` checks, then awaits) is validated without finding the
        #: form again.
        self._checked: tuple[InputRequest, ElicitationForm] | None = None

    def _new_key(self, request: InputRequest) -> str:
        """The key of a request its handler gave none: ``elicitation_1``, ``sampling_2``."""
        kind = request.method.split("/", 1)[0]
        counters = self._counters
        if counters is None:
            counters = self._counters = {}
        n = counters.get(kind, 0) + 1
        counters[kind] = n
        return f"{kind}_{n}"

    def _take(self, request: InputRequest) -> Answer | None:
        """This round's answer to ``request`` (checked against it), or ``None``, and then
        the request is pending."""
        check_capability(self._ctx, request)
        key = request.key if request.key is not None else self._new_key(request)
        fresh = self.fresh
        if key in fresh and (not request.bound or key in self.asked):
            value = fresh[key]
        elif key in self.carried:
            value = self.carried[key]
        else:
            self.pending[key] = request
            return None
        checked = self._checked
        answer = parse_answer(key, request, value, form=checked[1] if checked is not None
                              and checked[0] is request else None)
        # What is carried on is the answer this round used (a reply to a bound question
        # slipped in beside its carried answer is neither used nor carried).
        self.used[key] = value
        return answer

    async def gather(self, *requests: InputRequest) -> list[Answer]:
        answers = [self._take(request) for request in requests]
        if self.pending:
            raise InputRequired()
        return [a for a in answers if a is not None]

    async def gather_one(self, request: InputRequest) -> Any:
        return self.answer(request)

    def answer(self, request: InputRequest) -> Any:
        """``gather`` for one request, without its lists or a coroutine: what awaiting
        ``ctx.elicit`` and friends runs (``context._Asking``)."""
        answer = self._take(request)
        if self.pending:
            raise InputRequired()
        return answer

    def check_form(self, request: InputRequest) -> None:
        form = check_form(self._ctx, request)
        if form is not None:
            self._checked = (request, form)


class Flow(Protocol):
    """How one request's questions get their answers: ``InputFlow`` (this round's
    answers, or ``InputRequired``) or a task's flow (``mcpcore.tasks.inputs``)."""

    async def gather(self, *requests: InputRequest) -> list[Answer]: ...

    async def gather_one(self, request: InputRequest) -> Any: ...

    def check_form(self, request: InputRequest) -> None: ...


def check_capability(ctx: Asker, request: InputRequest) -> None:
    """-32021 unless the request declared what answering ``request`` takes."""
    has = ctx.meta.has_capability
    if request.method == "elicitation/create":
        if request.params.get("mode") == "url":
            if not has("elicitation", "url"):
                raise MissingRequiredClientCapability({"elicitation": {"url": {}}})
        elif not has("elicitation"):
            raise MissingRequiredClientCapability({"elicitation": {}})
    elif request.method == "sampling/createMessage":
        if not has("sampling"):
            raise MissingRequiredClientCapability({"sampling": {}})
        if ("tools" in request.params or "toolChoice" in request.params) and not (
            has("sampling", "tools")
        ):
            raise MissingRequiredClientCapability({"sampling": {"tools": {}}})
    elif request.method == "roots/list" and not has("roots"):
        raise MissingRequiredClientCapability({"roots": {}})


def check_form(ctx: Asker, request: InputRequest) -> ElicitationForm | None:
    """A form must be the flat schema elicitation allows: else the handler's author
    hears it now, not when the client's answer fails to validate. Returns the checked
    form (``None`` for a request that is not a form elicitation)."""
    if request.method == "elicitation/create" and request.params.get("mode") == "form":
        try:
            return check_elicitation_form(request.params["requestedSchema"])
        except SchemaError as exc:
            raise UsageError(f"{ctx.describe()} asked with an invalid elicitation "
                             f"form: {exc}") from None
    return None


def parse_answer(key: str, request: InputRequest, value: Any, *,
                 form: ElicitationForm | None = None) -> Answer:
    """Check one ``inputResponses`` entry against the request it answers: an answer of
    the wrong shape, or a form answer breaking its schema, is -32602. ``form``: the
    request's form as ``check_form`` returned it (else it is found from the schema)."""
    if not isinstance(value, dict):
        raise InvalidInputResponses(f"{_where(key)} must be an object")
    if request.method == "elicitation/create":
        action = value.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise InvalidInputResponses(f"{_where(key)}.action must be accept, decline "
                                        "or cancel")
        content = value.get("content")
        if action == "accept" and request.params.get("mode", "form") == "form":
            if not isinstance(content, dict):
                raise InvalidInputResponses(f"{_where(key)}.content must be an object")
            problems = (form.problems(content) if form is not None else
                        validate_elicitation_content(request.params["requestedSchema"],
                                                     content))
            if problems:
                raise InvalidInputResponses(f"{_where(key)}.content does not match the "
                                            f"requested schema: {'; '.join(problems)}")
        return ElicitAnswer(action, content if isinstance(content, dict) else None)
    if request.method == "sampling/createMessage":
        role, content, model = value.get("role"), value.get("content"), value.get("model")
        if role not in ("user", "assistant") or not isinstance(model, str) or not isinstance(
            content, (dict, list)
        ):
            raise InvalidInputResponses(f"{_where(key)} is not a CreateMessageResult "
                                        "(role, content, model)")
        stop = value.get("stopReason")
        return SamplingAnswer(role, content, model, stop if isinstance(stop, str) else None)
    root_list = value.get("roots")
    if not isinstance(root_list, list) or not all(
        isinstance(r, dict) and isinstance(r.get("uri"), str) for r in root_list
    ):
        raise InvalidInputResponses(f"{_where(key)} is not a ListRootsResult "
                                    "(roots: [{uri}])")
    return RootsAnswer(root_list)


def _where(key: str) -> str:
    # Made only for an error message: an answer that is fine never builds it.
    return f"inputResponses[{key!r}]"


class Retryable(Protocol):
    """The params of a request that may come back as an MRTR retry."""

    input_responses: Any
    request_state: Any

    def salient(self) -> dict[str, Any]:
        """The params the sealed state binds: the method's own, without the retry's."""
        ...


Handler = Callable[[], Awaitable[dict[str, Any]]]


__all__ = [
    "Answer",
    "Asker",
    "ElicitAnswer",
    "Flow",
    "Handler",
    "InputFlow",
    "InputMethod",
    "InputRequest",
    "InputRequired",
    "Retryable",
    "RootsAnswer",
    "SamplingAnswer",
    "check_capability",
    "check_form",
    "elicitation",
    "parse_answer",
    "roots",
    "sampling",
    "url_elicitation",
]
