"""One typed configuration object for the resource server, loadable from TOML or env.

Everything a platform team sets lives in ``ResourceServerConfig``: which issuers are
trusted (spelled exactly as their metadata spells ``issuer``), where their keys or
introspection endpoints are, the canonical resource URL tokens must be bound to, the
algorithm allow-list, and which scopes each method or tool needs. It is validated once,
at start-up; unsafe settings (``none`` or HS* algorithms, leeway over 60 s, plain http to
a non-loopback host, unknown keys in a file) raise ``ConfigurationError``.

    resource = "https://mcp.example.com/mcp"
    required_scopes = ["mcp"]
    [[authorization_servers]]
    issuer = "https://idp.example.com/tenant1"
    jwks_uri = "https://idp.example.com/tenant1/jwks"
    [scope_map]
    "tools/call:delete_file" = ["files:write"]
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import msgspec

from mcpcore.auth.errors import ConfigurationError, UnsafeUrl
from mcpcore.auth.urls import (
    LOOPBACK_SWITCH,
    NetworkPolicy,
    check_url,
    is_loopback_host,
    scheme_and_authority,
)

#: Asymmetric algorithms we know how to check. HS* and ``none`` are never allowed: a
#: resource server holding a shared secret could mint tokens, and HS/RS confusion
#: (RFC 8725 §2.1) starts with letting HS in.
SUPPORTED_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
MAX_LEEWAY = 60


def canonical_uri(uri: str) -> str:
    """Lowercase scheme and host, drop the default port and one trailing slash.

    Used to compare audiences (RFC 8707 §2; the spec's "Canonical Server URI"); issuers
    are never normalised.

    >>> canonical_uri("HTTPS://MCP.Example.com:443/mcp/")
    'https://mcp.example.com/mcp'
    """
    parts = urlsplit(uri)
    scheme, host = scheme_and_authority(parts)
    path = parts.path[:-1] if parts.path.endswith("/") else parts.path
    return urlunsplit((scheme, host, path, parts.query, ""))


@dataclass(frozen=True, slots=True)
class IssuerConfig:
    """A trusted authorization server. ``issuer`` is compared with ``==``, never normalised."""

    issuer: str
    jwks_uri: str | None = None
    introspection_endpoint: str | None = None
    #: Client credentials the resource server uses at the introspection endpoint.
    introspection_client_id: str | None = None
    introspection_client_secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class JwksSettings:
    timeout: float = 5.0
    max_bytes: int = 64 * 1024
    #: TTL from ``Cache-Control: max-age`` is clamped into [min_ttl, max_ttl].
    min_ttl: float = 300.0
    max_ttl: float = 86_400.0
    #: At most one refetch per cooldown when a token names an unknown ``kid``.
    refetch_cooldown: float = 30.0
    #: Keep serving the last good key set this long after its TTL if refetching fails.
    stale_grace: float = 3_600.0


@dataclass(frozen=True, slots=True)
class IntrospectionSettings:
    timeout: float = 5.0
    max_bytes: int = 64 * 1024
    #: Upper bound on caching an active result (never past the token's ``exp``).
    cache_ttl: float = 60.0
    max_entries: int = 10_000


@dataclass(frozen=True, slots=True)
class DPoPSettings:
    """DPoP at the resource server (RFC 9449 §7). Present means: accept the ``DPoP``
    scheme, check each proof, and advertise it in PRM."""

    algorithms: tuple[str, ...] = ("ES256", "RS256", "PS256", "EdDSA")
    #: Refuse tokens that are not DPoP-bound (PRM ``dpop_bound_access_tokens_required``).
    required: bool = False
    #: With a secret (16+ bytes, hex), proofs must carry a fresh server nonce (§9).
    nonce_secret: str | None = field(default=None, repr=False)
    #: A proof is fresh for this long after its ``iat``.
    max_age: float = 300.0


@dataclass(frozen=True, slots=True)
class ResourceServerConfig:
    """How this MCP server checks bearer tokens.

    >>> cfg = ResourceServerConfig(
    ...     resource="https://mcp.example.com/mcp",
    ...     authorization_servers=(IssuerConfig("https://idp.example.com",
    ...                                         jwks_uri="https://idp.example.com/jwks"),),
    ...     required_scopes=frozenset({"mcp"}))
    >>> cfg.metadata_path
    '/.well-known/oauth-protected-resource/mcp'
    """

    resource: str
    authorization_servers: tuple[IssuerConfig, ...]
    algorithms: tuple[str, ...] = ("RS256", "PS256", "ES256", "EdDSA")
    required_scopes: frozenset[str] = frozenset()
    scope_map: Mapping[str, frozenset[str]] = field(default_factory=dict)
    scope_hierarchy: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: Published in PRM; defaults to required scopes plus every scope in the map.
    scopes_supported: tuple[str, ...] | None = None
    leeway: float = 30.0
    required_claims: tuple[str, ...] = ("iss", "sub", "aud", "exp", "iat")
    #: Strict RFC 9068: only ``at+jwt`` / ``application/at+jwt``. Lenient (default) also
    #: takes ``JWT`` or no ``typ``; other explicit types are always refused.
    strict_typ: bool = False
    tenant_claim: str = "tid"
    max_token_bytes: int = 8 * 1024
    #: Remember a verified JWT (by SHA-256 of the whole token) for this many seconds so
    #: repeat requests skip the signature check: identical bytes verify identically, so
    #: nothing is weakened. Times and scopes are still checked on every request, and
    #: entries die when the issuer's key set changes (a withdrawn key stops working at
    #: once). 0 turns it off.
    verified_token_cache_ttl: float = 60.0
    verified_token_cache_size: int = 10_000
    max_body_bytes: int = 1024 * 1024
    resource_name: str | None = None
    resource_documentation: str | None = None
    jwks: JwksSettings = field(default_factory=JwksSettings)
    introspection: IntrospectionSettings = field(default_factory=IntrospectionSettings)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    #: DPoP-bound tokens (RFC 9449); None: Bearer only (a bound token is still refused
    #: when presented as a bearer token).
    dpop: DPoPSettings | None = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.resource)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ConfigurationError("resource must be an absolute http(s) URL")
        if parts.fragment or "#" in self.resource:
            raise ConfigurationError("resource must not have a fragment")
        if canonical_uri(self.resource) != self.resource:
            raise ConfigurationError(
                f"resource must be canonical: use {canonical_uri(self.resource)!r}"
            )
        if parts.scheme == "http" and not (
            self.network.allow_loopback and is_loopback_host(parts.hostname)
        ):
            raise ConfigurationError(
                "an http resource is only for local development, on a loopback host "
                f"(127.0.0.1, localhost), with {LOOPBACK_SWITCH} (TOML: [network] "
                "allow_loopback = true; environment: MCPCORE_AUTH_ALLOW_LOOPBACK=1); "
                "anywhere else the resource must be https")
        if not self.authorization_servers:
            raise ConfigurationError("at least one authorization server is required")
        bad = set(self.algorithms) - SUPPORTED_ALGORITHMS
        if bad or not self.algorithms:
            raise ConfigurationError(
                f"algorithms must be a non-empty subset of {sorted(SUPPORTED_ALGORITHMS)}"
            )
        if not 0 <= self.verified_token_cache_ttl <= 300:
            raise ConfigurationError("verified_token_cache_ttl must be within 0..300 seconds")
        if not 0 <= self.leeway <= MAX_LEEWAY:
            raise ConfigurationError(f"leeway must be within 0..{MAX_LEEWAY} seconds")
        if self.dpop is not None:
            if not self.dpop.algorithms or set(self.dpop.algorithms) - SUPPORTED_ALGORITHMS:
                raise ConfigurationError("dpop.algorithms must be asymmetric JWS algorithms")
            if self.dpop.nonce_secret is not None:
                try:
                    secret = bytes.fromhex(self.dpop.nonce_secret)
                except ValueError:
                    raise ConfigurationError("dpop.nonce_secret must be hex") from None
                if len(secret) < 16:
                    raise ConfigurationError("dpop.nonce_secret needs at least 16 bytes")
        if "offline_access" in self.published_scopes:
            raise ConfigurationError(
                "offline_access must not be advertised (the spec's Refresh Tokens section)")
        seen: set[str] = set()
        for server in self.authorization_servers:
            if server.issuer in seen:
                raise ConfigurationError("an issuer is listed twice")
            seen.add(server.issuer)
            if not server.jwks_uri and not server.introspection_endpoint:
                raise ConfigurationError("each issuer needs a jwks_uri or introspection_endpoint")
            for url in (server.jwks_uri, server.introspection_endpoint):
                if url is not None:
                    try:
                        check_url(url, self.network)
                    except UnsafeUrl as exc:
                        raise ConfigurationError(f"{url!r}: {exc}") from None

    # -- derived values -------------------------------------------------------------

    @property
    def issuers(self) -> tuple[str, ...]:
        return tuple(s.issuer for s in self.authorization_servers)

    @property
    def published_scopes(self) -> tuple[str, ...]:
        if self.scopes_supported is not None:
            return self.scopes_supported
        every = set(self.required_scopes)
        for scopes in self.scope_map.values():
            every |= scopes
        return tuple(sorted(every))

    @property
    def resource_path(self) -> str:
        """Path of the MCP endpoint (``/mcp``), empty for a root resource."""
        return urlsplit(self.resource).path.rstrip("/")

    @property
    def origin(self) -> str:
        parts = urlsplit(self.resource)
        return urlunsplit((parts.scheme, parts.netloc, "", "", ""))

    @property
    def metadata_path(self) -> str:
        """RFC 9728 §3.1: the well-known segment goes between authority and path."""
        return "/.well-known/oauth-protected-resource" + self.resource_path

    @property
    def metadata_url(self) -> str:
        return self.origin + self.metadata_path

    # -- loading --------------------------------------------------------------------

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ResourceServerConfig:
        """Build from plain data (parsed TOML/JSON). Unknown keys are an error: a typo in
        a security setting must not silently fall back to a default."""
        return convert_settings(data, cls, nested=_NESTED,
                                lists={"authorization_servers": IssuerConfig})

    @classmethod
    def from_toml(cls, path: str | Path) -> ResourceServerConfig:
        return cls.from_mapping(read_toml(path))

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, prefix: str = "MCPCORE_AUTH_"
    ) -> ResourceServerConfig:
        """Load ``{prefix}CONFIG`` (a TOML file) if set, then apply single-issuer overrides:
        RESOURCE, ISSUER, JWKS_URI, INTROSPECTION_ENDPOINT, INTROSPECTION_CLIENT_ID,
        INTROSPECTION_CLIENT_SECRET, REQUIRED_SCOPES and ALGORITHMS (space-separated),
        ALLOW_LOOPBACK (``1``/``true``)."""
        get, data = settings_from_env(environ, prefix)
        if value := get("RESOURCE"):
            data["resource"] = value
        if value := get("REQUIRED_SCOPES"):
            data["required_scopes"] = value.split()
        if value := get("ALGORITHMS"):
            data["algorithms"] = value.split()
        if issuer := get("ISSUER"):
            server: dict[str, Any] = {"issuer": issuer}
            for key in (
                "jwks_uri",
                "introspection_endpoint",
                "introspection_client_id",
                "introspection_client_secret",
            ):
                if value := get(key.upper()):
                    server[key] = value
            data["authorization_servers"] = [server]
        if "resource" not in data:
            raise ConfigurationError(f"{prefix}RESOURCE (or {prefix}CONFIG) is required")
        if "authorization_servers" not in data:
            raise ConfigurationError(f"{prefix}ISSUER (or authorization_servers in "
                                     f"{prefix}CONFIG) is required")
        return cls.from_mapping(data)


def read_toml(path: str | Path, setting: str = "") -> dict[str, Any]:
    """The TOML document at ``path``; a file that cannot be read or parsed is a
    ``ConfigurationError`` naming the file (and the ``setting`` that named it, if any)."""
    named = f"{setting}={path}" if setting else str(path)
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigurationError(f"{named}: cannot read the file ({exc.strerror or exc})"
                                 ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{named}: not a TOML document ({exc})") from None


_NESTED: dict[str, type] = {
    "jwks": JwksSettings,
    "introspection": IntrospectionSettings,
    "network": NetworkPolicy,
    "dpop": DPoPSettings,
}


_Settings = TypeVar("_Settings")


def convert_settings(data: Mapping[str, Any], cls: type[_Settings], *,
                     nested: Mapping[str, type] | None = None,
                     lists: Mapping[str, type] | None = None) -> _Settings:
    """Build a settings class from plain data (parsed TOML/JSON): the one loader of the
    resource server's and the EMA's settings. Unknown keys are an error, at the top, in
    the ``nested`` sections and in the items of the ``lists`` (a typo in a security
    setting must not silently fall back to a default); so is a value of the wrong type."""
    _reject_unknown(data, cls, "")
    for key, value in data.items():
        if nested and key in nested and isinstance(value, Mapping):
            _reject_unknown(value, nested[key], f"{key}.")
        if lists and key in lists and isinstance(value, list):
            for item in value:
                if isinstance(item, Mapping):
                    _reject_unknown(item, lists[key], f"{key}.")
    try:
        return msgspec.convert(dict(data), cls)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(str(exc)) from None


def settings_from_env(environ: Mapping[str, str] | None, prefix: str
                      ) -> tuple[Callable[[str], str | None], dict[str, Any]]:
    """What every ``from_env`` starts with: a getter of ``{prefix}NAME`` (empty counts as
    unset), and the settings of the TOML file ``{prefix}CONFIG`` names (empty if unset)
    with ``{prefix}ALLOW_LOOPBACK`` (``1``/``true``/``yes``) applied to ``network``."""
    env = os.environ if environ is None else environ

    def get(name: str) -> str | None:
        return env.get(prefix + name) or None

    data: dict[str, Any] = {}
    if path := get("CONFIG"):
        data = read_toml(path, prefix + "CONFIG")
    if value := get("ALLOW_LOOPBACK"):
        network = dict(data.get("network", {}))
        network["allow_loopback"] = value.lower() in ("1", "true", "yes")
        data["network"] = network
    return get, data


def _reject_unknown(data: Mapping[str, Any], cls: type, where: str) -> None:
    known = {f.name for f in fields(cls)}
    for key in data:
        if key not in known:
            raise ConfigurationError(f"unknown setting {where}{key!r}")


__all__ = [
    "MAX_LEEWAY",
    "SUPPORTED_ALGORITHMS",
    "DPoPSettings",
    "IntrospectionSettings",
    "IssuerConfig",
    "JwksSettings",
    "ResourceServerConfig",
    "canonical_uri",
    "convert_settings",
    "read_toml",
    "settings_from_env",
]
