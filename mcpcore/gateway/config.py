"""The gateway's configuration as data: what the TOML file (docs/gateway.md) reads into.

Secrets are never values here: a credential names the environment variable or the file
that holds its secret (``SecretRef``), read when the gateway starts. There is no way to
forward the caller's token to an upstream (the spec's "Token Passthrough" is forbidden:
basic/security_best_practices.mdx).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from mcpcore.client.era import Mode
from mcpcore.tools import Category

#: How the gateway talks to an upstream is the client's ``Mode``: ``auto`` probes it
#: (mcpcore/client/era.py), ``legacy`` or a revision pins it.
MODES: tuple[Mode, ...] = ("auto", "legacy", "2026-07-28", "2025-11-25", "2025-06-18",
                           "2025-03-26")

CredentialKind = Literal["none", "static", "client_credentials", "token_exchange",
                         "id_jag"]
CREDENTIAL_KINDS: tuple[CredentialKind, ...] = (
    "none", "static", "client_credentials", "token_exchange", "id_jag")

#: The default separator between an upstream's prefix and a name: inside the spec's
#: tool-name characters (server/tools.mdx, "Tool Names": A-Z a-z 0-9 _ - .) and inside
#: the stricter function-name rules many model APIs apply (no ``.``).
DEFAULT_SEPARATOR = "__"


@dataclass(frozen=True, slots=True)
class SecretRef:
    """Where a secret is read from when the gateway starts: an environment variable or
    a file (its contents, trailing newline removed). Exactly one is set."""

    env: str | None = None
    file: str | None = None


@dataclass(frozen=True, slots=True)
class Credentials:
    """How the gateway authenticates to one upstream (never with the caller's token).

    - ``none``: no credential;
    - ``static``: ``secret`` in header ``header`` (``Authorization: Bearer <secret>`` by
      default; ``scheme=None`` sends the secret alone);
    - ``client_credentials``: an OAuth client-credentials token from ``token_endpoint``;
    - ``token_exchange``: the caller's token exchanged (RFC 8693) at ``token_endpoint``
      for one whose audience is the upstream, cached per principal until shortly before
      it expires;
    - ``id_jag``: Enterprise-Managed Authorization: an ID-JAG from the caller's IdP at
      ``idp_token_endpoint``, redeemed at ``token_endpoint``.
    """

    kind: CredentialKind = "none"
    header: str = "authorization"
    scheme: str | None = "Bearer"
    secret: SecretRef | None = None
    token_endpoint: str | None = None
    idp_token_endpoint: str | None = None
    client_id: str | None = None
    client_secret: SecretRef | None = None
    audience: str | None = None
    resource: str | None = None
    scopes: tuple[str, ...] = ()
    dpop: bool = False


@dataclass(frozen=True, slots=True)
class Filters:
    """Which of an upstream's names the gateway serves: those matching any ``include``
    glob (all when empty) and no ``exclude`` glob, matched against the upstream's own
    (unprefixed) name."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UpstreamConfig:
    """One upstream MCP server: ``url`` (Streamable HTTP) or ``command`` (stdio)."""

    name: str
    url: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    #: Environment of a stdio upstream: literal values (not secrets) ...
    env: Mapping[str, str] = field(default_factory=dict)
    #: ... and values taken from the gateway's own environment (child name → ours).
    env_from: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    era: Mode = "auto"
    credentials: Credentials = Credentials()
    #: Seconds one request to the upstream may take.
    timeout: float = 30.0
    #: Requests in flight to the upstream at once (more wait their turn).
    max_concurrency: int = 64
    #: The circuit breaker: this many failures in a row open it for ``breaker_reset``
    #: seconds, then one probe decides.
    breaker_failures: int = 5
    breaker_reset: float = 10.0
    tools: Filters = Filters()
    resources: Filters = Filters()
    prompts: Filters = Filters()
    #: The prefix of its names (default: ``name``); ignored when prefixing is off.
    prefix: str | None = None
    #: Tool categories for the policy, by glob of the upstream's tool name; they win
    #: over what the tool's annotations imply.
    categories: Mapping[str, Category] = field(default_factory=dict)

    @property
    def name_prefix(self) -> str:
        return self.prefix if self.prefix is not None else self.name


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """The whole gateway: its upstreams (in order: an earlier upstream wins a name
    collision) and how their catalogs are federated and served."""

    upstreams: tuple[UpstreamConfig, ...]
    name: str = "mcpcore-gateway"
    version: str = "0.1.0"
    #: Prefix every name with its upstream's prefix and ``separator``.
    prefixing: bool = True
    separator: str = DEFAULT_SEPARATOR
    #: Extra names for tools: alias → the prefixed name it stands for.
    aliases: Mapping[str, str] = field(default_factory=dict)
    #: Seconds between catalog refreshes (a ``list_changed`` refreshes at once).
    refresh: float = 300.0
    #: A policy rule file (docs/policy.md) gating every routed call.
    policy: str | None = None
    #: The lock file of pinned tool definitions (``mcpcore gateway pin``).
    pins: str | None = None
    #: Admit tools that are new since the lock file was written (changed ones never).
    admit_new_tools: bool = False
    #: Offer the ``search_tools`` tool over the federated catalog.
    search_tools: bool = False
