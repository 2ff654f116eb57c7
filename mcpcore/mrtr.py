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

How the answers come is an ``InputStrategy`` (``mcpcore.context``): the engine runs
every asking handler through the one it was given and knows nothing else about the
client; ``SealedRetries`` is the 2026-07-28 one. The questions, the answers and one
round's ``InputFlow`` are ``mcpcore.inputs``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from msgspec import UNSET

from mcpcore.context import Context
from mcpcore.errors import InvalidInputResponses, InvalidRequestState
from mcpcore.inputs import Handler, InputFlow, InputRequired, Retryable
from mcpcore.outcome import AnsweredWith, Outcome
from mcpcore.sealing import (
    DEFAULT_ENV_VAR,
    KeyRing,
    OpenedState,
    Sealer,
    StateBinding,
    consume_once,
    params_digest,
)

if TYPE_CHECKING:
    from mcpcore.stores.base import Store

#: The answers of a first round: none (read only, so one shared object will do).
_NOTHING: dict[str, Any] = {}
#: No keys asked. Made once: calling ``frozenset[str]`` (an alias) makes the set, then
#: tries to set ``__orig_class__`` on it and swallows the AttributeError, every time.
_NO_KEYS: Final[frozenset[str]] = frozenset()

A = TypeVar("A")
R = TypeVar("R")


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


def flow_of(ctx: Context, flow: InputFlow, about: object) -> InputFlow:
    """``run_round``'s ``then`` for a caller that answers an asking round itself (the
    legacy bridge asks the client and runs the round again): the round's flow."""
    return flow


async def run_round(ctx: Context, handler: Handler, carried: dict[str, Any],
                    fresh: dict[str, Any], asked: frozenset[str],
                    then: Callable[[Context, InputFlow, A], R], about: A) -> Outcome | R:
    """Run the handler once with these answers: its result (an ``Outcome``), or, if it
    asked for something it does not have, ``then(ctx, flow, about)`` of the round's
    ``InputFlow`` (``flow.pending``: what it asked). The flow is made only when the
    handler asks, so a handler that does not costs nothing here. Every input strategy
    runs its rounds here (``SealedRetries``, the legacy bridge).

    ``then`` and ``about`` come apart, rather than as one ``functools.partial``, because
    a round that asks nothing never calls ``then``, and a partial made for every round
    costs more than the coroutine frame it lets ``SealedRetries.run`` save."""
    ctx.flow = None
    ctx.round_answers = (carried, fresh, asked)
    try:
        return Outcome(await handler())
    except AnsweredWith as answered:  # the handler answers with an outcome of its own
        return answered.outcome
    except InputRequired:
        flow = ctx.flow
        assert isinstance(flow, InputFlow)  # only an InputFlow raises InputRequired
        return then(ctx, flow, about)


class SealedRetries:
    """The 2026-07-28 strategy: everything a retry needs rides in ``requestState``.

    A request without ``inputResponses``/``requestState`` runs the handler once; if it
    asks, what the retry needs (answers so far, ``ctx.state``, the round, the keys
    asked) is sealed, bound to principal + method + params digest, and the outcome is
    ``input_required``. A retry opens the state (the binding is computed once per
    request), runs the handler again from the top with every answer, and so on.

    ``run`` is no coroutine of its own: it checks what it can at once (raising there)
    and hands back the round's coroutine (``run_round``), so a round costs one
    coroutine frame, not two; only a single-use retry, which must first mark its state
    used in the store, awaits in between.
    """

    __slots__ = ("config",)

    def __init__(self, config: MrtrConfig) -> None:
        self.config = config

    def run(self, ctx: Context, params: Retryable, handler: Handler
            ) -> Coroutine[Any, Any, Outcome]:
        responses, state_token = params.input_responses, params.request_state
        if responses is UNSET and state_token is UNSET:  # a first round
            return run_round(ctx, handler, _NOTHING, _NOTHING, _NO_KEYS, self._asked,
                             (params, 1, None, None))
        if responses is UNSET:
            fresh: dict[str, Any] = {}
        elif not isinstance(responses, dict):
            raise InvalidInputResponses("inputResponses must be an object mapping keys "
                                        "to results")
        else:
            fresh = responses
        if state_token is UNSET:  # answers without state: a first round with answers
            return run_round(ctx, handler, {}, fresh, _NO_KEYS, self._asked,
                             (params, 1, None, None))
        if not isinstance(state_token, str):
            raise InvalidRequestState("requestState must be a string")
        config = self.config
        binding = _binding(ctx, params)
        opened = (config.sealer or config.get_sealer()).open(state_token, binding)
        if config.single_use and config.store is not None:
            return self._once(config.store, ctx, params, handler, fresh, opened, binding)
        return self._retry(ctx, params, handler, fresh, opened, binding)

    async def _once(self, store: Store, ctx: Context, params: Retryable, handler: Handler,
                    fresh: dict[str, Any], opened: OpenedState, binding: StateBinding
                    ) -> Outcome:
        """A single-use retry: mark its state used (``consume_once``), then the round."""
        await consume_once(store, opened.jti, opened.expires_at, time.time())
        return await self._retry(ctx, params, handler, fresh, opened, binding)

    def _retry(self, ctx: Context, params: Retryable, handler: Handler,
               fresh: dict[str, Any], opened: OpenedState, binding: StateBinding
               ) -> Coroutine[Any, Any, Outcome]:
        """The round of a retry whose state is open: its round number (within
        ``max_rounds``), the answers and ``ctx.state`` it carries."""
        round_no = opened.round + 1
        if round_no > self.config.max_rounds:
            raise InvalidRequestState(f"Too many input rounds (limit {self.config.max_rounds})")
        data = opened.data
        # Decoded just now for this request alone: its dicts need no copy.
        answers = data.get("answers")
        carried: dict[str, Any] = answers if type(answers) is dict else {}
        asked = _NO_KEYS
        asked_keys = data.get("asked")
        if asked_keys:
            # Only the string keys (``filter`` with ``isinstance(k, str)`` as a C
            # callable: no generator frame).
            asked = frozenset(filter(str.__instancecheck__, asked_keys))
        state = data.get("state")
        if isinstance(state, dict):
            ctx.state = state
        return run_round(ctx, handler, carried, fresh, asked, self._asked,
                         (params, round_no, opened.flow_id, binding))

    def _asked(self, ctx: Context, flow: InputFlow,
               about: tuple[Retryable, int, str | None, StateBinding | None]) -> Outcome:
        """The round asked: seal what its retry needs (``about``: the request's params,
        the round, the flow's id and the state's binding, if known); the
        ``input_required`` outcome."""
        params, round_no, flow_id, binding = about
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
    "MrtrConfig",
    "SealedRetries",
    "flow_of",
    "run_round",
]
