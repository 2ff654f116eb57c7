"""Enterprise-Managed Authorization on the client: asking the IdP for an ID-JAG.

The first leg of EMA (§4 of the MCP extension; draft-ietf-oauth-identity-assertion-authz-
grant §4.3): an RFC 8693 token exchange at the enterprise IdP's token endpoint, trading
the user's ID token for an ID-JAG to present at the MCP authorization server. Sans-I/O,
like the other OAuth client steps: ``id_jag_request`` builds the ``httpx.Request``,
``parse_id_jag_response`` reads the ``httpx.Response``; whoever drives them sends the
request (through the URL-safety rules of ``auth/urls.py``).

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

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import msgspec

from mcpcore.auth.downstream import TOKEN_EXCHANGE, ClientAuth
from mcpcore.auth.errors import IdJagRequestFailed
from mcpcore.auth.idjag import ID_JAG_TOKEN_TYPE
from mcpcore.auth.redact import fingerprint

ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
_ERROR_CODE = re.compile(r"[a-z_]{1,64}")
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


def _error_code(document: object) -> str | None:
    code = document.get("error") if isinstance(document, dict) else None
    return code if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else None


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
    try:
        document = msgspec.json.decode(response.content)
    except (msgspec.DecodeError, RecursionError):
        document = None
    if response.status_code != 200:
        code = _error_code(document)
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
    expires_in = document.get("expires_in")
    expires_at = None
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
        expires_at = clock() + float(expires_in)
    return IdJag(
        assertion=assertion,
        audience=audience,
        resource=resource,
        scopes=frozenset(scope.split()) if isinstance(scope, str) else requested,
        expires_at=expires_at,
    )


__all__ = [
    "ID_TOKEN_TYPE",
    "IdJag",
    "id_jag_request",
    "parse_id_jag_response",
]
