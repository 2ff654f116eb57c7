"""Credentials for upstream APIs, and the guard that keeps the inbound token in.

The rule (the authorization spec's "Token Handling" and its security considerations,
"Access Token Privilege Restriction"; no token passthrough): the token a client sent to
this MCP server is for this server only. It never goes to an upstream API, not as a
fallback, not "just for one legacy API". A call upstream carries a token of its own,
obtained by

* **token exchange** (RFC 8693) at an STS that trusts our AS: the inbound token goes to
  the STS as ``subject_token`` (the one party allowed to see it), authenticated as this
  server (``private_key_jwt`` or a client secret), for a named upstream audience and
  minimal scopes; or
* **client credentials** (RFC 6749 §4.4) when the server acts as itself.

``DownstreamCredentials`` caches issued tokens under (principal issuer, tenant, subject,
client, actors, audience, sorted scopes): an entry is never shared across principals.
Any failure raises ``DownstreamError``: the tool fails closed. Under a policy, a tool may
only ask for the downstream audiences its rule set declares (``DownstreamNotAllowed``
otherwise), and the exchange carries the request's trace context.

``PassthroughGuard`` is the belt to those braces: every request sent through
``OutboundClient`` (or any httpx client built on ``GuardedTransport``) is refused with
``PassthroughBlocked`` if its URL, headers or body contain the inbound token (raw or
percent-encoded) or any JWT whose ``aud`` is this server's resource.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, quote_plus, unquote_plus

import httpx
import jwt
import msgspec

from mcpcore.auth.client_auth import (
    ClientAuth,
    ClientSecretBasic,
    ClientSecretPost,
    PrivateKeyJwt,
)
from mcpcore.auth.config import canonical_uri
from mcpcore.auth.errors import (
    DownstreamError,
    DownstreamNotAllowed,
    PassthroughBlocked,
    UnsafeUrl,
)
from mcpcore.auth.redaction import fingerprint
from mcpcore.auth.server.inbound import InboundToken, current_inbound_token
from mcpcore.auth.server.tokens import check_audience
from mcpcore.auth.terms import ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE
from mcpcore.auth.times import expires_in_seconds
from mcpcore.auth.urls import (
    NetworkPolicy,
    check_url,
    failure_reason,
    read_limited,
    safe_async_client,
    verifying_context,
)
from mcpcore.observe import propagate
from mcpcore.policy.gate import permits_downstream
from mcpcore.principal import Principal

log = logging.getLogger("mcpcore.auth.server.downstream")

_ERROR_CODE = re.compile(r"[a-z_]{1,64}")
#: Seconds a downstream token is taken to live when the response says nothing.
_DEFAULT_LIFETIME = 300.0
_JWT_LIKE = re.compile(rb"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


# -- issued tokens --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DownstreamToken:
    """A token for one upstream audience. Its ``repr`` never shows the token."""

    access_token: str = field(repr=False)
    audience: str
    scopes: frozenset[str]
    expires_at: float
    token_type: str = "Bearer"

    def __repr__(self) -> str:
        return (
            f"DownstreamToken({fingerprint(self.access_token)}, audience={self.audience!r}, "
            f"scopes={sorted(self.scopes)!r}, expires_at={self.expires_at})"
        )

    @property
    def authorization(self) -> str:
        """The ``Authorization`` value: ``DPoP <token>`` for a DPoP-bound token (RFC 9449
        §7.1, sent with a proof), else ``Bearer <token>``."""
        scheme = "DPoP" if self.token_type.lower() == "dpop" else "Bearer"
        return f"{scheme} {self.access_token}"


class TokenEndpoint:
    """POSTs a grant to one token endpoint under the SSRF rules and parses the answer."""

    def __init__(
        self,
        token_endpoint: str,
        *,
        issuer: str,
        client_auth: ClientAuth,
        network: NetworkPolicy | None = None,
        timeout: float = 10.0,
        max_bytes: int = 64 * 1024,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._network = network or NetworkPolicy()
        self.token_endpoint = check_url(token_endpoint, self._network)
        self.issuer = issuer
        self.client_auth = client_auth
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._client = client
        self._own_client = client is None
        self._clock = clock

    async def request(
        self, form: dict[str, str], *, audience: str, scopes: frozenset[str]
    ) -> DownstreamToken:
        headers = {"accept": "application/json"}
        propagate(headers)  # continue the request's trace, when tracing is on
        self.client_auth.apply(form, headers, audience=self.issuer)
        if self._client is None:
            self._client = safe_async_client(self._network, timeout=self._timeout)
        grant = form.get("grant_type", "?")
        try:
            async with asyncio.timeout(self._timeout):
                async with self._client.stream(
                    "POST", self.token_endpoint, data=form, headers=headers
                ) as response:
                    status = response.status_code
                    body = await read_limited(response, self._max_bytes)
        except (httpx.HTTPError, TimeoutError, OSError, UnsafeUrl, ValueError) as exc:
            raise DownstreamError(
                f"{grant}: token endpoint unreachable ({failure_reason(exc)})") from None
        try:
            data = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):
            data = None
        if status != 200:
            code = data.get("error") if isinstance(data, dict) else None
            code = code if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else "unknown"
            raise DownstreamError(f"{grant}: token endpoint answered {status} ({code})",
                                  error=None if code == "unknown" else code)
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            raise DownstreamError(f"{grant}: token response has no access_token")
        if str(data.get("token_type", "")).lower() != "bearer":
            raise DownstreamError(f"{grant}: token response is not a bearer token")
        issued = data.get("issued_token_type")
        if issued is not None and issued != ACCESS_TOKEN_TYPE:
            raise DownstreamError(f"{grant}: issued token is not an access token")
        try:
            lifetime = expires_in_seconds(data.get("expires_in"))
        except ValueError as exc:
            raise DownstreamError(f"{grant}: token response: {exc}") from None
        granted = data.get("scope")
        return DownstreamToken(
            access_token=data["access_token"],
            audience=audience,
            scopes=frozenset(granted.split()) if isinstance(granted, str) else scopes,
            expires_at=self._clock() + (_DEFAULT_LIFETIME if lifetime is None else lifetime),
        )

    async def aclose(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None


class TokenExchange(TokenEndpoint):
    """RFC 8693 token exchange: the inbound token, as ``subject_token``, to the STS only."""

    async def exchange(
        self,
        subject_token: InboundToken,
        *,
        audience: str,
        scopes: Iterable[str] = (),
        actor_token: str | None = None,
    ) -> DownstreamToken:
        scope_set = frozenset(scopes)
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": subject_token.reveal(),
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "requested_token_type": ACCESS_TOKEN_TYPE,
            "resource": audience,
            "audience": audience,
        }
        if scope_set:
            form["scope"] = " ".join(sorted(scope_set))
        if actor_token is not None:
            form["actor_token"] = actor_token
            form["actor_token_type"] = ACCESS_TOKEN_TYPE
        token = await self.request(form, audience=audience, scopes=scope_set)
        if secrets.compare_digest(token.access_token, subject_token.reveal()):
            # An STS that hands the subject token back would turn us into a passthrough.
            raise DownstreamError("token exchange returned the inbound token")
        return token


class ClientCredentials(TokenEndpoint):
    """RFC 6749 §4.4: a token for this server acting as itself."""

    async def fetch(self, *, audience: str, scopes: Iterable[str] = ()) -> DownstreamToken:
        scope_set = frozenset(scopes)
        form = {"grant_type": "client_credentials", "resource": audience}
        if scope_set:
            form["scope"] = " ".join(sorted(scope_set))
        return await self.request(form, audience=audience, scopes=scope_set)


# -- the per-principal cache ------------------------------------------------------------


class SubjectExchange(Protocol):
    """What ``DownstreamCredentials`` exchanges a principal's inbound token with:
    ``TokenExchange`` (RFC 8693 at an STS), or another grant that turns the caller's
    token into one for ``audience`` (the gateway's ID-JAG credential, for example)."""

    async def exchange(self, subject_token: InboundToken, *, audience: str,
                       scopes: Iterable[str] = ()) -> DownstreamToken: ...

    async def aclose(self) -> None: ...


class ServiceTokens(Protocol):
    """What ``DownstreamCredentials`` gets a token for this server acting as itself
    from: ``ClientCredentials``, or another client-credentials grant (the gateway's
    DPoP-bound one, for example)."""

    async def fetch(self, *, audience: str, scopes: Iterable[str] = ()) -> DownstreamToken: ...

    async def aclose(self) -> None: ...


CacheKey = tuple[str, str, str, str, tuple[str, ...], str, tuple[str, ...]]


class SharedTokens(Protocol):
    """A second level behind ``DownstreamCredentials``'s own cache, shared by a fleet
    (the gateway's sealed Redis cache, ``mcpcore.gateway.token_cache``). Neither method
    raises: a second level that cannot answer is a miss, one that cannot store is
    skipped, and the token is exchanged as without it."""

    async def get(self, key: CacheKey) -> DownstreamToken | None: ...

    async def put(self, key: CacheKey, token: DownstreamToken) -> None: ...


class DownstreamCredentials:
    """Downstream tokens per (principal, audience, scopes), fail-closed.

    >>> creds = DownstreamCredentials(exchange=TokenExchange(...))     # doctest: +SKIP
    >>> token = await creds.for_principal(principal, audience="https://api.example",
    ...                                   scopes={"read"})               # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        exchange: SubjectExchange | None = None,
        client_credentials: ServiceTokens | None = None,
        refresh_margin: float = 30.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.time,
        shared: SharedTokens | None = None,
    ) -> None:
        self.exchange = exchange
        self.client_credentials = client_credentials
        #: The fleet's second level for ``for_principal`` (None: this process only).
        self.shared = shared
        self._margin = refresh_margin
        self._max = max_entries
        self._clock = clock
        self._cache: OrderedDict[CacheKey, DownstreamToken] = OrderedDict()
        #: Grants requested from token endpoints (tests, metrics).
        self.grants = 0

    @staticmethod
    def cache_key(principal: Principal, audience: str, scopes: Iterable[str]) -> CacheKey:
        return (
            principal.issuer or "",
            principal.tenant or "",
            principal.subject,
            principal.client_id or "",
            principal.actors,
            audience,
            tuple(sorted(set(scopes))),
        )

    def _cached(self, key: CacheKey) -> DownstreamToken | None:
        token = self._cache.get(key)
        if token is not None and token.expires_at - self._margin > self._clock():
            self._cache.move_to_end(key)
            return token
        self._cache.pop(key, None)
        return None

    def _store(self, key: CacheKey, token: DownstreamToken) -> None:
        self._cache[key] = token
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)

    async def for_principal(
        self,
        principal: Principal,
        *,
        audience: str,
        scopes: Iterable[str] = (),
        inbound: InboundToken | None = None,
    ) -> DownstreamToken:
        """A token for ``audience`` on behalf of ``principal`` (token exchange).

        Inside a ``tools/call`` gated by a policy, only the audiences and scopes the rule
        set declares for that tool: anything else raises ``DownstreamNotAllowed`` before
        the cache or the token service is consulted (and the refusal is audited).
        """
        scope_set = frozenset(scopes)
        _check_allowed(audience, scope_set)
        key = self.cache_key(principal, audience, scope_set)
        cached = self._cached(key)
        if cached is not None:
            return cached
        if self.shared is not None:
            shared = await self.shared.get(key)
            if shared is not None and shared.expires_at - self._margin > self._clock():
                self._store(key, shared)
                return shared
        if self.exchange is None:
            raise DownstreamError("no token exchange configured")
        subject = inbound or current_inbound_token()
        if subject is None:
            raise DownstreamError("no inbound token in this context to exchange")
        self.grants += 1
        try:
            token = await self.exchange.exchange(subject, audience=audience, scopes=scope_set)
        except DownstreamError as exc:
            log.warning("token exchange for %s to %s failed: %s", principal.key, audience, exc)
            raise
        log.info("token exchange for %s to %s: %r", principal.key, audience, token)
        self._store(key, token)
        if self.shared is not None:
            await self.shared.put(key, token)
        return token

    async def for_service(self, *, audience: str, scopes: Iterable[str] = ()) -> DownstreamToken:
        """A token for ``audience`` as this server itself (client credentials); gated
        like ``for_principal``."""
        scope_set = frozenset(scopes)
        _check_allowed(audience, scope_set)
        key: CacheKey = ("", "", "<service>", "", (), audience, tuple(sorted(scope_set)))
        cached = self._cached(key)
        if cached is not None:
            return cached
        if self.client_credentials is None:
            raise DownstreamError("no client credentials configured")
        self.grants += 1
        token = await self.client_credentials.fetch(audience=audience, scopes=scope_set)
        self._store(key, token)
        return token

    async def aclose(self) -> None:
        for endpoint in (self.exchange, self.client_credentials):
            if endpoint is not None:
                await endpoint.aclose()


def _check_allowed(audience: str, scopes: frozenset[str]) -> None:
    if not permits_downstream(audience, scopes):
        raise DownstreamNotAllowed(
            f"this tool may not obtain a token for {audience} {sorted(scopes)}")


# -- the passthrough guard ------------------------------------------------------------


class PassthroughGuard:
    """Refuses outbound requests that carry a token meant for this server.

    >>> guard = PassthroughGuard("https://mcp.example.com/mcp")
    >>> guard.check_parts(url=b"https://api.example/x", headers=[], body=b"")
    """

    def __init__(self, resource: str, *, forbidden: Iterable[InboundToken] = ()) -> None:
        self.resource = canonical_uri(resource)
        self._forbidden = list(forbidden)

    def forbid(self, token: InboundToken) -> None:
        """Also refuse ``token`` outside the request context it arrived in."""
        self._forbidden.append(token)

    def _tokens(self) -> list[str]:
        tokens = [t.reveal() for t in self._forbidden]
        current = current_inbound_token()
        if current is not None:
            tokens.append(current.reveal())
        return tokens

    def check_parts(
        self, *, url: bytes, headers: Iterable[tuple[bytes, bytes]], body: bytes
    ) -> None:
        haystacks = [url, unquote_plus(url.decode("latin-1")).encode("latin-1"), body]
        haystacks += [value for _, value in headers]
        if body:
            haystacks.append(unquote_plus(body.decode("latin-1")).encode("latin-1"))
        for token in self._tokens():
            needles = {token.encode(), quote(token, safe="").encode(), quote_plus(token).encode()}
            if any(needle in hay for needle in needles for hay in haystacks):
                log.error("outbound request blocked: it carries the inbound token")
                raise PassthroughBlocked("outbound request carries the inbound token")
        for hay in haystacks:
            for match in _JWT_LIKE.finditer(hay):
                if self._aud_is_ours(match.group().decode("ascii")):
                    log.error("outbound request blocked: a token issued for this server")
                    raise PassthroughBlocked("outbound request carries a token for this server")

    def _aud_is_ours(self, candidate: str) -> bool:
        try:
            claims = jwt.decode(candidate, options={"verify_signature": False})
        except jwt.InvalidTokenError:
            return False
        return check_audience(claims.get("aud"), self.resource)

    def check(self, request: httpx.Request, body: bytes) -> None:
        self.check_parts(url=str(request.url).encode(), headers=request.headers.raw, body=body)


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that runs the passthrough guard on every request it sends."""

    def __init__(self, guard: PassthroughGuard, inner: httpx.AsyncBaseTransport | None = None):
        self.guard = guard
        self.inner = inner or httpx.AsyncHTTPTransport(
            verify=verifying_context(trust_env=False), trust_env=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        self.guard.check(request, body)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class OutboundClient:
    """The way tools call upstream APIs: a fresh downstream token, behind the guard.

    >>> outbound = OutboundClient(guard, credentials)                     # doctest: +SKIP
    >>> await outbound.request("GET", "https://api.example/items", principal=principal,
    ...                        audience="https://api.example", scopes={"items:read"})
    """

    def __init__(
        self,
        guard: PassthroughGuard,
        credentials: DownstreamCredentials,
        *,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.guard = guard
        self.credentials = credentials
        self.http = httpx.AsyncClient(
            transport=GuardedTransport(guard, transport),
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        principal: Principal,
        audience: str,
        scopes: Iterable[str] = (),
        as_service: bool = False,
        headers: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        if as_service:
            token = await self.credentials.for_service(audience=audience, scopes=scopes)
        else:
            token = await self.credentials.for_principal(
                principal, audience=audience, scopes=scopes
            )
        merged = {**(headers or {}), "authorization": token.authorization}
        return await self.http.request(method, url, headers=merged, **kwargs)

    async def aclose(self) -> None:
        await self.http.aclose()
        await self.credentials.aclose()


__all__ = [
    "ClientAuth",
    "ClientCredentials",
    "ClientSecretBasic",
    "ClientSecretPost",
    "DownstreamCredentials",
    "DownstreamToken",
    "GuardedTransport",
    "OutboundClient",
    "PassthroughGuard",
    "PrivateKeyJwt",
    "ServiceTokens",
    "SharedTokens",
    "SubjectExchange",
    "TokenEndpoint",
    "TokenExchange",
]
