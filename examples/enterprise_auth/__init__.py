"""Enterprise-Managed Authorization, all four parties: IdP → MCP authorization server →
protected MCP server (with the policy layer) → our client.

::

    python -m examples.enterprise_auth

starts, on free 127.0.0.1 ports:

1. the **enterprise IdP** (``mcpcore.auth.issuer.LocalIdentityProvider``): it signs ``alice``
   in to the *chat* app (an ID token) and, by RFC 8693 token exchange, issues ID-JAGs
   under the enterprise's access rule: *chat* may reach the *docs* MCP server for users
   of tenant ``acme`` with at most ``mcp:read mcp:admin``;
2. the **MCP authorization server** (``LocalAuthorizationServer`` with the ID-JAG grant):
   it trusts that IdP (``EmaConfig``), knows *chat* as a confidential client, and keeps
   each ID-JAG's ``jti`` single use in a ``Store``;
3. the **docs MCP server** behind ``BearerAuthMiddleware``, gated by a ``Policy``:
   reading needs ``mcp:read``; deleting is destructive (``mcp:admin``, and a person
   confirms each call); purging is never allowed to enterprise-managed principals
   (a rule on ``auth_kinds={"ema"}``);
4. **our client**: ``mcpcore.client.RegisteredClient`` with ``OAuth(EnterpriseGrant(...))``. It
   lists the tools and reads a document (the first 401 makes it exchange the ID token
   for an ID-JAG and the ID-JAG for a ``mcp:read`` token), then deletes one: the 403
   asks for ``mcp:admin``, so it gets a new ID-JAG for ``mcp:read mcp:admin`` and a new
   token, and the policy asks for confirmation, which the client's ``on_elicit``
   gives. Then it tries to purge, which the EMA rule refuses.

The audit trail printed at the end shows every decision with ``auth_kind: ema``. Nothing
prints a token or an ID-JAG, only fingerprints. Exit status 0 when everything went as
described.
"""

from __future__ import annotations

import os
import secrets

from mcpcore import MemoryAuditSink, MrtrConfig, Policy, Rule, Ruleset, Server, StreamableHTTP
from mcpcore.asgi_types import ASGIApp
from mcpcore.auth import BearerAuthMiddleware, IssuerConfig, NetworkPolicy, ResourceServerConfig
from mcpcore.auth.issuer import (
    AccessRule,
    EmaClient,
    EmaConfig,
    IdJagGrantType,
    IdJagValidator,
    IdpClient,
    LocalAuthorizationServer,
    LocalIdentityProvider,
    RegisteredClient,
    SigningKey,
    TrustedIdp,
)
from mcpcore.auth.terms import JWT_BEARER_GRANT
from mcpcore.policy import DEFAULT_SCOPE_HIERARCHY
from mcpcore.sealing import KeyRing, Sealer
from mcpcore.stores import MemoryStore, Store
from mcpcore.tools import ToolError

TENANT = "acme"
USER = "alice"
#: The chat app's registrations: at the IdP (for SSO and token exchange) and at the MCP
#: authorization server (for the JWT-bearer grant). Two relationships, two client ids.
IDP_CLIENT_ID = "chat-at-idp"
AS_CLIENT_ID = "chat-at-docs"
SCOPES = frozenset({"mcp:read", "mcp:write", "mcp:admin"})
LOOPBACK = NetworkPolicy(allow_loopback=True)  # everything here is http://127.0.0.1


def make_idp(issuer: str, *, as_issuer: str, resource: str, idp_secret: str
             ) -> LocalIdentityProvider:
    """The enterprise IdP and its policy for the chat app and the docs server."""
    return LocalIdentityProvider(
        issuer,
        keys=[SigningKey.generate("ES256", kid="idp-1")],
        clients=[IdpClient(IDP_CLIENT_ID, idp_secret, {as_issuer: AS_CLIENT_ID})],
        rules=[AccessRule(as_issuer, resource, frozenset({"mcp:read", "mcp:admin"}),
                          clients=frozenset({IDP_CLIENT_ID}))],
        tenant=TENANT,
    )


def make_authorization_server(issuer: str, *, idp: LocalIdentityProvider, resource: str,
                              as_secret: str, store: Store | None = None
                              ) -> LocalAuthorizationServer:
    """The docs server's authorization server: ID-JAGs from the IdP, nothing else."""
    config = EmaConfig(
        issuer=issuer,
        trusted_idps=(TrustedIdp(idp.issuer, jwks_uri=idp.jwks_uri, algorithms=("ES256",),
                                 tenants=(TENANT,)),),
        resources={resource: SCOPES},
        clients=(EmaClient(AS_CLIENT_ID, resources=frozenset({resource})),),
        network=LOOPBACK,
    )
    grant = IdJagGrantType(IdJagValidator(config, store or MemoryStore()))
    return LocalAuthorizationServer(
        issuer,
        keys=[SigningKey.generate("ES256", kid="as-1")],
        clients=[RegisteredClient(AS_CLIENT_ID, secret=as_secret, grant_types=(JWT_BEARER_GRANT,))],
        resources=[resource],
        scopes_supported=sorted(SCOPES),
        dynamic_registration=False,
        client_metadata_documents=False,
        id_jag=grant,
        network=LOOPBACK,
    )


_documents: dict[str, str] = {}


def docs_server(audit: MemoryAuditSink) -> tuple[Server, Policy]:
    """The docs MCP server and the policy in front of its tools."""
    rules = Ruleset(
        [
            Rule("ema-never-purges", "deny", auth_kinds={"ema"}, tools={"purge_documents"}),
            Rule("confirm-destructive", "confirm", categories={"destructive"}),
            Rule("reads", "allow", categories={"read"}),
        ],
        allowed_tenants={TENANT},
    )
    policy = Policy(rules, sinks=[audit])
    # The whole example is one process: a sealing key made now will do (a fleet shares
    # MCPCORE_STATE_KEYS). Confirmations are single use, remembered in the store.
    keys = os.environ.get("MCPCORE_STATE_KEYS") or KeyRing.new_key("demo")
    mrtr = MrtrConfig(sealer=Sealer(KeyRing.from_config(keys)), single_use=True,
                      store=MemoryStore())
    server = Server("docs", "1.0.0", policy=policy, mrtr=mrtr)
    _documents.clear()
    _documents.update({"handbook": "Welcome to acme.", "draft": "Half a thought."})

    @server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    def read_document(name: str) -> str:
        """The text of a document."""
        if name not in _documents:
            raise ToolError(f"no document named {name!r}")
        return _documents[name]

    @server.tool(annotations={"destructiveHint": True, "openWorldHint": False})
    def delete_document(name: str) -> str:
        """Delete a document (destructive: a person confirms first)."""
        if _documents.pop(name, None) is None:
            raise ToolError(f"no document named {name!r}")
        return f"deleted {name}"

    @server.tool(annotations={"destructiveHint": True, "openWorldHint": False})
    def purge_documents() -> str:
        """Delete every document (never for enterprise-managed principals)."""
        _documents.clear()
        return "purged"

    return server, policy


def make_mcp_server(public_url: str, *, authorization_server: LocalAuthorizationServer,
                    audit: MemoryAuditSink) -> tuple[ASGIApp, ResourceServerConfig]:
    """The docs server behind bearer auth (trusting our authorization server)."""
    resource = public_url.rstrip("/") + "/mcp"
    config = ResourceServerConfig(
        resource=resource,
        resource_name="acme docs",
        authorization_servers=(IssuerConfig(authorization_server.issuer,
                                            jwks_uri=authorization_server.jwks_uri),),
        scope_hierarchy=DEFAULT_SCOPE_HIERARCHY,
        scopes_supported=("mcp:read",),  # the baseline; mcp:admin comes by step-up
        network=LOOPBACK,
    )
    server, policy = docs_server(audit)
    policy.resource_metadata = config.metadata_url  # the 403 step-up names the PRM
    return BearerAuthMiddleware(StreamableHTTP(server), config=config), config


def new_secret() -> str:
    return secrets.token_urlsafe(24)
