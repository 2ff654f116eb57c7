"""MCP authorization: the resource server, the OAuth client, and a compact AS.

The public API, in one place::

    from mcpcore.auth import BearerAuthMiddleware, ResourceServerConfig

    config = ResourceServerConfig.from_toml("auth.toml")
    app = BearerAuthMiddleware(mcp_app, config=config)       # a protected MCP server

    from mcpcore.auth import AuthorizationCodeGrant, HeadlessUserAgent, OAuth

    auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), dpop=True)
    client = Client.http("https://mcp.example.com/mcp", auth=auth)   # an OAuth client

    from mcpcore.auth import EnterpriseGrant

    auth = OAuth(EnterpriseGrant(...))                      # Enterprise-Managed Authorization

The compact authorization server and the test IdP live in ``mcpcore.auth.issuer`` (the
``issuer`` extra: ``pip install 'mcpcore[issuer]'``). Every name loads on first use
(PEP 562): ``import mcpcore.auth`` costs almost nothing, and the resource server never
loads the client nor the issuer.

See ``docs/auth.md`` for the whole picture and the auditor's checklist.
"""

# This folder is installed, and imported, as ``mcpcore.auth`` (pyproject.toml's
# package-dir). With a checkout on sys.path (pytest, ``python -m examples.NAME``) it could
# also be imported as ``auth``: a second copy of every class in it, so that is refused.
if __name__ != "mcpcore.auth":  # pragma: no cover - only a mistaken import reaches this
    raise ImportError(f"import this package as mcpcore.auth, not as {__name__}")

from typing import TYPE_CHECKING

from mcpcore.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from mcpcore.auth.challenges import (
        Challenge,
        bearer_challenge,
        dpop_challenge,
        parse_challenges,
    )
    from mcpcore.auth.client.credentials import (
        ClientInfo,
        CredentialStore,
        MemoryCredentialStore,
        TokenSet,
    )
    from mcpcore.auth.client.discovery import AuthServerMetadata, ProtectedResource
    from mcpcore.auth.client.ema_client import (
        EnterpriseGrant,
        IdJag,
        id_jag_request,
        parse_id_jag_response,
    )
    from mcpcore.auth.client.grants import (
        AuthorizationCodeGrant,
        ClientCredentialsGrant,
        Grant,
        GrantContext,
        JwtBearerGrant,
    )
    from mcpcore.auth.client.oauth import OAuth, OAuthSession
    from mcpcore.auth.client.registration import ClientMetadata, Registration
    from mcpcore.auth.client.steps import AuthFlow, Fetch, OpenAuthorization, UserAgent, run_flow
    from mcpcore.auth.client.user_agents import HeadlessUserAgent, LoopbackBrowser
    from mcpcore.auth.client_auth import NoClientAuth
    from mcpcore.auth.config import (
        DPoPSettings,
        IntrospectionSettings,
        IssuerConfig,
        JwksSettings,
        ResourceServerConfig,
        canonical_uri,
    )
    from mcpcore.auth.dpop import DPoPKey, DPoPNonces, DPoPPolicy, DPoPVerifier
    from mcpcore.auth.errors import (
        AuthenticationError,
        AuthError,
        AuthorizationRejected,
        BodyTooLarge,
        ConfigurationError,
        DiscoveryError,
        DownstreamError,
        DownstreamNotAllowed,
        GrantUnavailable,
        IdJagRequestFailed,
        InsufficientTokenScope,
        InvalidAuthRequest,
        InvalidClient,
        InvalidDPoPProof,
        InvalidGrant,
        InvalidScope,
        InvalidTarget,
        InvalidToken,
        InvalidTokenRequest,
        KeySetError,
        MissingToken,
        OAuthClientError,
        PassthroughBlocked,
        RegistrationError,
        StepUpFailed,
        TemporarilyUnavailable,
        TokenEndpointError,
        TokenRequestFailed,
        UnauthorizedClient,
        UnknownSigningKey,
        UnsafeUrl,
        UseDPoPNonce,
    )
    from mcpcore.auth.jwks import JwksCache, KeySet, parse_jwks
    from mcpcore.auth.redaction import RedactingFilter, fingerprint, install_redaction, redact
    from mcpcore.auth.server.downstream import (
        ClientCredentials,
        ClientSecretBasic,
        ClientSecretPost,
        DownstreamCredentials,
        DownstreamToken,
        GuardedTransport,
        OutboundClient,
        PassthroughGuard,
        PrivateKeyJwt,
        TokenExchange,
    )
    from mcpcore.auth.server.inbound import InboundToken, current_inbound_token
    from mcpcore.auth.server.introspection import IntrospectionValidator
    from mcpcore.auth.server.metadata import MetadataEndpoint, protected_resource_metadata
    from mcpcore.auth.server.resource_server import (
        BearerAuthMiddleware,
        ErrorResponse,
        build_validator,
    )
    from mcpcore.auth.server.tokens import (
        CompositeValidator,
        JwtValidator,
        TokenValidator,
        ValidationPolicy,
        verify_jwt,
    )
    from mcpcore.auth.urls import NetworkPolicy

#: Where each public name lives; ``__getattr__`` imports it from there on first use.
_HOMES: dict[str, str] = {
    "Challenge": "mcpcore.auth.challenges",
    "bearer_challenge": "mcpcore.auth.challenges",
    "dpop_challenge": "mcpcore.auth.challenges",
    "parse_challenges": "mcpcore.auth.challenges",
    "NoClientAuth": "mcpcore.auth.client_auth",
    "DPoPSettings": "mcpcore.auth.config",
    "IntrospectionSettings": "mcpcore.auth.config",
    "IssuerConfig": "mcpcore.auth.config",
    "JwksSettings": "mcpcore.auth.config",
    "ResourceServerConfig": "mcpcore.auth.config",
    "canonical_uri": "mcpcore.auth.config",
    "ClientInfo": "mcpcore.auth.client.credentials",
    "CredentialStore": "mcpcore.auth.client.credentials",
    "MemoryCredentialStore": "mcpcore.auth.client.credentials",
    "TokenSet": "mcpcore.auth.client.credentials",
    "AuthServerMetadata": "mcpcore.auth.client.discovery",
    "ProtectedResource": "mcpcore.auth.client.discovery",
    "ClientCredentials": "mcpcore.auth.server.downstream",
    "ClientSecretBasic": "mcpcore.auth.server.downstream",
    "ClientSecretPost": "mcpcore.auth.server.downstream",
    "DownstreamCredentials": "mcpcore.auth.server.downstream",
    "DownstreamToken": "mcpcore.auth.server.downstream",
    "GuardedTransport": "mcpcore.auth.server.downstream",
    "OutboundClient": "mcpcore.auth.server.downstream",
    "PassthroughGuard": "mcpcore.auth.server.downstream",
    "PrivateKeyJwt": "mcpcore.auth.server.downstream",
    "TokenExchange": "mcpcore.auth.server.downstream",
    "DPoPKey": "mcpcore.auth.dpop",
    "DPoPNonces": "mcpcore.auth.dpop",
    "DPoPPolicy": "mcpcore.auth.dpop",
    "DPoPVerifier": "mcpcore.auth.dpop",
    "EnterpriseGrant": "mcpcore.auth.client.ema_client",
    "IdJag": "mcpcore.auth.client.ema_client",
    "id_jag_request": "mcpcore.auth.client.ema_client",
    "parse_id_jag_response": "mcpcore.auth.client.ema_client",
    "AuthError": "mcpcore.auth.errors",
    "AuthenticationError": "mcpcore.auth.errors",
    "AuthorizationRejected": "mcpcore.auth.errors",
    "BodyTooLarge": "mcpcore.auth.errors",
    "ConfigurationError": "mcpcore.auth.errors",
    "DiscoveryError": "mcpcore.auth.errors",
    "DownstreamError": "mcpcore.auth.errors",
    "DownstreamNotAllowed": "mcpcore.auth.errors",
    "GrantUnavailable": "mcpcore.auth.errors",
    "IdJagRequestFailed": "mcpcore.auth.errors",
    "InsufficientTokenScope": "mcpcore.auth.errors",
    "InvalidAuthRequest": "mcpcore.auth.errors",
    "InvalidClient": "mcpcore.auth.errors",
    "InvalidDPoPProof": "mcpcore.auth.errors",
    "InvalidGrant": "mcpcore.auth.errors",
    "InvalidScope": "mcpcore.auth.errors",
    "InvalidTarget": "mcpcore.auth.errors",
    "InvalidToken": "mcpcore.auth.errors",
    "InvalidTokenRequest": "mcpcore.auth.errors",
    "KeySetError": "mcpcore.auth.errors",
    "MissingToken": "mcpcore.auth.errors",
    "OAuthClientError": "mcpcore.auth.errors",
    "PassthroughBlocked": "mcpcore.auth.errors",
    "RegistrationError": "mcpcore.auth.errors",
    "StepUpFailed": "mcpcore.auth.errors",
    "TemporarilyUnavailable": "mcpcore.auth.errors",
    "TokenEndpointError": "mcpcore.auth.errors",
    "TokenRequestFailed": "mcpcore.auth.errors",
    "UnauthorizedClient": "mcpcore.auth.errors",
    "UnknownSigningKey": "mcpcore.auth.errors",
    "UnsafeUrl": "mcpcore.auth.errors",
    "UseDPoPNonce": "mcpcore.auth.errors",
    "AuthorizationCodeGrant": "mcpcore.auth.client.grants",
    "ClientCredentialsGrant": "mcpcore.auth.client.grants",
    "Grant": "mcpcore.auth.client.grants",
    "GrantContext": "mcpcore.auth.client.grants",
    "JwtBearerGrant": "mcpcore.auth.client.grants",
    "InboundToken": "mcpcore.auth.server.inbound",
    "current_inbound_token": "mcpcore.auth.server.inbound",
    "IntrospectionValidator": "mcpcore.auth.server.introspection",
    "JwksCache": "mcpcore.auth.jwks",
    "KeySet": "mcpcore.auth.jwks",
    "parse_jwks": "mcpcore.auth.jwks",
    "MetadataEndpoint": "mcpcore.auth.server.metadata",
    "protected_resource_metadata": "mcpcore.auth.server.metadata",
    "OAuth": "mcpcore.auth.client.oauth",
    "OAuthSession": "mcpcore.auth.client.oauth",
    "RedactingFilter": "mcpcore.auth.redaction",
    "fingerprint": "mcpcore.auth.redaction",
    "install_redaction": "mcpcore.auth.redaction",
    "redact": "mcpcore.auth.redaction",
    "ClientMetadata": "mcpcore.auth.client.registration",
    "Registration": "mcpcore.auth.client.registration",
    "BearerAuthMiddleware": "mcpcore.auth.server.resource_server",
    "ErrorResponse": "mcpcore.auth.server.resource_server",
    "build_validator": "mcpcore.auth.server.resource_server",
    "Fetch": "mcpcore.auth.client.steps",
    "AuthFlow": "mcpcore.auth.client.steps",
    "OpenAuthorization": "mcpcore.auth.client.steps",
    "UserAgent": "mcpcore.auth.client.steps",
    "run_flow": "mcpcore.auth.client.steps",
    "CompositeValidator": "mcpcore.auth.server.tokens",
    "JwtValidator": "mcpcore.auth.server.tokens",
    "TokenValidator": "mcpcore.auth.server.tokens",
    "ValidationPolicy": "mcpcore.auth.server.tokens",
    "verify_jwt": "mcpcore.auth.server.tokens",
    "NetworkPolicy": "mcpcore.auth.urls",
    "HeadlessUserAgent": "mcpcore.auth.client.user_agents",
    "LoopbackBrowser": "mcpcore.auth.client.user_agents",
}

#: The authorization server's names, which live in ``mcpcore.auth.issuer`` since the
#: issuer became its own room (its own extra): the error says where to import them from.
_ISSUER_NAMES = frozenset({
    "AccessRule",
    "EmaClient",
    "EmaConfig",
    "IdJagGrant",
    "IdJagGrantType",
    "IdJagPolicy",
    "IdJagValidator",
    "IdpClient",
    "LocalAuthorizationServer",
    "RegisteredClient",
    "LocalIdentityProvider",
    "SigningKey",
    "TrustedIdp",
    "access_token_claims",
    "approve_as",
    "verify_id_jag",
})


def _moved(name: str) -> str | None:
    """Where a name this package no longer exports went."""
    if name == "Client":  # the AS's client record, renamed (mcpcore.Client is the MCP client)
        return ("mcpcore.auth.Client is now mcpcore.auth.issuer.RegisteredClient "
                "(pip install 'mcpcore[issuer]'); the MCP client is mcpcore.Client")
    if name in _ISSUER_NAMES:
        return (f"{name} is the authorization server's: import it from mcpcore.auth.issuer "
                "(pip install 'mcpcore[issuer]')")
    return None


__getattr__, __dir__ = _lazy_exports(__name__, _HOMES, missing=_moved)


__all__ = [
    "AuthError",
    "AuthFlow",
    "AuthServerMetadata",
    "AuthenticationError",
    "AuthorizationCodeGrant",
    "AuthorizationRejected",
    "BearerAuthMiddleware",
    "BodyTooLarge",
    "Challenge",
    "ClientCredentials",
    "ClientCredentialsGrant",
    "ClientInfo",
    "ClientMetadata",
    "ClientSecretBasic",
    "ClientSecretPost",
    "CompositeValidator",
    "ConfigurationError",
    "CredentialStore",
    "DPoPKey",
    "DPoPNonces",
    "DPoPPolicy",
    "DPoPSettings",
    "DPoPVerifier",
    "DiscoveryError",
    "DownstreamCredentials",
    "DownstreamError",
    "DownstreamNotAllowed",
    "DownstreamToken",
    "EnterpriseGrant",
    "ErrorResponse",
    "Fetch",
    "Grant",
    "GrantContext",
    "GrantUnavailable",
    "GuardedTransport",
    "HeadlessUserAgent",
    "IdJag",
    "IdJagRequestFailed",
    "InboundToken",
    "InsufficientTokenScope",
    "IntrospectionSettings",
    "IntrospectionValidator",
    "InvalidAuthRequest",
    "InvalidClient",
    "InvalidDPoPProof",
    "InvalidGrant",
    "InvalidScope",
    "InvalidTarget",
    "InvalidToken",
    "InvalidTokenRequest",
    "IssuerConfig",
    "JwksCache",
    "JwksSettings",
    "JwtBearerGrant",
    "JwtValidator",
    "KeySet",
    "KeySetError",
    "LoopbackBrowser",
    "MemoryCredentialStore",
    "MetadataEndpoint",
    "MissingToken",
    "NetworkPolicy",
    "NoClientAuth",
    "OAuth",
    "OAuthClientError",
    "OAuthSession",
    "OpenAuthorization",
    "OutboundClient",
    "PassthroughBlocked",
    "PassthroughGuard",
    "PrivateKeyJwt",
    "ProtectedResource",
    "RedactingFilter",
    "Registration",
    "RegistrationError",
    "ResourceServerConfig",
    "StepUpFailed",
    "TemporarilyUnavailable",
    "TokenEndpointError",
    "TokenExchange",
    "TokenRequestFailed",
    "TokenSet",
    "TokenValidator",
    "UnauthorizedClient",
    "UnknownSigningKey",
    "UnsafeUrl",
    "UseDPoPNonce",
    "UserAgent",
    "ValidationPolicy",
    "bearer_challenge",
    "build_validator",
    "canonical_uri",
    "current_inbound_token",
    "dpop_challenge",
    "fingerprint",
    "id_jag_request",
    "install_redaction",
    "parse_challenges",
    "parse_id_jag_response",
    "parse_jwks",
    "protected_resource_metadata",
    "redact",
    "run_flow",
    "verify_jwt",
]
