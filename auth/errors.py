"""Every error the ``auth`` package raises, in one tree.

Each error that reaches an HTTP client knows its status and its RFC 6750 ``error`` code;
the bearer middleware turns it into a response in exactly one place (``on_error``).
Messages are generic on purpose (no error detail leakage to the caller): the precise
reason goes to the server log under a correlation id, and no message ever contains a
token, a code or a secret.

    AuthError
      AuthenticationError                  -> HTTP response from the middleware
        MissingToken (401, no error code)
        InvalidAuthRequest (400 invalid_request)
        InvalidToken (401 invalid_token)
          UnknownSigningKey                (kid not in the issuer's JWKS)
          InvalidDPoPProof (401 invalid_dpop_proof, DPoP scheme; RFC 9449 §7.1)
          UseDPoPNonce (401 use_dpop_nonce, carries a fresh nonce; RFC 9449 §9)
        InsufficientTokenScope (403 insufficient_scope, carries the needed scopes)
        BodyTooLarge (413)
        TemporarilyUnavailable (503: keys or introspection unreachable)
      ConfigurationError                   (refused at start-up, never at request time)
      UnsafeUrl                            (SSRF rules refused a URL)
      KeySetError                          (a JWKS could not be fetched or parsed)
      DownstreamError                      (token exchange / client credentials failed)
        DownstreamNotAllowed               (the running tool may not ask for that audience)
      PassthroughBlocked                   (an outbound request carried the inbound token)
      OAuthClientError                     (our OAuth client gave up; nothing was sent on)
        DiscoveryError                     (no usable resource or AS metadata)
        RegistrationError                  (no way to register, or the AS refused)
        AuthorizationRejected              (a bad authorization response: iss, state, error)
        TokenRequestFailed                 (the token endpoint refused; carries ``error``)
        StepUpFailed                       (more scopes cannot help, or the retry limit)
        IdJagRequestFailed                 (the IdP refused the token exchange for an ID-JAG)
      TokenEndpointError                   -> RFC 6749 §5.2 JSON from a token endpoint
        InvalidTokenRequest (400 invalid_request)
        InvalidClient (401 invalid_client)
        UnauthorizedClient (400 unauthorized_client)
        UnsupportedGrantType (400 unsupported_grant_type)
        InvalidGrant (400 invalid_grant)
          UnknownGrantKey                  (kid not in the IdP's JWKS; may refetch once)
        InvalidTarget (400 invalid_target, RFC 8707 §2)
        InvalidScope (400 invalid_scope)
        AccessDenied (400 access_denied: an IdP's policy said no)
        GrantUnavailable (503 temporarily_unavailable: keys or replay store unreachable)
"""

from __future__ import annotations

from typing import ClassVar

from mcpcore.errors import ConfigError


class AuthError(Exception):
    """Base of every error in ``auth``."""


class AuthenticationError(AuthError):
    """A request is refused; the middleware answers with ``status`` and a challenge.

    ``detail`` is for the server log only (never sent, never holds a token);
    ``description`` is the generic ``error_description`` sent to the client.
    """

    status: ClassVar[int] = 401
    error: ClassVar[str | None] = None
    description: ClassVar[str] = "Authentication required"

    def __init__(self, detail: str = "", *, scopes: frozenset[str] = frozenset()) -> None:
        super().__init__(detail or self.description)
        self.detail = detail or self.description
        #: Scopes to put into the challenge (the full set the request needs).
        self.scopes = scopes


class MissingToken(AuthenticationError):
    """No credentials at all: RFC 6750 §3.1 says to send no ``error`` code."""


class InvalidAuthRequest(AuthenticationError):
    status = 400
    error = "invalid_request"
    description = "Malformed authorization request"


class InvalidToken(AuthenticationError):
    status = 401
    error = "invalid_token"
    description = "The access token is invalid"


class UnknownSigningKey(InvalidToken):
    """The token names a key its issuer does not publish (the validator may refetch once)."""

    def __init__(self, issuer: str, detail: str = "unknown signing key") -> None:
        super().__init__(detail)
        self.issuer = issuer


class InvalidDPoPProof(InvalidToken):
    """A DPoP proof is missing, malformed, replayed, or does not fit the request/token."""

    error = "invalid_dpop_proof"
    description = "The DPoP proof is invalid"


class UseDPoPNonce(InvalidToken):
    """The server requires a fresh nonce in the proof; ``nonce`` is the one to use."""

    error = "use_dpop_nonce"
    description = "A DPoP nonce is required"

    def __init__(self, detail: str = "", *, nonce: str | None = None) -> None:
        super().__init__(detail)
        self.nonce = nonce


class InsufficientTokenScope(AuthenticationError):
    status = 403
    error = "insufficient_scope"
    description = "The access token lacks a scope this request needs"


class BodyTooLarge(AuthenticationError):
    status = 413
    error = None
    description = "Request body too large"


class TemporarilyUnavailable(AuthenticationError):
    """The server cannot check tokens right now (JWKS or introspection unreachable)."""

    status = 503
    error = None
    description = "Token validation is temporarily unavailable"


class ConfigurationError(AuthError, ConfigError):
    """The configuration is unsafe or inconsistent; raised at start-up. It is also the
    engine's ``ConfigError``, so the ``mcpcore`` command and ``serve()`` print it as one
    line and exit with status 2."""


class UnsafeUrl(AuthError):
    """A URL broke the SSRF rules (scheme, private address, credentials in the URL)."""


class KeySetError(AuthError):
    """A JWKS could not be fetched or parsed (down, too large, not JSON, no usable key)."""


class DownstreamError(AuthError):
    """Getting a credential for an upstream API failed; the caller must fail closed.

    ``error`` is the token endpoint's OAuth error code (RFC 6749 §5.2) when it refused
    with one (``invalid_scope``, ``consent_required``, ...), for callers that explain why.
    """

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class DownstreamNotAllowed(DownstreamError):
    """The policy does not let the running tool obtain a token for that audience or
    those scopes (its rule set's ``downstream`` list); the token service was not asked."""


class PassthroughBlocked(AuthError):
    """An outbound request carried the inbound token or a token issued for this server."""


class TokenEndpointError(AuthError):
    """A token endpoint refuses a request: RFC 6749 §5.2 ``{"error": ...}`` with ``status``.

    ``detail`` is for the server log only; ``description`` is the generic
    ``error_description`` sent back. Nothing is issued when one of these is raised.
    """

    status: ClassVar[int] = 400
    error: ClassVar[str] = "invalid_request"
    description: ClassVar[str] = "The token request is invalid"

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail or self.description)
        self.detail = detail or self.description


class InvalidTokenRequest(TokenEndpointError):
    """A parameter is missing, repeated or malformed."""


class InvalidClient(TokenEndpointError):
    status = 401
    error = "invalid_client"
    description = "Client authentication failed"


class UnauthorizedClient(TokenEndpointError):
    error = "unauthorized_client"
    description = "The client may not use this grant"


class UnsupportedGrantType(TokenEndpointError):
    error = "unsupported_grant_type"
    description = "The grant type is not supported"


class InvalidGrant(TokenEndpointError):
    error = "invalid_grant"
    description = "The authorization grant is invalid"


class UnknownGrantKey(InvalidGrant):
    """The assertion names a key its issuer does not publish (the caller may refetch)."""

    def __init__(self, issuer: str, detail: str = "unknown signing key") -> None:
        super().__init__(detail)
        self.issuer = issuer


class InvalidTarget(TokenEndpointError):
    error = "invalid_target"
    description = "The requested resource is not available to this client"


class InvalidScope(TokenEndpointError):
    error = "invalid_scope"
    description = "The requested scope is invalid or exceeds the grant"


class AccessDenied(TokenEndpointError):
    error = "access_denied"
    description = "Access denied by policy"


class GrantUnavailable(TokenEndpointError):
    """Keys or the replay store cannot be reached: fail closed, and say it is temporary."""

    status = 503
    error = "temporarily_unavailable"
    description = "The grant cannot be checked right now"


class OAuthClientError(AuthError):
    """Our OAuth client could not get a usable token; the MCP request was not sent on.

    The message names what failed (never a token, code or secret); ``error`` is the
    OAuth error code when an authorization server sent one.
    """

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class DiscoveryError(OAuthClientError):
    """No usable Protected Resource Metadata or authorization server metadata (missing,
    malformed, for another resource, or whose ``issuer`` differs from the one asked)."""


class RegistrationError(OAuthClientError):
    """No registration method fits this authorization server, or it refused ours."""


class AuthorizationRejected(OAuthClientError):
    """The authorization response failed validation (RFC 9207 ``iss``, ``state``) or was
    an error; the code, if any, was not redeemed."""


class TokenRequestFailed(OAuthClientError):
    """The token endpoint refused the request (``error`` holds its code)."""


class StepUpFailed(OAuthClientError):
    """The server keeps refusing for scopes already granted, or the step-up limit was hit."""


class IdJagRequestFailed(OAuthClientError):
    """The IdP refused the token exchange for an ID-JAG, or answered with something that
    is not one. ``error`` is the IdP's OAuth error code when it sent one (for example
    ``access_denied`` or ``insufficient_user_authentication``): the enterprise's policy
    speaking, so the client does not fall back to another way of authorizing."""


__all__ = [
    "AccessDenied",
    "AuthError",
    "AuthenticationError",
    "AuthorizationRejected",
    "BodyTooLarge",
    "ConfigurationError",
    "DiscoveryError",
    "DownstreamError",
    "DownstreamNotAllowed",
    "GrantUnavailable",
    "IdJagRequestFailed",
    "InsufficientTokenScope",
    "InvalidAuthRequest",
    "InvalidClient",
    "InvalidDPoPProof",
    "InvalidGrant",
    "InvalidScope",
    "InvalidTarget",
    "InvalidToken",
    "InvalidTokenRequest",
    "KeySetError",
    "MissingToken",
    "OAuthClientError",
    "PassthroughBlocked",
    "RegistrationError",
    "StepUpFailed",
    "TemporarilyUnavailable",
    "TokenEndpointError",
    "TokenRequestFailed",
    "UnauthorizedClient",
    "UnknownGrantKey",
    "UnknownSigningKey",
    "UnsafeUrl",
    "UnsupportedGrantType",
    "UseDPoPNonce",
]
