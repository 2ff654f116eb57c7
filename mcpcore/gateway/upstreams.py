"""One connection per upstream server: a ``Client`` opened once and shared by every
downstream call, behind a timeout, a concurrency limit and a circuit breaker.

What lives here:

- ``Upstream``: the upstream's ``Client`` (Streamable HTTP, or a stdio process the
  gateway starts), its era from the config (the client's ``mode``: ``auto`` probes). A
  2025-era upstream is one session all downstream calls share, their requests
  multiplexed by id, and a 404 for its session id re-initializes it once: both are the
  client's (``mcpcore.client.legacy``). Every request goes through ``call``: the
  breaker first, then ``timeout`` seconds for the whole request (the wait for one of
  the ``max_concurrency`` slots included), and failures sorted into the gateway's two
  typed errors (``mcpcore.gateway.errors``);
- ``CircuitBreaker``: ``breaker_failures`` failures in a row open it; while open, calls
  get ``UpstreamError(reason="circuit_open")`` at once; after ``breaker_reset`` seconds
  one call goes through as a probe and its outcome closes or re-opens it; an upstream
  the supervisor reaches again (a stdio process restarted, an upstream down at start)
  closes it too. Only failures of the upstream count (down, timeout, garbage), never a
  JSON-RPC error it answered properly;
- supervision: an upstream that cannot be reached at start is retried in the
  background (backoff with jitter: ``mcpcore.client.legacy.Backoff``) and does not
  stop the gateway; a stdio upstream runs in its own process group (the client's
  ``StdioTransport``), its stderr logged under the upstream's name, restarted with
  backoff and jitter when it exits, and stopped (the whole group) on shutdown;
- ``Health``: up, down or open-circuit, with the last error, for ``/readyz``.

A stdio upstream gets a minimal environment (``BASE_ENV`` from ours, then the
config's ``env`` and ``env_from``, as ``config.resolve_secrets`` read them), never the
gateway's whole environment: the gateway's own secrets are not every tool's business.

Time is an input (``clock``): the breaker, the timeouts and the restart delays.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, Final, Literal, TypeVar

import httpx
import msgspec
from msgspec import UNSET

from mcpcore.client import Client
from mcpcore.client.errors import (
    ClientError,
    HttpError,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    ResponseTooLarge,
    TransportError,
)
from mcpcore.client.legacy import Backoff
from mcpcore.client.stdio import StdioTransport
from mcpcore.errors import ErrorCode
from mcpcore.gateway.config import UpstreamConfig
from mcpcore.gateway.credentials import (
    Caller,
    Credential,
    SessionValue,
    UpstreamAuth,
    sending,
)
from mcpcore.gateway.errors import (
    CredentialUnavailable,
    Reason,
    UpstreamError,
    UpstreamRejected,
    cut,
    relayable,
)
from mcpcore.gateway.watch import CallWatcher
from mcpcore.timing import SYSTEM_CLOCK, Clock

log = logging.getLogger("mcpcore.gateway")

T = TypeVar("T")
State = Literal["up", "down", "open-circuit"]

#: The largest response the gateway reads from an upstream (a JSON body, one SSE event,
#: one stdio line): past it, ``UpstreamError(reason="too_large")``.
MAX_RESPONSE_BYTES: Final = 16 * 1024 * 1024
#: What an HTTP upstream's responses in flight may hold together (the client's
#: ``held_bytes``): ``max_concurrency`` calls answered 16 MiB each would otherwise hold
#: up to 1 GiB; past it, the call that would go over gets ``too_large``.
MAX_HELD_BYTES: Final = 24 * 1024 * 1024
#: One walk of an upstream's list: at most this many items, pages and seconds.
MAX_LIST_ITEMS: Final = 10_000
MAX_LIST_PAGES: Final = 200
LIST_TIMEOUT: Final = 120.0
#: What one listing (its four lists, as JSON) may hold in all: items and pages alone
#: let a hostile upstream make the gateway keep 200 pages of 16 MiB (past it, the
#: listing fails with ``UpstreamError(reason="too_large")``). Twice the catalog's
#: ``MAX_UPSTREAM_BYTES`` of the items it serves, for those the filters leave out.
MAX_LISTING_BYTES: Final = 32 * 1024 * 1024
_ENCODER: Final = msgspec.json.Encoder()
#: What a stdio upstream inherits from the gateway's environment (then its ``env``).
BASE_ENV: Final = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "USER",
                   "LOGNAME", "SYSTEMROOT", "VIRTUAL_ENV")
#: The client info the gateway sends upstream.
GATEWAY_CLIENT: Final = {"name": "mcpcore-gateway", "version": "0.1.0"}
#: 2025 sessions kept per upstream for callers' own credentials (least recently used
#: closed first).
MAX_CALLER_SESSIONS: Final = 256
#: What the gateway declares to a 2025 upstream at ``initialize``: the questions it can
#: relay to its own callers mid-call (``mcpcore.gateway.bridge``). A 2026-07-28
#: upstream gets, per request, what the caller itself declared of these.
BRIDGED_CAPABILITIES: Final = ("elicitation", "sampling", "roots")
#: What the gateway follows of an upstream (``Client.listen``'s filter), and the
#: notifications that make it refresh its catalog.
LIST_CHANGES: Final = {"toolsListChanged": True, "promptsListChanged": True,
                       "resourcesListChanged": True}
LIST_CHANGED: Final = frozenset({"notifications/tools/list_changed",
                                 "notifications/prompts/list_changed",
                                 "notifications/resources/list_changed"})


class CircuitBreaker:
    """Closed, open, or half-open with one probe in flight (module docstring).

    >>> from tests.support.clock import ManualClock            # doctest: +SKIP
    >>> breaker = CircuitBreaker(2, 10.0, ManualClock())       # doctest: +SKIP
    """

    def __init__(self, failures: int, reset: float, clock: Clock = SYSTEM_CLOCK) -> None:
        if failures < 1 or reset < 0:
            raise ValueError("breaker_failures must be >= 1 and breaker_reset >= 0")
        self.threshold = failures
        self.reset = reset
        self.clock = clock
        self.state: Literal["closed", "open", "half-open"] = "closed"
        #: Failures in a row (while closed).
        self.failures = 0
        self._opened_at = 0.0

    def allow(self) -> bool:
        """Whether a call may go to the upstream now (a ``True`` while half-open makes
        the caller the probe: it must report ``succeeded``, ``failed`` or
        ``abandoned``)."""
        if self.state == "closed":
            return True
        if self.state == "open" and self.clock.monotonic() - self._opened_at >= self.reset:
            self.state = "half-open"
            return True
        return False

    def retry_in(self) -> float:
        """Seconds until the next probe (0 unless open)."""
        if self.state != "open":
            return 0.0
        return max(0.0, self._opened_at + self.reset - self.clock.monotonic())

    def succeeded(self) -> None:
        self.state = "closed"
        self.failures = 0

    def failed(self) -> None:
        if self.state == "half-open":
            self._open()
            return
        self.failures += 1
        if self.state == "closed" and self.failures >= self.threshold:
            self._open()

    def abandoned(self) -> None:
        """The call gave no verdict (its caller was cancelled): a probe's turn passes
        to the next call."""
        if self.state == "half-open":
            self.state = "open"  # opened_at unchanged: the next call probes at once

    def _open(self) -> None:
        self.state = "open"
        self._opened_at = self.clock.monotonic()


@dataclass(frozen=True, slots=True)
class Health:
    """One upstream's health, as ``/readyz`` shows it."""

    state: State
    last_error: str | None
    era: str | None
    restarts: int

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "lastError": self.last_error, "era": self.era,
                "restarts": self.restarts}


class Upstream:
    """One upstream server (module docstring). ``start`` once, ``call`` many times,
    ``aclose`` at the end.

    ``http_client``: an ``httpx.AsyncClient`` of your own for an HTTP upstream (tests
    pass one in front of an in-process app). ``on_restart``: called after a lost
    upstream is back (a stdio process restarted, or an upstream down at start
    reached): the catalog refreshes then. ``on_list_changed(upstream, method)``: called
    when the upstream says one of its lists changed (``method``: its notification; it
    is followed while connected: ``listen`` on a 2026-07-28 upstream, the session's
    notifications on a 2025 one). ``backoff``: the restart delays.
    """

    def __init__(self, config: UpstreamConfig, *, clock: Clock = SYSTEM_CLOCK,
                 http_client: httpx.AsyncClient | None = None,
                 on_restart: Callable[[Upstream], None] | None = None,
                 on_list_changed: Callable[[Upstream, str], None] | None = None,
                 backoff: Backoff | None = None,
                 child_env: Mapping[str, str] | None = None,
                 environ: Mapping[str, str] | None = None,
                 credential: Credential | None = None) -> None:
        if (config.url is None) == (config.command is None):
            raise ValueError(f"upstream {config.name!r}: give exactly one of url or command")
        self.config = config
        self.name = config.name
        self.clock = clock
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_reset, clock)
        self._http_client = http_client
        self.on_restart = on_restart
        self.on_list_changed = on_list_changed
        self._follower: asyncio.Task[None] | None = None
        self._backoff = backoff or Backoff(base=0.5, cap=30.0)
        environ = os.environ if environ is None else environ
        #: A stdio upstream's environment (module docstring): ``BASE_ENV`` of ours, then
        #: ``child_env``, its ``env`` and ``env_from`` as ``resolve_secrets`` read them.
        self.env: dict[str, str] | None = None
        if config.command is not None:
            self.env = {key: environ[key] for key in BASE_ENV if key in environ}
            self.env.update(child_env if child_env is not None else config.env)
        #: How the gateway authenticates to it (``credentials.py``); None: it does not.
        self.credential = credential
        if credential is not None and config.url is None:
            raise ValueError(f"upstream {config.name!r}: credentials need an HTTP upstream")
        self._client: Client | None = None
        #: A 2025 upstream's sessions per caller (``call``), by principal.
        self._sessions: dict[tuple[Any, ...], tuple[Client, SessionValue]] = {}
        self._supervisor: asyncio.Task[None] | None = None
        self._tried = asyncio.Event()  # the first attempt to open is over
        self._lost = asyncio.Event()
        self._closing = False
        self._was_up = False
        #: Why the last attempt or call failed (None: the last one worked).
        self.last_error: str | None = None
        #: Times the upstream came back after being lost (stdio restarts included).
        self.restarts = 0
        #: What watches each ``call`` (metrics, traces: ``mcpcore.gateway.watch``).
        self.watchers: list[CallWatcher] = []

    # -- lifetime -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start supervising; returns once the first attempt to open is over (opened,
        or failed: then it is retried in the background). Never raises for a down
        upstream."""
        if self._supervisor is None:
            self._supervisor = asyncio.ensure_future(self._supervise())
        await self._tried.wait()

    async def aclose(self) -> None:
        """Stop: close the client (a stdio upstream's whole process group is stopped)."""
        self._closing = True
        self._stop_following()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
        sessions, self._sessions = list(self._sessions.values()), {}
        for session, _ in sessions:
            with contextlib.suppress(Exception):
                await session.aclose()

    @property
    def client(self) -> Client | None:
        """The open client, or None while the upstream is down."""
        return self._client

    @property
    def pid(self) -> int | None:
        """A stdio upstream's process id (its process group's too), while it runs."""
        client = self._client
        transport = client.transport if client is not None else None
        return transport.pid if isinstance(transport, StdioTransport) else None

    def health(self) -> Health:
        client = self._client
        state: State
        if self.breaker.state == "open":
            state = "open-circuit"
        elif client is None or self.last_error is not None:
            state = "down"
        else:
            state = "up"
        return Health(state, self.last_error,
                      client.protocol_version if client is not None else None,
                      self.restarts)

    async def _supervise(self) -> None:
        attempt = 0
        while not self._closing:
            if self._client is None:
                client = self._new_client()
                try:
                    async with self.clock.timeout(self.config.timeout):
                        await client.open()
                except (ClientError, OSError, TimeoutError, CredentialUnavailable) as exc:
                    with contextlib.suppress(Exception):
                        await client.aclose()
                    self.last_error = f"cannot connect: {_describe(exc)}"
                    delay = self._backoff.delay(attempt)
                    log.warning("upstream %s: %s; retrying in %.1f s", self.name,
                                self.last_error, delay, extra={"upstream": self.name})
                    attempt += 1
                    self._tried.set()
                    await self.clock.sleep(delay)
                    continue
                came_back = self._was_up or attempt > 0  # lost, or down at start
                attempt = 0
                self._lost.clear()
                self._client = client
                self.last_error = None
                # It answered the handshake: proof of life, as a probe's success is. The
                # failures counted while it was down must not keep the circuit open (the
                # catalog's refresh on its return would be refused, and it left out).
                self.breaker.succeeded()
                self._watch(client)
                log.info("upstream %s: connected (%s)", self.name, client.protocol_version,
                         extra={"upstream": self.name})
                self._tried.set()
                if self._was_up:
                    self.restarts += 1
                self._was_up = True
                if came_back and self.on_restart is not None:
                    self.on_restart(self)
                self._follow(client)
            await self._lost.wait()
            self._stop_following()
            lost, self._client = self._client, None
            if lost is not None:
                with contextlib.suppress(Exception):
                    await lost.aclose()

    def _follow(self, client: Client) -> None:
        """Follow ``client``'s list changes while it is the upstream's (``on_list_changed``)."""
        self._stop_following()
        if self.on_list_changed is not None:
            self._follower = asyncio.ensure_future(self._follow_lists(client))

    def _stop_following(self) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.cancel()

    async def _follow_lists(self, client: Client) -> None:
        try:
            async with client.listen(LIST_CHANGES) as subscription:
                async for note in subscription:
                    if note.method in LIST_CHANGED and self._client is client \
                            and self.on_list_changed is not None:
                        self.on_list_changed(self, note.method)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # no listen, or it ended: the refresh interval remains
            log.info("upstream %s: its list changes are not followed (%s); the catalog "
                     "refreshes on its interval", self.name, _describe(exc),
                     extra={"upstream": self.name})

    def _watch(self, client: Client) -> None:
        """A stdio upstream whose process ends is lost: restart it."""
        transport = client.transport
        if not isinstance(transport, StdioTransport):
            return
        inner = transport.on_close

        def closed() -> None:
            inner()
            if not self._closing and self._client is client and not self._lost.is_set():
                self.last_error = transport.closed_reason or "the process ended"
                log.warning("upstream %s: %s; restarting", self.name, self.last_error,
                            extra={"upstream": self.name})
                self._lost.set()

        transport.on_close = closed

    def _new_client(self, session: SessionValue | None = None) -> Client:
        cfg = self.config
        options: dict[str, Any] = dict(
            mode=cfg.era if session is None else "legacy", client_info=GATEWAY_CLIENT,
            capabilities={name: {} for name in BRIDGED_CAPABILITIES},
            timeout=cfg.timeout, max_concurrency=cfg.max_concurrency,
            # A 2025 session's questions mid-call are answered as their callers answer
            # (bridge.py): each parked call holds one answer open, so one caller's
            # parked calls must not take every slot (the client's default is 8).
            max_answering=cfg.max_concurrency,
            max_items=MAX_LIST_ITEMS, max_pages=MAX_LIST_PAGES, list_timeout=LIST_TIMEOUT,
            probe_timeout=min(cfg.timeout, 10.0), era_cache=None, clock=self.clock)
        if cfg.url is not None:
            auth = (UpstreamAuth(self.credential, session)
                    if self.credential is not None else None)
            return Client.http(cfg.url, http_client=self._http_client, auth=auth,
                               max_body_bytes=MAX_RESPONSE_BYTES,
                               max_event_bytes=MAX_RESPONSE_BYTES,
                               held_bytes=MAX_HELD_BYTES, **options)
        assert cfg.command is not None
        transport = StdioTransport([cfg.command, *cfg.args], env=self.env,
                                   cwd=cfg.cwd, stderr="log",
                                   max_line_bytes=MAX_RESPONSE_BYTES, name=cfg.name)
        return Client(transport, **options)

    # -- requests -------------------------------------------------------------------------
    async def call(self, what: str, work: Callable[[Client], Awaitable[T]], *,
                   caller: Caller | None = None,
                   timeout: float | EllipsisType | None = ...) -> T:
        """``work(client)`` under the breaker and the timeout; the gateway's typed errors
        for every failure (module docstring). ``what`` names the request in messages.
        ``timeout``: instead of the upstream's (``None``: the caller bounds the work
        itself, as a call waiting for its caller's answers does: ``bridge.py``).

        ``caller``: who the call is made for. With a credential that acts as the
        caller (``token_exchange``, ``id_jag``), its token is obtained first
        (``CredentialUnavailable`` if it cannot be: nothing is sent, and the breaker
        does not count it), and the call carries it: on the shared client for a
        2026-07-28 upstream, on the caller's own session for a 2025 one (one session
        per caller, at most ``MAX_CALLER_SESSIONS``). Without ``caller`` the gateway
        acts as itself (the catalog's lists)."""
        watchers = self.watchers
        if not watchers:
            return await self._as(what, work, caller, timeout)
        method, _, target = what.partition(" ")
        seen = [watcher.begin(self.name, method, target) for watcher in watchers]
        error: BaseException | None = None
        try:
            return await self._as(what, work, caller, timeout)
        except BaseException as exc:
            error = exc
            raise
        finally:
            for watched in reversed(seen):  # last begun, first finished
                watched.finished(error)

    async def _as(self, what: str, work: Callable[[Client], Awaitable[T]],
                  caller: Caller | None, timeout: float | EllipsisType | None) -> T:
        """``call``, unwatched: with the caller's credential when it acts as the caller."""
        value = None
        credential = self.credential
        if caller is not None and credential is not None and credential.per_caller:
            value = await credential.for_caller(caller)
        limit = self.config.timeout if isinstance(timeout, EllipsisType) else timeout
        with sending(value):
            return await self._call(what, work, caller if value is not None else None,
                                    value, limit)

    async def _call(self, what: str, work: Callable[[Client], Awaitable[T]],
                    caller: Caller | None, value: str | None, limit: float | None) -> T:
        breaker = self.breaker
        if not breaker.allow():
            raise UpstreamError(self.name, "circuit_open",
                                f"{breaker.threshold} failures in a row ({self.last_error}); "
                                f"next try in {breaker.retry_in():.1f} s")
        verdict = False
        try:
            client = self._client
            if client is None:
                raise _failure(self, "down", self.last_error or "not connected yet")
            try:
                async with self.clock.timeout(limit):
                    if caller is not None and value is not None and client.session_id \
                            is not None:
                        client = await self._session(caller, value)
                    result = await work(client)
            except TimeoutError:
                raise _failure(self, "timeout", f"{what}: no answer within "
                                                f"{self.config.timeout:g} s") from None
            except RequestTimeout:
                raise _failure(self, "timeout", f"{what}: no answer within "
                                                f"{self.config.timeout:g} s") from None
            except ResponseTooLarge as exc:
                raise _failure(self, "too_large", f"{what}: {exc}") from None
            except HttpError as exc:
                if exc.code is not None and exc.status < 500 and relayable(exc.code):
                    verdict = True
                    breaker.succeeded()
                    raise UpstreamRejected(self.name, exc.code, exc.message, exc.data) from None
                raise _failure(self, "down" if exc.status >= 500 else "invalid_response",
                               f"{what}: {exc}") from None
            except RemoteProtocolError as exc:
                if exc.code is None:  # not MCP at all: garbage, or a list out of bounds
                    raise _failure(self, "invalid_response", f"{what}: {exc}") from None
                verdict = True
                breaker.succeeded()  # it answered: alive
                self.last_error = None
                if relayable(exc.code):
                    raise UpstreamRejected(self.name, exc.code, exc.message, exc.data) from None
                raise UpstreamError(self.name, "unsupported", f"{what}: {exc}") from None
            except TransportError as exc:
                raise _failure(self, "down", f"{what}: {exc}") from None
            except LocalProtocolError as exc:
                # It asked for something the gateway cannot give yet (input mid-call:
                # bridging comes in a later step), or answered out of bounds.
                verdict = True
                breaker.succeeded()
                raise UpstreamError(self.name, "unsupported", f"{what}: {exc}") from None
            verdict = True
            breaker.succeeded()
            self.last_error = None
            return result
        except UpstreamError as exc:
            if not verdict and exc.reason != "unsupported":
                verdict = True
                breaker.failed()
            raise
        finally:
            if not verdict:
                breaker.abandoned()

    async def _session(self, caller: Caller, value: str) -> Client:
        """The 2025 session of ``caller`` (opened with its credential on first use)."""
        p = caller.principal
        key = (p.issuer, p.tenant, p.subject, p.client_id, p.actors)
        found = self._sessions.pop(key, None)
        if found is not None:
            self._sessions[key] = found  # most recently used last
            found[1].value = value
            return found[0]
        holder = SessionValue(value)
        client = self._new_client(holder)
        try:
            await client.open()
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.shield(client.aclose())
            raise
        raced = self._sessions.get(key)
        if raced is not None:  # the caller's concurrent call opened one first: use it
            _close_later(client)
            return raced[0]
        self._sessions[key] = (client, holder)
        while len(self._sessions) > MAX_CALLER_SESSIONS:
            oldest = next(iter(self._sessions))
            _close_later(self._sessions.pop(oldest)[0])
        return client

    async def listing(self) -> Listing:
        """Every tool, resource, template and prompt the upstream offers (each list only
        if it advertises the capability), as JSON objects; raises the gateway's typed
        errors like ``call``."""

        async def walk(client: Client) -> Listing:
            # What it offers: known once the era is settled, except for a pinned
            # 2026-07-28 upstream, which has not been asked yet.
            server = client.server if client.server is not None else await client.discover()
            caps = server.capabilities

            def offers(feature: str) -> bool:
                return getattr(caps, feature, None) not in (None, UNSET)

            budget = MAX_LISTING_BYTES

            def kept(item: Any) -> dict[str, Any]:
                nonlocal budget
                budget -= len(_ENCODER.encode(item))
                if budget < 0:
                    raise _failure(self, "too_large", f"listing: its lists hold more than "
                                                      f"{MAX_LISTING_BYTES} bytes")
                return msgspec.to_builtins(item)  # type: ignore[no-any-return]

            async def every(feature: str, items: Callable[[], AsyncIterator[Any]]
                            ) -> list[dict[str, Any]]:
                if not offers(feature):
                    return []
                try:
                    return [kept(item) async for item in items()]
                except RemoteProtocolError as exc:
                    if exc.code == ErrorCode.METHOD_NOT_FOUND:  # offered, yet not there
                        return []
                    raise

            return Listing(await every("tools", client.iter_tools),
                           await every("resources", client.iter_resources),
                           await every("resources", client.iter_resource_templates),
                           await every("prompts", client.iter_prompts),
                           completions=offers("completions"))

        return await self.call("listing", walk)


@dataclass(frozen=True, slots=True)
class Listing:
    """What one upstream lists (JSON objects as the spec's types shape them)."""

    tools: list[dict[str, Any]]
    resources: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    prompts: list[dict[str, Any]]
    completions: bool = False


def _close_later(client: Client) -> None:
    """Close a session no longer kept (in the background: the caller goes on)."""
    task = asyncio.ensure_future(client.aclose())
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


def _failure(upstream: Upstream, reason: Reason, detail: str) -> UpstreamError:
    upstream.last_error = cut(detail, 500)
    return UpstreamError(upstream.name, reason, detail)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return cut(str(exc) or type(exc).__name__, 500)


__all__ = ["BASE_ENV", "BRIDGED_CAPABILITIES", "MAX_HELD_BYTES", "MAX_LISTING_BYTES",
           "MAX_RESPONSE_BYTES", "CircuitBreaker", "Health", "Listing", "Upstream"]
