"""The bearer-token middleware: a pure ASGI wrapper around the MCP endpoint.

Per request, trusting nothing from an earlier request or the connection (the
authorization spec's "Token Handling": every request is validated; 2026-07-28 is
stateless):

1. the well-known PRM paths are answered without authentication;
2. the ``Authorization`` header is checked: exactly one, scheme ``Bearer``, a token of
   b64token syntax; a token in the query string or two headers is a 400 (RFC 6750 §2,
   §3.1); no header at all is a 401 without an ``error`` code (RFC 6750 §3.1);
3. the token is validated (``TokenValidator``): failure is a 401 ``invalid_token``
   (or 503 when keys cannot be loaded);
4. the scopes every request needs are checked; what one call needs (``scope_map``) is
   checked where the call is decoded anyway: an app that says it runs the check
   (``checks_call_scopes = True``, as ``StreamableHTTP`` does) gets a ``CallScopes`` in
   ``scope[CALL_SCOPES_KEY]`` and the body is not touched here (a larger declared
   ``content-length`` is still a 413); for any other app the body is buffered (up to
   ``max_body_bytes``) and only ``method`` and ``params.name`` are decoded. A missing
   scope is a 403 ``insufficient_scope`` naming *all* the scopes the call needs (the
   spec's "Runtime Insufficient Scope Errors"), before any handler runs;
5. the ``Principal`` goes into ``scope[PRINCIPAL_SCOPE_KEY]``, the token into a context
   variable for the passthrough guard, and a buffered body is replayed to the app.

With the verified-token cache on, an ``Authorization`` value that passed is remembered
(``_Admitted``): a repeat of exactly those bytes skips step 2's parsing, and the scope
work of step 4 while the validator returns the same ``Principal``; step 3 runs on every
request.

Every refusal goes through one ``on_error``, which builds the response; the reason is
logged with a correlation id and never includes a token.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl

import msgspec
from msgspec import UNSET

from mcpcore.asgi_types import ASGIApp, ASGIMessage, Receive, Scope, Send
from mcpcore.auth.challenges import bearer_challenge, dpop_challenge
from mcpcore.auth.config import ResourceServerConfig
from mcpcore.auth.dpop import DPoPNonces, DPoPPolicy, DPoPResourceCheck, DPoPVerifier, ReplayStore
from mcpcore.auth.errors import (
    AuthenticationError,
    BodyTooLarge,
    InsufficientTokenScope,
    InvalidAuthRequest,
    InvalidDPoPProof,
    InvalidToken,
    MissingToken,
    TemporarilyUnavailable,
    UseDPoPNonce,
)
from mcpcore.auth.scopes import required_for
from mcpcore.auth.server.inbound import InboundToken, _current
from mcpcore.auth.server.introspection import IntrospectionValidator
from mcpcore.auth.server.metadata import MetadataEndpoint
from mcpcore.auth.server.tokens import CompositeValidator, JwtValidator, TokenValidator
from mcpcore.errors import InsufficientScope, PayloadTooLarge
from mcpcore.headers import named_by_name
from mcpcore.jsonrpc import Envelope
from mcpcore.principal import CALL_SCOPES_KEY, PRINCIPAL_SCOPE_KEY, Principal, expand_scopes
from mcpcore.stores.memory import MemoryStore
from mcpcore.transports.asgi import read_body, respond

log = logging.getLogger("mcpcore.auth.server.resource_server")

# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN_CHARS = (b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                   b"-._~+/")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_REPEATED: Final = b"repeated"  # a marker, compared by identity
#: ``BearerAuthMiddleware`` files what it admitted under the Authorization value's last
#: bytes (a JWT's signature): hashing them is cheaper than hashing the whole ~1 KB.
_KEY_BYTES: Final = 64


_decode_envelopes = msgspec.json.Decoder(Envelope | list[Envelope]).decode


def calls_in(body: bytes) -> list[tuple[str, str | None]]:
    """``(method, name)`` of each JSON-RPC message in ``body``; ``[]`` if undecodable.

    A batch (legacy revisions) yields one entry per element, so a batched ``tools/call``
    cannot hide from its scope requirement.
    """
    try:
        decoded = _decode_envelopes(body)
    except (msgspec.DecodeError, RecursionError):
        return []  # the transport reports the JSON-RPC error itself
    calls: list[tuple[str, str | None]] = []
    for message in decoded if isinstance(decoded, list) else [decoded]:
        if not isinstance(message.method, str):
            continue
        params = message.params
        named = named_by_name(message.method, params) if params is not UNSET else None
        calls.append((message.method, named))
    return calls


class ScopeTable:
    """``scope_map`` split for lookups without building strings: per method, and per
    (method, name)."""

    __slots__ = ("base", "by_method", "by_name", "hierarchy", "metadata_url")

    def __init__(self, config: ResourceServerConfig) -> None:
        self.base = config.required_scopes
        self.hierarchy = config.scope_hierarchy
        self.metadata_url = config.metadata_url
        self.by_method: dict[str, frozenset[str]] = {}
        self.by_name: dict[tuple[str, str], frozenset[str]] = {}
        for key, scopes in config.scope_map.items():
            method, colon, name = key.partition(":")
            if colon:
                self.by_name[(method, name)] = scopes
            else:
                self.by_method[key] = scopes

    def needed(self, method: str, name: str | None) -> frozenset[str]:
        """Every scope a call needs: the base ones, its method's, its name's."""
        named = self.by_name.get((method, name)) if name is not None else None
        return self.base | self.by_method.get(method, frozenset()) | (named or frozenset())


class CallScopes:
    """The per-call half of the scope check, run by the app once it decoded the call.

    ``check(method, name)`` raises ``mcpcore.errors.InsufficientScope`` (HTTP 403 with a
    step-up ``WWW-Authenticate`` naming every scope the call needs) unless the
    principal's scopes, expanded through the hierarchy, cover them.

    The principal's scopes are fixed, so which entries of the scope map it lacks is
    worked out once, here; a call then costs one dict lookup. ``can_refuse`` is false
    when the principal covers the whole map (no call can be refused).
    """

    __slots__ = ("_denied", "_table", "can_refuse")

    def __init__(self, principal: Principal, table: ScopeTable) -> None:
        self._table = table
        granted = expand_scopes(principal.scopes, table.hierarchy) if table.hierarchy else (
            principal.scopes)
        # method -> None (the method itself needs a scope not granted), or the names
        # (tools, prompts) of that method whose own scopes are not all granted. A call
        # is allowed iff base | method's | name's scopes are all granted, i.e. iff both
        # base | method's and base | name's are.
        denied: dict[str, set[str] | None] = {}
        for method, scopes in table.by_method.items():
            if not table.base | scopes <= granted:
                denied[method] = None
        for (method, name), scopes in table.by_name.items():
            if not table.base | scopes <= granted:
                names = denied.setdefault(method, set())
                if names is not None:
                    names.add(name)
        self._denied = {method: None if names is None else frozenset(names)
                        for method, names in denied.items()}
        #: False when no call can be refused (nothing to check per call).
        self.can_refuse = bool(self._denied)

    def __call__(self, method: str, name: str | None) -> None:
        if method not in self._denied:
            return  # nothing beyond the base scopes, which the middleware checked
        names = self._denied[method]
        if names is None or name in names:
            table = self._table
            raise InsufficientScope(table.needed(method, name),
                                    resource_metadata=table.metadata_url)


class _Admitted:
    """What one exact ``Authorization`` value that passed every check yields, kept so
    that its next request does not redo it: the scheme and token (a pure function of
    those bytes), the ``InboundToken`` wrapper, and, for the ``Principal`` the validator
    returned, the per-call checker. The token is still validated on every request (the
    validator checks times, keys and its own cache); anything here that depends on the
    principal is used only while the validator returns that same object."""

    __slots__ = ("call_scopes", "inbound", "principal", "scheme", "token", "value")

    def __init__(self, value: bytes, scheme: str, token: str, principal: Principal,
                 call_scopes: CallScopes | None) -> None:
        self.value = value
        self.scheme = scheme
        self.token = token
        self.inbound = InboundToken(token)
        self.principal = principal
        self.call_scopes = call_scopes


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    status: int
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""


OnError = Callable[[Scope, AuthenticationError], ErrorResponse]


def build_validator(config: ResourceServerConfig, **kwargs: Any) -> CompositeValidator:
    """JWT validation for issuers with a ``jwks_uri``, introspection for the others."""
    has_jwks = any(s.jwks_uri for s in config.authorization_servers)
    has_introspection = any(s.introspection_endpoint for s in config.authorization_servers)
    return CompositeValidator(
        JwtValidator(config, **kwargs) if has_jwks else None,
        IntrospectionValidator(
            config, **{k: v for k, v in kwargs.items() if k in ("client", "clock")}
        )
        if has_introspection
        else None,
    )


def default_on_error(config: ResourceServerConfig) -> OnError:
    metadata_url = config.metadata_url
    base_scopes = config.required_scopes
    dpop_algs = config.dpop.algorithms if config.dpop is not None else None

    def on_error(scope: Scope, exc: AuthenticationError) -> ErrorResponse:
        headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
        if exc.status in (400, 401, 403):
            params: dict[str, Any] = {
                "resource_metadata": metadata_url,
                "scopes": exc.scopes or base_scopes,
                "error": exc.error,
                "error_description": exc.description if exc.error else None,
            }
            dpop_error = isinstance(exc, InvalidDPoPProof | UseDPoPNonce)
            if not dpop_error:
                headers.append((b"www-authenticate", bearer_challenge(**params).encode()))
            if dpop_algs is not None:  # RFC 9449 §7.1: a DPoP challenge alongside
                if not dpop_error:
                    params.update(error=None, error_description=None)
                challenge = dpop_challenge(algs=dpop_algs, **params)
                headers.append((b"www-authenticate", challenge.encode()))
            if isinstance(exc, UseDPoPNonce) and exc.nonce:
                headers.append((b"dpop-nonce", exc.nonce.encode()))
        if isinstance(exc, TemporarilyUnavailable):
            headers.append((b"retry-after", b"5"))
        body: dict[str, str] = {
            "error": exc.error or "unauthorized",
            "error_description": exc.description,
        }
        if exc.status == 413:
            body["error"] = "payload_too_large"
        elif exc.status == 503:
            body["error"] = "temporarily_unavailable"
        return ErrorResponse(exc.status, headers, msgspec.json.encode(body))

    return on_error


class BearerAuthMiddleware:
    """Protect an ASGI app (the MCP endpoint) with bearer tokens.

    >>> config = ResourceServerConfig.from_toml("auth.toml")      # doctest: +SKIP
    >>> app = BearerAuthMiddleware(mcp_app, config=config)        # doctest: +SKIP
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        config: ResourceServerConfig,
        validator: TokenValidator | None = None,
        on_error: OnError | None = None,
        replay_store: ReplayStore | None = None,
    ) -> None:
        """``replay_store`` remembers DPoP proof ``jti``s (default: this process; give a
        ``RedisStore`` to a fleet so a proof replayed to another instance fails too)."""
        self.app = app
        self.config = config
        self.dpop = _dpop_check(config, replay_store)
        self.validator: TokenValidator = validator or build_validator(config)
        self.on_error = on_error or default_on_error(config)
        self.metadata = MetadataEndpoint(config)
        self._base = config.required_scopes
        self._scope_map = config.scope_map
        self._hierarchy = config.scope_hierarchy
        self._max_body = config.max_body_bytes
        self._max_token = config.max_token_bytes
        #: A Content-Length of fewer digits than ``max_body_bytes`` has is below it.
        self._short_length = len(str(self._max_body))
        #: The app decodes each call and runs ``CallScopes`` itself: no body buffering.
        self._app_checks_calls = getattr(app, "checks_call_scopes", False) is True
        self._table = ScopeTable(config)
        #: Exact ``Authorization`` values that passed, oldest first (see ``_Admitted``);
        #: kept only when the verified-token cache is on, and as many as it keeps.
        self._admitted: dict[bytes, _Admitted] = {}
        self._admitted_max = (config.verified_token_cache_size
                              if config.verified_token_cache_ttl > 0 else 0)
        #: The validator's synchronous cache lookup, if it has one (``TokenValidator``).
        self._cached: Callable[[str], Principal | None] | None = getattr(
            self.validator, "cached", None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            if kind == "websocket":  # no bearer handling for websockets: refuse
                await send({"type": "websocket.close", "code": 1008})
                return
            await self._lifespan(scope, receive, send)
            return
        if self.metadata.match(scope["path"]):
            await self.metadata(scope, receive, send)
            return
        replay: Receive | None = None
        try:
            query = scope.get("query_string")
            if query and b"access_token" in query:
                _check_query(query)
            # One pass over the headers: the Authorization value (exactly one), and the
            # Content-Length value (a repeated one is checked copy by copy below).
            value: bytes | None = None
            declared: bytes | None = None
            for name, field_value in scope["headers"]:
                if name == b"authorization":
                    if value is not None:
                        raise InvalidAuthRequest("more than one Authorization header")
                    value = field_value
                elif name == b"content-length":
                    declared = field_value if declared is None else _REPEATED
            if value is None:
                raise MissingToken("no credentials")
            admitted = self._admitted.get(value[-_KEY_BYTES:])
            if admitted is not None and admitted.value == value:
                scheme, token = admitted.scheme, admitted.token
            else:
                admitted = None
                scheme, token = self._parse(value)
            cached = self._cached
            principal = cached(token) if cached is not None else None
            if principal is None:
                principal = await self.validator.validate(token)
            known = admitted is not None and principal is admitted.principal
            if self.dpop is not None:
                await self._check_proof(scope, scheme, token, principal)
            elif not known:
                _check_unbound(principal)
            if self._app_checks_calls:
                if declared is not None and scope.get("method") in _BODY_METHODS:
                    if declared is _REPEATED:
                        self._check_declared_length(scope)
                    elif not (len(declared) < self._short_length and declared.isdigit()):
                        self._check_length(declared)  # else below max_body_bytes
                if not known:
                    self._check_scopes(principal, None)
            else:
                body, replay = await self._buffer_body(scope, receive)
                if body is not None and replay is None:
                    return  # client went away while we were reading
                self._check_scopes(principal, body)
            if admitted is None or not known:
                admitted = self._admit(value, scheme, token, principal)
        except AuthenticationError as exc:
            await self._refuse(scope, send, exc)
            return
        except Exception as exc:  # a validator bug must not let the request through
            log.error("token validation crashed: %s", type(exc).__name__)
            await self._refuse(scope, send, TemporarilyUnavailable("validator error"))
            return
        scope[PRINCIPAL_SCOPE_KEY] = principal
        if admitted.call_scopes is not None:
            scope[CALL_SCOPES_KEY] = admitted.call_scopes
        reset = _current.set(admitted.inbound)
        try:
            await self.app(scope, replay or receive, send)
        finally:
            _current.reset(reset)

    def _admit(self, value: bytes, scheme: str, token: str, principal: Principal) -> _Admitted:
        """What this request worked out for ``value`` (every check passed), remembered
        under the value's last bytes (an exact compare of the whole value decides)."""
        call_scopes = (CallScopes(principal, self._table)
                       if self._scope_map and self._app_checks_calls else None)
        admitted = _Admitted(value, scheme, token, principal,
                             call_scopes if call_scopes and call_scopes.can_refuse else None)
        if self._admitted_max:
            table = self._admitted
            key = value[-_KEY_BYTES:]
            table.pop(key, None)  # a replaced entry moves to the end
            table[key] = admitted
            while len(table) > self._admitted_max:
                del table[next(iter(table))]  # the oldest (dicts keep insertion order)
        return admitted

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_closing(message: ASGIMessage) -> None:
            # Close the JWKS/introspection HTTP clients inside the loop that opened them.
            if message["type"] == "lifespan.shutdown.complete":
                await self.aclose()
            await send(message)

        await self.app(scope, receive, send_closing)

    async def _check_proof(
        self, scope: Scope, scheme: str, token: str, principal: Principal
    ) -> None:
        """DPoP (RFC 9449 §7), when configured: every request's own proof is checked."""
        assert self.dpop is not None
        proofs = [v.decode("latin-1") for k, v in scope["headers"] if k == b"dpop"]
        await self.dpop.check(
            scheme=scheme, token=token, claims=principal.claims, method=scope["method"],
            path=scope["path"], proofs=proofs,
        )

    def _parse(self, value: bytes) -> tuple[str, str]:
        """(scheme, token) of an ``Authorization`` value: RFC 6750 §2.1, or DPoP."""
        if len(value) > self._max_token + 16:
            raise InvalidToken("token too large")
        raw_scheme, _, credentials = value.partition(b" ")
        scheme = raw_scheme.decode("latin-1").lower()
        if scheme != "bearer" and not (scheme == "dpop" and self.dpop is not None):
            raise InvalidAuthRequest("unsupported authorization scheme")
        credentials = credentials.strip(b" ")
        # b64token (RFC 6750 §2.1): token characters, then only "=" padding. Deleting the
        # token characters must leave nothing but the padding (one C pass, no regex).
        body = credentials.rstrip(b"=")
        if not body or body.translate(None, _B64TOKEN_CHARS):
            raise InvalidAuthRequest("malformed bearer credentials")
        if len(credentials) > self._max_token:
            raise InvalidToken("token too large")
        return scheme, credentials.decode("ascii")

    async def _buffer_body(
        self, scope: Scope, receive: Receive
    ) -> tuple[bytes | None, Receive | None]:
        if scope.get("method") not in _BODY_METHODS:
            return None, None
        self._check_declared_length(scope)
        try:
            body = await read_body(receive, self._max_body)
        except PayloadTooLarge:
            raise BodyTooLarge("body too large") from None
        if body is None:
            return b"", None  # the client went away
        replayed = False

        async def replay() -> ASGIMessage:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return body, replay

    def _check_declared_length(self, scope: Scope) -> None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                self._check_length(value)

    def _check_length(self, value: bytes) -> None:
        try:
            declared = int(value)
        except ValueError:
            raise InvalidAuthRequest("malformed content-length") from None
        if declared > self._max_body:
            raise BodyTooLarge("declared body too large")

    def _check_scopes(self, principal: Principal, body: bytes | None) -> None:
        calls = calls_in(body) if body and self._scope_map else []
        needed = required_for(calls, self._base, self._scope_map) if calls else self._base
        if not needed or needed <= principal.scopes:
            return  # the common case: no hierarchy to walk
        granted = (expand_scopes(principal.scopes, self._hierarchy) if self._hierarchy
                   else principal.scopes)
        if not needed <= granted:
            raise InsufficientTokenScope("missing scopes", scopes=needed)

    async def _refuse(self, scope: Scope, send: Send, exc: AuthenticationError) -> None:
        correlation = uuid.uuid4().hex[:16]
        log.info(
            "auth refused id=%s status=%s reason=%s method=%s path=%s",
            correlation,
            exc.status,
            exc.detail,
            scope.get("method"),
            scope.get("path"),
        )
        response = self.on_error(scope, exc)
        headers = [*response.headers, (b"x-correlation-id", correlation.encode())]
        await respond(send, response.status, response.body, headers=headers)

    async def aclose(self) -> None:
        close = getattr(self.validator, "aclose", None)
        if close is not None:
            await close()


def _check_query(query: bytes) -> None:
    """RFC 6750 §2.3 is not supported: a token in the query string is a 400."""
    if any(k == "access_token" for k, _ in parse_qsl(query.decode("latin-1"), True)):
        raise InvalidAuthRequest("token in query string")


def _check_unbound(principal: Principal) -> None:
    """Without DPoP configured, a DPoP-bound token presented as a bearer token is still
    refused (RFC 9449 §7.1)."""
    if principal.claims.get("cnf") is not None:
        raise InvalidToken("a DPoP-bound token was presented as a bearer token")


def _dpop_check(
    config: ResourceServerConfig, store: ReplayStore | None
) -> DPoPResourceCheck | None:
    settings = config.dpop
    if settings is None:
        return None
    if store is None:
        store = MemoryStore()
    nonces = (
        DPoPNonces(bytes.fromhex(settings.nonce_secret)) if settings.nonce_secret else None
    )
    policy = DPoPPolicy(algorithms=frozenset(settings.algorithms), max_age=settings.max_age)
    verifier = DPoPVerifier(store=store, policy=policy, nonces=nonces)
    return DPoPResourceCheck(
        verifier, origin=config.origin, required=settings.required,
        algorithms=settings.algorithms,
    )


__all__ = [
    "BearerAuthMiddleware",
    "CallScopes",
    "ErrorResponse",
    "ScopeTable",
    "build_validator",
    "calls_in",
    "default_on_error",
]
