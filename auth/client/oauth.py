"""The OAuth client as an ``httpx.Auth``: hand it to ``Client.http(url, auth=...)``.

::

    from mcpcore.auth import AuthorizationCodeGrant, HeadlessUserAgent, OAuth

    auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), dpop=True)
    async with Client.http("https://mcp.example.com/mcp", auth=auth) as client:
        await client.list_tools()

``OAuthSession`` is the sans-I/O part, one per MCP server URL: it adds the token (and a
fresh DPoP proof) to each request, and turns a 401 or a 403 into a *flow* (see
``auth/client/steps.py``) that discovers, registers, authorizes and stores a token. ``OAuth``
drives those flows over a guarded HTTP client (``auth/urls.py``: https only unless
loopback is allowed, no credentials in URLs, address checks at connect time, bounded
redirects and bodies) and retries the MCP request:

* **401** (no token, or a token the server refused): fetch PRM again (this is how a move
  to another authorization server is seen), pick the authorization server, fetch and
  validate its metadata, then refresh the token if there is a refresh token from that
  same server, else run the grant. Scopes: the challenge's ``scope``, else PRM
  ``scopes_supported``, else none (the spec's "Scope Selection Strategy"), joined with
  what was asked for before from the same server. At most two rounds per request; a
  second 401 right after a fresh token ends in ``OAuthClientError``.
* **403** ``insufficient_scope``: step-up for (previously requested | granted |
  challenged) scopes (SEP-2350), at most ``max_step_ups`` per request, and never when
  the challenged scopes were already granted (``StepUpFailed`` at once: that loop would
  never end).
* **401** with ``use_dpop_nonce`` from the MCP server: once more with a new proof that
  carries the server's ``DPoP-Nonce`` (RFC 9449 §9).

Tokens and secrets stay in memory (``MemoryCredentialStore``) unless a store is given,
and are never logged; concurrent requests share one flow (a lock), so ten parallel 401s
make one authorization.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from mcpcore.auth.challenges import Challenge, parse_challenges
from mcpcore.auth.client.credentials import CredentialStore, MemoryCredentialStore, TokenSet
from mcpcore.auth.client.discovery import (
    AuthServerMetadata,
    ProtectedResource,
    choose_issuer,
    discover_authorization_server,
    discover_protected_resource,
)
from mcpcore.auth.client.grants import Grant, GrantContext, origin_of
from mcpcore.auth.client.steps import AuthFlow, Fetch, OpenAuthorization
from mcpcore.auth.dpop import DPoPKey
from mcpcore.auth.errors import AuthorizationRejected, OAuthClientError, StepUpFailed
from mcpcore.auth.urls import NetworkPolicy, failure_reason, read_limited, safe_async_client

log = logging.getLogger("mcpcore.auth.client.oauth")
T = TypeVar("T")
_DROP_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def server_url_of(url: httpx.URL | str) -> str:
    """The MCP server URL a request goes to: the URL without query and fragment."""
    parsed = httpx.URL(str(url))
    return str(parsed.copy_with(query=None, fragment=None))


def _challenges(response: httpx.Response) -> list[Challenge]:
    return parse_challenges(response.headers.get_list("www-authenticate"))


def _oauth_challenge(response: httpx.Response) -> Challenge | None:
    """The ``Bearer`` or ``DPoP`` challenge of a response (the first one there is)."""
    return next((c for c in _challenges(response) if c.scheme in ("bearer", "dpop")), None)


def insufficient_scope(response: httpx.Response) -> Challenge | None:
    """The challenge of a 403 ``insufficient_scope`` response (RFC 6750 §3.1), if it is one."""
    if response.status_code != 403:
        return None
    for challenge in _challenges(response):
        if challenge.scheme in ("bearer", "dpop") and (
            challenge.get("error") == "insufficient_scope"
        ):
            return challenge
    return None


@dataclass
class OAuthSession:
    """OAuth state for one MCP server, and the flows that change it (no I/O here)."""

    server_url: str
    grant: Grant
    store: CredentialStore = field(default_factory=MemoryCredentialStore)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    dpop: DPoPKey | None = None
    clock: Callable[[], float] = time.time
    resource: ProtectedResource | None = None
    metadata: AuthServerMetadata | None = None
    token: TokenSet | None = None
    #: Scopes asked for so far from the current authorization server.
    requested: frozenset[str] = frozenset()
    nonces: dict[str, str] = field(default_factory=dict)

    # -- per request ------------------------------------------------------------------

    def apply(self, request: httpx.Request) -> TokenSet | None:
        """Put the current token (and a fresh DPoP proof) on ``request``; return it."""
        token = self.token
        request.headers.pop("dpop", None)
        if token is None:
            return None
        if token.is_dpop and self.dpop is not None:
            request.headers["authorization"] = f"DPoP {token.access_token}"
            request.headers["dpop"] = self.dpop.proof(
                request.method, str(request.url), access_token=token.access_token,
                nonce=self.nonces.get(origin_of(str(request.url))),
            )
        else:
            request.headers["authorization"] = f"Bearer {token.access_token}"
        return token

    def note_response(self, request: httpx.Request, response: httpx.Response) -> None:
        """Remember a ``DPoP-Nonce`` the MCP server sent (RFC 9449 §9)."""
        nonce = response.headers.get("dpop-nonce")
        if nonce and self.dpop is not None:
            self.nonces[origin_of(str(request.url))] = nonce

    def wants_nonce_retry(self, response: httpx.Response, sent: TokenSet | None) -> bool:
        if response.status_code != 401 or sent is None or not sent.is_dpop:
            return False
        if not response.headers.get("dpop-nonce"):
            return False
        return any(c.get("error") == "use_dpop_nonce" for c in _challenges(response))

    # -- flows --------------------------------------------------------------------------

    def _context(self, scopes: frozenset[str]) -> GrantContext:
        assert self.resource is not None and self.metadata is not None
        return GrantContext(
            server_url=self.server_url, resource=self.resource.resource, metadata=self.metadata,
            scopes=scopes, store=self.store, network=self.network, dpop=self.dpop,
            nonces=self.nonces, clock=self.clock,
        )

    def _adopt(self, token: TokenSet, requested: frozenset[str]) -> None:
        self.token, self.requested = token, requested
        self.store.save_token(token)
        log.info("token for %s from %s: %r", self.server_url, token.issuer, token)

    def discover(self, resource_metadata: str | None = None) -> AuthFlow[None]:
        """PRM, then the chosen authorization server's metadata. A change of server drops
        the token and the scopes asked for (they belong to the old one)."""
        prm = yield from discover_protected_resource(self.server_url, resource_metadata,
                                                     self.network)
        current = self.metadata.issuer if self.metadata is not None else None
        issuer = choose_issuer(prm, current)
        if self.metadata is not None and self.metadata.issuer == issuer:
            metadata = self.metadata
        else:
            metadata = yield from discover_authorization_server(issuer, self.network)
        if self.token is not None and (
            self.token.issuer != issuer or self.token.resource != prm.resource
        ):
            log.info("%s moved to %s: not using the old token", self.server_url, issuer)
            self.token, self.requested = None, frozenset()
        self.resource, self.metadata = prm, metadata

    def before_request(self) -> AuthFlow[None]:
        """Refresh (or drop) an expired token before it is sent."""
        token = self.token
        if token is None or not token.expired(self.clock()):
            return
        fresh = None
        if token.refresh_token is not None and self.metadata is not None:
            fresh = yield from self.grant.refresh(self._context(token.scopes), token)
        if fresh is None:
            self.token = None
            self.store.forget_token(token.issuer, token.resource)
        else:
            self._adopt(fresh, self.requested)

    def on_unauthorized(
        self, response: httpx.Response, sent: TokenSet | None, *, force_new: bool = False
    ) -> AuthFlow[None]:
        """A 401: discover again, then refresh or run the grant (module docstring)."""
        challenge = _oauth_challenge(response)
        yield from self.discover(challenge.get("resource_metadata") if challenge else None)
        assert self.resource is not None and self.metadata is not None
        challenged = challenge.scopes if challenge is not None else frozenset()
        scopes = challenged or frozenset(self.resource.scopes_supported or ())
        requested = scopes | self.requested
        if sent is None and self.token is None:  # a token kept from an earlier run?
            kept = self.store.token(self.metadata.issuer, self.resource.resource)
            if kept is not None and not kept.expired(self.clock()) and (scopes <= kept.scopes):
                self.token = kept
                return
        token = self.token
        if token is not None and token.refresh_token is not None and not force_new:
            fresh = yield from self.grant.refresh(self._context(token.scopes | requested), token)
            if fresh is not None:
                self._adopt(fresh, requested)
                return
        self._adopt((yield from self.grant.obtain(self._context(requested))), requested)

    def on_insufficient_scope(self, challenge: Challenge, sent: TokenSet | None) -> AuthFlow[None]:
        """A 403 ``insufficient_scope``: step up for the union, or give up at once."""
        needed = challenge.scopes
        granted = sent.scopes if sent is not None else frozenset()
        if not needed:
            raise StepUpFailed("403 insufficient_scope without a scope to ask for")
        if needed <= granted:
            raise StepUpFailed(
                f"{self.server_url} refuses although {' '.join(sorted(needed))} was granted: "
                "more authorization cannot help"
            )
        if self.resource is None or self.metadata is None:
            yield from self.discover(challenge.get("resource_metadata"))
        requested = self.requested | granted | needed
        self._adopt((yield from self.grant.obtain(self._context(requested))), requested)

    def login(self, scopes: frozenset[str] | None = None) -> AuthFlow[TokenSet]:
        """Authorize ahead of the first request (PRM from the well-known URLs)."""
        yield from self.discover()
        assert self.resource is not None
        wanted = scopes if scopes is not None else frozenset(self.resource.scopes_supported or ())
        token = yield from self.grant.obtain(self._context(wanted))
        self._adopt(token, wanted)
        return token


class OAuth(httpx.Auth):
    """An ``httpx.Auth`` that runs the MCP authorization flows (see the module docstring).

    ``grant`` is ``AuthorizationCodeGrant``, ``ClientCredentialsGrant`` or
    ``JwtBearerGrant`` (or your own); ``dpop=True`` makes a fresh ES256 key (or pass a
    ``DPoPKey``); ``network`` is where OAuth fetches may go (``allow_loopback=True`` for
    local development); ``http_client`` replaces the guarded client for OAuth fetches
    (tests, or your own transport: it then carries the URL-safety duty).
    """

    requires_request_body = False
    requires_response_body = False

    def __init__(
        self,
        grant: Grant,
        *,
        store: CredentialStore | None = None,
        dpop: DPoPKey | bool | None = None,
        network: NetworkPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
        max_body_bytes: int = 256 * 1024,
        max_step_ups: int = 2,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.grant = grant
        self.store = store if store is not None else MemoryCredentialStore()
        self.dpop = DPoPKey.generate() if dpop is True else (dpop or None)
        self.network = network or NetworkPolicy()
        self._http_client = http_client
        self._timeout = timeout
        self._max_body = max_body_bytes
        self.max_step_ups = max_step_ups
        self._clock = clock
        self._sessions: dict[str, OAuthSession] = {}
        self._lock = asyncio.Lock()

    def session(self, url: httpx.URL | str) -> OAuthSession:
        """The state kept for the MCP server at ``url``."""
        key = server_url_of(url)
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = OAuthSession(
                key, self.grant, store=self.store, network=self.network, dpop=self.dpop,
                clock=self._clock,
            )
        return session

    async def authorize(self, server_url: str, scopes: frozenset[str] | None = None) -> TokenSet:
        """Get a token for ``server_url`` now, before the first MCP request."""
        async with self._lock:
            return await self.run(self.session(server_url).login(scopes))

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("mcpcore.auth.OAuth needs an httpx.AsyncClient")
        yield request  # pragma: no cover

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        session = self.session(request.url)
        async with self._lock:
            await self.run(session.before_request())
        sent = session.apply(request)
        response = yield request
        unauthorized = step_ups = nonce_retries = 0
        obtained: TokenSet | None = None
        while True:
            session.note_response(request, response)
            if nonce_retries == 0 and session.wants_nonce_retry(response, sent):
                nonce_retries += 1
            elif response.status_code == 401:
                if unauthorized >= 2:
                    break
                unauthorized += 1
                async with self._lock:
                    if session.token is sent:  # nobody replaced it while we waited
                        await self.run(session.on_unauthorized(
                            response, sent, force_new=sent is not None and sent is obtained))
                obtained = session.token
            elif (challenge := insufficient_scope(response)) is not None:
                if step_ups >= self.max_step_ups:
                    raise StepUpFailed(
                        f"{session.server_url}: still insufficient_scope after "
                        f"{step_ups} step-up(s): giving up")
                step_ups += 1
                async with self._lock:
                    if session.token is sent:
                        await self.run(session.on_insufficient_scope(challenge, sent))
                obtained = session.token
            else:
                return
            sent = session.apply(request)
            response = yield request
        raise OAuthClientError(
            f"{session.server_url} keeps answering 401 to a freshly issued token")

    # -- driving flows ------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http_client is not None:
            yield self._http_client
            return
        async with safe_async_client(self.network, timeout=self._timeout) as client:
            yield client

    async def _fetch(self, http: httpx.AsyncClient, step: Fetch) -> httpx.Response:
        try:
            async with asyncio.timeout(self._timeout):
                response = await http.send(step.request, stream=True, follow_redirects=False)
                try:
                    body = await read_limited(response, self._max_body)
                finally:
                    await response.aclose()
        except (httpx.HTTPError, TimeoutError, OSError, ValueError) as exc:
            raise OAuthClientError(
                f"{step.what}: {step.request.url} failed ({failure_reason(exc)})") from None
        headers = [(k, v) for k, v in response.headers.multi_items() if k not in _DROP_HEADERS]
        return httpx.Response(response.status_code, headers=headers, content=body,
                              request=step.request)

    async def _authorize(self, http: httpx.AsyncClient, step: OpenAuthorization) -> str:
        try:
            return await step.user_agent.authorize(step.url, http=http)
        except httpx.HTTPError as exc:  # the headless agent's GETs
            raise AuthorizationRejected(
                f"the authorization request to {origin_of(step.url)} failed "
                f"({failure_reason(exc)})") from None

    async def run(self, flow: AuthFlow[T]) -> T:
        """Drive one flow to its end: fetches over HTTP, authorizations via the agent."""
        async with self._http() as http:
            reply: Any = None
            try:
                while True:
                    try:
                        step = flow.send(reply)
                    except StopIteration as stop:
                        return stop.value  # type: ignore[no-any-return]
                    if isinstance(step, OpenAuthorization):
                        reply = await self._authorize(http, step)
                    else:
                        reply = await self._fetch(http, step)
            finally:
                flow.close()


__all__ = ["OAuth", "OAuthSession", "insufficient_scope", "server_url_of"]
