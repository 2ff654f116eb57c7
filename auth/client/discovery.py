"""Finding and validating the metadata a client needs: the MCP server's Protected
Resource Metadata (RFC 9728), then its authorization server's metadata (RFC 8414, or
OpenID Connect Discovery).

The order follows the authorization spec's "Authorization Server Discovery" page:

* PRM: the ``resource_metadata`` URL of the 401 challenge when there is one; otherwise
  (or if it fails) the path-based well-known URL, then the root one (RFC 9728 §3.1: the
  well-known segment goes between the authority and the path; no path-based probe for
  a server URL without a path).
* AS metadata for an issuer with a path, e.g. ``https://a.example/tenant1``:
  ``/.well-known/oauth-authorization-server/tenant1``, then
  ``/.well-known/openid-configuration/tenant1``, then
  ``/tenant1/.well-known/openid-configuration``; without a path, the first two at the
  root. The root ``oauth-authorization-server`` document is never asked for an issuer
  with a path (``urljoin`` would drop the path: it is not used here).

Validation, all before anything is sent to an authorization server:

* PRM ``resource`` must name the server we called (RFC 9728 §3.3, §7.3): the same
  scheme, host and port, and a path that is the server URL's path or a segment-wise
  prefix of it (a root document names the origin). ``authorization_servers`` is a
  non-empty list of strings.
* AS metadata ``issuer`` must be the issuer the URL was built from, compared as raw
  strings (RFC 8414 §3.3, OpenID Connect Discovery §4.3); a mismatch is fatal for that
  server and no further request goes to it. Issuers are never normalised.
* The authorization-code flow also needs ``authorization_endpoint`` and ``S256`` in
  ``code_challenge_methods_supported`` (the spec's security considerations require
  PKCE S256 and refusing a server that does not advertise it).
* Every endpoint URL passes the URL-safety rules of ``auth/urls.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from mcpcore.auth.client.steps import AuthFlow, fetch, json_object
from mcpcore.auth.errors import DiscoveryError, UnsafeUrl
from mcpcore.auth.urls import NetworkPolicy, check_url

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"
_ACCEPT = {"accept": "application/json"}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def prm_candidates(server_url: str, resource_metadata: str | None = None) -> list[str]:
    """Where to look for PRM, in order (see the module docstring).

    >>> for url in prm_candidates("https://mcp.example/public/mcp"):
    ...     print(url)
    https://mcp.example/.well-known/oauth-protected-resource/public/mcp
    https://mcp.example/.well-known/oauth-protected-resource
    """
    origin = _origin(server_url)
    path = urlsplit(server_url).path.rstrip("/")
    urls = [resource_metadata] if resource_metadata else []
    if path:
        urls.append(origin + PRM_WELL_KNOWN + path)
    urls.append(origin + PRM_WELL_KNOWN)
    return list(dict.fromkeys(urls))


def as_metadata_candidates(issuer: str) -> list[str]:
    """Where to look for an issuer's metadata, in order.

    >>> for url in as_metadata_candidates("https://a.example/tenant1"):
    ...     print(url)
    https://a.example/.well-known/oauth-authorization-server/tenant1
    https://a.example/.well-known/openid-configuration/tenant1
    https://a.example/tenant1/.well-known/openid-configuration
    """
    origin = _origin(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    if not path:
        return [origin + OAUTH_WELL_KNOWN, origin + OIDC_WELL_KNOWN]
    return [origin + OAUTH_WELL_KNOWN + path, origin + OIDC_WELL_KNOWN + path,
            origin + path + OIDC_WELL_KNOWN]


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s]


def resource_matches(resource: str, server_url: str) -> bool:
    """Does a PRM ``resource`` name the server at ``server_url``? Same origin (scheme and
    host compared case-insensitively, default ports equal), and the resource path is the
    server path or a segment-wise prefix of it. No fragment, no userinfo."""
    try:
        r, s = urlsplit(resource), urlsplit(server_url)
        r_port, s_port = r.port, s.port
    except ValueError:
        return False
    if r.fragment or "#" in resource or r.username is not None or r.password is not None:
        return False
    defaults = {"https": 443, "http": 80}
    if r.scheme.lower() != s.scheme.lower() or (r.hostname or "") != (s.hostname or ""):
        return False
    if (r_port or defaults.get(r.scheme.lower())) != (s_port or defaults.get(s.scheme.lower())):
        return False
    mine, theirs = _segments(r.path), _segments(s.path)
    return theirs[: len(mine)] == mine


@dataclass(frozen=True, slots=True)
class ProtectedResource:
    """Validated PRM. ``resource`` is kept verbatim: it is the ``resource`` we send."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    metadata_url: str
    document: Mapping[str, Any] = field(default_factory=dict, repr=False)


def parse_protected_resource(
    document: Mapping[str, Any], *, server_url: str, metadata_url: str
) -> ProtectedResource:
    """Validate a PRM document fetched from ``metadata_url`` for ``server_url``."""
    resource = document.get("resource")
    if not isinstance(resource, str) or not resource:
        raise DiscoveryError(f"resource metadata at {metadata_url} has no resource")
    if not resource_matches(resource, server_url):
        raise DiscoveryError(
            f"resource metadata names {resource!r}, which is not the server {server_url!r} "
            "(RFC 9728 §3.3): refusing to authorize for it"
        )
    servers = document.get("authorization_servers")
    if (
        not isinstance(servers, list)
        or not servers
        or not all(isinstance(s, str) and s for s in servers)
    ):
        raise DiscoveryError(f"resource metadata at {metadata_url} lists no authorization server")
    scopes = document.get("scopes_supported")
    if scopes is not None and not (
        isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)
    ):
        scopes = None
    return ProtectedResource(
        resource=resource,
        authorization_servers=tuple(servers),
        scopes_supported=tuple(scopes) if scopes is not None else None,
        metadata_url=metadata_url,
        document=dict(document),
    )


def discover_protected_resource(
    server_url: str, resource_metadata: str | None, network: NetworkPolicy
) -> AuthFlow[ProtectedResource]:
    """Fetch and validate PRM for ``server_url`` (candidates in order, first 200 wins)."""
    tried: list[str] = []
    for url in prm_candidates(server_url, resource_metadata):
        response = yield from fetch(
            httpx.Request("GET", url, headers=_ACCEPT), network, what="resource metadata"
        )
        document = json_object(response) if response.status_code == 200 else None
        if document is None:
            tried.append(f"{url} ({response.status_code})")
            continue
        return parse_protected_resource(document, server_url=server_url, metadata_url=url)
    raise DiscoveryError(f"no protected resource metadata found: tried {', '.join(tried)}")


def _strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


@dataclass(frozen=True, slots=True)
class AuthServerMetadata:
    """Validated authorization-server metadata; ``issuer`` is the raw string."""

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    grant_types_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    token_endpoint_auth_signing_alg_values_supported: tuple[str, ...] | None = None
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None
    #: RFC 9207 §3: ``authorization_response_iss_parameter_supported`` (default false).
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    metadata_url: str = ""
    document: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def require_code_flow(self) -> str:
        """The authorization endpoint, if this server can run the code flow with PKCE."""
        if not self.authorization_endpoint:
            raise DiscoveryError(f"{self.issuer} has no authorization_endpoint")
        if "S256" not in (self.code_challenge_methods_supported or ()):
            raise DiscoveryError(
                f"{self.issuer} does not advertise PKCE S256 (code_challenge_methods_supported)"
            )
        return self.authorization_endpoint

    @property
    def auth_methods(self) -> tuple[str, ...]:
        """``token_endpoint_auth_methods_supported``; RFC 8414 §2 default when absent."""
        return self.token_endpoint_auth_methods_supported or ("client_secret_basic",)


def parse_as_metadata(
    document: Mapping[str, Any], *, issuer: str, metadata_url: str, network: NetworkPolicy
) -> AuthServerMetadata:
    """Validate an issuer's metadata document (see the module docstring)."""
    claimed = document.get("issuer")
    if claimed != issuer:
        raise DiscoveryError(
            f"metadata at {metadata_url} claims issuer {claimed!r}, not {issuer!r} "
            "(RFC 8414 §3.3): not using this authorization server"
        )
    endpoints: dict[str, str | None] = {}
    for name in ("token_endpoint", "authorization_endpoint", "registration_endpoint"):
        value = document.get(name)
        if value is None:
            endpoints[name] = None
            continue
        if not isinstance(value, str):
            raise DiscoveryError(f"{issuer}: {name} is not a string")
        try:
            endpoints[name] = check_url(value, network)
        except UnsafeUrl as exc:
            raise DiscoveryError(f"{issuer}: {name} {value!r} refused: {exc}") from None
    token_endpoint = endpoints["token_endpoint"]
    if token_endpoint is None:
        raise DiscoveryError(f"{issuer}: metadata has no token_endpoint")
    return AuthServerMetadata(
        issuer=issuer,
        token_endpoint=token_endpoint,
        authorization_endpoint=endpoints["authorization_endpoint"],
        registration_endpoint=endpoints["registration_endpoint"],
        scopes_supported=_strings(document.get("scopes_supported")),
        grant_types_supported=_strings(document.get("grant_types_supported")),
        code_challenge_methods_supported=_strings(document.get("code_challenge_methods_supported")),
        token_endpoint_auth_methods_supported=_strings(
            document.get("token_endpoint_auth_methods_supported")
        ),
        token_endpoint_auth_signing_alg_values_supported=_strings(
            document.get("token_endpoint_auth_signing_alg_values_supported")
        ),
        dpop_signing_alg_values_supported=_strings(
            document.get("dpop_signing_alg_values_supported")
        ),
        iss_parameter_supported=document.get("authorization_response_iss_parameter_supported")
        is True,
        client_id_metadata_document_supported=document.get(
            "client_id_metadata_document_supported"
        )
        is True,
        metadata_url=metadata_url,
        document=dict(document),
    )


def discover_authorization_server(
    issuer: str, network: NetworkPolicy
) -> AuthFlow[AuthServerMetadata]:
    """Fetch and validate ``issuer``'s metadata (candidates in order; first 200 JSON)."""
    tried: list[str] = []
    for url in as_metadata_candidates(issuer):
        response = yield from fetch(
            httpx.Request("GET", url, headers=_ACCEPT), network,
            what="authorization server metadata",
        )
        document = json_object(response) if response.status_code == 200 else None
        if document is None:
            tried.append(f"{url} ({response.status_code})")
            continue
        return parse_as_metadata(document, issuer=issuer, metadata_url=url, network=network)
    raise DiscoveryError(f"no metadata for authorization server {issuer}: tried {', '.join(tried)}")


def choose_issuer(resource: ProtectedResource, current: str | None = None) -> str:
    """The authorization server to use: the current one while PRM still lists it, else
    the first listed (RFC 9728 §7.6: never one the PRM does not list)."""
    if current is not None and current in resource.authorization_servers:
        return current
    return resource.authorization_servers[0]


def select(values: Sequence[str] | None, preferred: Sequence[str]) -> str | None:
    """The first of ``preferred`` that ``values`` contains."""
    return next((p for p in preferred if values and p in values), None)


__all__ = [
    "OAUTH_WELL_KNOWN",
    "OIDC_WELL_KNOWN",
    "PRM_WELL_KNOWN",
    "AuthServerMetadata",
    "ProtectedResource",
    "as_metadata_candidates",
    "choose_issuer",
    "discover_authorization_server",
    "discover_protected_resource",
    "parse_as_metadata",
    "parse_protected_resource",
    "prm_candidates",
    "resource_matches",
    "select",
]
