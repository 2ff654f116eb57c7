"""MCP authorization: the resource server, the OAuth client, and a compact AS.

The public API, in one place::

    from mcpcore.auth import BearerAuthMiddleware, ResourceServerConfig

    config = ResourceServerConfig.from_toml("auth.toml")
    app = BearerAuthMiddleware(mcp_app, config=config)       # a protected MCP server

    from mcpcore.auth import AuthorizationCodeGrant, HeadlessUserAgent, OAuth

    auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), dpop=True)
    client = Client.http("https://mcp.example.com/mcp", auth=auth)   # an OAuth client

    from mcpcore.auth import EmaConfig, EnterpriseGrant, IdJagGrantType, IdJagValidator

    auth = OAuth(EnterpriseGrant(...))                      # Enterprise-Managed Authorization
    grant = IdJagGrantType(IdJagValidator(EmaConfig.from_toml("ema.toml"), store))
    server = LocalAuthorizationServer(issuer, id_jag=grant)  # ... and its AS side

See ``docs/auth.md`` for the whole picture and the auditor's checklist.
"""

# This folder is installed, and imported, as ``mcpcore.auth`` (pyproject.toml's
# package-dir). With a checkout on sys.path (pytest, ``python -m examples.NAME``) it could
# also be imported as ``auth``: a second copy of every class in it, so that is refused.
if __name__ != "mcpcore.auth":  # pragma: no cover - only a mistaken import reaches this
    raise ImportError(f"import this package as mcpcore.auth, not as {__name__}")


from mcpcore.auth.authorization_server import (
    Client,
    LocalAuthorizationServer,
    SigningKey,
    approve_as,
)
from mcpcore.auth.challenges import Challenge, bearer_challenge, dpop_challenge, parse_challenges
from mcpcore.auth.client_auth import NoClientAuth
from mcpcore.auth.config import (
    DPoPSettings,
    IntrospectionSettings,
    IssuerConfig,
    JwksSettings,
    ResourceServerConfig,
    canonical_uri,
)
from mcpcore.auth.credentials import ClientInfo, CredentialStore, MemoryCredentialStore, TokenSet
from mcpcore.auth.discovery import AuthServerMetadata, ProtectedResource
from mcpcore.auth.downstream import (
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
from mcpcore.auth.dpop import DPoPKey, DPoPNonces, DPoPPolicy, DPoPVerifier
from mcpcore.auth.ema import EmaConfig, IdJagGrantType, IdJagValidator, access_token_claims
from mcpcore.auth.ema_client import EnterpriseGrant, IdJag, id_jag_request, parse_id_jag_response
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
from mcpcore.auth.grants import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    Grant,
    GrantContext,
    JwtBearerGrant,
)
from mcpcore.auth.idjag import EmaClient, IdJagGrant, IdJagPolicy, TrustedIdp, verify_id_jag
from mcpcore.auth.idp import AccessRule, IdpClient, LocalIdentityProvider
from mcpcore.auth.inbound import InboundToken, current_inbound_token
from mcpcore.auth.introspection import IntrospectionValidator
from mcpcore.auth.jwks import JwksCache, KeySet, parse_jwks
from mcpcore.auth.metadata import MetadataEndpoint, protected_resource_metadata
from mcpcore.auth.oauth import OAuth, OAuthSession
from mcpcore.auth.redact import RedactingFilter, fingerprint, install_redaction, redact
from mcpcore.auth.registration import ClientMetadata, Registration
from mcpcore.auth.resource_server import BearerAuthMiddleware, ErrorResponse, build_validator
from mcpcore.auth.steps import Fetch, Flow, OpenAuthorization, UserAgent, run_flow
from mcpcore.auth.tokens import (
    CompositeValidator,
    JwtValidator,
    TokenValidator,
    ValidationPolicy,
    verify_jwt,
)
from mcpcore.auth.urls import NetworkPolicy
from mcpcore.auth.user_agents import HeadlessUserAgent, LoopbackBrowser

__all__ = [
    "AccessRule",
    "AuthError",
    "AuthServerMetadata",
    "AuthenticationError",
    "AuthorizationCodeGrant",
    "AuthorizationRejected",
    "BearerAuthMiddleware",
    "BodyTooLarge",
    "Challenge",
    "Client",
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
    "EmaClient",
    "EmaConfig",
    "EnterpriseGrant",
    "ErrorResponse",
    "Fetch",
    "Flow",
    "Grant",
    "GrantContext",
    "GrantUnavailable",
    "GuardedTransport",
    "HeadlessUserAgent",
    "IdJag",
    "IdJagGrant",
    "IdJagGrantType",
    "IdJagPolicy",
    "IdJagRequestFailed",
    "IdJagValidator",
    "IdpClient",
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
    "LocalAuthorizationServer",
    "LocalIdentityProvider",
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
    "SigningKey",
    "StepUpFailed",
    "TemporarilyUnavailable",
    "TokenEndpointError",
    "TokenExchange",
    "TokenRequestFailed",
    "TokenSet",
    "TokenValidator",
    "TrustedIdp",
    "UnauthorizedClient",
    "UnknownSigningKey",
    "UnsafeUrl",
    "UseDPoPNonce",
    "UserAgent",
    "ValidationPolicy",
    "access_token_claims",
    "approve_as",
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
    "verify_id_jag",
    "verify_jwt",
]
