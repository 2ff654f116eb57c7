"""OAuth terms: the registered URNs and media types every room of ``mcpcore.auth`` names.

One copy each, here, so the client (which sends them), the resource server and the
issuer (which check them) agree by construction, and no room imports another to learn a
string.
"""

from __future__ import annotations

#: RFC 7523 §2.1 grant type, and what the MCP authorization server advertises.
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: RFC 7523 §2.2 / RFC 7521 §4.2 ``client_assertion_type``.
JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: RFC 8693 §2.1 grant type.
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
#: RFC 8693 §3 token type identifiers.
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
#: draft-ietf-oauth-identity-assertion-authz-grant §9 (OAuth URI registry).
ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
#: ``authorization_grant_profiles_supported`` value (the MCP Enterprise-Managed
#: Authorization extension, §6).
ID_JAG_GRANT_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag"
#: The JWT ``typ`` header of an ID-JAG (draft §3; media type ``application/oauth-id-jag+jwt``).
ID_JAG_TYP = "oauth-id-jag+jwt"

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "ID_JAG_GRANT_PROFILE",
    "ID_JAG_TOKEN_TYPE",
    "ID_JAG_TYP",
    "ID_TOKEN_TYPE",
    "JWT_BEARER_ASSERTION",
    "JWT_BEARER_GRANT",
    "TOKEN_EXCHANGE",
]
