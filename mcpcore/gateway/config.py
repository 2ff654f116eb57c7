"""The gateway's configuration: its TOML file (docs/gateway-config.md) and what it reads into.

``load(path)`` and ``loads(text)`` check everything about a file first and report
**every** problem with its line, and a "did you mean" for a misspelled key or value
(``GatewayConfigError``); a file with one problem gives no ``GatewayConfig``, so a
gateway given a bad file does not start. ``resolve_secrets(config, environ)`` then reads
the secrets the file names: a step of its own, so that ``mcpcore gateway check`` can
check a file where they are not set (``--no-env``).

Secrets are never values here: a credential names the environment variable or the file
that holds its secret (``SecretRef``), read when the gateway starts; a literal secret in
the file (``client_secret = "..."``, ``token = "..."``, a secret-looking ``env`` value,
a password in a URL) is refused with the form to use instead. There is no way to forward
the caller's token to an upstream (the spec's "Token Passthrough" is forbidden:
basic/security_best_practices.mdx): a file that asks for it is refused, naming the
compliant kinds (``token_exchange``, RFC 8693; ``id_jag``).

The file::

    [gateway]
    name = "acme-gateway"
    separator = "__"
    refresh = "5m"
    policy = "policy.toml"        # relative paths: against the file's folder

    [[upstream]]
    name = "notes"
    url = "https://notes.example/mcp"
    tools.include = ["*"]
    categories = { "delete_*" = "destructive" }

    [upstream.credentials]
    kind = "token_exchange"
    token_endpoint = "https://as.example/token"
    client_id = "gateway"
    client_secret_env = "NOTES_CLIENT_SECRET"
    audience = "https://notes.example"

    [[upstream]]
    name = "files"
    command = "python"
    args = ["-m", "examples.everything", "--stdio"]
    env_from = { API_KEY = "FILES_API_KEY" }
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from mcpcore.auth.urls import is_loopback_host
from mcpcore.client.era import Mode
from mcpcore.policy.matchers import check_glob
from mcpcore.spelling import did_you_mean
from mcpcore.tomlfile import (
    KeyPath,
    Locator,
    Problem,
    Reader,
    TomlFileError,
    parse_document,
    read_bytes,
    type_name,
)
from mcpcore.tools import CATEGORIES, Category

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
    #: DPoP-bound tokens (RFC 9449): a proof of the key on every token and upstream
    #: request; the key from ``dpop_key`` (a PEM private key), else made at start.
    dpop: bool = False
    dpop_key: SecretRef | None = None


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
    #: Plain ``http`` to a host that is not loopback (calls and credentials cross the
    #: network in clear): refused unless this is set (``allow_insecure_http = true``).
    allow_insecure_http: bool = False

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
    #: The resource server's TOML file (docs/auth.md): callers need a bearer token it
    #: validates; ``token_exchange`` and ``id_jag`` exchange it.
    auth: str | None = None
    #: Admit tools that are new since the lock file was written (changed ones never).
    admit_new_tools: bool = False
    #: Offer the ``search_tools`` tool over the federated catalog.
    search_tools: bool = False
    #: ``mcpcore gateway serve`` answers ``GET /metrics`` (docs/gateway.md,
    #: "Observability"; needs ``mcpcore[metrics]``).
    metrics: bool = False
    #: A span per request and per upstream call, the trace context sent upstream
    #: (needs ``mcpcore[tracing]``; the SDK and exporter are configured as usual).
    tracing: bool = False
    #: Where the URL of the fleet's shared Store is (``store_url_env``/``store_url_file``:
    #: a Redis URL may hold a password): legacy sessions, listen fan-out, parked bridged
    #: calls, rate limits and the token cache live there (docs/gateway.md, "Operating a
    #: fleet"). None: one instance, everything in memory.
    store_url: SecretRef | None = None
    #: Where the configuration was read from (a file's path), for messages.
    source: str = "<gateway config>"


# -- the file -----------------------------------------------------------------------------
#: A configuration file larger than this is refused before it is parsed.
MAX_BYTES = 1 << 20
#: More upstreams than this is refused (each is a connection pool or a process).
MAX_UPSTREAMS = 256
#: The longest timeout, breaker reset or refresh period, in seconds (a day).
MAX_SECONDS = 86_400.0
#: A secret file larger than this is refused (a secret is a line, not a document).
MAX_SECRET_BYTES = 64 * 1024
#: The longest upstream name or prefix: a prefixed name keeps room for the tool's own
#: name within the spec's 128 characters (server/tools.mdx, "Tool Names").
MAX_PREFIX = 64

#: Where the docs say what to use instead of forwarding the caller's token.
PASSTHROUGH_DOCS = "docs/gateway-config.md, \"Credentials\""


class GatewayConfigError(TomlFileError):
    """A gateway configuration that cannot be used; ``problems`` lists every one, with
    its line (``str(error)`` is one ``source:line: message`` per problem)."""


_TOP_KEYS = ("gateway", "upstream")
_GATEWAY_KEYS = ("name", "version", "prefixing", "separator", "aliases", "refresh",
                 "policy", "pins", "admit_new_tools", "search_tools", "auth",
                 "metrics", "tracing", "store_url_env", "store_url_file")
_UPSTREAM_KEYS = ("name", "url", "allow_insecure_http", "command", "args", "env",
                  "env_from", "cwd", "era", "credentials", "timeout", "max_concurrency",
                  "breaker_failures", "breaker_reset", "tools", "resources", "prompts",
                  "prefix", "categories")
_HTTP_ONLY = ("allow_insecure_http",)
_STDIO_ONLY = ("args", "env", "env_from", "cwd")
_FILTER_KEYS = ("include", "exclude")
_OAUTH_KEYS = ("token_endpoint", "client_id", "client_secret_env", "client_secret_file",
               "audience", "resource", "scopes", "dpop", "dpop_key_env", "dpop_key_file")
#: The keys each credential kind takes (besides ``kind``) ...
_KIND_KEYS: dict[str, tuple[str, ...]] = {
    "none": (),
    "static": ("secret_env", "secret_file", "header", "scheme"),
    "client_credentials": _OAUTH_KEYS,
    "token_exchange": _OAUTH_KEYS,
    "id_jag": ("idp_token_endpoint", *_OAUTH_KEYS),
}
#: ... and the ones it needs (a tuple of alternatives: one of them).
_KIND_NEEDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "none": (),
    "static": (("secret_env", "secret_file"),),
    "client_credentials": (("token_endpoint",), ("client_id",),
                           ("client_secret_env", "client_secret_file")),
    "token_exchange": (("token_endpoint",), ("client_id",),
                       ("client_secret_env", "client_secret_file"), ("audience", "resource")),
    "id_jag": (("idp_token_endpoint",), ("token_endpoint",), ("client_id",),
               ("client_secret_env", "client_secret_file"), ("audience",), ("resource",)),
}
_CREDENTIAL_KEYS = tuple(dict.fromkeys(k for keys in _KIND_KEYS.values() for k in keys))
#: Keys that would hold a secret in the file, and the secret they stand for: refused,
#: naming ``<secret>_env`` / ``<secret>_file``.
_LITERAL_SECRETS = {"secret": "secret", "client_secret": "client_secret", "token": "secret",
                    "access_token": "secret", "bearer_token": "secret", "bearer": "secret",
                    "api_key": "secret", "apikey": "secret", "password": "secret",
                    "headers": "secret", "authorization": "secret"}
#: Headers the gateway sets itself (HTTP framing, the MCP transport's own).
_OWN_HEADERS = frozenset({"host", "content-length", "content-type", "transfer-encoding",
                          "connection", "accept", "origin", "cookie"})

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_SEPARATOR = re.compile(r"^[_.-]{1,4}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")  # RFC 9110 section 5.6.2
_AUTH_VALUE = re.compile(r"^\s*(bearer|basic|token|digest|dpop)\s+\S", re.IGNORECASE)
_SECRET_WORDS = frozenset({"secret", "secrets", "token", "password", "passwd", "apikey",
                           "authorization", "credential", "credentials", "bearer", "pat"})
_SECRET_PAIRS = frozenset({("api", "key"), ("private", "key"), ("access", "key"),
                           ("client", "secret"), ("session", "key")})
#: Words that make a secret-sounding name about the secret, not the secret itself
#: (``TOKEN_URL``, ``SECRET_FILE``, ``--token-file``).
_NOT_THE_SECRET = frozenset({"url", "uri", "endpoint", "path", "file", "dir", "type",
                             "name", "id", "header", "env", "var", "ttl", "expiry",
                             "lifetime", "length", "size", "kind", "mode", "format",
                             "scheme", "audience", "issuer"})
_SECRET_ARG = re.compile(r"^--?(?P<name>[A-Za-z][A-Za-z0-9_-]*)(?:=(?P<value>.*))?$")


def looks_secret(name: str) -> bool:
    """Whether a variable, option or parameter name says it holds a secret
    (``GITHUB_TOKEN``, ``api-key``, ``DB_PASSWORD``; not ``MAX_TOKENS``, not
    ``TOKEN_URL`` or ``SECRET_FILE``, which say where one is).

    >>> [looks_secret(n) for n in ("GITHUB_TOKEN", "TOKEN_URL", "MAX_TOKENS")]
    [True, False, False]
    """
    parts = [p for p in re.split(r"[^a-z0-9]+", name.lower()) if p]
    if any(p in _NOT_THE_SECRET for p in parts):
        return False
    return any(p in _SECRET_WORDS for p in parts) or any(
        pair in _SECRET_PAIRS for pair in itertools.pairwise(parts))


def _is_passthrough(word: str) -> bool:
    """A key or kind that asks to forward the caller's token."""
    squeezed = re.sub(r"[^a-z]", "", word.lower())
    return "passthrough" in squeezed or "passthru" in squeezed or squeezed.startswith(
        "forward")


def _passthrough_message(label: str, what: str) -> str:
    return (f"{label}: {what}: the caller's token is never forwarded to an upstream (the "
            "MCP spec forbids token passthrough: basic/security_best_practices, \"Token "
            "Passthrough\"; the upstream would accept a token not issued for it). Use "
            "kind = \"token_exchange\" (RFC 8693: the caller's token exchanged for one "
            "issued for the upstream) or kind = \"id_jag\" (Enterprise-Managed "
            f"Authorization); see {PASSTHROUGH_DOCS}")


def _literal_message(label: str, key: str, form: str) -> str:
    return (f"{label}: {key} would hold a secret in the file: a literal secret is refused "
            f"(the file is read by people and kept in version control); name where the "
            f"gateway reads it: {form}_env = \"VAR\" (an environment variable) or "
            f"{form}_file = \"/path\" (a file)")


def load(path: str | Path, *, max_bytes: int = MAX_BYTES) -> GatewayConfig:
    """The ``GatewayConfig`` in the file at ``path`` (its relative paths resolved against
    the file's folder); raises ``GatewayConfigError`` with every problem."""
    raw = read_bytes(path, max_bytes=max_bytes, error=GatewayConfigError)
    return loads(raw, source=str(path), base_dir=Path(path).absolute().parent,
                 max_bytes=max_bytes)


def loads(text: str | bytes, *, source: str = "<gateway config>",
          base_dir: str | Path | None = None, max_bytes: int = MAX_BYTES) -> GatewayConfig:
    """The ``GatewayConfig`` in ``text``; raises ``GatewayConfigError`` with every
    problem. Relative paths in it (``policy``, ``pins``, ``cwd``, ``*_file``) are
    resolved against ``base_dir`` (left relative without one).

    >>> loads('[[upstream]]\\nname = "notes"\\nurl = "http://127.0.0.1:8001/mcp"\\n'
    ...       ).upstreams[0].name_prefix
    'notes'
    """
    document, where = parse_document(text, source=source, max_bytes=max_bytes,
                                     what="a gateway configuration", error=GatewayConfigError)
    base = None if base_dir is None else Path(base_dir)
    return _Reader(source, where, base).read(document)


class _Reader(Reader):
    """Checks a parsed configuration and builds the ``GatewayConfig``."""

    def __init__(self, source: str, where: Locator, base_dir: Path | None) -> None:
        super().__init__(source, where)
        self.base_dir = base_dir
        #: Each upstream's prefix → its name and line (``names``), for the aliases.
        self.declared: dict[str, tuple[str, int]] = {}

    # -- the document --------------------------------------------------------------------
    def read(self, doc: dict[str, Any]) -> GatewayConfig:
        self.keys((), doc, _TOP_KEYS, "the gateway configuration")
        settings: dict[str, Any] = {}
        gateway: dict[str, Any] = {}
        if "gateway" in doc:
            gateway = self.table(("gateway",), doc["gateway"], "[gateway]") or {}
            # ``store_url`` is a literal secret: ``gateway`` says so, not "unknown key".
            self.keys(("gateway",), {k: v for k, v in gateway.items() if k != "store_url"},
                      _GATEWAY_KEYS, "[gateway]")
            settings = self.gateway(gateway)
        separator = settings.get("separator", DEFAULT_SEPARATOR)
        prefixing = settings.get("prefixing", True)
        upstreams = self.upstreams(doc, separator, prefixing)
        if "aliases" in gateway:
            settings["aliases"] = self.aliases(gateway["aliases"], separator, prefixing)
        if self.problems:
            raise GatewayConfigError(self.source, self.problems)
        return GatewayConfig(tuple(upstreams), source=self.source, **settings)

    def gateway(self, table: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        path: KeyPath = ("gateway",)
        for key in ("name", "version"):
            if key in table:
                value = self.string((*path, key), table[key], f"gateway.{key}")
                if value is not None and len(value) > 256:
                    self.problem((*path, key), f"gateway.{key} is longer than 256 characters")
                elif value is not None:
                    out[key] = value
        for key in ("prefixing", "admit_new_tools", "search_tools", "metrics", "tracing"):
            if key in table:
                flag = self.boolean((*path, key), table[key], f"gateway.{key}")
                if flag is not None:
                    out[key] = flag
        if "separator" in table:
            sep = table["separator"]
            if not isinstance(sep, str) or not _SEPARATOR.match(sep):
                self.problem((*path, "separator"),
                             f"gateway.separator must be 1 to 4 of '_', '-', '.' (the spec's "
                             f"tool-name characters that are not letters or digits), not "
                             f"{sep!r}")
            else:
                out["separator"] = sep
        if "refresh" in table:
            refresh = self.duration((*path, "refresh"), table["refresh"], "gateway.refresh",
                                    at_most=MAX_SECONDS)
            if refresh is not None and refresh < 1:
                self.problem((*path, "refresh"), "gateway.refresh must be at least 1 "
                                                 "second (each refresh lists every upstream)")
            elif refresh is not None:
                out["refresh"] = refresh
        if "policy" in table:
            policy = self.path((*path, "policy"), table["policy"], "gateway.policy")
            if policy is not None and not Path(policy).is_file():
                self.problem((*path, "policy"), f"gateway.policy: no rule file at {policy} "
                                                "(write one: docs/policy.md)")
            elif policy is not None:
                out["policy"] = policy
        if "store_url" in table:
            # A Redis URL may carry a password: like every secret, not in the file.
            self.problem((*path, "store_url"), _literal_message(
                "gateway", "store_url", "store_url"))
        store_url = self.secret_ref(path, table, "store_url", "gateway")
        if store_url is not None:
            out["store_url"] = store_url
        if "auth" in table:
            auth = self.path((*path, "auth"), table["auth"], "gateway.auth")
            if auth is not None and not Path(auth).is_file():
                self.problem((*path, "auth"), f"gateway.auth: no resource-server file at "
                                              f"{auth} (write one: docs/auth.md)")
            elif auth is not None:
                out["auth"] = auth
        if "pins" in table:
            pins = self.path((*path, "pins"), table["pins"], "gateway.pins")
            if pins is not None and Path(pins).is_dir():
                self.problem((*path, "pins"), f"gateway.pins: {pins} is a folder; name the "
                                              "lock file")
            elif pins is not None and not Path(pins).parent.is_dir():
                self.problem((*path, "pins"), f"gateway.pins: the folder of {pins} does not "
                                              "exist")
            elif pins is not None:
                out["pins"] = pins
        return out

    def aliases(self, value: Any, separator: str, prefixing: bool) -> dict[str, str]:
        path: KeyPath = ("gateway", "aliases")
        table = self.table(path, value, "gateway.aliases")
        if table is None:
            return {}
        heads = {f"{prefix}{separator}": name
                 for prefix, (name, _) in self.declared.items()}
        out: dict[str, str] = {}
        for alias, target in table.items():
            where: KeyPath = (*path, alias)
            what = f"gateway.aliases.{alias}"
            if not _TOOL_NAME.match(alias):
                self.problem(where, f"alias {alias!r} is not a tool name (letters, digits, "
                                    "'_', '-', '.'; at most 128)")
                continue
            if prefixing and (owner := _owner(alias, heads)) is not None:
                self.problem(where, f"alias {alias!r} starts with upstream {owner!r}'s "
                                    "prefix: it would hide that upstream's tool of that name")
                continue
            if not isinstance(target, str) or not _TOOL_NAME.match(target):
                self.problem(where, f"{what} must name a tool (letters, digits, '_', '-', "
                                    f"'.'; at most 128), not {target!r}")
                continue
            if target == alias:
                self.problem(where, f"{what} names itself")
                continue
            if prefixing and heads and _owner(target, heads) is None:
                hint = did_you_mean(target.split(separator, 1)[0], self.declared)
                self.problem(where, f"{what}: {target!r} starts with no upstream's prefix "
                             f"and separator{hint}; aliases point at prefixed names ("
                             f"{', '.join(repr(h + '...') for h in heads)})")
                continue
            out[alias] = target
        return out

    # -- upstreams -----------------------------------------------------------------------
    def upstreams(self, doc: dict[str, Any], separator: str, prefixing: bool
                  ) -> list[UpstreamConfig]:
        if "upstream" not in doc:
            self.problems.append(Problem(0, "no upstream: add one [[upstream]] table per "
                                            "MCP server the gateway fronts"))
            return []
        entries = doc["upstream"]
        if not isinstance(entries, list):
            self.problem(("upstream",), "upstream must be an array of tables: write "
                                        "[[upstream]], not [upstream]")
            return []
        if len(entries) > MAX_UPSTREAMS:
            self.problem(("upstream", MAX_UPSTREAMS), f"more than {MAX_UPSTREAMS} upstreams")
            return []
        self.names(entries, separator, prefixing)
        out: list[UpstreamConfig] = []
        for index, entry in enumerate(entries):
            upstream = self.upstream(index, entry)
            if upstream is not None:
                out.append(upstream)
        return out

    def names(self, entries: Sequence[Any], separator: str, prefixing: bool) -> None:
        """The upstreams' names and prefixes against each other (each entry's own
        problems aside, so that a duplicate is found even in an entry with others):
        unique, and each prefix followed by the separator says which upstream owns a
        prefixed name."""
        names: dict[str, int] = {}
        prefixes: dict[str, tuple[str, int]] = {}
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            name, prefix = entry.get("name"), entry.get("prefix", entry.get("name"))
            if not isinstance(name, str) or not _NAME.match(name):
                continue
            line = self.where.line(("upstream", index))
            if name in names:
                self.problem(("upstream", index, "name"), f"upstream name {name!r} is "
                             f"already used by the upstream on line {names[name]}")
                continue
            names[name] = line
            if not prefixing and "prefix" in entry:
                self.problem(("upstream", index, "prefix"),
                             f"upstream {name!r}: prefix has no effect with "
                             "gateway.prefixing = false; remove it, or turn prefixing on")
            if not prefixing or not isinstance(prefix, str) or not _NAME.match(prefix):
                continue
            where: KeyPath = ("upstream", index, "prefix" if "prefix" in entry else "name")
            label = f"upstream {name!r}"
            if prefix in prefixes:
                other, at = prefixes[prefix]
                self.problem(where, f"{label}: prefix {prefix!r} is already upstream "
                                    f"{other!r}'s (line {at}); set a prefix of its own")
                continue
            prefixes[prefix] = (name, line)
            if (prefix + separator).find(separator) != len(prefix):
                self.problem(where, f"{label}: prefix {prefix!r} holds the separator "
                                    f"{separator!r} (or ends with part of it): a prefixed "
                                    "name would not say which upstream owns it; choose "
                                    "another prefix or gateway.separator")
        self.declared = prefixes

    def upstream(self, index: int, entry: Any) -> UpstreamConfig | None:
        path: KeyPath = ("upstream", index)
        table = self.table(path, entry, f"upstream #{index + 1}")
        if table is None:
            return None
        before = len(self.problems)
        name = table.get("name")
        label = f"upstream {name!r}" if isinstance(name, str) else f"upstream #{index + 1}"
        for key in table:
            if key in _UPSTREAM_KEYS:
                continue
            if _is_passthrough(key):
                self.problem((*path, key), _passthrough_message(label, key))
            elif key in _LITERAL_SECRETS or looks_secret(key):
                self.problem((*path, key), _literal_message(
                    label, key, "credentials.secret") + " in [upstream.credentials] "
                    "(kind = \"static\")")
            else:
                self.problem((*path, key), f"unknown key {key!r} in {label}"
                             f"{did_you_mean(key, _UPSTREAM_KEYS)}; known: "
                             f"{', '.join(_UPSTREAM_KEYS)}")
        if not isinstance(name, str) or not _NAME.match(name):
            self.problem((*path, "name") if "name" in table else path,
                         f"{label} needs a name: 1 to {MAX_PREFIX} letters, digits, '_', '-', "
                         "'.' (it prefixes the upstream's names)")
        fields: dict[str, Any] = {}
        url, command = table.get("url"), table.get("command")
        if url is None and command is None:
            self.problem(path, f"{label} needs url (a Streamable HTTP server) or command "
                               "(a stdio server)")
        elif url is not None and command is not None:
            self.problem((*path, "command"), f"{label} has both url and command: an "
                                             "upstream is one or the other")
        elif url is not None:
            for key in _STDIO_ONLY:
                if key in table:
                    self.problem((*path, key), f"{label}: {key} is for a stdio upstream "
                                               "(command), not one with a url")
            insecure = False
            if "allow_insecure_http" in table:
                insecure = bool(self.boolean((*path, "allow_insecure_http"),
                                             table["allow_insecure_http"],
                                             f"{label}: allow_insecure_http"))
                fields["allow_insecure_http"] = insecure
            checked = self.upstream_url((*path, "url"), url, label, insecure)
            if checked is not None:
                fields["url"] = checked
        else:
            for key in _HTTP_ONLY:
                if key in table:
                    self.problem((*path, key), f"{label}: {key} is for an upstream with a "
                                               "url, not a stdio one (command)")
            fields.update(self.stdio(path, table, label))
        if "era" in table:
            era = table["era"]
            if era not in MODES:
                self.problem((*path, "era"), f"{label}: era must be one of "
                             f"{', '.join(MODES)}, not {era!r}"
                             f"{did_you_mean(era, MODES) if isinstance(era, str) else ''}")
            else:
                fields["era"] = era
        for key in ("timeout", "breaker_reset"):
            if key in table:
                fields[key] = self.duration((*path, key), table[key], f"{label}: {key}",
                                            at_most=MAX_SECONDS)
        if "max_concurrency" in table:
            fields["max_concurrency"] = self.whole(
                (*path, "max_concurrency"), table["max_concurrency"],
                f"{label}: max_concurrency", least=1, most=100_000)
        if "breaker_failures" in table:
            fields["breaker_failures"] = self.whole(
                (*path, "breaker_failures"), table["breaker_failures"],
                f"{label}: breaker_failures", least=1, most=10_000)
        for key in ("tools", "resources", "prompts"):
            if key in table:
                fields[key] = self.filters((*path, key), table[key], f"{label}: {key}")
        if "prefix" in table:
            prefix = table["prefix"]
            if not isinstance(prefix, str) or not _NAME.match(prefix):
                self.problem((*path, "prefix"), f"{label}: prefix must be 1 to {MAX_PREFIX} "
                                                "letters, digits, '_', '-', '.'")
            else:
                fields["prefix"] = prefix
        if "categories" in table:
            fields["categories"] = self.categories((*path, "categories"),
                                                   table["categories"], label)
        if "credentials" in table:
            fields["credentials"] = self.credentials((*path, "credentials"),
                                                     table["credentials"], label)
            if command is not None and url is None and \
                    fields["credentials"].kind != "none":
                self.problem((*path, "credentials"), f"{label}: credentials go in HTTP "
                             "headers, and a stdio upstream (command) has none: give it "
                             "its secret with env_from = { VAR = \"GATEWAY_VAR\" }")
        if len(self.problems) > before:
            return None
        assert isinstance(name, str)
        return UpstreamConfig(name, **fields)

    def upstream_url(self, path: KeyPath, value: Any, label: str, insecure: bool
                     ) -> str | None:
        url = self.string(path, value, f"{label}: url")
        if url is None or not self.printable(path, url, f"{label}: url"):
            return None
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises for a port that is not a number
        except ValueError:
            self.problem(path, f"{label}: url {url!r} is not a URL")
            return None
        if parts.username is not None or parts.password is not None:
            self.problem(path, _literal_message(label, "url's user:password", "secret")
                         + " in [upstream.credentials] (kind = \"static\")")
            return None
        secret_params = [k for k, _ in parse_qsl(parts.query, keep_blank_values=True)
                         if looks_secret(k) or k.lower() in ("key", "sig", "code")]
        if secret_params:
            self.problem(path, _literal_message(label, f"url's query parameter "
                         f"{secret_params[0]!r}", "secret") + " in [upstream.credentials] "
                         "(kind = \"static\", with its header)")
            return None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self.problem(path, f"{label}: url must be an http or https URL with a host, "
                               f"not {url!r}")
            return None
        if parts.fragment or "#" in url:
            self.problem(path, f"{label}: url must not have a fragment")
            return None
        if parts.scheme == "http" and not is_loopback_host(parts.hostname) and not insecure:
            self.problem(path, f"{label}: plain http to {parts.hostname} sends calls and "
                               "credentials in clear: use https (plain http is allowed to a "
                               "loopback host), or set allow_insecure_http = true in this "
                               "[[upstream]] for a network you trust")
            return None
        return url

    def token_endpoint(self, path: KeyPath, value: Any, what: str) -> str | None:
        url = self.string(path, value, what)
        if url is None or not self.printable(path, url, what):
            return None
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises for a port that is not a number
        except ValueError:
            self.problem(path, f"{what} {url!r} is not a URL")
            return None
        if (parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment
                or parts.username is not None or parts.password is not None):
            self.problem(path, f"{what} must be an https URL with a host, and no user or "
                               f"fragment, not {url!r}")
            return None
        if parts.scheme == "http" and not is_loopback_host(parts.hostname):
            self.problem(path, f"{what}: a token endpoint receives the gateway's client "
                               "secret and callers' tokens: it must be https (plain http "
                               "only to a loopback host, for local development)")
            return None
        return url

    def stdio(self, path: KeyPath, table: dict[str, Any], label: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        command = self.string((*path, "command"), table["command"], f"{label}: command")
        if command is not None and "\x00" in command:
            self.problem((*path, "command"), f"{label}: command must not contain NUL")
        elif command is not None:
            out["command"] = command
        if "args" in table:
            args = table["args"]
            if not isinstance(args, list) or not all(isinstance(a, str) and "\x00" not in a
                                                     for a in args):
                self.problem((*path, "args"), f"{label}: args must be a list of strings "
                                              "(without NUL)")
            else:
                self.secret_args((*path, "args"), args, label)
                out["args"] = tuple(args)
        if "env" in table:
            env = self.table((*path, "env"), table["env"], f"{label}: env")
            for var, value in (env or {}).items():
                where: KeyPath = (*path, "env", var)
                if not _ENV_NAME.match(var):
                    self.problem(where, f"{label}: env: {var!r} is not a variable name")
                elif not isinstance(value, str):
                    self.problem(where, f"{label}: env.{var} must be a string, not "
                                        f"{type_name(value)}")
                elif "\x00" in value:
                    self.problem(where, f"{label}: env.{var} must not contain NUL")
                elif looks_secret(var) or _AUTH_VALUE.match(value):
                    self.problem(where, f"{label}: env.{var} would hold a secret in the "
                                        "file: a literal secret is refused; take it from "
                                        f"the gateway's environment: env_from = {{ {var} = "
                                        "\"GATEWAY_VAR\" }")
            if env is not None:
                out["env"] = dict(env)
        if "env_from" in table:
            env_from = self.table((*path, "env_from"), table["env_from"], f"{label}: env_from")
            for var, source in (env_from or {}).items():
                where = (*path, "env_from", var)
                if not _ENV_NAME.match(var):
                    self.problem(where, f"{label}: env_from: {var!r} is not a variable name")
                elif not isinstance(source, str) or not _ENV_NAME.match(source):
                    self.problem(where, f"{label}: env_from.{var} must name a variable of "
                                        f"the gateway's environment, not {source!r}")
                elif var in out.get("env", {}):
                    self.problem(where, f"{label}: {var} is in both env and env_from")
            if env_from is not None:
                out["env_from"] = dict(env_from)
        if "cwd" in table:
            cwd = self.path((*path, "cwd"), table["cwd"], f"{label}: cwd")
            if cwd is not None and not Path(cwd).is_dir():
                self.problem((*path, "cwd"), f"{label}: cwd: no folder at {cwd}")
            elif cwd is not None:
                out["cwd"] = cwd
        return out

    def secret_args(self, path: KeyPath, args: Sequence[str], label: str) -> None:
        for i, arg in enumerate(args):
            match = _SECRET_ARG.match(arg)
            if match is None or not looks_secret(match["name"]):
                continue
            value = match["value"]
            if value is None and i + 1 < len(args):
                value = args[i + 1]
            if value:
                self.problem(path, f"{label}: args pass a secret on the command line "
                                   f"({arg.split('=', 1)[0]}; every user of the machine sees "
                                   "it in the process list): a literal secret is refused; "
                                   "give it to the server in its environment, from the "
                                   "gateway's: env_from = { VAR = \"GATEWAY_VAR\" }")
                return

    def filters(self, path: KeyPath, value: Any, what: str) -> Filters:
        table = self.table(path, value, f"{what} (a table of include and exclude)")
        if table is None:
            return Filters()
        self.keys(path, table, _FILTER_KEYS, what)
        got: dict[str, tuple[str, ...]] = {}
        for key in _FILTER_KEYS:
            if key not in table:
                continue
            patterns = self.strings((*path, key), table[key], f"{what}.{key}",
                                    allow_empty=True)
            for pattern in patterns or ():
                try:
                    check_glob(pattern, what=f"{what}.{key}: pattern")
                except ValueError as exc:
                    self.problem((*path, key), str(exc))
            got[key] = tuple(patterns or ())
        return Filters(**got)

    def categories(self, path: KeyPath, value: Any, label: str) -> dict[str, Category]:
        table = self.table(path, value, f"{label}: categories")
        out: dict[str, Category] = {}
        for pattern, category in (table or {}).items():
            where: KeyPath = (*path, pattern)
            try:
                check_glob(pattern, what=f"{label}: categories: pattern")
            except ValueError as exc:
                self.problem(where, str(exc))
                continue
            if category not in CATEGORIES:
                hint = did_you_mean(category, CATEGORIES) if isinstance(category, str) else ""
                self.problem(where, f"{label}: categories.{pattern} must be one of "
                                    f"{', '.join(CATEGORIES)}, not {category!r}{hint}")
                continue
            out[pattern] = category
        return out

    # -- credentials ---------------------------------------------------------------------
    def credentials(self, path: KeyPath, value: Any, label: str) -> Credentials:
        what = f"{label}: credentials"
        table = self.table(path, value, what)
        if table is None:
            return Credentials()
        kind = table.get("kind")
        if "kind" not in table:
            self.problem(path, f"{what} needs a kind: one of {', '.join(CREDENTIAL_KINDS)}")
            kind = None
        elif isinstance(kind, str) and _is_passthrough(kind):
            self.problem((*path, "kind"), _passthrough_message(label, f"kind = {kind!r}"))
            kind = None
        elif kind not in CREDENTIAL_KINDS:
            hint = did_you_mean(kind, CREDENTIAL_KINDS) if isinstance(kind, str) else ""
            self.problem((*path, "kind"), f"{what}: kind must be one of "
                                          f"{', '.join(CREDENTIAL_KINDS)}, not {kind!r}{hint}")
            kind = None
        known = ("kind", *_KIND_KEYS[kind]) if kind is not None else ("kind",
                                                                      *_CREDENTIAL_KEYS)
        for key in table:
            if key in known:
                continue
            if _is_passthrough(key):
                self.problem((*path, key), _passthrough_message(label, key))
            elif key in _LITERAL_SECRETS:
                self.problem((*path, key), _literal_message(what, key, _LITERAL_SECRETS[key]))
            elif key in _CREDENTIAL_KEYS:
                self.problem((*path, key), f"{what}: kind {kind!r} does not use {key}")
            else:
                self.problem((*path, key), f"unknown key {key!r} in {what}"
                             f"{did_you_mean(key, known)}; known: {', '.join(known)}")
        if kind is None:
            return Credentials()
        literal = {_LITERAL_SECRETS[k] for k in table if k in _LITERAL_SECRETS}
        for needed in _KIND_NEEDS[kind]:
            if not any(k in table or k.rsplit("_", 1)[0] in literal for k in needed):
                self.problem(path, f"{what}: kind {kind!r} needs "
                             f"{' or '.join(needed)}")
        out: dict[str, Any] = {"kind": kind}
        for ref in ("secret", "client_secret", "dpop_key"):
            got = self.secret_ref(path, table, ref, what)
            if got is not None:
                out[ref] = got
        for key in ("token_endpoint", "idp_token_endpoint"):
            if key in table:
                out[key] = self.token_endpoint((*path, key), table[key], f"{what}.{key}")
        for key in ("client_id", "audience", "resource"):
            if key in table:
                text = self.string((*path, key), table[key], f"{what}.{key}")
                if text is not None and any(c.isspace() for c in text):
                    self.problem((*path, key), f"{what}.{key} must not contain spaces")
                out[key] = text
        if isinstance(out.get("resource"), str) and (
                not urlsplit(out["resource"]).scheme or "#" in out["resource"]):
            self.problem((*path, "resource"), f"{what}.resource must be an absolute URI "
                                              "without a fragment (RFC 8707 section 2)")
        if "scopes" in table:
            scopes = self.strings((*path, "scopes"), table["scopes"], f"{what}.scopes",
                                  allow_empty=True)
            if scopes is not None and any(any(c.isspace() for c in s) for s in scopes):
                self.problem((*path, "scopes"), f"{what}.scopes: one scope per string, no "
                                                "spaces")
            out["scopes"] = tuple(scopes or ())
        if "dpop" in table:
            out["dpop"] = self.boolean((*path, "dpop"), table["dpop"], f"{what}.dpop")
        if "dpop_key" in out and out.get("dpop") is not True:
            key = "dpop_key_env" if "dpop_key_env" in table else "dpop_key_file"
            self.problem((*path, key), f"{what}.{key} names a DPoP key, but dpop is not "
                                       "true: add dpop = true, or remove the key")
        if "header" in table:
            header = table["header"]
            if not isinstance(header, str) or not _TOKEN.match(header):
                self.problem((*path, "header"), f"{what}.header must be a header name, not "
                                                f"{header!r}")
            elif header.lower() in _OWN_HEADERS or header.lower().startswith("mcp-"):
                self.problem((*path, "header"), f"{what}.header: the gateway sets "
                                                f"{header} itself; choose another header")
            else:
                out["header"] = header.lower()
        if "scheme" in table:
            scheme = table["scheme"]
            if not isinstance(scheme, str) or (scheme and not _TOKEN.match(scheme)):
                self.problem((*path, "scheme"), f"{what}.scheme must be one word (\"Bearer\""
                                                "), or \"\" to send the secret alone")
            else:
                out["scheme"] = scheme or None
        return Credentials(**out)

    def secret_ref(self, path: KeyPath, table: Mapping[str, Any], name: str, what: str
                   ) -> SecretRef | None:
        env_key, file_key = f"{name}_env", f"{name}_file"
        if env_key in table and file_key in table:
            self.problem((*path, file_key), f"{what}: {env_key} and {file_key} both say "
                                            f"where the {name.replace('_', ' ')} is: keep one")
            return None
        if env_key in table:
            var = table[env_key]
            if not isinstance(var, str) or not _ENV_NAME.match(var):
                self.problem((*path, env_key), f"{what}.{env_key} must name an environment "
                                               f"variable, not {var!r}")
                return None
            return SecretRef(env=var)
        if file_key in table:
            file = self.path((*path, file_key), table[file_key], f"{what}.{file_key}")
            return None if file is None else SecretRef(file=file)
        return None

    def printable(self, path: KeyPath, text: str, what: str) -> bool:
        """Whether ``text`` has no blank or control character (a URL, a command)."""
        if any(c.isspace() or not c.isprintable() for c in text):
            self.problem(path, f"{what} must not contain blanks or control characters")
            return False
        return True

    def path(self, path: KeyPath, value: Any, what: str) -> str | None:
        """A path from the file, resolved against the file's folder."""
        text = self.string(path, value, what)
        if text is None:
            return None
        if "\x00" in text:
            self.problem(path, f"{what} is not a path")
            return None
        if self.base_dir is None or Path(text).is_absolute():
            return text
        return str(self.base_dir / text)


def _owner(name: str, heads: Mapping[str, str]) -> str | None:
    """The upstream whose ``prefix + separator`` starts ``name``, if any."""
    return next((owner for head, owner in heads.items() if name.startswith(head)
                 and len(name) > len(head)), None)


# -- secrets ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Secrets:
    """What ``resolve_secrets`` read: never in a repr, a log line or a message."""

    #: Each ``SecretRef`` of the configuration → its value.
    values: Mapping[SecretRef, str] = field(default_factory=dict, repr=False)
    #: Each stdio upstream (by name) → the environment added to the gateway's for its
    #: process: its ``env``, and its ``env_from`` read from the gateway's environment.
    child_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict, repr=False)

    def value(self, ref: SecretRef) -> str:
        return self.values[ref]


def resolve_secrets(config: GatewayConfig, environ: Mapping[str, str], *,
                    max_bytes: int = MAX_SECRET_BYTES) -> Secrets:
    """Read every secret ``config`` names, from ``environ`` and from files; raises
    ``GatewayConfigError`` naming every variable that is not set (or empty) and every
    file that cannot be read, is empty or too big, or holds a line break."""
    problems: list[str] = []
    values: dict[SecretRef, str] = {}
    child_env: dict[str, dict[str, str]] = {}
    if config.store_url is not None:
        value, problem = _read_secret(config.store_url, environ, max_bytes)
        if problem is not None:
            problems.append(f"gateway.store_url_{'env' if config.store_url.env else 'file'}"
                            f": {problem}")
        else:
            values[config.store_url] = value
    for upstream in config.upstreams:
        label = f"upstream {upstream.name!r}"
        credentials = upstream.credentials
        for key, ref in (("secret", credentials.secret),
                         ("client_secret", credentials.client_secret),
                         ("dpop_key", credentials.dpop_key)):
            if ref is None or ref in values:
                continue
            value, problem = _read_secret(ref, environ, max_bytes,
                                          lines=key == "dpop_key")
            if problem is not None:
                problems.append(f"{label}: credentials.{key}_"
                                f"{'env' if ref.env else 'file'}: {problem}")
            else:
                values[ref] = value
        if upstream.command is not None:
            env = dict(upstream.env)
            for child, ours in upstream.env_from.items():
                got = environ.get(ours)
                if not got:
                    problems.append(f"{label}: env_from.{child} names ${ours}, which is "
                                    f"{'empty' if got == '' else 'not set'} in the "
                                    "gateway's environment")
                else:
                    env[child] = got
            child_env[upstream.name] = env
    if problems:
        raise GatewayConfigError(config.source, [Problem(0, p) for p in problems])
    return Secrets(values, child_env)


def _read_secret(ref: SecretRef, environ: Mapping[str, str], max_bytes: int, *,
                 lines: bool = False) -> tuple[str, str | None]:
    """A secret's value, or why it cannot be read. ``lines``: it may span lines (a PEM
    key); anything else is one line (it goes in a header)."""
    if ref.env is not None:
        value = environ.get(ref.env)
        if value is None:
            return "", f"${ref.env} is not set in the gateway's environment"
        if not value:
            return "", f"${ref.env} is empty"
        where = f"${ref.env}"
    else:
        assert ref.file is not None
        try:
            with open(ref.file, "rb") as handle:
                raw = handle.read(max_bytes + 1)
        except OSError as exc:
            return "", f"cannot read {ref.file}: {exc.strerror or exc}"
        if len(raw) > max_bytes:
            return "", f"{ref.file} is larger than {max_bytes} bytes: not a secret"
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            return "", f"{ref.file} is not UTF-8 text"
        value = value.removesuffix("\n").removesuffix("\r")
        if not value:
            return "", f"{ref.file} is empty"
        where = ref.file
    if "\x00" in value or (not lines and any(c in value for c in "\r\n")):
        return "", f"{where} holds a line break or NUL: a secret is one line"
    return value, None


__all__ = ["CREDENTIAL_KINDS", "DEFAULT_SEPARATOR", "MAX_BYTES", "MAX_SECONDS",
           "MAX_SECRET_BYTES", "MAX_UPSTREAMS", "MODES", "CredentialKind", "Credentials",
           "Filters", "GatewayConfig", "GatewayConfigError", "SecretRef", "Secrets",
           "UpstreamConfig", "load", "loads", "looks_secret", "resolve_secrets"]
