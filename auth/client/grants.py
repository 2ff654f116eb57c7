"""How the client gets tokens: pluggable grants over one token-request step.

A grant is anything with ``obtain(ctx) -> AuthFlow[TokenSet]`` (and optionally
``refresh(ctx, token)``); ``GrantContext`` carries what discovery found. Three ship:

* ``AuthorizationCodeGrant``: registration (``auth/client/registration.py``), the authorization
  request with PKCE S256, ``state``, ``resource`` and the chosen scopes (plus
  ``offline_access`` only when the server lists it in ``scopes_supported``), the
  user-agent step, the RFC 9207 checks (``auth/client/code_flow.py``), then the code exchange
  with the same ``resource`` and ``redirect_uri``; refresh tokens, rotated when the
  server rotates them;
* ``ClientCredentialsGrant``: a machine client's own credentials (``client_secret_basic``
  or a ``private_key_jwt`` assertion with ``aud`` = the issuer), RFC 6749 §4.4 with
  ``resource`` and ``scope``;
* ``JwtBearerGrant``: RFC 7523 §2.1 with an assertion supplied from outside (workload
  identity federation: a platform-issued JWT). ``assertion`` may be a string, a callable,
  or a *flow* (a generator of steps) that obtains one, which is how a token-exchange
  step (e.g. an ID-JAG from an enterprise IdP) plugs in ahead of it. A rejected
  JWT-bearer request is final: no retry, no fallback to another grant.

``token_request`` is the one place a token endpoint is called: client authentication,
the DPoP proof (RFC 9449 §5) and one retry with the server's nonce on
``use_dpop_nonce`` (§8), then ``parse_token_response``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from mcpcore.auth.client.code_flow import PendingAuthorization, validate_response
from mcpcore.auth.client.credentials import (
    ClientInfo,
    CredentialStore,
    TokenSet,
    choose_client_auth,
)
from mcpcore.auth.client.discovery import AuthServerMetadata
from mcpcore.auth.client.registration import Registration
from mcpcore.auth.client.steps import AuthFlow, OpenAuthorization, UserAgent, fetch, json_object
from mcpcore.auth.client_auth import ClientAuth
from mcpcore.auth.dpop import DPoPKey
from mcpcore.auth.errors import TokenRequestFailed
from mcpcore.auth.times import expires_in_seconds
from mcpcore.auth.urls import NetworkPolicy

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_ERROR_CODE = frozenset("abcdefghijklmnopqrstuvwxyz_")


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), "", "", ""))


@dataclass
class GrantContext:
    """What a grant works with: the validated metadata and the scopes to ask for."""

    server_url: str
    #: The ``resource`` parameter (RFC 8707): the PRM ``resource``, verbatim.
    resource: str
    metadata: AuthServerMetadata
    scopes: frozenset[str]
    store: CredentialStore
    network: NetworkPolicy
    dpop: DPoPKey | None = None
    #: DPoP nonces by origin (the token endpoint's and the MCP server's differ).
    nonces: MutableMapping[str, str] = field(default_factory=dict)
    clock: Callable[[], float] = time.time


class Grant(Protocol):
    """A way to obtain tokens; ``refresh`` may return None ("get a new one instead")."""

    def obtain(self, ctx: GrantContext) -> AuthFlow[TokenSet]: ...

    def refresh(self, ctx: GrantContext, token: TokenSet) -> AuthFlow[TokenSet | None]: ...


def error_code(document: dict[str, Any] | None) -> str | None:
    """A token endpoint's ``error`` (RFC 6749 §5.2) when it looks like one (lower-case
    letters and ``_``, at most 64): safe to show and to compare; else ``None``."""
    code = document.get("error") if document else None
    if isinstance(code, str) and code and set(code) <= _ERROR_CODE and len(code) <= 64:
        return code
    return None


def parse_token_response(
    response: httpx.Response, ctx: GrantContext, *, requested: frozenset[str], grant: str
) -> TokenSet:
    """A ``TokenSet`` from a token response (RFC 6749 §5.1), or ``TokenRequestFailed``."""
    document = json_object(response)
    if response.status_code != 200:
        code = error_code(document)
        raise TokenRequestFailed(
            f"{grant}: {ctx.metadata.issuer} refused the token request "
            f"({response.status_code}{', ' + code if code else ''})",
            error=code,
        )
    if document is None:
        raise TokenRequestFailed(f"{grant}: the token response is not a JSON object")
    access_token = document.get("access_token")
    token_type = document.get("token_type")
    if not isinstance(access_token, str) or not access_token:
        raise TokenRequestFailed(f"{grant}: the token response has no access_token")
    if not isinstance(token_type, str) or token_type.lower() not in ("bearer", "dpop"):
        raise TokenRequestFailed(f"{grant}: unsupported token_type {token_type!r}")
    if token_type.lower() == "dpop" and ctx.dpop is None:
        raise TokenRequestFailed(f"{grant}: a DPoP-bound token was issued without a proof")
    try:
        lifetime = expires_in_seconds(document.get("expires_in"))
    except ValueError as exc:
        raise TokenRequestFailed(f"{grant}: a malformed token response: {exc}") from None
    expires_at = None if lifetime is None else ctx.clock() + lifetime
    scope = document.get("scope")
    scopes = frozenset(scope.split()) if isinstance(scope, str) else requested
    refresh = document.get("refresh_token")
    return TokenSet(
        access_token=access_token,
        issuer=ctx.metadata.issuer,
        resource=ctx.resource,
        token_type="DPoP" if token_type.lower() == "dpop" else "Bearer",
        scopes=scopes,
        expires_at=expires_at,
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
    )


def token_request(
    ctx: GrantContext,
    form: dict[str, str],
    client_auth: ClientAuth | None,
    *,
    requested: frozenset[str],
) -> AuthFlow[TokenSet]:
    """POST ``form`` to the token endpoint (see the module docstring)."""
    url = ctx.metadata.token_endpoint
    origin = origin_of(url)
    grant = form.get("grant_type", "?")
    for attempt in range(2):
        body = dict(form)
        headers = {"accept": "application/json"}
        if client_auth is not None:
            client_auth.apply(body, headers, audience=ctx.metadata.issuer)
        sent_nonce = ctx.nonces.get(origin)
        if ctx.dpop is not None:
            headers["dpop"] = ctx.dpop.proof("POST", url, nonce=sent_nonce)
        request = httpx.Request("POST", url, data=body, headers=headers)
        response = yield from fetch(request, ctx.network, what=f"token request ({grant})")
        nonce = response.headers.get("dpop-nonce")
        if ctx.dpop is not None and nonce:
            ctx.nonces[origin] = nonce
        if (
            attempt == 0
            and ctx.dpop is not None
            and response.status_code in (400, 401)
            and nonce
            and nonce != sent_nonce
            and error_code(json_object(response)) == "use_dpop_nonce"
        ):
            continue  # RFC 9449 §8: once more, with a new proof carrying the nonce
        return parse_token_response(response, ctx, requested=requested, grant=grant)
    raise AssertionError("unreachable")  # pragma: no cover


def _scope_param(scopes: frozenset[str]) -> dict[str, str]:
    return {"scope": " ".join(sorted(scopes))} if scopes else {}


@dataclass
class AuthorizationCodeGrant:
    """The authorization-code flow with PKCE, for clients acting for a user.

    ``user_agent`` takes the user to the authorization URL (``HeadlessUserAgent`` for
    tests and automation, ``LoopbackBrowser`` for CLIs); ``registration`` says how to get
    a ``client_id``; ``offline_access`` asks for refresh tokens where the server offers
    that scope.
    """

    user_agent: UserAgent
    registration: Registration = field(default_factory=Registration)
    offline_access: bool = True

    def _client(self, ctx: GrantContext) -> AuthFlow[ClientInfo]:
        return self.registration.resolve(
            ctx.metadata, redirect_uri=self.user_agent.redirect_uri, store=ctx.store,
            network=ctx.network,
        )

    def obtain(self, ctx: GrantContext) -> AuthFlow[TokenSet]:
        endpoint = ctx.metadata.require_code_flow()
        client = yield from self._client(ctx)
        scopes = set(ctx.scopes)
        if self.offline_access and "offline_access" in (ctx.metadata.scopes_supported or ()):
            scopes.add("offline_access")
        pending = PendingAuthorization.start(
            issuer=ctx.metadata.issuer,
            iss_parameter_supported=ctx.metadata.iss_parameter_supported,
            client_id=client.client_id,
            redirect_uri=self.user_agent.redirect_uri,
            resource=ctx.resource,
            scopes=scopes,
        )
        redirect_url: str = yield OpenAuthorization(pending.url(endpoint), self.user_agent)
        code = validate_response(pending, redirect_url)  # before the code goes anywhere
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.code_verifier,
            "resource": pending.resource,
        }
        auth = choose_client_auth(client, ctx.metadata.auth_methods)
        return (yield from token_request(ctx, form, auth, requested=frozenset(pending.scopes)))

    def refresh(self, ctx: GrantContext, token: TokenSet) -> AuthFlow[TokenSet | None]:
        client = ctx.store.client(ctx.metadata.issuer)
        if token.refresh_token is None or client is None:
            return None
        form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token,
                "resource": ctx.resource}
        auth = choose_client_auth(client, ctx.metadata.auth_methods)
        try:
            fresh = yield from token_request(ctx, form, auth, requested=token.scopes)
        except TokenRequestFailed:
            return None  # expired or revoked: authorize again
        if fresh.refresh_token is None:  # the server did not rotate it: keep the old one
            fresh = replace(fresh, refresh_token=token.refresh_token)
        return fresh


@dataclass
class ClientCredentialsGrant:
    """A machine client's own token (RFC 6749 §4.4; the MCP OAuth client credentials
    extension). ``client`` holds a secret or a private key, pre-registered."""

    client: ClientInfo

    def obtain(self, ctx: GrantContext) -> AuthFlow[TokenSet]:
        form = {"grant_type": "client_credentials", "resource": ctx.resource,
                **_scope_param(ctx.scopes)}
        auth = choose_client_auth(self.client, ctx.metadata.auth_methods)
        return (yield from token_request(ctx, form, auth, requested=ctx.scopes))

    def refresh(self, ctx: GrantContext, token: TokenSet) -> AuthFlow[TokenSet | None]:
        return (yield from self.obtain(ctx))


AssertionSource = str | Callable[[GrantContext], str] | Callable[
    [GrantContext], Generator[Any, Any, str]]


@dataclass
class JwtBearerGrant:
    """RFC 7523 §2.1 with an externally supplied assertion (workload identity
    federation). ``client`` is optional: WIF needs no client credentials."""

    assertion: AssertionSource = field(repr=False)
    client: ClientInfo | None = None

    def _assertion(self, ctx: GrantContext) -> AuthFlow[str]:
        source = self.assertion
        if isinstance(source, str):
            return source
        value = source(ctx)
        if isinstance(value, Generator):
            return (yield from value)
        return value

    def obtain(self, ctx: GrantContext) -> AuthFlow[TokenSet]:
        assertion = yield from self._assertion(ctx)
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": assertion,
                "resource": ctx.resource, **_scope_param(ctx.scopes)}
        auth = (choose_client_auth(self.client, ctx.metadata.auth_methods)
                if self.client is not None else None)
        return (yield from token_request(ctx, form, auth, requested=ctx.scopes))

    def refresh(self, ctx: GrantContext, token: TokenSet) -> AuthFlow[TokenSet | None]:
        return None  # a new assertion, a new token: the caller starts over
        yield  # pragma: no cover - makes this a generator


__all__ = [
    "JWT_BEARER_GRANT",
    "AuthorizationCodeGrant",
    "ClientCredentialsGrant",
    "Grant",
    "GrantContext",
    "JwtBearerGrant",
    "error_code",
    "parse_token_response",
    "token_request",
]
