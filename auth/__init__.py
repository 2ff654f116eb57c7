"""Authorization for mcpcore servers: bearer tokens in, no tokens passed through.

The public API, in one place::

    from auth import BearerAuthMiddleware, ResourceServerConfig

    config = ResourceServerConfig.from_toml("auth.toml")
    app = BearerAuthMiddleware(mcp_app, config=config)

See ``docs/auth.md`` for the whole picture and the auditor's checklist.
"""

from auth.authorization_server import Client, LocalAuthorizationServer, SigningKey
from auth.challenges import bearer_challenge
from auth.config import (
    IntrospectionSettings,
    IssuerConfig,
    JwksSettings,
    ResourceServerConfig,
    canonical_uri,
)
from auth.downstream import (
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
from auth.errors import (
    AuthenticationError,
    AuthError,
    ConfigurationError,
    DownstreamError,
    InsufficientScope,
    InvalidRequest,
    InvalidToken,
    KeySetError,
    MissingToken,
    PassthroughBlocked,
    PayloadTooLarge,
    TemporarilyUnavailable,
    UnknownSigningKey,
    UnsafeUrl,
)
from auth.inbound import InboundToken, current_inbound_token
from auth.introspection import IntrospectionValidator
from auth.jwks import JwksCache, KeySet, parse_jwks
from auth.metadata import MetadataEndpoint, protected_resource_metadata
from auth.redact import RedactingFilter, fingerprint, install_redaction, redact
from auth.resource_server import BearerAuthMiddleware, ErrorResponse, build_validator
from auth.tokens import (
    CompositeValidator,
    JwtValidator,
    TokenValidator,
    ValidationPolicy,
    verify_jwt,
)
from auth.urls import NetworkPolicy

__all__ = [
    "AuthError",
    "AuthenticationError",
    "BearerAuthMiddleware",
    "Client",
    "ClientCredentials",
    "ClientSecretBasic",
    "ClientSecretPost",
    "CompositeValidator",
    "ConfigurationError",
    "DownstreamCredentials",
    "DownstreamError",
    "DownstreamToken",
    "ErrorResponse",
    "GuardedTransport",
    "InboundToken",
    "InsufficientScope",
    "IntrospectionSettings",
    "IntrospectionValidator",
    "InvalidRequest",
    "InvalidToken",
    "IssuerConfig",
    "JwksCache",
    "JwksSettings",
    "JwtValidator",
    "KeySet",
    "KeySetError",
    "LocalAuthorizationServer",
    "MetadataEndpoint",
    "MissingToken",
    "NetworkPolicy",
    "OutboundClient",
    "PassthroughBlocked",
    "PassthroughGuard",
    "PayloadTooLarge",
    "PrivateKeyJwt",
    "RedactingFilter",
    "ResourceServerConfig",
    "SigningKey",
    "TemporarilyUnavailable",
    "TokenExchange",
    "TokenValidator",
    "UnknownSigningKey",
    "UnsafeUrl",
    "ValidationPolicy",
    "bearer_challenge",
    "build_validator",
    "canonical_uri",
    "current_inbound_token",
    "fingerprint",
    "install_redaction",
    "parse_jwks",
    "protected_resource_metadata",
    "redact",
    "verify_jwt",
]
