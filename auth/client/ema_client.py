"""Enterprise-Managed Authorization on the client: ID token → ID-JAG → access token.

``EnterpriseGrant`` is a grant for ``mcpcore.auth.OAuth`` like the others
(``auth/client/grants.py``): on a 401 the session discovers the Protected Resource Metadata and
the authorization server's metadata, then the grant

1. trades the user's ID token for an ID-JAG at the enterprise IdP (EMA §4; the
   draft-ietf-oauth-identity-assertion-authz-grant §4.3 profile of RFC 8693 token
   exchange), with ``audience`` = that authorization server's issuer, ``resource`` =
   the PRM ``resource`` and the scopes the session asks for;
2. presents the ID-JAG to the authorization server as an RFC 7523 §2.1 JWT-bearer grant
   (EMA §5) with the client's own authentication *there*, asking for the scopes the IdP
   granted.

The user is never sent to the authorization server's authorization endpoint. On a 403
``insufficient_scope`` the session asks again for the union of scopes: a new ID-JAG for
that union. A refusal by the IdP (its policy) or the authorization server ends the
attempt (``IdJagRequestFailed``, ``TokenRequestFailed``): no retry, no other grant. An
ID-JAG is single use, so none is kept: each token costs a fresh one.

The first leg is sans-I/O on its own, like the other OAuth client steps:
``id_jag_request`` builds the ``httpx.Request``, ``parse_id_jag_response`` reads the
``httpx.Response``; whoever drives them sends the request (``EnterpriseGrant`` yields it
through ``auth/steps.fetch``, which applies the URL-safety rules of ``auth/urls.py``).

The request (RFC 8693 §2.1 with the draft's profile):

* ``grant_type`` token-exchange, ``requested_token_type`` id-jag;
* ``subject_token`` the ID token, ``subject_token_type`` id_token;
* ``audience``: the MCP authorization server's **issuer**, exactly as its metadata spells
  it (not its token endpoint, not the MCP server);
* ``resource``: the MCP server's resource identifier, exactly as its Protected Resource
  Metadata spells it (the EMA profile binds the two);
* ``scope`` when scopes are wanted (never an empty ``scope=``);
* the client's authentication **at the IdP** (its IdP registration, not the one at the
  MCP authorization server).

The answer must say ``issued_token_type`` id-jag; the ID-JAG is ``access_token`` and is
treated as opaque. It lives in memory only and its ``repr`` shows a fingerprint, never
the token (EMA §7.4.2, §7.5.4).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import httpx

from mcpcore.auth.client.credentials import ClientInfo, TokenSet, choose_client_auth
from mcpcore.auth.client.grants import GrantContext, error_code, token_request
from mcpcore.auth.client.steps import AuthFlow, fetch, json_object
from mcpcore.auth.client_auth import ClientAuth
from mcpcore.auth.errors import DiscoveryError, IdJagRequestFailed
from mcpcore.auth.redaction import fingerprint
from mcpcore.auth.terms import ID_JAG_TOKEN_TYPE, ID_TOKEN_TYPE, JWT_BEARER_GRANT, TOKEN_EXCHANGE
from mcpcore.auth.times import expires_in_seconds

_MAX_ASSERTION = 16 * 1024


@dataclass(frozen=True, slots=True)
class IdJag:
    """An ID-JAG from the IdP, for one (authorization server, resource): opaque to us."""

    assertion: str = field(repr=False)
    audience: str
    resource: str
    #: What the IdP granted (its ``scope``, or what was asked for when it sent none).
    scopes: frozenset[str]
    expires_at: float | None = None

    def __repr__(self) -> str:
        return (
            f"IdJag({fingerprint(self.assertion)}, audience={self.audience!r}, "
            f"resource={self.resource!r}, scopes={sorted(self.scopes)!r})"
        )


def id_jag_request(
    token_endpoint: str,
    *,
    subject_token: str,
    audience: str,
    resource: str,
    scopes: frozenset[str] = frozenset(),
    client_auth: ClientAuth,
    idp_issuer: str,
    subject_token_type: str = ID_TOKEN_TYPE,
) -> httpx.Request:
    """The token-exchange request for an ID-JAG (see the module docstring).

    ``idp_issuer`` is the ``aud`` of a ``private_key_jwt`` client assertion at the IdP.
    """
    if not subject_token:
        raise IdJagRequestFailed("no ID token to exchange: sign in to the IdP first")
    if not audience or not resource:
        raise IdJagRequestFailed("an ID-JAG needs the authorization server and the resource")
    form = {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
        "subject_token": subject_token,
        "subject_token_type": subject_token_type,
    }
    if scopes:
        form["scope"] = " ".join(sorted(scopes))
    headers = {"accept": "application/json"}
    client_auth.apply(form, headers, audience=idp_issuer)
    return httpx.Request("POST", token_endpoint, data=form, headers=headers)


def parse_id_jag_response(
    response: httpx.Response,
    *,
    audience: str,
    resource: str,
    requested: frozenset[str] = frozenset(),
    clock: Callable[[], float] = time.time,
) -> IdJag:
    """The ID-JAG in a token-exchange response, or ``IdJagRequestFailed``.

    A refusal keeps the IdP's error code (``access_denied``, ``invalid_target``,
    ``insufficient_user_authentication``, ...): it is the enterprise's policy speaking,
    and the caller must not fall back to another way of authorizing.
    """
    document = json_object(response)
    if response.status_code != 200:
        code = error_code(document)
        raise IdJagRequestFailed(
            f"the IdP refused the ID-JAG request ({response.status_code}"
            f"{', ' + code if code else ''})",
            error=code,
        )
    if not isinstance(document, dict):
        raise IdJagRequestFailed("the IdP's token-exchange response is not a JSON object")
    if document.get("issued_token_type") != ID_JAG_TOKEN_TYPE:
        raise IdJagRequestFailed("the IdP issued something other than an ID-JAG")
    assertion = document.get("access_token")
    if not isinstance(assertion, str) or not assertion or len(assertion) > _MAX_ASSERTION:
        raise IdJagRequestFailed("the IdP's response carries no usable ID-JAG")
    scope = document.get("scope")
    try:
        lifetime = expires_in_seconds(document.get("expires_in"))
    except ValueError as exc:
        raise IdJagRequestFailed(f"the IdP's token-exchange response: {exc}") from None
    expires_at = None if lifetime is None else clock() + lifetime
    return IdJag(
        assertion=assertion,
        audience=audience,
        resource=resource,
        scopes=frozenset(scope.split()) if isinstance(scope, str) else requested,
        expires_at=expires_at,
    )


#: The user's ID token, or a callable returning the current one (after an SSO refresh).
IdTokenSource = str | Callable[[], str]


@dataclass
class EnterpriseGrant:
    """EMA for ``mcpcore.auth.OAuth`` (see the module docstring).

    ``idp_client`` is the client's registration at the IdP (a secret, a private key, or
    only an id: ``choose_client_auth`` decides); ``client`` its registration at the MCP
    authorization server, or a mapping from authorization-server issuer to registration
    (credentials are never shown to another server than the one they belong to).

    >>> grant = EnterpriseGrant(                                          # doctest: +SKIP
    ...     idp_issuer="https://idp.example.com",
    ...     idp_token_endpoint="https://idp.example.com/token",
    ...     idp_client=ClientInfo("chat-idp", client_secret=idp_secret),
    ...     id_token=lambda: sso.id_token,
    ...     client=ClientInfo("chat-app", client_secret=as_secret))
    >>> auth = OAuth(grant)                                               # doctest: +SKIP
    """

    idp_issuer: str
    idp_token_endpoint: str
    idp_client: ClientInfo
    id_token: IdTokenSource = field(repr=False)
    client: ClientInfo | Mapping[str, ClientInfo]

    def _client_at(self, issuer: str) -> ClientInfo:
        if isinstance(self.client, ClientInfo):
            return self.client
        client = self.client.get(issuer)
        if client is None:
            raise DiscoveryError(f"no client registration for {issuer}: not asking it")
        return client

    def obtain(self, ctx: GrantContext) -> AuthFlow[TokenSet]:
        issuer = ctx.metadata.issuer
        if JWT_BEARER_GRANT not in (ctx.metadata.grant_types_supported or ()):
            raise DiscoveryError(f"{issuer} does not accept JWT-bearer grants (ID-JAGs)")
        client = self._client_at(issuer)  # before anything is asked of the IdP
        subject_token = self.id_token() if callable(self.id_token) else self.id_token
        request = id_jag_request(
            self.idp_token_endpoint, subject_token=subject_token, audience=issuer,
            resource=ctx.resource, scopes=ctx.scopes, idp_issuer=self.idp_issuer,
            client_auth=choose_client_auth(self.idp_client, ("client_secret_basic",)))
        response = yield from fetch(request, ctx.network, what="ID-JAG request at the IdP")
        id_jag = parse_id_jag_response(response, audience=issuer, resource=ctx.resource,
                                       requested=ctx.scopes, clock=ctx.clock)
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": id_jag.assertion,
                "resource": ctx.resource}
        if id_jag.scopes:
            form["scope"] = " ".join(sorted(id_jag.scopes))
        auth = choose_client_auth(client, ctx.metadata.auth_methods)
        return (yield from token_request(ctx, form, auth, requested=id_jag.scopes))

    def refresh(self, ctx: GrantContext, token: TokenSet) -> AuthFlow[TokenSet | None]:
        return None  # a new ID-JAG, a new token: the session calls ``obtain``
        yield  # pragma: no cover - makes this a generator


__all__ = [
    "EnterpriseGrant",
    "IdJag",
    "IdTokenSource",
    "id_jag_request",
    "parse_id_jag_response",
]
