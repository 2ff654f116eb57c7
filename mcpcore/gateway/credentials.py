"""The gateway's credential for each upstream: never the caller's token.

The MCP spec forbids token passthrough (basic/security_best_practices, "Token
Passthrough"; authorization, "Access Token Privilege Restriction"): the bearer token a
caller sent to the gateway is for the gateway only. Each upstream gets a token of its
own, by the kind its configuration names (``config.Credentials``;
docs/gateway-credentials.md):

- ``none``: nothing is added;
- ``static``: a secret from the environment or a file, in a configurable header
  (``Authorization: Bearer <secret>`` by default);
- ``client_credentials`` (RFC 6749 §4.4): one token for the gateway itself, fetched
  from ``token_endpoint`` and fetched again shortly before it expires;
- ``token_exchange`` (RFC 8693): the caller's token goes to ``token_endpoint`` as
  ``subject_token`` (the one place it is ever sent), for a token whose audience is the
  upstream;
- ``id_jag`` (Enterprise-Managed Authorization): the caller's token, an ID token of
  the enterprise IdP, is exchanged at ``idp_token_endpoint`` for an ID-JAG, which the
  upstream's authorization server (``token_endpoint``, issuer ``audience``) redeems as
  an RFC 7523 JWT-bearer grant.

The two caller kinds cache per (principal, scopes) until ``REFRESH_MARGIN`` seconds
before expiry, in a bounded LRU (``MAX_CACHED_TOKENS``): a hit costs no round trip, and
two principals never share an entry (``DownstreamCredentials``'s key is the
principal's issuer, tenant, subject, client and actors). That cache is this process's;
with a shared Store (``[gateway] store_url_env``) a fleet's second level sits behind it
(``token_cache.SealedTokenCache``: sealed, keyed by a hash, a miss when the Store is
down).

The token clients are the existing ones, not a second copy: ``TokenExchange`` and
``ClientCredentials`` of ``mcpcore.auth.server.downstream`` (SSRF-safe, bounded
bodies, fail closed, an STS that hands back the subject token refused), and the
client room's ``EnterpriseGrant`` driven by ``OAuth.run`` for the ID-JAG.

With ``dpop = true`` every token of the upstream is DPoP-bound (RFC 9449) to a key of
its own (``upstream_dpop.py``: the key, the token requests with a proof, a fresh proof
on each upstream request, server nonces).

How a credential reaches the upstream: ``UpstreamAuth``, an ``httpx.Auth`` on the
upstream's client, sets the credential's header on **every** HTTP request the client
makes (calls, lists, the era probe, a 2025 session's GET stream and DELETE), replacing
whatever was there, and for a DPoP-bound token a proof of that request. A call made for
a caller (a call, a read, a prompt, a completion) runs inside ``sending(value)``;
anything else (the catalog's lists, the probe) is the gateway acting as itself: its
static secret or client-credentials token; for the caller kinds, a client-credentials
token from the same ``token_endpoint`` with the same client (the catalog is the
gateway's, not one caller's).

When a credential cannot be obtained, ``CredentialUnavailable`` names the upstream and
why (``no_caller_token``, ``consent_required``, ``scope_missing``, ``exchange_refused``,
``not_allowed``, ``token_endpoint_failed``); the call is not sent.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import httpx

from mcpcore.auth.client.credentials import ClientInfo, MemoryCredentialStore
from mcpcore.auth.client.discovery import AuthServerMetadata
from mcpcore.auth.client.ema_client import EnterpriseGrant
from mcpcore.auth.client.grants import ClientCredentialsGrant, GrantContext
from mcpcore.auth.client.oauth import OAuth
from mcpcore.auth.client_auth import ClientSecretBasic
from mcpcore.auth.errors import DownstreamError, DownstreamNotAllowed, OAuthClientError
from mcpcore.auth.server.downstream import (
    ClientCredentials,
    DownstreamCredentials,
    DownstreamToken,
    TokenExchange,
)
from mcpcore.auth.server.inbound import InboundToken, current_inbound_token
from mcpcore.auth.terms import JWT_BEARER_GRANT
from mcpcore.auth.urls import NetworkPolicy, is_loopback_host, safe_async_client
from mcpcore.client.http import HeaderAuth
from mcpcore.context import Context
from mcpcore.gateway.config import Credentials, Secrets, UpstreamConfig
from mcpcore.gateway.errors import CredentialReason, CredentialUnavailable
from mcpcore.gateway.token_cache import SealedTokenCache
from mcpcore.gateway.upstream_dpop import DPoPGrants, UpstreamProofs, bound_token, dpop_key
from mcpcore.principal import Principal
from mcpcore.sealing import Sealer
from mcpcore.stores.base import Store

log = logging.getLogger("mcpcore.gateway")

#: Seconds before expiry at which a cached token is fetched again.
REFRESH_MARGIN: Final = 30.0
#: Tokens kept per upstream (callers and scopes), least recently used dropped first.
MAX_CACHED_TOKENS: Final = 10_000
#: Seconds a token endpoint gets to answer.
TOKEN_TIMEOUT: Final = 10.0
#: The kinds that act as the caller (a token per principal).
CALLER_KINDS: Final = frozenset({"token_exchange", "id_jag"})

#: The header value of the call being sent (set by ``UpstreamCredential.sending``).
_SENDING: ContextVar[str | None] = ContextVar("mcpcore_gateway_sending", default=None)

#: OAuth error codes (RFC 6749 §5.2, OIDC Core §3.1.2.6) → the reason the caller sees.
_REASONS: Final[dict[str, CredentialReason]] = {
    "invalid_scope": "scope_missing",
    "insufficient_scope": "scope_missing",
    "consent_required": "consent_required",
    "interaction_required": "consent_required",
    "login_required": "consent_required",
}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a call is made for: the principal the gateway's resource server validated,
    and its raw token (``None`` when the gateway requires none)."""

    principal: Principal
    token: InboundToken | None


class UpstreamCredential:
    """One upstream's credential (module docstring). ``header`` is the header it goes
    in; ``per_caller`` says whether calls need a ``Caller``."""

    def __init__(self, upstream: UpstreamConfig, secrets: Secrets, *,
                 clock: Callable[[], float] = time.time,
                 max_entries: int = MAX_CACHED_TOKENS,
                 refresh_margin: float = REFRESH_MARGIN,
                 store: Store | None = None,
                 sealer: Callable[[], Sealer] | None = None) -> None:
        creds = upstream.credentials
        if creds.kind in ("static", "none") or creds.kind not in CALLER_KINDS | {
                "client_credentials"}:
            raise ValueError(f"upstream {upstream.name!r}: {creds.kind!r} is not an "
                             "OAuth credential")
        assert creds.token_endpoint is not None and creds.client_id is not None
        assert creds.client_secret is not None
        self.name = upstream.name
        self.kind = creds.kind
        self.header = "authorization"
        self.per_caller = creds.kind in CALLER_KINDS
        #: The token's target: RFC 8707 ``resource`` (by default the upstream's URL).
        self.audience = creds.resource or creds.audience or upstream.url or ""
        self.scopes = frozenset(creds.scopes)
        network = _network(creds.token_endpoint, creds.idp_token_endpoint)
        secret = secrets.value(creds.client_secret)
        client_auth = ClientSecretBasic(creds.client_id, secret)
        issuer = _origin(creds.token_endpoint)
        #: The upstream's DPoP key and nonces (``dpop = true``: upstream_dpop.py).
        self.proofs = UpstreamProofs(dpop_key(upstream, secrets)) if creds.dpop else None
        service: ClientCredentials | DPoPGrants
        if self.proofs is not None:
            service = DPoPGrants(token_endpoint=creds.token_endpoint,
                                 client_id=creds.client_id, client_secret=secret,
                                 issuer=creds.audience or issuer, proofs=self.proofs,
                                 network=network, clock=clock, timeout=TOKEN_TIMEOUT)
        else:
            service = ClientCredentials(creds.token_endpoint, issuer=issuer,
                                        client_auth=client_auth, network=network,
                                        timeout=TOKEN_TIMEOUT, clock=clock)
        exchange: TokenExchange | DPoPGrants | _IdJagExchange | None = None
        if creds.kind == "token_exchange":
            exchange = service if isinstance(service, DPoPGrants) else TokenExchange(
                creds.token_endpoint, issuer=issuer, client_auth=client_auth,
                network=network, timeout=TOKEN_TIMEOUT, clock=clock)
        elif creds.kind == "id_jag":
            exchange = _IdJagExchange(creds, secret, upstream_url=upstream.url or "",
                                      network=network, clock=clock, proofs=self.proofs)
        #: The fleet's second level of the caller kinds' cache (``token_cache.py``):
        #: with a shared Store and the server's sealer; None: this process only. Tokens
        #: bound to a DPoP key are shared only with instances holding that key.
        self.shared = (SealedTokenCache(store, sealer, upstream=upstream.name,
                                        binding=self.proofs.thumbprint if self.proofs
                                        else "", refresh_margin=refresh_margin,
                                        clock=clock)
                       if self.per_caller and store is not None and sealer is not None
                       else None)
        self.tokens = DownstreamCredentials(
            exchange=exchange,
            client_credentials=service,
            refresh_margin=refresh_margin, max_entries=max_entries, clock=clock,
            shared=self.shared)

    async def for_gateway(self) -> str:
        """The header value for the gateway acting as itself (client credentials)."""
        try:
            token = await self.tokens.for_service(audience=self.audience, scopes=self.scopes)
        except DownstreamError as exc:
            raise self._unavailable(exc, "the gateway") from None
        return token.authorization

    async def for_caller(self, caller: Caller) -> str:
        """The header value for a call made for ``caller`` (cached: module docstring)."""
        if not self.per_caller:
            return await self.for_gateway()
        if caller.token is None or caller.principal.is_anonymous:
            raise CredentialUnavailable(self.name, "no_caller_token")
        try:
            token = await self.tokens.for_principal(
                caller.principal, audience=self.audience, scopes=self.scopes,
                inbound=caller.token)
        except DownstreamError as exc:
            raise self._unavailable(exc, caller.principal.key) from None
        return token.authorization

    def _unavailable(self, exc: DownstreamError, who: str) -> CredentialUnavailable:
        log.warning("upstream %s: no credential for %s: %s", self.name, who, exc,
                    extra={"upstream": self.name})
        if isinstance(exc, DownstreamNotAllowed):
            return CredentialUnavailable(self.name, "not_allowed")
        code = exc.error
        if code is None:
            return CredentialUnavailable(self.name, "token_endpoint_failed")
        return CredentialUnavailable(self.name, _REASONS.get(code, "exchange_refused"), code)

    async def aclose(self) -> None:
        await self.tokens.aclose()


class StaticCredential:
    """A secret from the environment or a file, in one header (``static``)."""

    per_caller = False
    proofs = None

    def __init__(self, upstream: UpstreamConfig, secrets: Secrets) -> None:
        creds = upstream.credentials
        assert creds.secret is not None
        self.name = upstream.name
        self.kind = creds.kind
        self.header = creds.header
        secret = secrets.value(creds.secret)
        self._value = f"{creds.scheme} {secret}" if creds.scheme else secret

    async def for_gateway(self) -> str:
        return self._value

    async def for_caller(self, caller: Caller) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"StaticCredential({self.name!r}, header={self.header!r})"

    async def aclose(self) -> None:
        return None


Credential = UpstreamCredential | StaticCredential


def credential_for(upstream: UpstreamConfig, secrets: Secrets, *,
                   clock: Callable[[], float] = time.time, store: Store | None = None,
                   sealer: Callable[[], Sealer] | None = None) -> Credential | None:
    """The credential ``upstream``'s configuration names (None for ``none``); with a
    shared ``store`` and the server's ``sealer``, the caller kinds' tokens are shared
    by the fleet (``token_cache.py``)."""
    kind = upstream.credentials.kind
    if kind == "none":
        return None
    if kind == "static":
        return StaticCredential(upstream, secrets)
    return UpstreamCredential(upstream, secrets, clock=clock, store=store, sealer=sealer)


@contextlib.contextmanager
def sending(value: str | None) -> Iterator[None]:
    """Requests made inside carry ``value`` (the caller's upstream token), not the
    gateway's own credential."""
    reset = _SENDING.set(value)
    try:
        yield
    finally:
        _SENDING.reset(reset)


class SessionValue:
    """The last caller credential a 2025 upstream session was used with: its
    background requests (the GET stream, DELETE) go with it, never with the gateway's
    own credential nor another caller's."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value


class UpstreamAuth(HeaderAuth):
    """Sets the upstream credential's header on every request of an upstream's client
    (module docstring): the value of the call being sent, else the session's (a
    caller's 2025 session), else the gateway's own. A ``HeaderAuth``: the client's
    transport applies it without building an httpx request."""

    def __init__(self, credential: Credential, session: SessionValue | None = None) -> None:
        self.credential = credential
        self.session = session

    async def apply(self, headers: dict[str, str]) -> None:
        value = _SENDING.get()
        if value is not None and self.session is not None:
            self.session.value = value
        elif value is None:
            value = (self.session.value if self.session is not None
                     else await self.credential.for_gateway())
        # Replaces whatever was there: nothing but this credential reaches the upstream.
        replaced = ("authorization", "dpop", self.credential.header.lower())
        for name in [name for name in headers if name.lower() in replaced]:
            del headers[name]
        headers[self.credential.header] = value

    @property
    def lean(self) -> bool:
        """Whether only header fields are set (``HeaderAuth``): not with DPoP, whose
        proof signs the request and may retry it with the upstream's nonce."""
        return self.credential.proofs is None

    async def async_auth_flow(self, request: httpx.Request
                              ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        headers = dict(request.headers.items())
        await self.apply(headers)
        request.headers = httpx.Headers(headers)
        value = request.headers.get(self.credential.header, "")
        proofs = self.credential.proofs
        if proofs is None or not value.startswith("DPoP "):
            yield request
            return
        # A DPoP-bound token: a fresh proof of this request (upstream_dpop.py), once
        # more with the upstream's nonce when it asks for one (RFC 9449 §9).
        token = value.removeprefix("DPoP ")
        sent = proofs.sign(request, token)
        response = yield request
        if proofs.again(request, response, sent):
            sent = proofs.sign(request, token)
            response = yield request
            proofs.again(request, response, sent)


class _IdJagExchange:
    """The caller's ID token → an ID-JAG at the IdP → an access token at the upstream's
    authorization server (``EnterpriseGrant``, driven by ``OAuth.run``)."""

    def __init__(self, creds: Credentials, secret: str, *, upstream_url: str,
                 network: NetworkPolicy, clock: Callable[[], float],
                 proofs: UpstreamProofs | None = None) -> None:
        assert creds.idp_token_endpoint is not None and creds.token_endpoint is not None
        assert creds.audience is not None and creds.client_id is not None
        self._client = ClientInfo(creds.client_id, client_secret=secret)
        self._idp_endpoint = creds.idp_token_endpoint
        #: The authorization server's issuer, exactly as configured (the ID-JAG's aud).
        self._metadata = AuthServerMetadata(issuer=creds.audience,
                                            token_endpoint=creds.token_endpoint,
                                            grant_types_supported=(JWT_BEARER_GRANT,))
        self._resource = creds.resource or upstream_url
        self._network = network
        self._clock = clock
        self._proofs = proofs
        self._http = safe_async_client(network, timeout=TOKEN_TIMEOUT)
        # The client room's driver: fetches under its URL rules and body bound; the
        # grant it is built with is never run (``run`` takes each flow).
        self._driver = OAuth(ClientCredentialsGrant(self._client), network=network,
                             http_client=self._http, timeout=TOKEN_TIMEOUT, clock=clock)

    async def exchange(self, subject_token: InboundToken, *, audience: str,
                       scopes: Iterable[str] = ()) -> DownstreamToken:
        grant = EnterpriseGrant(idp_issuer=_origin(self._idp_endpoint),
                                idp_token_endpoint=self._idp_endpoint,
                                idp_client=self._client, id_token=subject_token.reveal(),
                                client=self._client)
        proofs = self._proofs
        ctx = GrantContext(server_url=self._resource, resource=self._resource,
                           metadata=self._metadata, scopes=frozenset(scopes),
                           store=MemoryCredentialStore(), network=self._network,
                           dpop=proofs.key if proofs is not None else None,
                           nonces=proofs.nonces if proofs is not None else {},
                           clock=self._clock)
        try:
            token = await self._driver.run(grant.obtain(ctx))
        except OAuthClientError as exc:
            raise DownstreamError(f"id_jag: {exc}", error=exc.error) from None
        if secrets.compare_digest(token.access_token, subject_token.reveal()):
            raise DownstreamError("id_jag: the authorization server returned the caller's "
                                  "token")
        try:
            return bound_token(token, audience=audience, dpop=proofs is not None,
                               clock=self._clock)
        except DownstreamError as exc:
            raise DownstreamError(f"id_jag: {exc}") from None

    async def aclose(self) -> None:
        await self._http.aclose()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def _network(*endpoints: str | None) -> NetworkPolicy:
    """Loopback token endpoints are allowed only when the configuration names one
    (the config refuses plain http anywhere else)."""
    loopback = any(e is not None and is_loopback_host(urlsplit(e).hostname or "")
                   for e in endpoints)
    return NetworkPolicy(allow_loopback=loopback)



def caller_of(ctx: Context) -> Caller:
    """Who a routed call is made for: the principal the gateway's resource server
    validated, and the raw token it validated (``mcpcore.auth``'s inbound token, set
    for the request being served; None without inbound auth)."""
    return Caller(ctx.principal, current_inbound_token())


__all__ = ["CALLER_KINDS", "MAX_CACHED_TOKENS", "REFRESH_MARGIN", "Caller", "Credential",
           "SessionValue", "StaticCredential", "UpstreamAuth", "UpstreamCredential",
           "caller_of", "credential_for", "sending"]
