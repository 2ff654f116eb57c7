"""Bridging the eras: an upstream's questions mid-call relayed to the caller, whatever
era each side speaks (docs/gateway.md, "Bridging the eras").

The forwarding handler asks the caller through the engine like any handler
(``ctx.ask``), so the caller's era is the engine's business: a 2026-07-28 caller gets
``input_required`` and retries (``mcpcore.mrtr.SealedRetries``), a 2025 caller gets
``elicitation/create`` (``sampling/createMessage``, ``roots/list``) on its session and
the handler runs again within the one request (``mcpcore.legacy.bridge.Bridge``). What
this module adds is the upstream's side:

- a 2026-07-28 upstream answers ``input_required``: one round is made with
  ``Client.call_tool_round`` (never the client's own MRTR loop); its questions are asked
  under their own keys, and its ``requestState`` is kept in ``ctx.state``, which the
  engine seals (AES-GCM, ``mcpcore.sealing``) bound to the principal, the method, the
  tool name and a digest of the arguments, with an expiry. The retry sends the
  caller's answers and the upstream's state back to the upstream. The caller never
  sees the upstream's state in clear; the upstream never sees the gateway's envelope;
- a 2025 upstream sends a request on its session in the middle of the call (a
  ``tools/call``, ``prompts/get`` or ``resources/read``; routed to this call alone:
  ``Client.request(on_request=...)``). The call is parked (``Parking``):
  its pending request stays unanswered while the question goes to the caller; the
  sealed state carries the park's id, the instance holding it and the round. The
  caller's next round answers it and the call goes on. A park that is gone (timed
  out, or its instance restarted) is ``ParkedCallError`` (-32602, ``data.reason``) at
  once, never a hang. A retry reaching another instance is handed to the one holding
  the call through the fleet's Store (``Forwarder``: ``handoff.py``); without a Store it
  is ``ParkedCallError("parked_elsewhere")``.

What the relay state binds beyond the engine's binding: the upstream and its tool name
(a catalog refresh may give the served name to another upstream: its state must never
reach that one), and for a parked call the principal, a digest of the call and its
round (an answered round's state is refused when replayed).

Bounds (an upstream is hostile until bounded): ``MAX_RELAY_ROUNDS`` rounds of questions
per call, then ``UpstreamError(reason="input_rounds")``; an upstream ``requestState``
over ``MAX_UPSTREAM_STATE`` bytes, or questions over ``MAX_QUESTION_BYTES`` or
``MAX_INPUT_REQUESTS`` of them, ``UpstreamError`` (``too_large``,
``invalid_response``); parked calls at most ``MAX_PARKED`` on the instance,
``MAX_PARKED_PER_PRINCIPAL`` per principal and half the upstream's
``max_concurrency`` (a parked call holds one of its slots), each for at most
``park_timeout`` seconds, then its call is cancelled
(``UpstreamError(reason="too_many_waiting")`` for one past a bound).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

import msgspec

from mcpcore import types
from mcpcore.client import Client
from mcpcore.client.resolvers import CAPABILITY, MAX_INPUT_REQUESTS, Unanswerable
from mcpcore.context import Context
from mcpcore.errors import InvalidRequestState
from mcpcore.gateway.credentials import Caller, caller_of
from mcpcore.gateway.errors import UpstreamError
from mcpcore.gateway.upstreams import BRIDGED_CAPABILITIES, Upstream
from mcpcore.inputs import (
    Answer,
    ElicitAnswer,
    InputMethod,
    InputRequest,
    SamplingAnswer,
    check_capability,
)
from mcpcore.meta import CLIENT_CAPABILITIES
from mcpcore.schema import SchemaError, check_elicitation_form
from mcpcore.tasks.engine import declared
from mcpcore.tasks.wire import TASKS_EXTENSION
from mcpcore.timing import SYSTEM_CLOCK, Clock

log = logging.getLogger("mcpcore.gateway")

#: Where the relay rides in ``ctx.state`` (sealed by the engine with the rest of it).
RELAY: Final = "gateway.relay"
#: Rounds of questions one call may relay; past it the upstream is looping.
MAX_RELAY_ROUNDS: Final = 10
#: The largest ``requestState`` of an upstream the gateway carries (bytes).
MAX_UPSTREAM_STATE: Final = 4096
#: The largest round of questions relayed (their JSON, bytes).
MAX_QUESTION_BYTES: Final = 4096
#: The longest question key relayed.
MAX_KEY_LENGTH: Final = 128
#: How long a parked call waits for its caller's answers (seconds).
PARK_TIMEOUT: Final = 300.0
#: Parked calls held by one instance, and by one principal.
MAX_PARKED: Final = 256
MAX_PARKED_PER_PRINCIPAL: Final = 8
#: Parks that ended, remembered so a late retry hears why (bounded, oldest out).
MAX_GONE: Final = 1024

Notify = Callable[[types.Notification], Awaitable[None]]


class ParkedCallError(InvalidRequestState):
    """A retry whose parked upstream call cannot be answered here: -32602 with
    ``data: {"upstream": NAME, "reason": REASON}``; the message says what happened and
    that the call must start again. Reasons: ``parked_elsewhere`` (held by another
    instance, or one that has stopped), ``parked_gone`` (timed out, cancelled, or
    ended), ``parked_busy`` (another retry is answering it), ``answered`` (this round
    was answered already: a replay); across instances (``handoff.py``) also
    ``owner_gone`` (the instance holding it stopped) and ``owner_silent`` (it did not
    answer in time)."""

    def __init__(self, upstream: str, reason: str, detail: str) -> None:
        super().__init__(f"{detail}; call the tool again from the start",
                         data={"upstream": upstream, "reason": reason})
        self.reason = reason


# -- questions and answers ------------------------------------------------------------


def question(upstream: str, key: object, method: object, params: object) -> InputRequest:
    """An upstream's question as the engine asks it (a bound ``InputRequest``: its
    answer counts only as a reply to this round); ``UpstreamError`` if it is not one
    the gateway can relay."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        raise UpstreamError(upstream, "invalid_response",
                            f"an input request key must be a string of 1 to "
                            f"{MAX_KEY_LENGTH} characters, not {str(key)[:40]!r}")
    if method not in CAPABILITY:
        raise UpstreamError(upstream, "invalid_response",
                            f"input request {key!r}: {str(method)[:60]!r} is not a question "
                            "a client answers")
    body = dict(params) if isinstance(params, dict) else {}
    if method == "elicitation/create":
        body.pop("elicitationId", None)  # a 2025 URL elicitation's own id
        mode = body.setdefault("mode", "form")  # 2025-06-18 forms have no mode
        if mode == "form":
            try:
                check_elicitation_form(body.get("requestedSchema"))
            except SchemaError as exc:
                raise UpstreamError(upstream, "invalid_response",
                                    f"input request {key!r}: not a valid elicitation form: "
                                    f"{exc}") from None
        elif mode != "url" or not isinstance(body.get("url"), str):
            raise UpstreamError(upstream, "invalid_response",
                                f"input request {key!r}: an elicitation must be a form or "
                                "a url")
        if not isinstance(body.get("message"), str):
            raise UpstreamError(upstream, "invalid_response",
                                f"input request {key!r}: an elicitation needs a message")
    kind: InputMethod = method  # type: ignore[assignment]  # checked: one of CAPABILITY's
    return InputRequest(kind, body, key, bound=True)


def questions(upstream: str, requests: object) -> list[InputRequest]:
    """A round of an upstream's ``inputRequests``, checked and bounded."""
    if not isinstance(requests, dict):
        raise UpstreamError(upstream, "invalid_response", "inputRequests is not an object")
    if len(requests) > MAX_INPUT_REQUESTS:
        raise UpstreamError(upstream, "invalid_response",
                            f"{len(requests)} questions at once (at most "
                            f"{MAX_INPUT_REQUESTS} are relayed)")
    asked = [question(upstream, key, request.get("method") if isinstance(request, dict)
                      else None, request.get("params") if isinstance(request, dict) else None)
             for key, request in requests.items()]
    _bounded(upstream, "its questions", [q.wire() for q in asked], MAX_QUESTION_BYTES)
    return asked


def _bounded(upstream: str, what: str, value: object, limit: int) -> None:
    size = len(msgspec.json.encode(value))
    if size > limit:
        raise UpstreamError(upstream, "too_large",
                            f"{what} take {size} bytes (at most {limit} are relayed)")


def wire_answer(answer: Answer) -> dict[str, Any]:
    """The caller's answer (checked by the engine against its question) as the
    upstream reads it: the spec's result object, nothing the caller added."""
    if isinstance(answer, ElicitAnswer):
        out: dict[str, Any] = {"action": answer.action}
        if answer.content is not None:
            out["content"] = answer.content
        return out
    if isinstance(answer, SamplingAnswer):
        out = {"role": answer.role, "content": answer.content, "model": answer.model}
        if answer.stop_reason is not None:
            out["stopReason"] = answer.stop_reason
        return out
    return {"roots": answer.roots}


def _requests(relay: dict[str, Any]) -> list[InputRequest]:
    """The questions a sealed relay asked (sealed by us: no need to check them again)."""
    asked = relay.get("asked")
    return [InputRequest(r[0], r[1], r[2], bound=True)
            for r in (asked if isinstance(asked, list) else [])]


def _call_digest(upstream: str, tool: str, arguments: dict[str, Any],
                 method: str = "tools/call") -> str:
    canonical = msgspec.json.encode([upstream, method, tool, arguments], order="sorted")
    return hashlib.sha256(canonical).hexdigest()


# -- parked calls (a 2025 upstream's question, held on this instance) ---------------------


@dataclass(eq=False)
class _Question:
    request: InputRequest
    answer: asyncio.Future[dict[str, Any]]


@dataclass(eq=False)
class Park:
    """One 2025 upstream call waiting for its caller's answers (``Parking``)."""

    id: str
    upstream: Upstream
    principal: str
    digest: str
    round: int = 0
    #: The request it parks: ``tools/call``, ``prompts/get`` or ``resources/read``.
    method: str = "tools/call"
    #: The call to the upstream (its request, waiting on our answers).
    task: asyncio.Task[dict[str, Any]] | None = None
    #: Questions the upstream asked and nobody has taken yet.
    incoming: asyncio.Queue[_Question] = field(default_factory=asyncio.Queue)
    #: Questions relayed to the caller, by key, waiting for their answers.
    asked: dict[str, _Question] = field(default_factory=dict)
    #: A downstream request is working with it now (else it waits for a retry).
    attached: bool = True
    #: Where the call's progress and log notifications go now (the attached request's).
    notify_to: Notify | None = None
    watchdog: asyncio.Task[None] | None = None
    count: int = 0
    #: Why the park was closed (then a late question is refused at once).
    closed: str | None = None
    #: What ``Parking.wait`` waits on (``wake``).
    waiter: asyncio.Future[None] | None = None

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The upstream's request of this call (``on_request``): queued for the caller,
        answered when the caller's answer comes (or refused)."""
        if self.closed is not None:  # asked after its call was given up: nobody to ask
            raise Unanswerable(f"the gateway's caller will not answer: {self.closed}",
                               -32603)
        self.count += 1
        kind = method.split("/", 1)[0]
        try:
            request = question(self.upstream.name, f"{kind}_{self.count}", method, params)
        except UpstreamError as exc:
            raise Unanswerable(str(exc), -32602) from None
        pending = _Question(request, asyncio.get_running_loop().create_future())
        self.incoming.put_nowait(pending)
        self.wake()
        return await pending.answer

    def wake(self, _: object = None) -> None:
        """A question came, or the call ended: ``Parking.wait`` goes on."""
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def notify(self, note: types.Notification) -> None:
        target = self.notify_to
        if target is not None:
            await target(note)

    def refuse(self, why: str) -> None:
        """Every question open or queued gets an error back (the upstream hears why)."""
        waiting = list(self.asked.values())
        while not self.incoming.empty():
            waiting.append(self.incoming.get_nowait())
        self.asked.clear()
        for open_question in waiting:
            if not open_question.answer.done():
                open_question.answer.set_exception(Unanswerable(why, -32603))


class Parking:
    """The parked calls of one gateway instance (module docstring), keyed by an id the
    sealed relay state carries with ``instance``."""

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK, park_timeout: float = PARK_TIMEOUT,
                 max_parked: int = MAX_PARKED,
                 max_per_principal: int = MAX_PARKED_PER_PRINCIPAL) -> None:
        self.clock = clock
        self.park_timeout = park_timeout
        self.max_parked = max_parked
        self.max_per_principal = max_per_principal
        #: This instance, as sealed relay states name it (a new one each start).
        self.instance = secrets.token_urlsafe(12)
        self.parks: dict[str, Park] = {}
        self._gone: collections.OrderedDict[str, str] = collections.OrderedDict()

    def open(self, upstream: Upstream, tool: str, arguments: dict[str, Any], principal: str,
             notify: Notify | None, log_level: str | None,
             caller: Caller | None = None, method: Relayed = "tools/call") -> Park:
        """Start the call to a 2025 upstream; its questions come to the park. ``caller``:
        who it is made for (its credential, ``Upstream.call``). ``method``: a
        ``tools/call`` of the tool ``tool`` with ``arguments``, or a ``prompts/get`` or
        ``resources/read`` of the prompt or URI ``tool`` (``arguments``: its params)."""
        park = Park(secrets.token_urlsafe(16), upstream, principal,
                    _call_digest(upstream.name, tool, arguments, method), notify_to=notify,
                    method=method)

        def work(client: Client) -> Awaitable[dict[str, Any]]:
            if method != "tools/call":
                return client.request(method, arguments, on_notification=park.notify,
                                      on_request=park.answer, timeout=None)
            return client.call_tool_round(tool, arguments, on_notification=park.notify,
                                          on_request=park.answer, log_level=log_level,
                                          timeout=None)

        # Bounded by ``wait`` (the upstream's own time) and the watchdog (the caller's).
        park.task = asyncio.ensure_future(
            upstream.call(f"{method} {tool}", work, caller=caller, timeout=None))
        park.task.add_done_callback(park.wake)
        self.parks[park.id] = park
        return park

    async def wait(self, park: Park) -> dict[str, Any] | list[InputRequest]:
        """The call's result, or the questions it asks now (then it is parked: its
        questions wait in ``park.asked``). The upstream's own time between two answers
        is bounded by its ``timeout``; past it the call is cancelled."""
        assert park.task is not None
        if park.incoming.empty() and not park.task.done():
            # One future, woken by a question or by the call's end: no task per wait.
            park.waiter = asyncio.get_running_loop().create_future()
            try:
                async with self.clock.timeout(park.upstream.config.timeout):
                    await park.waiter
            except TimeoutError:
                self.close(park, "the upstream did not answer in time")
                raise UpstreamError(park.upstream.name, "timeout",
                                    f"{park.method}: no answer within "
                                    f"{park.upstream.config.timeout:g} s") from None
            finally:
                park.waiter = None
        if park.incoming.empty():
            self.close(park, "the call ended")
            return park.task.result()  # its typed error, if it failed
        await asyncio.sleep(0)  # questions sent together arrive together
        asked: list[InputRequest] = []
        while not park.incoming.empty() and len(asked) < MAX_INPUT_REQUESTS:
            pending = park.incoming.get_nowait()
            park.asked[pending.request.key or ""] = pending
            asked.append(pending.request)
        park.round += 1
        return asked

    async def resume(self, park: Park) -> dict[str, Any] | list[InputRequest]:
        """``wait``; the park goes if the wait fails or is cancelled."""
        try:
            return await self.wait(park)
        except BaseException:  # cancelled, timed out, failed: the park goes
            self.close(park, "the request that held it ended")
            raise

    def suspend(self, park: Park) -> None:
        """The caller has the questions: the park waits for a retry, at most
        ``park_timeout`` seconds, within the bounds (else ``UpstreamError``)."""
        waiting = [p for p in self.parks.values() if not p.attached and p is not park]
        mine = sum(p.principal == park.principal for p in waiting)
        same = sum(p.upstream is park.upstream for p in waiting)
        per_upstream = max(1, park.upstream.config.max_concurrency // 2)
        if len(waiting) >= self.max_parked or mine >= self.max_per_principal or \
                same >= per_upstream:
            self.close(park, "too many calls wait for their callers' answers")
            raise UpstreamError(park.upstream.name, "too_many_waiting",
                                f"{len(waiting)} calls already wait for their callers' "
                                f"answers ({mine} of yours, {same} to this upstream); "
                                "answer those first")
        park.attached = False
        park.notify_to = None
        park.watchdog = asyncio.ensure_future(self._expire(park))

    async def _expire(self, park: Park) -> None:
        await self.clock.sleep(self.park_timeout)
        log.info("upstream %s: a call parked for its caller's answers timed out after "
                 "%g s; cancelled", park.upstream.name, self.park_timeout,
                 extra={"upstream": park.upstream.name})
        self.close(park, f"its caller did not answer within {self.park_timeout:g} s")

    def claim(self, relay: dict[str, Any], upstream: str, principal: str, digest: str,
              notify: Notify | None) -> Park:
        """The park a retry's relay state names, attached to this request; a
        ``ParkedCallError`` saying why not."""
        park_id = relay.get("park")
        if relay.get("instance") != self.instance:
            raise ParkedCallError(upstream, "parked_elsewhere",
                                  f"the call to upstream {upstream!r} waiting for this "
                                  "answer is held by another gateway instance (or one "
                                  "that has stopped); a retry must reach the instance "
                                  "that holds it")
        park = self.parks.get(park_id) if isinstance(park_id, str) else None
        if park is None or park.principal != principal or park.digest != digest:
            why = self._gone.get(park_id, "it is no longer held") \
                if isinstance(park_id, str) else "it is no longer held"
            raise ParkedCallError(upstream, "parked_gone",
                                  f"the call to upstream {upstream!r} waiting for this "
                                  f"answer is gone: {why}")
        if park.attached:
            raise ParkedCallError(upstream, "parked_busy",
                                  f"another request is answering this call to upstream "
                                  f"{upstream!r} now")
        if relay.get("round") != park.round:
            raise ParkedCallError(upstream, "answered",
                                  "this round of questions was answered already")
        if park.watchdog is not None:
            park.watchdog.cancel()
            park.watchdog = None
        park.attached = True
        park.notify_to = notify
        return park

    def deliver(self, park: Park, answers: dict[str, dict[str, Any]]) -> None:
        """The caller's answers to the parked questions go to the upstream."""
        for key, pending in list(park.asked.items()):
            if not pending.answer.done():
                pending.answer.set_result(answers[key])
            del park.asked[key]

    def close(self, park: Park, why: str) -> None:
        """Forget the park: its questions refused, its call cancelled (the upstream
        hears ``notifications/cancelled``)."""
        if self.parks.pop(park.id, None) is None:
            return
        park.closed = why
        self._gone[park.id] = why
        while len(self._gone) > MAX_GONE:
            self._gone.popitem(last=False)
        if park.watchdog is not None:
            park.watchdog.cancel()
        park.refuse(f"the gateway's caller will not answer: {why}")
        if park.task is not None and not park.task.done():
            park.task.cancel()
        if park.task is not None:
            park.task.add_done_callback(_retrieved)

    async def aclose(self) -> None:
        for park in list(self.parks.values()):
            self.close(park, "the gateway is shutting down")


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # a call nobody waits for any more: its failure is not news


# -- the relay -----------------------------------------------------------------------------

#: The methods whose upstream questions are relayed (multi-round-trip.mdx: only these
#: may answer ``input_required``).
Relayed = Literal["tools/call", "prompts/get", "resources/read"]


class Forwarder(Protocol):
    """What reaches a call parked on another gateway instance (``handoff.Handoff``,
    through the fleet's Store)."""

    async def hold(self) -> None:
        """Make this instance reachable for the calls it parks (before a relay state
        naming it leaves); ``StoreUnavailable`` if it cannot be."""
        ...

    async def forward(self, upstream: Upstream, relay: dict[str, Any], principal: str,
                      digest: str, answers: dict[str, dict[str, Any]],
                      notify: Notify | None) -> dict[str, Any] | list[InputRequest]:
        """The answers of ``relay``'s round delivered by the instance holding its
        park: the call's result, or its next round of questions (parked there again)."""
        ...

    def release(self, relay: dict[str, Any], why: str) -> None:
        """Tell the instance holding ``relay``'s park to give it up (best effort)."""
        ...


class Relay:
    """Forwarding ``tools/call``, ``prompts/get`` and ``resources/read`` with the
    upstream's questions relayed (module docstring): one per gateway. ``handoff``: how
    a retry reaches a call parked on another instance (None: it cannot,
    ``parked_elsewhere``)."""

    def __init__(self, parking: Parking, handoff: Forwarder | None = None) -> None:
        self.parking = parking
        self.handoff = handoff

    async def call_tool(self, upstream: Upstream, tool: str, arguments: dict[str, Any],
                        ctx: Context, notify: Notify | None) -> dict[str, Any]:
        """The upstream's result of ``tools/call tool``: after as many rounds of
        questions as it asks (each relayed through ``ctx.ask``)."""
        return await self.request(upstream, "tools/call", tool, arguments, ctx, notify)

    async def request(self, upstream: Upstream, method: Relayed, target: str,
                      params: dict[str, Any], ctx: Context, notify: Notify | None
                      ) -> dict[str, Any]:
        """The upstream's result of ``method`` (``tools/call``: ``params`` are the
        tool's arguments; ``prompts/get``, ``resources/read``: the request's params) on
        ``target`` (the upstream's own name or URI), after as many rounds of questions
        as it asks, each relayed through ``ctx.ask``. A 2025 upstream's questions (its
        requests on the session, in the middle of any of the three) park the call."""
        relay = ctx.state.get(RELAY)
        if relay is not None and (not isinstance(relay, dict)
                                  or relay.get("upstream") != upstream.name
                                  or relay.get("tool") != target
                                  or relay.get("method", "tools/call") != method):
            # Sealed by us for this name, but the catalog moved it to another upstream
            # or tool since: that one must never see this state.
            raise InvalidRequestState("this requestState belongs to a call of another "
                                      "upstream tool (the catalog changed); call the tool "
                                      "again")
        while True:
            if relay is None:
                step = await self._first(upstream, method, target, params, ctx, notify)
                round_no = 1
            else:
                requests = _requests(relay)
                answers = await ctx.ask(*requests)  # this run ends here until answered
                wired = {r.key or "": wire_answer(a)
                         for r, a in zip(requests, answers, strict=True)}
                step = await self._next(upstream, method, target, params, ctx, notify,
                                        relay, wired)
                round_no = int(relay.get("round", 0)) + 1
            if step.result is not None:
                return step.result
            if round_no > MAX_RELAY_ROUNDS:
                self._give_up(step, "it asked too many rounds of questions")
                raise UpstreamError(upstream.name, "input_rounds",
                                    f"{method} {target}: still asking after "
                                    f"{MAX_RELAY_ROUNDS} rounds of questions")
            relay = {"upstream": upstream.name, "method": method, "tool": target,
                     "round": round_no,
                     "asked": [[r.method, r.params, r.key] for r in step.asked]}
            if step.state is not None:
                relay["state"] = step.state
            if step.park is not None:
                # One wait per round: the park's round is this relay's round.
                relay.update(park=step.park.id, instance=self.parking.instance)
            elif step.owner is not None:  # parked on another instance: it stays there
                relay.update(park=step.owner[0], instance=step.owner[1])
            ctx.state[RELAY] = relay
            try:
                for request in step.asked:
                    check_capability(ctx, request)  # -32021 now, not a hollow round
            except BaseException:
                self._give_up(step, "its caller cannot answer the question")
                raise
            if step.park is not None:
                self.parking.suspend(step.park)
                if self.handoff is not None:
                    try:
                        await self.handoff.hold()  # its retry may land on any instance
                    except BaseException:
                        self.parking.close(step.park, "the fleet's Store cannot be reached")
                        raise

    def _give_up(self, step: _Step, why: str) -> None:
        if step.park is not None:
            self.parking.close(step.park, why)
        elif step.owner is not None and self.handoff is not None:
            self.handoff.release({"park": step.owner[0], "instance": step.owner[1]}, why)

    async def _first(self, upstream: Upstream, method: Relayed, target: str,
                     params: dict[str, Any], ctx: Context, notify: Notify | None) -> _Step:
        client = upstream.client
        if client is not None and client.era == "legacy":
            park = self.parking.open(upstream, target, params, ctx.principal.key, notify,
                                     ctx.meta.log_level, caller_of(ctx), method)
            return await self._parked(park)
        # Answers the caller volunteered with its first request (no requestState) go to
        # the upstream with it: the upstream decides, as it would called directly, whether
        # they answer its questions (multi-round-trip.mdx: unknown keys are ignored).
        fresh = ctx.round_answers[1] if ctx.round_answers is not None else None
        return await self._round(upstream, method, target, params, ctx, notify,
                                 dict(fresh) if fresh else None, None)

    async def _next(self, upstream: Upstream, method: Relayed, target: str,
                    params: dict[str, Any], ctx: Context, notify: Notify | None,
                    relay: dict[str, Any], answers: dict[str, dict[str, Any]]) -> _Step:
        if "park" in relay:
            digest = _call_digest(upstream.name, target, params, method)
            owner, park_id = relay.get("instance"), relay.get("park")
            if owner != self.parking.instance and self.handoff is not None and \
                    isinstance(owner, str) and isinstance(park_id, str):
                # Held by another instance: the answers go to it through the Store.
                outcome = await self.handoff.forward(upstream, relay, ctx.principal.key,
                                                     digest, answers, notify)
                if isinstance(outcome, dict):
                    return _Step(outcome, [], None, None)
                return _Step(None, outcome, None, None, owner=(park_id, owner))
            park = self.parking.claim(relay, upstream.name, ctx.principal.key, digest,
                                      notify)
            self.parking.deliver(park, answers)
            return await self._parked(park)
        state = relay.get("state")
        return await self._round(upstream, method, target, params, ctx, notify, answers,
                                 state if isinstance(state, str) else None)

    async def _parked(self, park: Park) -> _Step:
        outcome = await self.parking.resume(park)
        if isinstance(outcome, dict):
            return _Step(outcome, [], None, None)
        return _Step(None, outcome, None, park)

    async def _round(self, upstream: Upstream, method: Relayed, target: str,
                     params: dict[str, Any], ctx: Context, notify: Notify | None,
                     answers: dict[str, dict[str, Any]] | None, state: str | None) -> _Step:
        """One round with the upstream: ``Client.call_tool_round`` for a tool, one
        request carrying the answers and the upstream's state for the others (a 2025
        upstream's result is always complete)."""
        caps = {name: value for name, value in ctx.client_capabilities.items()
                if name in BRIDGED_CAPABILITIES}
        # A caller that declared the tasks extension lets a modern upstream answer with a
        # task (relayed under the gateway's own id: tasks.py); one that did not, never.
        tasks = method == "tools/call" and declared(ctx)

        def work(client: Client) -> Awaitable[dict[str, Any]]:
            if method == "tools/call":
                relayed = tasks and client.era != "legacy"  # 2025: no such extension
                return client.call_tool_round(
                    target, params, input_responses=answers, request_state=state,
                    meta={CLIENT_CAPABILITIES: {**caps, "extensions": {TASKS_EXTENSION: {}}}
                          if relayed else caps},
                    on_notification=notify, log_level=ctx.meta.log_level, tasks=relayed)
            sent: dict[str, Any] = dict(params)
            if client.era != "legacy":
                sent["_meta"] = {CLIENT_CAPABILITIES: caps}
                if answers is not None:
                    sent["inputResponses"] = answers
                if state is not None:
                    sent["requestState"] = state
            return client.request(method, sent, on_notification=notify)

        result = await upstream.call(f"{method} {target}", work, caller=caller_of(ctx))
        if result.get("resultType") != "input_required":
            return _Step(result, [], None, None)
        new_state = result.get("requestState")
        if new_state is not None:
            _bounded(upstream.name, "its requestState", new_state, MAX_UPSTREAM_STATE)
        return _Step(None, questions(upstream.name, result.get("inputRequests") or {}),
                     new_state, None)


@dataclass(frozen=True, slots=True)
class _Step:
    """What one round with the upstream gave: its result, or questions (with the
    upstream's state, or the park holding the call: here, or on another instance,
    ``owner``: its park id and instance)."""

    result: dict[str, Any] | None
    asked: list[InputRequest]
    state: str | None
    park: Park | None
    owner: tuple[str, str] | None = None


__all__ = ["MAX_RELAY_ROUNDS", "MAX_UPSTREAM_STATE", "PARK_TIMEOUT", "Forwarder", "Park",
           "ParkedCallError", "Parking", "Relay", "question", "questions", "wire_answer"]
