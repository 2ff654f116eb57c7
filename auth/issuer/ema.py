"""Enterprise-Managed Authorization at the MCP authorization server: accepting ID-JAGs.

The MCP Enterprise-Managed Authorization extension (EMA §5) has the client present an
ID-JAG from the enterprise IdP as an RFC 7523 §2.1 JWT-bearer grant. This module is that
grant, independent of any web framework:

* ``EmaConfig``: the typed configuration (TOML or environment, validated once at
  start-up): this server's issuer, the trusted IdPs (issuer, ``jwks_uri``, algorithms,
  tenants), the resources it serves and their scopes, and which clients may use the
  grant for which resources and scopes;
* ``IdJagValidator``: the IdPs' key sets (``auth/jwks.py``: fetched SSRF-safely through
  ``auth/urls.py``, cached, refetched on an unknown ``kid`` at most once per cooldown,
  never rolled back to withdrawn keys), ``verify_id_jag`` (``auth/issuer/idjag.py``: every
  check, in order), then single use of ``jti`` through the shared ``Store``
  (``set_if_absent`` with a TTL until ``exp`` plus the leeway; with ``RedisStore`` a
  replay on another instance of the fleet is refused too);
* ``IdJagGrantType``: the token-endpoint side: exactly one ``assertion``, at most one
  ``resource`` and ``scope``, then the validator; ``access_token_claims`` says what the
  access token carries (subject, tenant, client, ``auth_kind: "ema"`` for the policy
  layer) and that it is audience-restricted to the ID-JAG's ``resource`` (EMA §5.1).

Every refusal is a ``TokenEndpointError`` with its OAuth error; nothing is issued. The
ID-JAG itself is never logged, only its fingerprint (EMA §7.4.2).

    issuer = "https://auth.example.com"
    [[trusted_idps]]
    issuer = "https://idp.example.com"
    jwks_uri = "https://idp.example.com/jwks"
    [resources]
    "https://mcp.example.com/mcp" = ["files:read", "files:write"]
    [[clients]]
    client_id = "chat-app"
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from mcpcore.auth.config import (
    MAX_LEEWAY,
    SUPPORTED_ALGORITHMS,
    JwksSettings,
    convert_settings,
    read_toml,
    settings_from_env,
)
from mcpcore.auth.errors import (
    ConfigurationError,
    GrantUnavailable,
    InvalidGrant,
    InvalidTokenRequest,
    KeySetError,
    TokenEndpointError,
    UnknownGrantKey,
    UnsafeUrl,
)
from mcpcore.auth.issuer.idjag import (
    EmaClient,
    IdJagGrant,
    IdJagPolicy,
    TrustedIdp,
    verify_id_jag,
)
from mcpcore.auth.jwks import JwksCache, KeySet
from mcpcore.auth.redaction import fingerprint
from mcpcore.auth.terms import JWT_BEARER_GRANT
from mcpcore.auth.urls import NetworkPolicy, check_url
from mcpcore.stores.base import Store, StoreError

log = logging.getLogger("mcpcore.auth.issuer.ema")

#: What the policy layer reads as the principal's ``auth_kind`` (``mcpcore.policy``).
EMA_AUTH_KIND = "ema"
MAX_GRANT_LIFETIME = 3600.0


def _check_issuer(issuer: str, network: NetworkPolicy) -> None:
    parts = urlsplit(issuer)
    if parts.query or parts.fragment or "#" in issuer:
        raise ConfigurationError("issuer must have no query or fragment (RFC 8414 §2)")
    try:
        check_url(issuer, network)
    except UnsafeUrl as exc:
        raise ConfigurationError(f"issuer {issuer!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class EmaConfig:
    """How this authorization server accepts ID-JAGs (see the module docstring).

    >>> cfg = EmaConfig(
    ...     issuer="https://auth.example.com",
    ...     trusted_idps=(TrustedIdp("https://idp.example.com",
    ...                              jwks_uri="https://idp.example.com/jwks"),),
    ...     resources={"https://mcp.example.com/mcp": frozenset({"files:read"})},
    ...     clients=(EmaClient("chat-app"),))
    >>> cfg.policy().issuer
    'https://auth.example.com'
    """

    issuer: str
    trusted_idps: tuple[TrustedIdp, ...]
    resources: Mapping[str, frozenset[str]]
    clients: tuple[EmaClient, ...] = ()
    #: Clock skew allowed on ``exp``/``iat``/``nbf`` (seconds, at most 60).
    leeway: float = 30.0
    #: Refuse ID-JAGs whose ``exp - iat`` is longer than this (seconds).
    max_lifetime: float = 600.0
    max_assertion_bytes: int = 16 * 1024
    #: The access-token claim that carries the grant's ``tenant`` (our resource server
    #: reads ``tid`` by default: ``ResourceServerConfig.tenant_claim``).
    tenant_claim: str = "tid"
    jwks: JwksSettings = field(default_factory=JwksSettings)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)

    def __post_init__(self) -> None:
        _check_issuer(self.issuer, self.network)
        if not self.trusted_idps:
            raise ConfigurationError("at least one trusted IdP is required")
        issuers = [idp.issuer for idp in self.trusted_idps]
        if len(set(issuers)) != len(issuers):
            raise ConfigurationError("an IdP is listed twice")
        if self.issuer in issuers:  # the draft's cross-domain rule: no self-issued grants
            raise ConfigurationError("this server cannot trust itself as an IdP")
        prefixes = [idp.subject_prefix for idp in self.trusted_idps]
        if len(prefixes) > 1 and (not all(prefixes) or len(set(prefixes)) != len(prefixes)):
            raise ConfigurationError(
                "with several IdPs, each needs its own non-empty subject_prefix"
            )
        for idp in self.trusted_idps:
            bad = set(idp.algorithms) - SUPPORTED_ALGORITHMS
            if bad or not idp.algorithms:
                raise ConfigurationError(
                    f"{idp.issuer}: algorithms must be a non-empty subset of "
                    f"{sorted(SUPPORTED_ALGORITHMS)}"
                )
            if idp.tenants is not None and not idp.tenants:
                raise ConfigurationError(f"{idp.issuer}: tenants is empty (omit it instead)")
            try:
                check_url(idp.jwks_uri, self.network)
            except UnsafeUrl as exc:
                raise ConfigurationError(f"{idp.jwks_uri!r}: {exc}") from None
        if not self.resources:
            raise ConfigurationError("at least one resource is required")
        for resource in self.resources:
            parts = urlsplit(resource)
            if parts.scheme not in ("https", "http") or not parts.hostname or "#" in resource:
                raise ConfigurationError(f"resource {resource!r} must be an absolute URL")
        ids = [c.client_id for c in self.clients]
        if len(set(ids)) != len(ids):
            raise ConfigurationError("a client is listed twice")
        for client in self.clients:
            if client.resources is not None and not client.resources <= set(self.resources):
                raise ConfigurationError(f"client {client.client_id!r} names unknown resources")
        if not 0 <= self.leeway <= MAX_LEEWAY:
            raise ConfigurationError(f"leeway must be within 0..{MAX_LEEWAY} seconds")
        if not 0 < self.max_lifetime <= MAX_GRANT_LIFETIME:
            raise ConfigurationError(
                f"max_lifetime must be within 1..{int(MAX_GRANT_LIFETIME)} seconds"
            )

    def policy(self) -> IdJagPolicy:
        """What ``verify_id_jag`` checks, from this configuration."""
        return IdJagPolicy(
            issuer=self.issuer,
            idps={idp.issuer: idp for idp in self.trusted_idps},
            resources={r: frozenset(s) for r, s in self.resources.items()},
            clients={c.client_id: c for c in self.clients},
            leeway=self.leeway,
            max_lifetime=self.max_lifetime,
            max_bytes=self.max_assertion_bytes,
        )

    # -- loading --------------------------------------------------------------------

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> EmaConfig:
        """Build from plain data (parsed TOML/JSON). Unknown keys are an error: a typo in
        a security setting must not silently fall back to a default."""
        return convert_settings(data, cls, nested={"jwks": JwksSettings, "network": NetworkPolicy},
                                lists={"trusted_idps": TrustedIdp, "clients": EmaClient})

    @classmethod
    def from_toml(cls, path: str | Path) -> EmaConfig:
        return cls.from_mapping(read_toml(path))

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, prefix: str = "MCPCORE_EMA_"
    ) -> EmaConfig:
        """Load ``{prefix}CONFIG`` (a TOML file) if set, then apply overrides: ISSUER,
        IDP_ISSUER with IDP_JWKS_URI and IDP_ALGORITHMS (one IdP), RESOURCE with SCOPES
        (one resource), CLIENT_IDS (space-separated), ALLOW_LOOPBACK (``1``/``true``)."""
        get, data = settings_from_env(environ, prefix)
        if value := get("ISSUER"):
            data["issuer"] = value
        if issuer := get("IDP_ISSUER"):
            idp: dict[str, Any] = {"issuer": issuer, "jwks_uri": get("IDP_JWKS_URI")}
            if value := get("IDP_ALGORITHMS"):
                idp["algorithms"] = value.split()
            data["trusted_idps"] = [idp]
        if resource := get("RESOURCE"):
            data["resources"] = {resource: (get("SCOPES") or "").split()}
        if value := get("CLIENT_IDS"):
            data["clients"] = [{"client_id": c} for c in value.split()]
        if "issuer" not in data:
            raise ConfigurationError(f"{prefix}ISSUER (or {prefix}CONFIG) is required")
        return cls.from_mapping(data)


class IdJagValidator:
    """Accepts ID-JAGs: keys, every check of ``verify_id_jag``, single use of ``jti``.

    >>> validator = IdJagValidator(config, store)                           # doctest: +SKIP
    >>> grant = await validator.validate(assertion, client_id="chat-app")  # doctest: +SKIP

    ``store`` is the fleet's ``Store`` (``RedisStore`` for several instances: a ``jti``
    used on one is refused on all). The common case, a cached key, does no network I/O
    besides the one ``set_if_absent``.
    """

    def __init__(
        self,
        config: EmaConfig,
        store: Store,
        *,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.policy = config.policy()
        self.store = store
        self._clock = clock
        self.caches: dict[str, JwksCache] = {
            idp.issuer: JwksCache(
                idp.jwks_uri, config.jwks, config.network, client=client, monotonic=monotonic
            )
            for idp in config.trusted_idps
        }

    def current_keys(self) -> dict[str, KeySet | None]:
        return {issuer: cache.fresh() for issuer, cache in self.caches.items()}

    async def validate(
        self,
        assertion: str,
        *,
        client_id: str,
        resource: str | None = None,
        scope: str | None = None,
    ) -> IdJagGrant:
        """The grant an ID-JAG carries, once; or a ``TokenEndpointError``."""
        try:
            grant = await self._verify(assertion, client_id, resource, scope)
            await self._first_use(grant)
        except TokenEndpointError as exc:
            log.info("ID-JAG %s from client %r refused: %s (%s)",
                     fingerprint(assertion), client_id, exc.error, exc.detail)
            raise
        if log.isEnabledFor(logging.INFO):  # the hot path skips the digest when not logging
            log.info("ID-JAG %s accepted: idp=%s client=%r resource=%s scopes=%s",
                     fingerprint(assertion), grant.idp, client_id, grant.resource,
                     sorted(grant.scopes))
        return grant

    async def _verify(
        self, assertion: str, client_id: str, resource: str | None, scope: str | None
    ) -> IdJagGrant:
        keys = self.current_keys()
        tries = 0  # with the cached keys; after loading them; after one refetch
        while True:
            try:
                return verify_id_jag(
                    assertion, keys, now=self._clock(), policy=self.policy,
                    client_id=client_id, resource=resource, scope=scope,
                )
            except UnknownGrantKey as exc:
                tries += 1
                if tries == 3:
                    raise InvalidGrant("unknown signing key") from None
                try:
                    retry = await self.caches[exc.issuer].keys_for_retry(keys[exc.issuer])
                except KeySetError:
                    raise GrantUnavailable("the IdP's keys are unavailable") from None
                if retry is None:
                    raise InvalidGrant("unknown signing key") from None
                keys[exc.issuer] = retry

    async def _first_use(self, grant: IdJagGrant) -> None:
        # Until exp plus the leeway the grant would still be accepted: remember it that
        # long (EMA §7.4.2: at minimum until exp), and never for less than a second.
        ttl = max(grant.expires_at + self.policy.leeway - self._clock(), 1.0)
        try:
            first = await self.store.set_if_absent(grant.replay_key, b"1", ttl=ttl)
        except StoreError:
            raise GrantUnavailable("the replay store is unavailable") from None
        if not first:
            raise InvalidGrant("the grant was already used")

    async def aclose(self) -> None:
        for cache in self.caches.values():
            await cache.aclose()


def _single(form: Mapping[str, Sequence[str]], name: str, *, required: bool) -> str | None:
    values = form.get(name, ())
    if len(values) > 1:
        raise InvalidTokenRequest(f"{name} is repeated")
    if not values or values[0] == "":
        if required:
            raise InvalidTokenRequest(f"{name} is missing")
        return None
    return values[0]


@dataclass
class IdJagGrantType:
    """The JWT-bearer grant (RFC 7523 §2.1) with ID-JAGs, for a token endpoint.

    The endpoint authenticates the client first (a failure is ``invalid_client``,
    before anything here runs); then ``accept`` takes the form (each name with all its
    values, so a repeated parameter is seen) and returns the verified grant. Issue an
    access token with ``access_token_claims(grant)``, a short ``expires_in``,
    ``Cache-Control: no-store`` and no refresh token (the draft's §Refresh Token: the
    client gets a new ID-JAG instead).
    """

    validator: IdJagValidator
    grant_type: str = JWT_BEARER_GRANT

    async def accept(self, form: Mapping[str, Sequence[str]], *, client_id: str) -> IdJagGrant:
        assertion = _single(form, "assertion", required=True)
        assert assertion is not None
        return await self.validator.validate(
            assertion,
            client_id=client_id,
            resource=_single(form, "resource", required=False),
            scope=_single(form, "scope", required=False),
        )


def access_token_claims(grant: IdJagGrant, *, tenant_claim: str = "tid") -> dict[str, Any]:
    """The claims of the access token an ID-JAG grant earns (besides ``iss``, ``iat``,
    ``exp``, ``jti``): audience-restricted to the grant's resource (EMA §5.1), the
    subject, its tenant (as ``tenant_claim``), the client, the scopes, and ``auth_kind``
    so the policy layer sees an EMA principal as such."""
    claims: dict[str, Any] = {
        "sub": grant.subject,
        "aud": grant.resource,
        "client_id": grant.client_id,
        "auth_kind": EMA_AUTH_KIND,
    }
    if grant.scopes:
        claims["scope"] = " ".join(sorted(grant.scopes))
    if grant.tenant is not None:
        claims[tenant_claim] = grant.tenant
    return claims


__all__ = [
    "EMA_AUTH_KIND",
    "EmaConfig",
    "IdJagGrantType",
    "IdJagValidator",
    "access_token_claims",
]
