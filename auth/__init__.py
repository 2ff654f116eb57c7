"""Authorization for mcpcore servers: bearer tokens in, no tokens passed through.

The public API, in one place::

    from mcpcore.auth import BearerAuthMiddleware, ResourceServerConfig

    config = ResourceServerConfig.from_toml("auth.toml")
    app = BearerAuthMiddleware(mcp_app, config=config)

See ``docs/auth.md`` for the whole picture and the auditor's checklist.
"""

# This folder is installed, and imported, as ``mcpcore.auth`` (``mcpcore/auth`` links
# here). Imported under any other name it would be a second copy of every class in it.
if __name__ != "mcpcore.auth":  # pragma: no cover - only a mistaken import reaches this
    raise ImportError(f"import this package as mcpcore.auth, not as {__name__}")


from mcpcore.auth.authorization_server import Client, LocalAuthorizationServer, SigningKey
from mcpcore.auth.challenges import bearer_challenge
from mcpcore.auth.config import (
    IntrospectionSettings,
    IssuerConfig,
    JwksSettings,
    ResourceServerConfig,
    canonical_uri,
)
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
from mcpcore.auth.errors import (
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
from mcpcore.auth.inbound import InboundToken, current_inbound_token
from mcpcore.auth.introspection import IntrospectionValidator
from mcpcore.auth.jwks import JwksCache, KeySet, parse_jwks
from mcpcore.auth.metadata import MetadataEndpoint, protected_resource_metadata
from mcpcore.auth.redact import RedactingFilter, fingerprint, install_redaction, redact
from mcpcore.auth.resource_server import BearerAuthMiddleware, ErrorResponse, build_validator
from mcpcore.auth.tokens import (
    CompositeValidator,
    JwtValidator,
    TokenValidator,
    ValidationPolicy,
    verify_jwt,
)
from mcpcore.auth.urls import NetworkPolicy

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
