"""The Identity Assertion JWT Authorization Grant (ID-JAG), and its validation at the MCP
authorization server.

An enterprise IdP issues an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant §3)
by RFC 8693 token exchange; the client presents it to the MCP authorization server as an
RFC 7523 §2.1 JWT-bearer grant (the MCP Enterprise-Managed Authorization extension, §4,
§5). ``verify_id_jag`` is the acceptance check, a pure function of (assertion, the
trusted IdPs' key sets, now, this issuer, the authenticated client, the registered
resources and scopes): no clock, no network, no store. Refusals are
``TokenEndpointError`` subclasses carrying the OAuth error to send:

1. the authenticated client is registered here for ID-JAG grants
   (``unauthorized_client``; authenticating it is the token endpoint's job, before);
   size and shape: a compact JWS of at most ``max_bytes`` (a JWE or anything else is
   ``invalid_grant``);
2. header ``typ`` is ``oauth-id-jag+jwt`` (draft §3, RFC 8725 §3.11), so an ID token or
   access token from the same IdP is no grant; ``alg`` is on the allow-list (never read
   from the token alone: ``none`` and HS* cannot get in, EMA §7.4.1); no ``crit``;
3. ``iss`` is a trusted IdP, compared as a plain string (it picks whose keys to use; an
   untrusted issuer is refused before any key lookup or fetch), and ``alg`` is one that
   IdP may use;
4. the signature, with that IdP's key named by ``kid`` (``UnknownGrantKey`` lets the
   caller refetch the key set once, with a cooldown). ``jku``/``x5u``/``jwk`` headers
   are never used: keys come from configuration only;
5. ``aud`` is this authorization server's issuer, exactly; an array must have exactly
   one element (EMA §7.6.2);
6. ``exp`` and ``iat`` present, the current time inside the window with ``leeway``
   seconds of skew, ``nbf`` honoured, and the lifetime at most ``max_lifetime``
   (ID-JAGs are short-lived, EMA §7.4.2);
7. ``jti`` present (its single use is recorded by the caller, see below), ``sub`` a
   non-empty string;
8. ``client_id`` equals the authenticated client (draft §4.4.1);
9. ``resource``: every value is a resource registered here (``invalid_grant``, EMA
   §7.6.2: ``aud`` and ``resource`` are a bound pair); the ``resource`` request
   parameter, if sent, must be one of them, and the one chosen must be open to this
   client (``invalid_target``, RFC 8707 §2);
10. ``scope``: the ID-JAG's scopes must be registered for that resource
    (``invalid_grant``, EMA §7.6.2); the ``scope`` request parameter may only narrow them
    (asking for more is ``invalid_scope``: RFC 6749 §5.2 "exceeds the scope granted by
    the resource owner"); what is issued is their intersection (EMA §7.2.1), narrowed
    again to what this client may get; if that leaves nothing of what was asked for,
    ``invalid_scope``;
11. ``tenant``, if the IdP lists allowed tenants, is one of them.

Single use of ``jti`` (EMA §7.4.2: required in this profile) is the *last* gate, in
``mcpcore.auth.issuer.ema``, through a shared ``Store``: only an assertion that passed every
check above is recorded, so a refused request never burns a good grant, and nobody
without the IdP's key can fill the replay store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpcore.auth import jws
from mcpcore.auth.config import SUPPORTED_ALGORITHMS
from mcpcore.auth.errors import (
    InvalidGrant,
    InvalidScope,
    InvalidTarget,
    UnauthorizedClient,
    UnknownGrantKey,
)
from mcpcore.auth.jwks import KeySet
from mcpcore.auth.terms import ID_JAG_TYP
from mcpcore.auth.times import numeric_claim

_TYPES = frozenset({ID_JAG_TYP, "application/" + ID_JAG_TYP})
_MAX_ID_LENGTH = 255


@dataclass(frozen=True, slots=True)
class TrustedIdp:
    """An enterprise IdP whose ID-JAGs this authorization server accepts.

    ``issuer`` is compared with ``==``, never normalised. Keys come from ``jwks_uri``
    only (configuration, never a URL in a token). ``tenants``: the ``tenant`` claim
    must be one of these (None: not checked). ``subject_prefix`` namespaces this IdP's
    subjects in the access tokens we issue (required, and distinct, when several IdPs
    are trusted: two IdPs may both have a user ``42``). ``require_resource``: refuse
    ID-JAGs without a ``resource`` claim (the EMA binding of ``aud`` and ``resource``).
    """

    issuer: str
    jwks_uri: str
    algorithms: tuple[str, ...] = ("RS256", "PS256", "ES256", "EdDSA")
    tenants: tuple[str, ...] | None = None
    subject_prefix: str = ""
    require_resource: bool = True


@dataclass(frozen=True, slots=True)
class EmaClient:
    """A client allowed to use ID-JAG grants here, and what it may get.

    ``resources``/``scopes`` None: any registered resource, any scope the grant carries.
    """

    client_id: str
    resources: frozenset[str] | None = None
    scopes: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class IdJagPolicy:
    """What ``verify_id_jag`` checks: who we are, whom we trust, what we serve."""

    #: This authorization server's issuer identifier (the ``aud`` an ID-JAG must carry).
    issuer: str
    idps: Mapping[str, TrustedIdp]
    #: Registered resources (MCP servers) and the scopes each defines.
    resources: Mapping[str, frozenset[str]]
    clients: Mapping[str, EmaClient] = field(default_factory=dict)
    leeway: float = 30.0
    max_lifetime: float = 600.0
    max_bytes: int = 16 * 1024


@dataclass(frozen=True, slots=True)
class IdJagGrant:
    """A verified ID-JAG and what it grants: the access token to issue follows from it.

    ``subject`` is the IdP's ``sub`` with the IdP's ``subject_prefix``; ``resource`` is
    the audience of the access token; ``scopes`` the scopes to issue (possibly none).
    """

    idp: str
    subject: str
    tenant: str | None
    client_id: str
    resource: str
    scopes: frozenset[str]
    jti: str
    expires_at: float
    #: The verified claims (for account linking: ``email``, ``acr``, ``amr``, ...).
    claims: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def replay_key(self) -> str:
        """Store key marking this ID-JAG used: a digest of issuer and ``jti`` (bounded
        length, whatever the IdP puts in ``jti``)."""
        digest = hashlib.sha256(f"{self.idp}\x00{self.jti}".encode()).hexdigest()
        return f"idjag:jti:{digest[:40]}"


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    return numeric_claim(claims, name, InvalidGrant)


def _identifier(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidGrant(f"claim {name} is missing or not a string")
    if len(value) > _MAX_ID_LENGTH:
        raise InvalidGrant(f"claim {name} is too long")
    return value


def _check_header(header: Mapping[str, Any]) -> str:
    typ = header.get("typ")
    if not isinstance(typ, str) or typ.lower() not in _TYPES:
        raise InvalidGrant("typ is not oauth-id-jag+jwt")
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in SUPPORTED_ALGORITHMS:
        raise InvalidGrant("algorithm not allowed")
    if "crit" in header:
        raise InvalidGrant("critical header parameters are not supported")
    kid = header.get("kid")
    if kid is not None and not isinstance(kid, str):
        raise InvalidGrant("kid is not a string")
    return alg


def _check_times(claims: Mapping[str, Any], *, now: float, policy: IdJagPolicy) -> float:
    exp, iat, nbf = (_number(claims, n) for n in ("exp", "iat", "nbf"))
    if exp is None or iat is None:
        raise InvalidGrant("exp and iat are required")
    if now >= exp + policy.leeway:
        raise InvalidGrant("the grant expired")
    if iat > now + policy.leeway:
        raise InvalidGrant("the grant was issued in the future")
    if nbf is not None and now + policy.leeway < nbf:
        raise InvalidGrant("the grant is not yet valid")
    if exp - iat > policy.max_lifetime:
        raise InvalidGrant("the grant lives longer than allowed")
    return exp


def _resources(claims: Mapping[str, Any]) -> tuple[str, ...] | None:
    value = claims.get("resource")
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if (
        not isinstance(values, list)
        or not values
        or len(values) > 16
        or not all(isinstance(v, str) and v for v in values)
    ):
        raise InvalidGrant("resource claim is malformed")
    return tuple(values)


def _scopes(value: object, what: str) -> frozenset[str]:
    if not isinstance(value, str):
        raise InvalidGrant(f"{what} is not a string")
    return frozenset(value.split())


def _choose_resource(
    claimed: tuple[str, ...] | None,
    requested: str | None,
    *,
    idp: TrustedIdp,
    client: EmaClient,
    policy: IdJagPolicy,
) -> str:
    if claimed is None:
        if idp.require_resource:
            raise InvalidGrant("the grant names no resource")
        if requested is None:
            raise InvalidTarget("the grant names no resource and the request none either")
        claimed = (requested,)
    unknown = [r for r in claimed if r not in policy.resources]
    if unknown:
        raise InvalidGrant("the grant is for a resource this server does not serve")
    if requested is not None:
        if requested not in claimed:
            raise InvalidTarget("the requested resource is not one the grant names")
        chosen = requested
    elif len(claimed) == 1:
        chosen = claimed[0]
    else:
        raise InvalidTarget("the grant names several resources: request one")
    if client.resources is not None and chosen not in client.resources:
        raise InvalidTarget("this client may not get tokens for that resource")
    return chosen


def _grant_scopes(
    claims: Mapping[str, Any],
    requested: str | None,
    *,
    resource: str,
    client: EmaClient,
    policy: IdJagPolicy,
) -> frozenset[str]:
    granted = _scopes(claims["scope"], "scope claim") if "scope" in claims else frozenset()
    if not granted <= policy.resources[resource]:
        raise InvalidGrant("the grant carries scopes this resource does not define")
    wanted = granted
    if requested is not None:
        wanted = frozenset(requested.split())
        if not wanted <= granted:
            raise InvalidScope("the request asks for scopes the grant does not carry")
    issued = wanted if client.scopes is None else wanted & client.scopes
    if wanted and not issued:
        raise InvalidScope("policy allows this client none of the requested scopes")
    return issued


def verify_id_jag(
    assertion: str,
    keys: Mapping[str, KeySet | None],
    *,
    now: float,
    policy: IdJagPolicy,
    client_id: str,
    resource: str | None = None,
    scope: str | None = None,
) -> IdJagGrant:
    """Validate an ID-JAG presented by the authenticated client ``client_id``; pure.

    ``keys`` maps each trusted IdP issuer to its current key set (None: not loaded,
    which raises ``UnknownGrantKey`` so the caller can load it). ``resource`` and
    ``scope`` are the token request's parameters, if sent. The module docstring lists
    the checks, in order, and the error each refusal carries.

    >>> verify_id_jag("not-a-jwt", {}, now=0, policy=IdJagPolicy(
    ...     "https://as.example", idps={}, resources={}, clients={"app": EmaClient("app")}),
    ...     client_id="app")
    Traceback (most recent call last):
    mcpcore.auth.errors.InvalidGrant: not a JWS in compact form
    """
    client = policy.clients.get(client_id)
    if client is None:
        raise UnauthorizedClient("this client is not registered for ID-JAG grants")
    if len(assertion) > policy.max_bytes:
        raise InvalidGrant("assertion too large")
    try:
        parsed = jws.parse_compact(assertion)
    except jws.MalformedJws as exc:
        raise InvalidGrant(str(exc)) from None
    alg = _check_header(parsed.header)
    claims = parsed.payload
    issuer = claims.get("iss")
    idp = policy.idps.get(issuer) if isinstance(issuer, str) else None
    if idp is None:
        raise InvalidGrant("the grant's issuer is not a trusted IdP")
    if alg not in idp.algorithms:
        raise InvalidGrant("algorithm not allowed for this IdP")
    keyset = keys.get(idp.issuer)
    if keyset is None:
        raise UnknownGrantKey(idp.issuer, "keys not loaded")
    candidates = keyset.find(parsed.header.get("kid"), alg)
    if not candidates:
        raise UnknownGrantKey(idp.issuer)
    if len(candidates) > 1:
        raise InvalidGrant("the grant has no kid and the IdP publishes several keys")
    if not jws.verify(parsed, alg, candidates[0].key):
        raise InvalidGrant("signature check failed")

    aud = claims.get("aud")
    if isinstance(aud, list) and len(aud) == 1:
        aud = aud[0]
    if not isinstance(aud, str) or aud != policy.issuer:
        raise InvalidGrant("the grant's audience is not this authorization server")
    expires_at = _check_times(claims, now=now, policy=policy)
    jti = _identifier(claims, "jti")
    subject = _identifier(claims, "sub")
    if claims.get("client_id") != client_id:
        raise InvalidGrant("the grant was issued to another client")
    chosen = _choose_resource(
        _resources(claims), resource, idp=idp, client=client, policy=policy
    )
    scopes = _grant_scopes(claims, scope, resource=chosen, client=client, policy=policy)
    tenant = claims.get("tenant")
    if tenant is not None and not isinstance(tenant, str):
        raise InvalidGrant("tenant claim is not a string")
    if idp.tenants is not None and tenant not in idp.tenants:
        raise InvalidGrant("the grant's tenant is not allowed")
    return IdJagGrant(
        idp=idp.issuer,
        subject=idp.subject_prefix + subject,
        tenant=tenant,
        client_id=client_id,
        resource=chosen,
        scopes=scopes,
        jti=jti,
        expires_at=expires_at,
        claims=claims,
    )


__all__ = [
    "EmaClient",
    "IdJagGrant",
    "IdJagPolicy",
    "TrustedIdp",
    "verify_id_jag",
]
