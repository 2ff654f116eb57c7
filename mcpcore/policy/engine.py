"""The deterministic policy engine: (principal, call, tool policy, rule set) → ``Decision``.

What lives here: the inputs (``ToolPolicy``, ``Call``), the rule table (``Rule``), the
rule set with its settings and its hash (``Ruleset``), the output (``Decision``), the
engine itself (``decide``) and its narrated twin (``explain``). What must not: anything
that is not a pure function of those inputs. The clock comes in as ``Call.now``, the
rate counters, the audit sinks and asking the human live in ``gate.py``.

Categories, scopes and flags come from the server's own registry only (tool annotations
are hints a client must not be trusted with: tools.mdx, "Tool Annotations"); the client
contributes its identity (from the verified token, never ``_meta``), the arguments, and
whether it declared the ``elicitation`` capability.

The order for one call, stopping at the first terminal result::

    issuer, tenant allowed ──► rule table (DENY beats the rest) ──► scopes ──► ALLOW |
    CONFIRM

Denials the rules decide come *before* the scope check: a call that no scope can unlock
must never be answered with a 403 ``insufficient_scope``, or the client steps up in a
loop. ``Ruleset.hash`` is the SHA-256 of the rule set's canonical TOML text
(``Ruleset.canonical()``), the same text ``mcpcore policy check`` prints for a rule file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Any, Literal, Protocol

from mcpcore.policy import canonical
from mcpcore.policy.matchers import ArgCondition, TimeWindow, arguments_match, check_glob
from mcpcore.principal import Principal, expand_scopes
from mcpcore.tools import CATEGORIES, Category

Effect = Literal["allow", "deny", "confirm"]
OUTCOMES: tuple[Effect, ...] = ("allow", "deny", "confirm")

READ: Category = "read"
WRITE_IDEMPOTENT: Category = "write_idempotent"
WRITE_ADDITIVE: Category = "write_additive"
DESTRUCTIVE: Category = "destructive"

#: Default scope per category; configurable per ``Ruleset``.
DEFAULT_CATEGORY_SCOPES: Mapping[Category, frozenset[str]] = MappingProxyType({
    READ: frozenset({"mcp:read"}),
    WRITE_IDEMPOTENT: frozenset({"mcp:write"}),
    WRITE_ADDITIVE: frozenset({"mcp:write"}),
    DESTRUCTIVE: frozenset({"mcp:admin"}),
})
#: A broader scope implies the narrower ones: admin ⊇ write ⊇ read.
DEFAULT_SCOPE_HIERARCHY: Mapping[str, frozenset[str]] = MappingProxyType({
    "mcp:admin": frozenset({"mcp:write"}),
    "mcp:write": frozenset({"mcp:read"}),
})
#: Kinds of authentication with no human at hand to confirm anything.
NON_INTERACTIVE_KINDS = frozenset({"client_credentials", "wif"})
#: The token claim whose list of strings a rule's ``groups`` matches.
DEFAULT_GROUPS_CLAIM = "groups"
#: The version of the rule-file format (``version = 1``).
FORMAT_VERSION = 1


# -- inputs -------------------------------------------------------------------------------
class PolicyTarget(Protocol):
    """What the policy reads of a call's target: a ``ToolDef``, a prompt's or a
    resource's entry, or a ``ToolPolicy``."""

    @property
    def name(self) -> str: ...
    @property
    def category(self) -> Category: ...
    @property
    def external(self) -> bool: ...
    @property
    def required_scopes(self) -> frozenset[str]: ...
    @property
    def upstream(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """What the policy knows about a call's target, taken from the server's own registry:
    a tool, or, under a policy that gates every routed method (``Policy(methods=...)``),
    the resource, prompt or completion a request names (its ``name``: the tool's or
    prompt's name, the resource's URI).

    ``upstream``: the server a gateway forwards the target to (rules' ``upstreams``
    matcher); ``None`` on an ordinary server.
    """

    name: str
    category: Category = DESTRUCTIVE
    external: bool = True
    #: Explicit per-tool scopes; empty means "the category's default".
    required_scopes: frozenset[str] = frozenset()
    upstream: str | None = None

    @classmethod
    def of(cls, tool: Any, name: str | None = None) -> ToolPolicy:
        """From a registered ``ToolDef`` (or a prompt's or resource's entry, or another
        ``ToolPolicy``), known as ``name`` if given (a resource: the URI read)."""
        if name is None:
            name = getattr(tool, "policy_name", None) or tool.name
        if isinstance(tool, ToolPolicy) and tool.name == name:
            return tool
        return cls(name, tool.category, tool.external, tool.required_scopes,
                   tool.upstream)


@dataclass(frozen=True, slots=True)
class Call:
    """One call to decide on.

    ``interactive``: the request declared ``elicitation``. ``arguments``: what rules with
    argument predicates look at (``None``: not known, as for ``tools/list``). ``now``:
    seconds since the epoch, for rules with a time window (``None``: such rules never
    match).
    """

    method: str
    tool: str
    args_digest: str = ""
    interactive: bool = True
    arguments: Mapping[str, Any] | None = field(default=None, compare=False)
    now: float | None = None


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``calls`` per ``seconds`` for each (principal, tool)."""

    calls: int
    seconds: float

    def __post_init__(self) -> None:
        if (isinstance(self.calls, bool) or not isinstance(self.calls, int)
                or self.calls < 1 or not self.seconds > 0):
            raise ValueError("a rate limit needs calls >= 1 (a whole number) and seconds > 0")
        object.__setattr__(self, "seconds", float(self.seconds))

    def canonical(self) -> dict[str, Any]:
        return {"calls": self.calls, "seconds": self.seconds}


@dataclass(frozen=True, slots=True)
class Downstream:
    """One downstream audience a tool's token exchange may ask for, with the scopes it
    may request there (a request for a subset, or none, is allowed)."""

    audience: str
    scopes: frozenset[str] = frozenset()

    def allows(self, audience: str, scopes: frozenset[str]) -> bool:
        return _same_audience(audience, self.audience) and scopes <= self.scopes

    def canonical(self) -> dict[str, Any]:
        return {"audience": self.audience, "scopes": sorted(self.scopes)}


def _same_audience(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


@dataclass(frozen=True, slots=True)
class ToolSettings:
    """What a rule set says about one tool by name: scopes (replacing the registry's and
    the category's), a rate limit, a timeout in seconds, and the downstream audiences its
    token exchange may request (``None``: none declared, so none may be requested)."""

    scopes: frozenset[str] | None = None
    rate_limit: RateLimit | None = None
    timeout: float | None = None
    downstream: tuple[Downstream, ...] | None = None

    def __post_init__(self) -> None:
        if self.scopes is not None:
            object.__setattr__(self, "scopes", frozenset(self.scopes))
        if self.timeout is not None:
            _check_timeout(self.timeout)
            object.__setattr__(self, "timeout", float(self.timeout))
        if self.downstream is not None:
            object.__setattr__(self, "downstream", tuple(self.downstream))

    def canonical(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.scopes is not None:
            out["scopes"] = sorted(self.scopes)
        if self.rate_limit is not None:
            out["rate_limit"] = self.rate_limit.canonical()
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.downstream is not None:
            out["downstream"] = [d.canonical() for d in sorted(
                self.downstream, key=lambda d: d.audience)]
        return out


def _check_timeout(seconds: float) -> None:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0 \
            or seconds == float("inf"):
        raise ValueError("a timeout is a number of seconds > 0")


def _names(value: Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({value})
    return frozenset(value)


# -- what one decision looks at -----------------------------------------------------------
@dataclass(slots=True)
class Facts:
    """Everything a rule's caller-side matchers read, computed once per decision."""

    principal: Principal
    granted: frozenset[str]
    interactive: bool
    kind: str
    groups: frozenset[str]
    arguments: Mapping[str, Any] | None
    now: float | None


Predicate = Callable[[Facts], bool]

#: A rule's matchers, in the order the canonical form lists them.
MATCHERS = ("tools", "upstreams", "categories", "external", "issuers", "tenants",
            "subjects", "groups", "clients", "auth_kinds", "scopes", "interactive", "args",
            "window")
_TOOL_SIDE = ("tools", "upstreams", "categories", "external")


@dataclass(frozen=True, slots=True, init=False)
class Rule:
    """One row of the rule table: an effect and what it matches (all given must match).

    >>> Rule("no-external-writes", "deny", categories={"write_additive", "destructive"},
    ...      external=True, tenants={"contoso"})                     # doctest: +ELLIPSIS
    Rule(id='no-external-writes', effect='deny', ...)

    ``tools`` holds names or ``fnmatch`` patterns (``"files.*"``); ``scopes`` matches a
    principal holding all of them (after the hierarchy); ``groups`` one holding any of
    them (the ``groups`` claim); ``auth_kinds`` matches how the principal authenticated
    (``auth_kind``: ``"ema"`` for an enterprise IdP's grant, ``"client_credentials"``,
    ``"wif"``, else the authentication method such as ``"jwt"``); ``interactive``
    matches whether the caller can be asked (False: a ``client_credentials``/``wif``
    principal or a client without ``elicitation``); ``args`` maps argument names to an
    ``ArgCondition`` (or a dict of its predicates); ``window`` is a ``TimeWindow`` (or a
    dict of its fields). ``autonomous=True`` on a ``confirm`` rule lets callers that
    cannot be asked proceed without confirmation; without it they are denied.
    """

    id: str
    effect: Effect
    tools: frozenset[str] | None
    upstreams: frozenset[str] | None
    categories: frozenset[Category] | None
    external: bool | None
    issuers: frozenset[str] | None
    tenants: frozenset[str] | None
    subjects: frozenset[str] | None
    groups: frozenset[str] | None
    clients: frozenset[str] | None
    auth_kinds: frozenset[str] | None
    scopes: frozenset[str] | None
    interactive: bool | None
    args: Mapping[str, ArgCondition] | None
    window: TimeWindow | None
    autonomous: bool
    _checks: tuple[tuple[str, Predicate], ...] = field(repr=False, compare=False)

    def __init__(
        self,
        id: str,
        effect: Effect,
        *,
        tools: Iterable[str] | None = None,
        upstreams: Iterable[str] | None = None,
        categories: Iterable[Category] | None = None,
        external: bool | None = None,
        issuers: Iterable[str] | None = None,
        tenants: Iterable[str] | None = None,
        subjects: Iterable[str] | None = None,
        groups: Iterable[str] | None = None,
        clients: Iterable[str] | None = None,
        scopes: Iterable[str] | None = None,
        auth_kinds: Iterable[str] | None = None,
        interactive: bool | None = None,
        args: Mapping[str, ArgCondition | Mapping[str, Any]] | None = None,
        window: TimeWindow | Mapping[str, Any] | None = None,
        autonomous: bool = False,
    ) -> None:
        if not id or not isinstance(id, str):
            raise ValueError("a rule needs an id")
        if effect not in OUTCOMES:
            raise ValueError(f"rule {id!r}: effect must be one of {OUTCOMES}")
        cats = _names(categories)
        if cats is not None and not cats <= set(CATEGORIES):
            raise ValueError(f"rule {id!r}: unknown categories {sorted(cats - set(CATEGORIES))}")
        if autonomous and effect != "confirm":
            raise ValueError(f"rule {id!r}: autonomous applies to confirm rules only")
        tool_names = _names(tools)
        for pattern in tool_names or ():
            check_glob(pattern, what="tool pattern")
        upstream_names = _names(upstreams)
        for pattern in upstream_names or ():
            check_glob(pattern, what="upstream pattern")
        conditions: Mapping[str, ArgCondition] | None = None
        if args is not None:
            conditions = MappingProxyType({
                name: c if isinstance(c, ArgCondition) else ArgCondition(**c)
                for name, c in sorted(args.items())})
        if window is not None and not isinstance(window, TimeWindow):
            window = TimeWindow(**window)
        values = {"id": id, "effect": effect, "tools": tool_names,
                  "upstreams": upstream_names, "categories": cats,
                  "external": external, "issuers": _names(issuers),
                  "tenants": _names(tenants), "subjects": _names(subjects),
                  "groups": _names(groups), "clients": _names(clients),
                  "auth_kinds": _names(auth_kinds), "scopes": _names(scopes),
                  "interactive": interactive, "args": conditions, "window": window,
                  "autonomous": autonomous}
        for name, value in values.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_checks", self._compile())

    def _compile(self) -> tuple[tuple[str, Predicate], ...]:
        """The caller-side matchers this rule uses, as (name, check) pairs."""
        checks: list[tuple[str, Predicate]] = []
        if (issuers := self.issuers) is not None:
            checks.append(("issuers", lambda f: f.principal.issuer in issuers))
        if (tenants := self.tenants) is not None:
            checks.append(("tenants", lambda f: f.principal.tenant in tenants))
        if (subjects := self.subjects) is not None:
            checks.append(("subjects", lambda f: f.principal.subject in subjects))
        if (groups := self.groups) is not None:
            checks.append(("groups", lambda f: not groups.isdisjoint(f.groups)))
        if (clients := self.clients) is not None:
            checks.append(("clients", lambda f: f.principal.client_id in clients))
        if (kinds := self.auth_kinds) is not None:
            checks.append(("auth_kinds", lambda f: f.kind in kinds))
        if (scopes := self.scopes) is not None:
            checks.append(("scopes", lambda f: scopes <= f.granted))
        if (interactive := self.interactive) is not None:
            checks.append(("interactive", lambda f: f.interactive == interactive))
        if (conditions := self.args) is not None:
            # Arguments unknown (tools/list): a rule that may allow is assumed to, a deny
            # rule is assumed not to (some call might escape it).
            unknown = self.effect != "deny"
            checks.append(("args", lambda f: unknown if f.arguments is None
                           else arguments_match(conditions, f.arguments) is None))
        if (window := self.window) is not None:
            checks.append(("window", lambda f: window.matches(f.now)))
        return tuple(checks)

    def matches_tool(self, tool: ToolPolicy) -> bool:
        return self.tool_mismatch(tool) is None

    def tool_mismatch(self, tool: ToolPolicy) -> str | None:
        """The first tool-side matcher that fails, or None."""
        if self.tools is not None and not any(fnmatchcase(tool.name, t) for t in self.tools):
            return "tools"
        if self.upstreams is not None and (tool.upstream is None or not any(
                fnmatchcase(tool.upstream, u) for u in self.upstreams)):
            return "upstreams"
        if self.categories is not None and tool.category not in self.categories:
            return "categories"
        if self.external is not None and tool.external != self.external:
            return "external"
        return None

    def caller_mismatch(self, facts: Facts) -> str | None:
        """The first caller-side matcher that fails, or None (the rule matches)."""
        for name, check in self._checks:
            if not check(facts):
                return name
        return None

    def matches(self, principal: Principal, tool: ToolPolicy, granted: frozenset[str],
                interactive: bool, *, arguments: Mapping[str, Any] | None = None,
                now: float | None = None,
                kinds: Iterable[str] = NON_INTERACTIVE_KINDS) -> bool:
        """Whether the rule matches this call (convenience; ``decide`` is the engine)."""
        facts = Facts(principal, granted, interactive, auth_kind(principal, kinds),
                      principal_groups(principal), arguments, now)
        return self.tool_mismatch(tool) is None and self.caller_mismatch(facts) is None

    def conditions(self) -> dict[str, Any]:
        """The matchers given, canonical (sets sorted), in ``MATCHERS`` order."""
        out: dict[str, Any] = {}
        for name in MATCHERS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, frozenset):
                out[name] = sorted(value)
            elif name == "args":
                out[name] = {k: c.canonical() for k, c in value.items()}
            elif name == "window":
                out[name] = value.canonical()
            else:
                out[name] = value
        return out

    def canonical(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "effect": self.effect, **self.conditions()}
        if self.autonomous:
            out["autonomous"] = True
        return out


def principal_groups(principal: Principal, claim: str = DEFAULT_GROUPS_CLAIM
                     ) -> frozenset[str]:
    """The principal's groups: the string items of its ``claim`` (a list, or one string)."""
    value = principal.claims.get(claim)
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list | tuple):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()


@dataclass(frozen=True, slots=True, init=False)
class Ruleset:
    """The rule table and the settings around it; ``hash`` names this exact version.

    >>> rules = Ruleset([Rule("reads", "allow", categories={"read"})])
    >>> rules.hash == Ruleset([Rule("reads", "allow", categories={"read"})]).hash
    True

    Nothing matched → ``default`` (``"deny"``: fail closed). ``allowed_issuers`` and
    ``allowed_tenants`` (None: any) are checked first. Scopes: ``tools[name].scopes``,
    else the tool's own ``required_scopes``, else ``category_scopes[category]``, judged
    against the principal's scopes expanded through ``scope_hierarchy``. Rate limits per
    (principal, tool): ``tools[name].rate_limit``, else ``category_rate_limits``, else
    ``rate_limit``. Timeouts: ``tools[name].timeout``, else ``timeout``.
    ``tool_rate_limits={"name": RateLimit(...)}`` is shorthand for ``tools``.
    """

    rules: tuple[Rule, ...]
    default: Effect
    allowed_issuers: frozenset[str] | None
    allowed_tenants: frozenset[str] | None
    category_scopes: Mapping[Category, frozenset[str]]
    scope_hierarchy: Mapping[str, frozenset[str]]
    rate_limit: RateLimit | None
    category_rate_limits: Mapping[Category, RateLimit]
    tools: Mapping[str, ToolSettings]
    timeout: float | None
    non_interactive_kinds: frozenset[str]
    groups_claim: str
    hash: str
    _candidates: dict[ToolPolicy, tuple[Rule, ...]] = field(repr=False, compare=False)
    _granted: dict[frozenset[str], frozenset[str]] = field(repr=False, compare=False)
    _needs_groups: bool = field(repr=False, compare=False)

    def __init__(
        self,
        rules: Iterable[Rule] = (),
        *,
        default: Effect = "deny",
        allowed_issuers: Iterable[str] | None = None,
        allowed_tenants: Iterable[str] | None = None,
        category_scopes: Mapping[Category, Iterable[str]] = DEFAULT_CATEGORY_SCOPES,
        scope_hierarchy: Mapping[str, Iterable[str]] = DEFAULT_SCOPE_HIERARCHY,
        rate_limit: RateLimit | None = None,
        category_rate_limits: Mapping[Category, RateLimit] | None = None,
        tool_rate_limits: Mapping[str, RateLimit] | None = None,
        tools: Mapping[str, ToolSettings] | None = None,
        timeout: float | None = None,
        non_interactive_kinds: Iterable[str] = NON_INTERACTIVE_KINDS,
        groups_claim: str = DEFAULT_GROUPS_CLAIM,
    ) -> None:
        table = tuple(rules)
        ids = [r.id for r in table]
        if len(ids) != len(set(ids)):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"rule ids must be unique ({dup!r} appears twice)")
        if default not in OUTCOMES:
            raise ValueError(f"default must be one of {OUTCOMES}")
        unknown = set(category_scopes) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"unknown categories {sorted(unknown)}")
        cat_scopes = {c: frozenset(category_scopes.get(c, DEFAULT_CATEGORY_SCOPES[c]))
                      for c in CATEGORIES}
        cat_limits = dict(category_rate_limits or {})
        if set(cat_limits) - set(CATEGORIES):
            raise ValueError(f"unknown categories {sorted(set(cat_limits) - set(CATEGORIES))}")
        settings = dict(tools or {})
        for name, limit in (tool_rate_limits or {}).items():
            current = settings.get(name, ToolSettings())
            if current.rate_limit is not None and current.rate_limit != limit:
                raise ValueError(f"tool {name!r} has two rate limits")
            settings[name] = ToolSettings(current.scopes, limit, current.timeout,
                                          current.downstream)
        if timeout is not None:
            _check_timeout(timeout)
            timeout = float(timeout)
        values: dict[str, Any] = {
            "rules": table,
            "default": default,
            "allowed_issuers": _names(allowed_issuers),
            "allowed_tenants": _names(allowed_tenants),
            "category_scopes": MappingProxyType(cat_scopes),
            "scope_hierarchy": MappingProxyType(
                {k: frozenset(v) for k, v in sorted(scope_hierarchy.items())}),
            "rate_limit": rate_limit,
            "category_rate_limits": MappingProxyType(
                {c: cat_limits[c] for c in CATEGORIES if c in cat_limits}),
            "tools": MappingProxyType(dict(sorted(settings.items()))),
            "timeout": timeout,
            "non_interactive_kinds": frozenset(non_interactive_kinds),
            "groups_claim": groups_claim,
            "_candidates": {},
            "_granted": {},
            "_needs_groups": any(r.groups is not None for r in table),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "hash", "sha256:" + hashlib.sha256(
            self.canonical().encode()).hexdigest()[:32])

    # -- the canonical form ------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        """The rule set as a rule-file document (what ``canonical`` writes as TOML)."""
        doc: dict[str, Any] = {"version": FORMAT_VERSION, "default": self.default}
        if self.allowed_issuers is not None:
            doc["allowed_issuers"] = sorted(self.allowed_issuers)
        if self.allowed_tenants is not None:
            doc["allowed_tenants"] = sorted(self.allowed_tenants)
        doc["non_interactive_kinds"] = sorted(self.non_interactive_kinds)
        doc["groups_claim"] = self.groups_claim
        if self.timeout is not None:
            doc["timeout"] = self.timeout
        if self.rate_limit is not None:
            doc["rate_limit"] = self.rate_limit.canonical()
        doc["scope_hierarchy"] = {k: sorted(v) for k, v in self.scope_hierarchy.items()}
        categories: dict[str, Any] = {}
        for cat in CATEGORIES:
            entry: dict[str, Any] = {"scopes": sorted(self.category_scopes[cat])}
            if cat in self.category_rate_limits:
                entry["rate_limit"] = self.category_rate_limits[cat].canonical()
            categories[cat] = entry
        doc["categories"] = categories
        if self.tools:
            doc["tools"] = {name: s.canonical() for name, s in self.tools.items()}
        if self.rules:
            doc["rules"] = [r.canonical() for r in self.rules]
        return doc

    def canonical(self) -> str:
        """The canonical TOML text; ``hash`` is its SHA-256."""
        return canonical.dumps(self.document())

    # -- what the engine and the gate ask ------------------------------------------------
    def required_scopes(self, tool: ToolPolicy) -> frozenset[str]:
        settings = self.tools.get(tool.name)
        if settings is not None and settings.scopes is not None:
            return settings.scopes
        return tool.required_scopes or self.category_scopes.get(
            tool.category, self.category_scopes[DESTRUCTIVE])

    def granted_scopes(self, principal: Principal) -> frozenset[str]:
        held = principal.scopes
        granted = self._granted.get(held)
        if granted is None:
            granted = expand_scopes(held, self.scope_hierarchy)
            if len(self._granted) >= 1024:
                self._granted.clear()
            self._granted[held] = granted
        return granted

    def rate_limit_for(self, tool: ToolPolicy) -> RateLimit | None:
        settings = self.tools.get(tool.name)
        if settings is not None and settings.rate_limit is not None:
            return settings.rate_limit
        return self.category_rate_limits.get(tool.category, self.rate_limit)

    def timeout_for(self, name: str) -> float | None:
        settings = self.tools.get(name)
        if settings is not None and settings.timeout is not None:
            return settings.timeout
        return self.timeout

    def downstream_for(self, name: str) -> tuple[Downstream, ...]:
        """The audiences ``name``'s token exchange may request (empty: none)."""
        settings = self.tools.get(name)
        return settings.downstream or () if settings is not None else ()

    def candidates(self, tool: ToolPolicy) -> tuple[Rule, ...]:
        """The rules whose tool-side matchers accept ``tool``, in table order (cached)."""
        found = self._candidates.get(tool)
        if found is None:
            found = tuple(r for r in self.rules if r.tool_mismatch(tool) is None)
            if len(self._candidates) >= 4096:
                self._candidates.clear()
            self._candidates[tool] = found
        return found

    def facts(self, principal: Principal, call: Call) -> Facts:
        kind = auth_kind(principal, self.non_interactive_kinds)
        return Facts(
            principal, self.granted_scopes(principal),
            call.interactive and kind not in self.non_interactive_kinds, kind,
            principal_groups(principal, self.groups_claim) if self._needs_groups
            else frozenset(), call.arguments, call.now)


@dataclass(frozen=True, slots=True)
class Decision:
    """What the engine decided, and why (``rule_id`` and ``reason_code``: for the audit
    trail and the operator, never for the client)."""

    outcome: Effect
    rule_id: str
    ruleset_hash: str
    required_scopes: frozenset[str]
    reason_code: str


# -- the engine ---------------------------------------------------------------------------
def auth_kind(principal: Principal, kinds: Iterable[str] = NON_INTERACTIVE_KINDS) -> str:
    """How the principal authenticated, as far as the policy cares (its ``auth_kind``).

    An ``auth_kind`` claim or an ``auth_method`` naming a known kind wins. Otherwise a
    token whose subject is its own client, with no ``act`` chain, is a client acting for
    itself: ``client_credentials`` (RFC 9068 §2.2). Else the ``auth_method`` as given.
    """
    claimed = principal.claims.get("auth_kind")
    if isinstance(claimed, str) and claimed:
        return claimed
    if principal.auth_method in kinds:
        return principal.auth_method
    if principal.client_id is not None and principal.client_id == principal.subject and (
        not principal.actors
    ):
        return "client_credentials"
    return principal.auth_method


def decide(principal: Principal, call: Call, tool: ToolPolicy, ruleset: Ruleset) -> Decision:
    """The decision for one call: a pure function of its inputs.

    >>> rules = Ruleset([Rule("reads", "allow", categories={"read"})])
    >>> alice = Principal("alice", scopes=frozenset({"mcp:read"}))
    >>> decide(alice, Call("tools/call", "get"), ToolPolicy("get", "read"), rules).outcome
    'allow'
    """
    h = ruleset.hash
    required = ruleset.required_scopes(tool)
    if ruleset.allowed_issuers is not None and principal.issuer not in ruleset.allowed_issuers:
        return Decision("deny", "issuer", h, required, "issuer_not_allowed")
    if ruleset.allowed_tenants is not None and principal.tenant not in ruleset.allowed_tenants:
        return Decision("deny", "tenant", h, required, "tenant_not_allowed")
    facts = ruleset.facts(principal, call)
    first: Rule | None = None
    for rule in ruleset.candidates(tool):
        if (first is None or rule.effect == "deny") and rule.caller_mismatch(facts) is None:
            if rule.effect == "deny":
                return Decision("deny", rule.id, h, required, "rule_deny")
            first = rule
    return _conclude(first, facts, required, ruleset)


def _conclude(first: Rule | None, facts: Facts, required: frozenset[str],
              ruleset: Ruleset) -> Decision:
    h = ruleset.hash
    outcome = first.effect if first is not None else ruleset.default
    rule_id = first.id if first is not None else "default"
    if outcome == "deny":
        return Decision("deny", rule_id, h, required, "default_deny")
    # Only now the scopes: what remains would succeed with a broader token (so a 403
    # step-up challenge is never sent for a call no token can unlock).
    if not required <= facts.granted:
        return Decision("deny", "scope", h, required, "insufficient_scope")
    if outcome == "allow":
        return Decision("allow", rule_id, h, required,
                        "rule_allow" if first is not None else "default_allow")
    if facts.interactive:
        return Decision("confirm", rule_id, h, required, "confirmation_required")
    if first is not None and first.autonomous:
        return Decision("allow", rule_id, h, required, "autonomous")
    return Decision("deny", rule_id, h, required, "confirmation_unavailable")


#: Denials no scope can fix; a filtered ``tools/list`` hides tools these apply to.
HIDING_REASONS = frozenset({"issuer_not_allowed", "tenant_not_allowed", "rule_deny",
                            "default_deny"})


# -- explaining a decision ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RuleVerdict:
    """One rule's part in a decision: whether it matched, and if not the first matcher
    that failed (``mismatch``); ``role`` says what the match did."""

    rule: Rule
    matched: bool
    mismatch: str | None
    #: "decided", "overruled" (an allow/confirm beaten by a matching deny), "shadowed"
    #: (an earlier rule decided), "skipped" (never looked at: a check before the rules
    #: decided), or "" for a rule that did not match.
    role: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """``decide``'s answer plus the story behind it, for people (``mcpcore policy
    explain``): the checks before the rules, and every rule's verdict."""

    decision: Decision
    facts: Facts
    checks: tuple[tuple[str, bool, str], ...]
    rules: tuple[RuleVerdict, ...]


def explain(principal: Principal, call: Call, tool: ToolPolicy, ruleset: Ruleset
            ) -> Explanation:
    """``decide``, narrated: the same decision, and why every rule did or did not match.

    >>> rules = Ruleset([Rule("reads", "allow", categories={"read"})])
    >>> why = explain(Principal("al"), Call("tools/call", "rm"), ToolPolicy("rm"), rules)
    >>> why.decision.reason_code, why.rules[0].mismatch
    ('default_deny', 'categories')
    """
    decision = decide(principal, call, tool, ruleset)
    facts = ruleset.facts(principal, call)
    checks: list[tuple[str, bool, str]] = []
    if ruleset.allowed_issuers is not None:
        checks.append(("issuer", principal.issuer in ruleset.allowed_issuers,
                       f"issuer {principal.issuer!r} in {sorted(ruleset.allowed_issuers)}"))
    if ruleset.allowed_tenants is not None:
        checks.append(("tenant", principal.tenant in ruleset.allowed_tenants,
                       f"tenant {principal.tenant!r} in {sorted(ruleset.allowed_tenants)}"))
    before_rules = any(not ok for _, ok, _ in checks)
    found = [(rule, rule.tool_mismatch(tool) or rule.caller_mismatch(facts))
             for rule in ruleset.rules]
    denied = decision.reason_code == "rule_deny"
    # The rule that applied: the first matching deny, else the first matching rule.
    applied = next((r for r, miss in found if miss is None
                    and (r.effect == "deny" or not denied)), None)
    verdicts: list[RuleVerdict] = []
    for rule, mismatch in found:
        role = ""
        if before_rules:
            role = "skipped"
        elif mismatch is None:
            role = ("decided" if rule is applied
                    else "overruled" if denied and rule.effect != "deny" else "shadowed")
        verdicts.append(RuleVerdict(rule, mismatch is None, mismatch, role))
    required = decision.required_scopes
    if not before_rules:
        checks.append(("scopes", required <= facts.granted,
                       f"requires {sorted(required)}, holds {sorted(facts.granted)}"))
    return Explanation(decision, facts, tuple(checks), tuple(verdicts))


def describe_mismatch(rule: Rule, matcher: str, tool: ToolPolicy, facts: Facts) -> str:
    """Why ``rule``'s ``matcher`` failed for this call, in words."""
    p = facts.principal
    want = getattr(rule, matcher)
    listed = sorted(want) if isinstance(want, frozenset) else want
    if matcher == "tools":
        return f"tool {tool.name!r} matches none of {listed}"
    if matcher == "upstreams":
        return f"upstream {tool.upstream!r} matches none of {listed}"
    if matcher == "categories":
        return f"category {tool.category!r} is not in {listed}"
    if matcher == "external":
        return f"external is {tool.external}, the rule wants {want}"
    if matcher in ("issuers", "tenants", "subjects", "clients"):
        field_name = {"issuers": "issuer", "tenants": "tenant", "subjects": "subject",
                      "clients": "client_id"}[matcher]
        return f"{field_name} {getattr(p, field_name)!r} is not in {listed}"
    if matcher == "groups":
        return f"groups {sorted(facts.groups)} share none of {listed}"
    if matcher == "auth_kinds":
        return f"auth kind {facts.kind!r} is not in {listed}"
    if matcher == "scopes":
        return f"holds {sorted(facts.granted)}, the rule wants all of {listed}"
    if matcher == "interactive":
        return f"interactive is {facts.interactive}, the rule wants {want}"
    if matcher == "args":
        assert rule.args is not None
        if facts.arguments is None:
            return "the arguments are not known"
        name = arguments_match(rule.args, facts.arguments)
        assert name is not None
        shown = facts.arguments.get(name, "(absent)")
        return f"argument {name!r} = {shown!r} fails {rule.args[name].describe()}"
    assert rule.window is not None
    return f"the call's time is outside {rule.window.describe()}"


__all__ = [
    "DEFAULT_CATEGORY_SCOPES",
    "DEFAULT_GROUPS_CLAIM",
    "DEFAULT_SCOPE_HIERARCHY",
    "DESTRUCTIVE",
    "FORMAT_VERSION",
    "HIDING_REASONS",
    "MATCHERS",
    "NON_INTERACTIVE_KINDS",
    "OUTCOMES",
    "READ",
    "WRITE_ADDITIVE",
    "WRITE_IDEMPOTENT",
    "Call",
    "Decision",
    "Downstream",
    "Effect",
    "Explanation",
    "Facts",
    "PolicyTarget",
    "RateLimit",
    "Rule",
    "RuleVerdict",
    "Ruleset",
    "ToolPolicy",
    "ToolSettings",
    "auth_kind",
    "decide",
    "describe_mismatch",
    "expand_scopes",
    "explain",
    "principal_groups",
]
