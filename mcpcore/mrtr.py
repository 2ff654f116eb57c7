"""Multi Round-Trip Requests: handlers ask the client for input without the server
remembering anything between requests.

A handler calls ``await ctx.elicit(...)`` (or ``sample``, ``list_roots``, ``ask``). If the
answer is among this retry's ``inputResponses`` or the answers carried forward in the
sealed ``requestState``, it is returned at once. If not, ``InputRequired`` stops the
handler; ``SealedRetries`` seals what the retry needs (answers so far, ``ctx.state``, the
round, bound to principal + method + params digest) and answers
``resultType: "input_required"`` with the outstanding ``inputRequests``. The retry may land
on any instance that holds the key ring; the handler runs again from the top and finds
its answers. Only ``tools/call``, ``resources/read`` and ``prompts/get`` may ask
(multi-round-trip.mdx).

How the answers come is an ``InputStrategy``: the engine runs every asking handler
through the one it was given and knows nothing else about the client.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import msgspec
from msgspec import UNSET

from mcpcore.errors import (
    InvalidInputResponses,
    InvalidRequestState,
    MissingRequiredClientCapability,
    UsageError,
)
from mcpcore.outcome import Outcome
from mcpcore.schema import (
    ElicitationForm,
    SchemaError,
    check_elicitation_form,
    validate_elicitation_content,
)
from mcpcore.sealing import (
    DEFAULT_ENV_VAR,
    KeyRing,
    Sealer,
    StateBinding,
    consume_once,
    params_digest,
)

if TYPE_CHECKING:
    from mcpcore.context import Context
    from mcpcore.stores.base import Store

InputMethod = Literal["elicitation/create", "sampling/createMessage", "roots/list"]
#: The answers of a first round: none (read only, so one shared object will do).
_NOTHING: dict[str, Any] = {}
#: No keys asked. Made once: calling ``frozenset[str]`` (an alias) makes the set, then
#: tries to set ``__orig_class__`` on it and swallows the AttributeError, every time.
_NO_KEYS: Final[frozenset[str]] = frozenset()
#: A first round's answers: none carried, none fresh, none asked (one tuple for all).
_FIRST_ROUND: Final = (_NOTHING, _NOTHING, _NO_KEYS)


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


@dataclass
class MrtrConfig:
    """How MRTR state is protected. Give every instance of a fleet the same key ring.

    ``MrtrConfig.from_env()`` reads ``MCPCORE_STATE_KEYS`` (see ``mcpcore.sealing``); with
    no keys configured a random per-process key is made on first use, with a warning —
    fine for one process, broken for a fleet.
    """

    sealer: Sealer | None = None
    store: Store | None = None
    single_use: bool = False
    max_rounds: int = 16

    @classmethod
    def development(cls) -> MrtrConfig:
        """No key ring yet: ``get_sealer`` reads ``MCPCORE_STATE_KEYS`` on first use,
        else makes a per-process key (with a warning).

        ``ValueError`` at once if ``MCPCORE_STATE_KEYS`` is set but empty or invalid:
        ``export MCPCORE_STATE_KEYS=$(a command that failed)`` must stop the server, not
        leave it sealing with a key no other instance has.
        """
        _check_env(DEFAULT_ENV_VAR)
        return cls()

    @classmethod
    def from_env(cls, var: str = DEFAULT_ENV_VAR, **kwargs: Any) -> MrtrConfig:
        """The key ring from ``var`` if it is set (``ValueError`` if it is empty or
        invalid); unset, the per-process development key of ``development()``."""
        if var in os.environ:
            return cls(sealer=Sealer(KeyRing.from_env(var)), **kwargs)
        return cls(**kwargs)

    def get_sealer(self) -> Sealer:
        if self.sealer is None:
            set_ = DEFAULT_ENV_VAR in os.environ
            self.sealer = Sealer(KeyRing.from_env() if set_ else KeyRing.generate_dev())
        return self.sealer


def _check_env(var: str) -> None:
    if var in os.environ:
        KeyRing.from_env(var)  # raises ValueError, naming the variable


class InputFlow:
    """The answers a handler can see in this round, and what it asked for."""

    __slots__ = ("_checked", "_counters", "_ctx", "asked", "carried", "fresh", "pending",
                 "used")

    def __init__(self, ctx: Context, carried: dict[str, Any], fresh: dict[str, Any],
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


def check_capability(ctx: Context, request: InputRequest) -> None:
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


def check_form(ctx: Context, request: InputRequest) -> ElicitationForm | None:
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


class InputStrategy(Protocol):
    """How a handler that asks the client for input gets its answers.

    The engine knows one strategy per request and nothing else about the client:
    ``SealedRetries`` (2026-07-28: stop, seal, answer ``input_required``, run again on
    the retry) by default, or whatever the caller of ``Server.dispatch`` passes (say, one
    that sends the question to the client as a request of its own).
    """

    async def run(self, ctx: Context, params: Retryable, handler: Handler) -> Outcome:
        """Run ``handler`` until it completes or must wait for the client."""
        ...


async def run_round(ctx: Context, handler: Handler, carried: dict[str, Any],
                    fresh: dict[str, Any], asked: frozenset[str] = frozenset()
                    ) -> dict[str, Any] | InputFlow:
    """Run the handler once with these answers: its body, or, if it asked for something
    it does not have, the round's ``InputFlow`` (``flow.pending``). The flow is made only
    when the handler asks, so a handler that does not costs nothing here."""
    ctx._flow = None
    ctx._round = (carried, fresh, asked)
    try:
        return await handler()
    except InputRequired:
        flow = ctx._flow
        assert isinstance(flow, InputFlow)  # only an InputFlow raises InputRequired
        return flow


class SealedRetries:
    """The 2026-07-28 strategy: everything a retry needs rides in ``requestState``.

    A request without ``inputResponses``/``requestState`` runs the handler once; if it
    asks, what the retry needs (answers so far, ``ctx.state``, the round, the keys
    asked) is sealed, bound to principal + method + params digest, and the outcome is
    ``input_required``. A retry opens the state (the binding is computed once per
    request), runs the handler again from the top with every answer, and so on.
    """

    __slots__ = ("config",)

    def __init__(self, config: MrtrConfig) -> None:
        self.config = config

    async def run(self, ctx: Context, params: Retryable, handler: Handler) -> Outcome:
        responses, state_token = params.input_responses, params.request_state
        round_no: int = 1
        flow_id: str | None = None
        binding: StateBinding | None = None
        if responses is UNSET and state_token is UNSET:  # a first round
            ctx._round = _FIRST_ROUND
        else:
            if responses is UNSET:
                fresh: dict[str, Any] = {}
            elif not isinstance(responses, dict):
                raise InvalidInputResponses("inputResponses must be an object mapping "
                                            "keys to results")
            else:
                fresh = responses
            carried: dict[str, Any] = {}
            asked = _NO_KEYS
            if state_token is not UNSET:
                if not isinstance(state_token, str):
                    raise InvalidRequestState("requestState must be a string")
                config = self.config
                binding = _binding(ctx, params)
                opened = (config.sealer or config.get_sealer()).open(state_token, binding)
                if config.single_use and config.store is not None:
                    await consume_once(config.store, opened.jti, opened.expires_at,
                                       time.time())
                round_no = opened.round + 1
                if round_no > config.max_rounds:
                    raise InvalidRequestState(
                        f"Too many input rounds (limit {config.max_rounds})")
                flow_id = opened.flow_id
                data = opened.data
                # Decoded just now for this request alone: its dicts need no copy.
                answers = data.get("answers")
                if type(answers) is dict:
                    carried = answers
                asked_keys = data.get("asked")
                if asked_keys:
                    # Only the string keys (``filter`` with ``isinstance(k, str)`` as a
                    # C callable: no generator frame).
                    asked = frozenset(filter(str.__instancecheck__, asked_keys))
                state = data.get("state")
                if isinstance(state, dict):
                    ctx.state = state
            ctx._round = (carried, fresh, asked)
        # ``run_round``, inline: one coroutine fewer per round.
        ctx._flow = None
        try:
            return Outcome(await handler())
        except InputRequired:
            flow = ctx._flow
            assert isinstance(flow, InputFlow)  # only an InputFlow raises InputRequired
            return self._input_required(ctx, params, flow, round_no, flow_id, binding)

    def _input_required(self, ctx: Context, params: Retryable, flow: InputFlow,
                        round_no: int, flow_id: str | None,
                        binding: StateBinding | None) -> Outcome:
        # With nothing carried, the answers are those this round used (sealed below,
        # before anything could change them): no merged copy.
        answers = {**flow.carried, **flow.used} if flow.carried else flow.used
        data = {"answers": answers, "state": ctx.state, "asked": list(flow.pending)}
        config = self.config
        token = (config.sealer or config.get_sealer()).seal(
            binding or _binding(ctx, params), round=round_no, data=data, flow_id=flow_id)
        asks: dict[str, dict[str, Any]] = {}
        for key, request in flow.pending.items():  # a loop, not a comprehension's frame
            asks[key] = request.wire()
        return Outcome({"inputRequests": asks, "requestState": token}, "input_required")


def _binding(ctx: Context, params: Retryable) -> StateBinding:
    method = ctx.method
    return StateBinding(ctx.principal.key, method, params_digest(method, params.salient()))


__all__ = [
    "Answer",
    "ElicitAnswer",
    "Flow",
    "Handler",
    "InputFlow",
    "InputRequest",
    "InputRequired",
    "InputStrategy",
    "MrtrConfig",
    "Retryable",
    "RootsAnswer",
    "SamplingAnswer",
    "SealedRetries",
    "check_capability",
    "check_form",
    "elicitation",
    "parse_answer",
    "roots",
    "run_round",
    "sampling",
    "url_elicitation",
]
