"""One catalog for a fleet: an instance that sees an upstream's lists change tells the
others, through the shared Store's pub/sub, and they refresh at once.

Every gateway instance compiles its catalog from the upstreams itself (``refresh``),
so instances agree once each has refreshed. Without word from the others, an
instance would learn of a change from its own upstream's ``list_changed`` (an
upstream notifies the listeners it has, and each instance is one) or at its next
periodic refresh (``[gateway] refresh``, five minutes by default). With a Store,
the first instance to see a change (a ``list_changed``, a periodic refresh that finds
the catalog different, an upstream back from an outage, or ``mcpcore gateway
approve`` rewriting the lock file) publishes which lists changed, and the upstreams
it listed again, on ``CHANNEL``; every other instance refreshes the same way an
upstream's ``list_changed`` makes it (at most once per ``CHANGE_REFRESH_INTERVAL``,
listing only those upstreams again: every one if the word names none), and so
quarantines or releases a pinned tool within one refresh of the instance that saw it.

A refresh caused by another instance's word is not announced again, so one change
costs one refresh per instance. The message is only a prompt to refresh: what an
instance serves is what it lists itself, never what a message says (a message is
bounded, and one that does not parse is dropped). The Store down: the word is lost
(logged), each instance still catches up at its next refresh, and the listener
subscribes again with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping

import msgspec

from mcpcore.stores.base import Store, StoreError
from mcpcore.timing import SYSTEM_CLOCK, Clock

log = logging.getLogger("mcpcore.gateway")

#: The channel the instances of one gateway (by its configured name) talk on.
CHANNEL = "gateway:catalog:"
#: A message longer than this is not read.
MAX_MESSAGE = 1024
#: The lists a message may name (the engine's ``ListKind`` values), and ``pins``: the
#: lock file of pinned definitions was rewritten.
KINDS = frozenset({"tools", "resources", "prompts", "pins"})
#: The longest wait before subscribing again after the Store failed.
MAX_BACKOFF = 30.0


class _Word(msgspec.Struct, forbid_unknown_fields=False):
    sender: str
    lists: list[str]
    #: Each changed list's digest as the sender now serves it: an instance that serves
    #: the same already (it heard the upstream too) does not refresh again.
    digests: dict[str, str] = {}
    #: The upstreams the sender listed again (empty: it did not say, or all of them):
    #: an instance re-lists only those.
    upstreams: list[str] = []


_decode = msgspec.json.Decoder(_Word).decode
_encode = msgspec.json.Encoder().encode


class CatalogFanout:
    """The word between the instances of one gateway (module docstring).

    ``on_change(kinds, digests, upstreams)`` is called with the lists another instance
    saw change (``pins`` among them when the lock file changed), their digests there,
    and the upstreams whose listing changed them (empty: not said).
    ``instance`` names this process in its messages (a random id by default) so it
    skips its own.
    """

    def __init__(self, store: Store, gateway: str,
                 on_change: Callable[[frozenset[str], dict[str, str], frozenset[str]],
                                     None], *,
                 clock: Clock = SYSTEM_CLOCK, instance: str | None = None) -> None:
        self.store = store
        self.channel = CHANNEL + gateway
        self.on_change = on_change
        self.clock = clock
        self.instance = instance or os.urandom(8).hex()
        self._task: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        #: Messages heard from other instances, and announcements that were lost.
        self.heard = 0
        self.lost = 0

    async def start(self) -> None:
        """Start listening (in the background); returns once subscribed, or after one
        failed try (the listener keeps trying)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._listen())
            waiter = asyncio.ensure_future(self._subscribed.wait())
            await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()

    async def announce(self, kinds: Iterable[str], digests: Mapping[str, str] | None = None,
                       *, upstreams: Iterable[str] | None = None) -> None:
        """Tell the other instances that ``kinds`` changed here (``digests``: what each
        is now; ``upstreams``: the upstreams whose listing changed them, None: any).
        Never raises: a Store that cannot take it loses the word (each instance
        catches up at its next refresh)."""
        lists = sorted(set(kinds) & KINDS)
        if not lists:
            return
        mine = {k: v for k, v in (digests or {}).items() if k in lists}
        message = _encode(_Word(self.instance, lists, mine, sorted(upstreams or ())))
        if len(message) > MAX_MESSAGE:  # too many names: the others re-list every one
            message = _encode(_Word(self.instance, lists, mine))
        try:
            await self.store.publish(self.channel, message)
        except StoreError as exc:
            self.lost += 1
            log.warning("could not tell the other gateway instances that %s changed: %s",
                        ", ".join(lists), exc)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _listen(self) -> None:
        backoff = 0.5
        while True:
            try:
                async with self.store.subscribe(self.channel) as subscription:
                    self._subscribed.set()
                    backoff = 0.5
                    async for raw in subscription:
                        self._heard(raw)
            except asyncio.CancelledError:
                raise
            except StoreError as exc:
                log.warning("gateway instances' catalog word: the Store failed (%s); "
                            "listening again in %.1f s", exc, backoff)
            except Exception:  # a bug: log it, never stop listening
                log.exception("gateway instances' catalog word: listener failed")
            self._subscribed.set()  # start() waits for one try, not for success
            await self.clock.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    def _heard(self, raw: bytes) -> None:
        if len(raw) > MAX_MESSAGE:
            log.warning("gateway instances' catalog word: a message of %d bytes dropped",
                        len(raw))
            return
        try:
            word = _decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.warning("gateway instances' catalog word: a message that does not parse "
                        "dropped")
            return
        if word.sender == self.instance:
            return
        kinds = frozenset(word.lists) & KINDS
        if kinds:
            self.heard += 1
            self.on_change(kinds, {k: v for k, v in word.digests.items()
                                   if k in kinds and len(v) <= 128},
                           frozenset(word.upstreams))


__all__ = ["CHANNEL", "KINDS", "CatalogFanout"]
