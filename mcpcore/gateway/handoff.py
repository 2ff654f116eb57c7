"""A parked call handed across gateway instances through the fleet's Store
(docs/gateway.md, "Bridging the eras").

A 2025 upstream's call waiting for its caller's answers is parked on the instance that
made it (``bridge.Parking``): its upstream session's request stays open there. The
caller's retry may land on any instance behind the balancer. The one that receives it
(the *forwarder*) opens the sealed relay state and checks the answers as for any retry;
then, when the state names another instance (the *owner*), ``Handoff.forward`` hands the
round to the owner through the Store:

1. the owner's liveness key must be there, else ``ParkedCallError("owner_gone")`` at once;
2. the round is claimed, atomically for the whole fleet (``set_if_absent`` on
   ``gateway-handoff:claim:PARK:ROUND``): one claim per round, so two retries of one
   round at once, on two instances, deliver at most one answer; the other is refused
   (``parked_busy``, or ``answered`` once the round is done). The owner's own claim
   (``Parking.claim``) still checks the park's principal, call digest and round, so a
   retry on the owner itself and one forwarded at the same time cannot both deliver;
3. the forwarder subscribes to a reply channel of its own, then publishes the answers to
   the owner's inbox (``gateway-handoff:in:INSTANCE``);
4. the owner delivers them to the upstream, waits for its next step (bounded by the
   upstream's ``timeout``) and publishes it to the reply channel: the result, the next
   round of questions (the call parked again, still there), or an error. Progress and
   log notifications of the upstream call while the owner waits travel the same way;
5. the forwarder answers its caller with it. While it waits it looks at the owner's
   liveness key every third of ``liveness_ttl``: an owner that died is
   ``owner_gone`` within ``liveness_ttl`` plus that; an owner alive but silent past the
   upstream's ``timeout`` plus ``liveness_ttl`` is ``owner_silent``. Never a hang.

The owner listens to its inbox once it has parked a call (``hold``, before the relay
state naming it leaves) and from then on, resubscribing after a Store failure; while it
listens it keeps ``gateway-handoff:alive:INSTANCE`` set with a TTL of ``liveness_ttl``
seconds, refreshed every third of it, and deletes it when it stops.

Every message is sealed with the fleet's key ring (``MCPCORE_STATE_KEYS``: the one the
relay state is sealed with; AES-GCM, ``mcpcore.sealing``) and bound to the channel it
is sent on, so nothing else with access to the Store can deliver answers to a parked
call or forge its outcome, and a message replayed to another channel does not open.
Messages are bounded: ``MAX_MESSAGE_BYTES`` sealed (an upstream's result is at most
``upstreams.MAX_RESPONSE_BYTES``), ``MAX_NOTE_BYTES`` a notification (larger ones are not
passed on), ``MAX_NOTES`` notifications a round. The owner handles at most
``MAX_HANDLING`` rounds at once; the forwarder forwards at most ``MAX_FORWARDING``.

A Store that cannot be reached before the answers left is ``StoreUnavailable``
(retryable: nothing was delivered, the claim is given back); once they left, the
outcome is the owner's, and a failure to hear it is ``owner_silent``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import secrets
from collections.abc import Callable
from typing import Any, Final

import msgspec

from mcpcore import types
from mcpcore.errors import InvalidRequestState, McpError
from mcpcore.gateway.bridge import (
    MAX_RELAY_ROUNDS,
    Notify,
    ParkedCallError,
    Parking,
)
from mcpcore.gateway.errors import UpstreamError
from mcpcore.gateway.upstreams import MAX_RESPONSE_BYTES, Upstream
from mcpcore.inputs import InputRequest
from mcpcore.sealing import Sealer, StateBinding
from mcpcore.stores.base import Store, StoreError, StoreUnavailable
from mcpcore.timing import SYSTEM_CLOCK, Clock

log = logging.getLogger("mcpcore.gateway")

#: Seconds an owner's liveness key lives without being refreshed (a third of it apart).
LIVENESS_TTL: Final = 10.0
#: A sealed message, at most (an upstream's whole result, base64, with room to spare).
MAX_MESSAGE_BYTES: Final = math.ceil((MAX_RESPONSE_BYTES + 65536) * 4 / 3) + 4096
#: A progress or log notification passed on, at most (its JSON); larger ones are not.
MAX_NOTE_BYTES: Final = 65536
#: Notifications passed on in one round, at most.
MAX_NOTES: Final = 1000
#: Rounds an owner handles at once, and a forwarder forwards at once.
MAX_HANDLING: Final = 256
MAX_FORWARDING: Final = 256
#: How long a sealed message opens (seconds): its way through the Store, clock skew.
MESSAGE_TTL: Final = 300.0

_PREFIX: Final = "gateway-handoff:"
#: What every handoff message is sealed to (with the channel as its digest).
_SEALED_AS: Final = "gateway-handoff"


def inbox(instance: str) -> str:
    """The channel an owner hears its parked calls' answers on."""
    return f"{_PREFIX}in:{instance}"


def alive_key(instance: str) -> str:
    """The key that says an owner is up (TTL ``liveness_ttl``)."""
    return f"{_PREFIX}alive:{instance}"


def claim_key(park: str, round_no: int) -> str:
    """The key one forwarder of a park's round sets, first come."""
    return f"{_PREFIX}claim:{park}:{round_no}"


def reply_channel(reply_id: str) -> str:
    return f"{_PREFIX}reply:{reply_id}"


class _Replayed(McpError):
    """The owner's error, answered by the forwarder as the owner would have."""

    def __init__(self, error: dict[str, Any], status: int) -> None:
        super().__init__(str(error.get("message") or "Internal error"),
                         data=error.get("data"))
        code = error.get("code")
        self.code = code if isinstance(code, int) else -32603  # type: ignore[misc]
        self.http_status = status  # type: ignore[misc]


class Handoff:
    """Parked calls of this instance reachable from the others, and theirs from this
    one (module docstring). ``sealer``: the engine's (its key ring seals the messages).
    """

    def __init__(self, store: Store, parking: Parking, sealer: Callable[[], Sealer], *,
                 clock: Clock = SYSTEM_CLOCK, liveness_ttl: float = LIVENESS_TTL) -> None:
        if not liveness_ttl > 0:
            raise ValueError("liveness_ttl must be a positive number of seconds")
        self.store = store
        self.parking = parking
        self.clock = clock
        self.liveness_ttl = liveness_ttl
        self._sealer_of = sealer
        self._sealer: Sealer | None = None
        self._listener: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        #: Rounds this instance handles for forwarders, by reply id.
        self._handling: dict[str, asyncio.Task[None]] = {}
        self._forwarding = 0
        #: Forwarded retries by outcome: ``ok``, ``error`` (the owner's or the
        #: upstream's), ``store_unavailable``, or the ``ParkedCallError`` reason.
        self.outcomes: collections.Counter[str] = collections.Counter()
        self._background: set[asyncio.Task[Any]] = set()
        self._closed = False

    @property
    def instance(self) -> str:
        return self.parking.instance

    @property
    def handling(self) -> int:
        """Rounds this instance is answering for forwarders now."""
        return len(self._handling)

    # -- sealing ---------------------------------------------------------------------------
    def _seal_with(self) -> Sealer:
        ring = self._sealer_of().ring
        if self._sealer is None or self._sealer.ring is not ring:
            self._sealer = Sealer(ring, ttl_seconds=MESSAGE_TTL,
                                  max_blob_bytes=MAX_MESSAGE_BYTES)
        return self._sealer

    def _seal(self, channel: str, body: dict[str, Any]) -> bytes:
        return self._seal_with().seal(StateBinding(_SEALED_AS, _SEALED_AS, channel),
                                      round=0, data=body).encode("ascii")

    def _open(self, channel: str, raw: bytes) -> dict[str, Any]:
        """The message, or ``InvalidRequestState`` saying why it does not open."""
        if len(raw) > MAX_MESSAGE_BYTES:
            raise InvalidRequestState(f"{len(raw)} bytes (at most {MAX_MESSAGE_BYTES})")
        try:
            token = raw.decode("ascii")
        except UnicodeDecodeError:
            raise InvalidRequestState("not a sealed message") from None
        return self._seal_with().open(token, StateBinding(_SEALED_AS, _SEALED_AS,
                                                          channel)).data

    async def _send(self, channel: str, body: dict[str, Any]) -> None:
        await self.store.publish(channel, self._seal(channel, body))

    # -- the owner's side -------------------------------------------------------------------
    async def hold(self) -> None:
        """Listen to this instance's inbox (once; then for good) and keep its liveness
        key set: a retry for a call parked here may land on any instance.
        ``StoreUnavailable`` (or another ``StoreError``) if the Store cannot be reached."""
        if self._closed:
            raise StoreUnavailable("the gateway is shutting down")
        listener = self._listener
        if listener is None or listener.done():
            self._ready = asyncio.get_running_loop().create_future()
            self._listener = asyncio.ensure_future(self._listen(self._ready))
        assert self._ready is not None
        await asyncio.shield(self._ready)

    async def _listen(self, ready: asyncio.Future[None]) -> None:
        channel = inbox(self.instance)
        while not self._closed:
            try:
                async with self.store.subscribe(channel) as subscription:
                    await self._beat()
                    beating = asyncio.ensure_future(self._heartbeat())
                    try:
                        if not ready.done():
                            ready.set_result(None)
                        async for raw in subscription:
                            self._heard(channel, raw)
                    finally:
                        beating.cancel()
                return  # the store closed
            except StoreError as exc:
                if not ready.done():
                    ready.set_exception(exc)
                    return
                log.warning("parked calls: this instance's inbox was interrupted (%s); "
                            "listening again", exc)
                await self.clock.sleep(1.0)
            except Exception as exc:  # a bug: hold() must not wait for ever
                if not ready.done():
                    ready.set_exception(exc)
                raise

    async def _beat(self) -> None:
        await self.store.set(alive_key(self.instance), b"1", ttl=self.liveness_ttl)

    async def _heartbeat(self) -> None:
        while True:
            await self.clock.sleep(self.liveness_ttl / 3)
            try:
                await self._beat()
            except StoreError as exc:
                log.warning("parked calls: this instance's liveness could not be "
                            "refreshed: %s", exc)

    def _heard(self, channel: str, raw: bytes) -> None:
        try:
            message = self._open(channel, raw)
        except InvalidRequestState as exc:
            log.warning("parked calls: a message on this instance's inbox was dropped: %s",
                        exc)
            return
        kind, reply_id = message.get("kind"), message.get("id")
        if kind == "deliver" and isinstance(reply_id, str):
            if reply_id in self._handling:
                return  # the same round again (a replayed message): handled once
            if len(self._handling) >= MAX_HANDLING:
                busy = ParkedCallError(str(message.get("upstream")), "parked_busy",
                                       "the instance holding this call is answering too "
                                       "many rounds at once")
                self._spawn(self._reply(reply_id, _error(busy), busy.data["upstream"]))
                return
            task = asyncio.ensure_future(self._deliver(reply_id, message))
            self._handling[reply_id] = task
            task.add_done_callback(lambda _: self._handling.pop(reply_id, None))
        elif kind == "cancel" and isinstance(reply_id, str):
            handling = self._handling.get(reply_id)
            if handling is not None:
                handling.cancel()  # the park goes with it (Parking.resume)
        elif kind == "release":
            park = self.parking.parks.get(str(message.get("park")))
            why = message.get("why")
            if park is not None and not park.attached:
                self.parking.close(park, why if isinstance(why, str) else "released")

    async def _deliver(self, reply_id: str, message: dict[str, Any]) -> None:
        delivered: list[bool] = []
        try:
            outcome = await self._resume(reply_id, message, delivered)
        except McpError as exc:
            body = _error(exc)
        except Exception:
            log.exception("parked calls: answering a round for another instance failed")
            body = _error(McpError())
        else:
            if isinstance(outcome, dict):
                body = {"kind": "result", "result": outcome}
            else:
                body = {"kind": "asked",
                        "asked": [[r.method, r.params, r.key] for r in outcome]}
        # Refused before the answers reached the upstream: the forwarder gives its
        # claim back (a later retry hears from this instance why, e.g. ``answered``).
        body["delivered"] = bool(delivered)
        await self._reply(reply_id, body, str(message.get("upstream")))

    async def _reply(self, reply_id: str, body: dict[str, Any], upstream: str) -> None:
        channel = reply_channel(reply_id)
        try:
            try:
                sealed = self._seal(channel, body)
            except ValueError:  # over MAX_MESSAGE_BYTES
                sealed = self._seal(channel, {**_error(UpstreamError(
                    upstream, "too_large", "the call's outcome is too large to hand "
                    "across gateway instances")), "delivered": body.get("delivered")})
            await self.store.publish(channel, sealed)
        except StoreError as exc:
            log.warning("parked calls: the outcome of a round could not be sent back to "
                        "the instance that forwarded it: %s", exc)

    async def _resume(self, reply_id: str, message: dict[str, Any], delivered: list[bool]
                      ) -> dict[str, Any] | list[InputRequest]:
        """Deliver a forwarded round's answers to its park; the call's next step."""
        upstream, answers = message.get("upstream"), message.get("answers")
        principal, digest = message.get("principal"), message.get("digest")
        if not (isinstance(upstream, str) and isinstance(principal, str)
                and isinstance(digest, str) and isinstance(answers, dict)):
            raise InvalidRequestState("a malformed handoff message")
        relay = {"park": message.get("park"), "instance": self.instance,
                 "round": message.get("round")}
        notify = self._notifier(reply_id) if message.get("notify") else None
        park = self.parking.claim(relay, upstream, principal, digest, notify)
        if not set(park.asked) <= set(answers) or \
                not all(isinstance(answers[key], dict) for key in park.asked):
            self.parking.close(park, "a retry's answers did not match its questions")
            raise InvalidRequestState("the answers do not match the questions asked")
        self.parking.deliver(park, answers)
        delivered.append(True)
        outcome = await self.parking.resume(park)
        if isinstance(outcome, list):
            if park.round > MAX_RELAY_ROUNDS:
                self.parking.close(park, "it asked too many rounds of questions")
                raise UpstreamError(upstream, "input_rounds",
                                    f"tools/call: still asking after {MAX_RELAY_ROUNDS} "
                                    "rounds of questions")
            self.parking.suspend(park)  # UpstreamError past its bounds
        return outcome

    def _notifier(self, reply_id: str) -> Notify:
        sent = 0

        async def notify(note: types.Notification) -> None:
            nonlocal sent
            params = note.params if isinstance(note.params, dict) else {}
            body = {"kind": "note", "method": note.method, "params": params}
            if sent >= MAX_NOTES or len(msgspec.json.encode(body)) > MAX_NOTE_BYTES:
                return
            sent += 1
            with contextlib.suppress(StoreError):
                await self._send(reply_channel(reply_id), body)

        return notify

    # -- the forwarder's side -------------------------------------------------------------
    async def forward(self, upstream: Upstream, relay: dict[str, Any], principal: str,
                      digest: str, answers: dict[str, dict[str, Any]],
                      notify: Notify | None) -> dict[str, Any] | list[InputRequest]:
        """``relay``'s round answered through the instance holding its park (module
        docstring): the call's result or its next questions; ``ParkedCallError``,
        the owner's error, or ``StoreUnavailable`` before anything was delivered."""
        try:
            outcome = await self._forward(upstream, relay, principal, digest, answers,
                                          notify)
        except ParkedCallError as exc:
            self.outcomes[exc.reason] += 1
            raise
        except StoreError:
            self.outcomes["store_unavailable"] += 1
            raise
        except McpError:
            self.outcomes["error"] += 1
            raise
        self.outcomes["ok"] += 1
        return outcome

    async def _forward(self, upstream: Upstream, relay: dict[str, Any], principal: str,
                       digest: str, answers: dict[str, dict[str, Any]],
                       notify: Notify | None) -> dict[str, Any] | list[InputRequest]:
        owner, park, round_no = relay["instance"], relay["park"], relay.get("round")
        name = upstream.name
        if not isinstance(round_no, int):
            raise InvalidRequestState("a malformed relay state")
        if self._forwarding >= MAX_FORWARDING:
            raise UpstreamError(name, "too_many_waiting",
                                f"{self._forwarding} retries are already being handed to "
                                "other gateway instances; retry shortly")
        self._forwarding += 1
        try:
            if await self.store.get(alive_key(owner)) is None:
                raise _owner_gone(name)
            claim = claim_key(park, round_no)
            ttl = self.parking.park_timeout + self.liveness_ttl
            if not await self.store.set_if_absent(claim, b"claimed", ttl=ttl):
                done = await self.store.get(claim) == b"answered"
                raise ParkedCallError(
                    name, "answered" if done else "parked_busy",
                    "this round of questions was answered already" if done else
                    f"another request is answering this call to upstream {name!r} now")
            reply_id = secrets.token_urlsafe(16)
            body = {"kind": "deliver", "id": reply_id, "park": park, "round": round_no,
                    "upstream": name, "principal": principal, "digest": digest,
                    "answers": answers, "notify": notify is not None}
            try:
                sealed = self._seal(inbox(owner), body)
            except ValueError:  # over MAX_MESSAGE_BYTES
                await self.store.delete(claim)
                raise ParkedCallError(name, "parked_gone", "the answers are too large to "
                                      "hand to the gateway instance holding the call") \
                    from None
            reply = await self._exchange(upstream, owner, reply_id, sealed, claim, notify)
            with contextlib.suppress(StoreError):
                if reply.get("delivered") is False:
                    await self.store.delete(claim)
                else:
                    await self.store.set(claim, b"answered", ttl=ttl)
            return _outcome_of(reply)
        finally:
            self._forwarding -= 1

    async def _exchange(self, upstream: Upstream, owner: str, reply_id: str, sealed: bytes,
                        claim: str, notify: Notify | None) -> dict[str, Any]:
        name, channel = upstream.name, reply_channel(reply_id)
        async with self.store.subscribe(channel) as replies:
            try:
                await self.store.publish(inbox(owner), sealed)
            except StoreError:
                # Whether it reached the owner is unknown: the owner's own claim keeps a
                # second delivery out, so the round may be tried again.
                with contextlib.suppress(StoreError):
                    await self.store.delete(claim)
                raise
            reader = asyncio.ensure_future(self._outcome(channel, replies, notify))
            try:
                return await self._watch(name, owner, reply_id, reader,
                                         upstream.config.timeout + self.liveness_ttl)
            finally:
                reader.cancel()
                with contextlib.suppress(BaseException):
                    await reader

    async def _watch(self, name: str, owner: str, reply_id: str,
                     reader: asyncio.Task[dict[str, Any]], bound: float) -> dict[str, Any]:
        """The owner's reply, while its liveness key stays; bounded (module docstring)."""
        started = self.clock.monotonic()
        try:
            while True:
                tick = asyncio.ensure_future(self.clock.sleep(self.liveness_ttl / 3))
                try:
                    await asyncio.wait((reader, tick), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    tick.cancel()
                if reader.done():
                    break
                with contextlib.suppress(StoreError):  # a blip: the reader will tell
                    if await self.store.get(alive_key(owner)) is None:
                        raise _owner_gone(name)
                if self.clock.monotonic() - started > bound:
                    raise ParkedCallError(name, "owner_silent",
                                          f"the gateway instance holding the call to "
                                          f"upstream {name!r} did not answer within "
                                          f"{bound:g} s; whether the upstream got the "
                                          "answers is unknown")
        except asyncio.CancelledError:
            # This request ended (its caller hung up): the owner gives the call up too.
            self._spawn(self._send_quietly(inbox(owner), {"kind": "cancel", "id": reply_id}))
            raise
        try:
            return reader.result()
        except StoreError as exc:
            raise ParkedCallError(name, "owner_silent",
                                  f"the answer of the gateway instance holding the call "
                                  f"to upstream {name!r} was lost ({exc}); whether the "
                                  "upstream got the answers is unknown") from None

    async def _outcome(self, channel: str, replies: Any, notify: Notify | None
                       ) -> dict[str, Any]:
        async for raw in replies:
            try:
                message = self._open(channel, raw)
            except InvalidRequestState as exc:
                log.warning("parked calls: a reply was dropped: %s", exc)
                continue
            if message.get("kind") != "note":
                return message
            params = message.get("params")
            if notify is not None and isinstance(message.get("method"), str):
                with contextlib.suppress(Exception):
                    await notify(types.Notification(
                        method=message["method"],
                        params=params if isinstance(params, dict) else {}))
        raise StoreError("the reply channel closed")

    def release(self, relay: dict[str, Any], why: str) -> None:
        owner = relay.get("instance")
        if isinstance(owner, str):
            self._spawn(self._send_quietly(inbox(owner), {"kind": "release",
                                                          "park": relay.get("park"),
                                                          "why": why}))

    async def _send_quietly(self, channel: str, body: dict[str, Any]) -> None:
        try:
            await self._send(channel, body)
        except (StoreError, ValueError) as exc:
            log.warning("parked calls: a message to another instance was lost: %s", exc)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- lifetime ---------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop listening (the calls parked here are given up: their forwarders hear
        it, and the liveness key goes, so later retries get ``owner_gone`` at once)."""
        self._closed = True
        tasks = [*self._handling.values(), *self._background]
        if self._listener is not None:
            tasks.append(self._listener)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        if self._listener is not None:
            with contextlib.suppress(StoreError):
                await self.store.delete(alive_key(self.instance))


def _outcome_of(reply: dict[str, Any]) -> dict[str, Any] | list[InputRequest]:
    """The owner's reply as the relay takes it: the result, the next questions, or
    the owner's error raised here as it would have been there."""
    kind = reply.get("kind")
    if kind == "result" and isinstance(reply.get("result"), dict):
        result: dict[str, Any] = reply["result"]
        return result
    if kind == "asked" and isinstance(reply.get("asked"), list):
        return [InputRequest(r[0], r[1], r[2], bound=True) for r in reply["asked"]]
    error, status = reply.get("error"), reply.get("status")
    raise _Replayed(error if isinstance(error, dict) else {},
                    status if isinstance(status, int) else 200)


def _error(exc: McpError) -> dict[str, Any]:
    """An error reply (nothing delivered, unless the caller says otherwise)."""
    return {"kind": "error", "error": exc.to_error(), "status": exc.http_status,
            "delivered": False}


def _owner_gone(upstream: str) -> ParkedCallError:
    return ParkedCallError(upstream, "owner_gone",
                           f"the gateway instance holding the call to upstream "
                           f"{upstream!r} has stopped (it no longer says it is alive)")


__all__ = ["LIVENESS_TTL", "MAX_FORWARDING", "MAX_HANDLING", "MAX_MESSAGE_BYTES",
           "MAX_NOTES", "MAX_NOTE_BYTES", "MESSAGE_TTL", "Handoff", "alive_key",
           "claim_key", "inbox", "reply_channel"]
