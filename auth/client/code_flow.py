"""The authorization-code request and the validation of its response. Pure functions.

Before the user agent is sent anywhere, one ``PendingAuthorization`` record holds
everything the response will be checked against (the authorization spec's
"Authorization Response Validation"): the issuer taken from *validated* metadata, the
PKCE verifier (RFC 7636, S256 only), ``state``, ``redirect_uri``, ``resource`` (RFC 8707)
and the requested scopes. ``validate_response`` then applies, before the code goes to
any token endpoint:

1. the redirect must come back to our ``redirect_uri`` (scheme, host, port, path);
2. ``code``, ``state``, ``iss`` and ``error`` appear at most once each;
3. **RFC 9207 §2.4**, the spec's four-row table: with
   ``authorization_response_iss_parameter_supported`` true, ``iss`` must be present;
   whenever ``iss`` is present it must equal the recorded issuer by simple string
   comparison (RFC 3986 §6.2.1) after one form-decoding, with no case folding, port,
   slash or percent-encoding normalisation. This applies to error responses too: an
   error whose ``iss`` does not match is not acted on or displayed;
4. ``state`` must be the one we issued (a redirect for a flow we never started fails);
5. an ``error`` response ends the flow; otherwise a non-empty ``code`` is returned.

Any failure raises ``AuthorizationRejected`` and ends the flow: no retry loop.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

from mcpcore.auth.errors import AuthorizationRejected

_SAFE_ERROR = frozenset("abcdefghijklmnopqrstuvwxyz_")


def pkce_pair() -> tuple[str, str]:
    """(verifier, S256 challenge): 32 random bytes base64url-encoded (43 characters, the
    RFC 7636 §4.1 minimum length and recommended construction)."""
    verifier = secrets.token_urlsafe(32)
    return verifier, s256_challenge(verifier)


def s256_challenge(verifier: str) -> str:
    """RFC 7636 §4.2: ``BASE64URL(SHA256(ASCII(code_verifier)))``, without padding."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True)
class PendingAuthorization:
    """The per-flow record (never logged: its ``repr`` hides the verifier and state)."""

    issuer: str
    iss_parameter_supported: bool
    client_id: str
    redirect_uri: str
    resource: str
    scopes: tuple[str, ...]
    state: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)
    code_verifier: str = field(default="", repr=False)
    code_challenge: str = field(default="", repr=False)

    @classmethod
    def start(
        cls,
        *,
        issuer: str,
        iss_parameter_supported: bool,
        client_id: str,
        redirect_uri: str,
        resource: str,
        scopes: Iterable[str],
    ) -> PendingAuthorization:
        verifier, challenge = pkce_pair()
        return cls(
            issuer=issuer,
            iss_parameter_supported=iss_parameter_supported,
            client_id=client_id,
            redirect_uri=redirect_uri,
            resource=resource,
            scopes=tuple(sorted(set(scopes))),
            code_verifier=verifier,
            code_challenge=challenge,
        )

    def url(self, authorization_endpoint: str) -> str:
        """The authorization request (RFC 6749 §4.1.1 + RFC 7636 §4.3 + RFC 8707 §2).
        No ``scope`` parameter at all when no scope is known (never ``scope=``). The
        endpoint's own query is kept, ours appended (RFC 6749 §3.1), form-encoded
        (RFC 6749 Appendix B)."""
        ours = [("response_type", "code"), ("client_id", self.client_id),
                ("redirect_uri", self.redirect_uri)]
        if self.scopes:
            ours.append(("scope", " ".join(self.scopes)))
        ours += [("state", self.state), ("code_challenge", self.code_challenge),
                 ("code_challenge_method", "S256"), ("resource", self.resource)]
        parts = urlsplit(authorization_endpoint)
        query = parse_qsl(parts.query, keep_blank_values=True) + ours
        return urlunsplit(parts._replace(query=urlencode(query)))


def _single(params: dict[str, list[str]], name: str) -> str | None:
    values = params.get(name)
    if values is None:
        return None
    if len(values) != 1:
        raise AuthorizationRejected(f"authorization response repeats {name!r}")
    return values[0]


def _same_endpoint(a: str, b: str) -> bool:
    x, y = urlsplit(a), urlsplit(b)
    try:
        return (x.scheme.lower(), x.hostname, x.port, x.path) == (
            y.scheme.lower(), y.hostname, y.port, y.path)
    except ValueError:
        return False


def validate_response(pending: PendingAuthorization, redirect_url: str) -> str:
    """The authorization code from ``redirect_url``, or ``AuthorizationRejected``."""
    if not _same_endpoint(redirect_url, pending.redirect_uri):
        raise AuthorizationRejected("the authorization server redirected somewhere else")
    params = parse_qs(urlsplit(redirect_url).query, keep_blank_values=True)
    iss = _single(params, "iss")
    if iss is not None:
        if iss != pending.issuer:  # simple string comparison, RFC 9207 §2.4
            raise AuthorizationRejected(
                "authorization response iss does not match the authorization server's "
                f"issuer {pending.issuer!r} (RFC 9207 mix-up defence): code not redeemed"
            )
    elif pending.iss_parameter_supported:
        raise AuthorizationRejected(
            f"{pending.issuer} advertises the iss parameter but the authorization response "
            "has none (RFC 9207 §2.4): code not redeemed"
        )
    state = _single(params, "state")
    if state is None or not secrets.compare_digest(state, pending.state):
        raise AuthorizationRejected("authorization response state was not issued for this flow")
    error = _single(params, "error")
    if error is not None:
        shown = error if set(error) <= _SAFE_ERROR and len(error) <= 64 else "invalid"
        raise AuthorizationRejected(f"authorization refused: {shown}", error=shown)
    code = _single(params, "code")
    if not code:
        raise AuthorizationRejected("authorization response has no code")
    return code


__all__ = ["PendingAuthorization", "pkce_pair", "s256_challenge", "validate_response"]
