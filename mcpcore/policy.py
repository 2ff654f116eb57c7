"""Policy before handler: tool categories, rules, decisions, confirmation and audit.

What lives here: a deterministic engine, ``decide``, that turns
(principal, call, tool policy, rule set) into a ``Decision``; the ``Policy`` object a
``Server`` is given, which adds what is not pure (the clock, the rate limiter, the audit
sinks, asking the human); and the audit event. What must not: anything the client sends
about the tool. Categories, scopes and flags come from the server's own registry only
(tool annotations are hints a client must not be trusted with: tools.mdx, "Tool
Annotations"); the client contributes its identity (from the verified token, never
``_meta``) and whether it declared the ``elicitation`` capability.

The order for ``tools/call``, stopping at the first terminal result::

    issuer, tenant allowed ──► rule table (DENY beats the rest) ──► scopes ──► ALLOW |
    CONFIRM (ask through MRTR) ──► rate limit ──► input validation ──► handler ──► audit

Denials the rules decide come *before* the scope check: a call that no scope can unlock
must never be answered with a 403 ``insufficient_scope``, or the client steps up in a
loop. Such a tool is also invisible in a filtered ``tools/list``.
Every call, whatever its outcome, gives exactly one ``AuditEvent``; a call that became a
task (the tasks extension) gives one when the task is created (``result: "task"``) and
one when its work ends, both naming the ``task_id``. A confirmation asked inside a task
is the task's ``input_required``: the approval may take hours, no connection held.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec

from mcpcore.errors import InsufficientScope, McpError, UnknownTool
from mcpcore.mrtr import ElicitAnswer
from mcpcore.outcome import Outcome as RouteOutcome
from mcpcore.principal import Principal
from mcpcore.tools import CATEGORIES, Category, ToolDef, error_result

if TYPE_CHECKING:
    from mcpcore.context import Context

audit_log = logging.getLogger("mcpcore.audit")
log = logging.getLogger("mcpcore.policy")

Outcome = Literal["allow", "deny", "confirm"]
_OUTCOMES: tuple[Outcome, ...] = ("allow", "deny", "confirm")

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

#: Where the confirmation's id lives in ``ctx.state`` (sealed into requestState).
CONFIRM_STATE_KEY = "mcpcore.policy.confirmation"
_RATED_STATE_KEY = "mcpcore.policy.rated"
CONFIRM_SCHEMA: Mapping[str, Any] = MappingProxyType({
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Allow this call?"}},
    "required": ["confirm"],
})

#: What the model sees for each kind of denial: generic, no rule internals.
DENIAL_TEXT: Mapping[str, str] = MappingProxyType({
    "rate_limited": "Too many calls to this tool; try again later.",
    "confirmation_declined": "The user did not approve this tool call.",
    "confirmation_unavailable": "This tool call needs a person's approval, which this "
                                "client cannot ask for.",
})
DEFAULT_DENIAL = "This tool call is not permitted."


# -- inputs -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """What the policy knows about a tool, taken from the server's own registry."""

    name: str
    category: Category = DESTRUCTIVE
    external: bool = True
    #: Explicit per-tool scopes; empty means "the category's default".
    required_scopes: frozenset[str] = frozenset()

    @classmethod
    def of(cls, tool: ToolDef) -> ToolPolicy:
        return cls(tool.name, tool.category, tool.external, tool.required_scopes)


@dataclass(frozen=True, slots=True)
class Call:
    """One call to decide on. ``interactive``: the request declared ``elicitation``."""

    method: str
    tool: str
    args_digest: str = ""
    interactive: bool = True


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``calls`` per ``seconds`` for each (principal, tool)."""

    calls: int
    seconds: float

    def __post_init__(self) -> None:
        if self.calls < 1 or self.seconds <= 0:
            raise ValueError("a rate limit needs calls >= 1 and seconds > 0")


def _names(value: Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({value})
    return frozenset(value)


@dataclass(frozen=True, slots=True, init=False)
class Rule:
    """One row of the rule table: an effect and what it matches (all given must match).

    >>> Rule("no-external-writes", "deny", categories={"write_additive", "destructive"},
    ...      external=True, tenants={"contoso"})                     # doctest: +ELLIPSIS
    Rule(id='no-external-writes', effect='deny', ...)

    ``tools`` holds names or ``fnmatch`` patterns (``"files.*"``); ``scopes`` matches a
    principal holding all of them (after the hierarchy); ``auth_kinds`` matches how the
    principal authenticated (``auth_kind``: ``"ema"`` for an enterprise IdP's grant,
    ``"client_credentials"``, ``"jwt"``, ...); ``interactive`` matches whether
    the caller can be asked (False: a ``client_credentials``/``wif`` principal or a client
    without ``elicitation``). ``autonomous=True`` on a ``confirm`` rule lets callers that
    cannot be asked proceed without confirmation; without it they are denied.
    """

    id: str
    effect: Outcome
    tools: frozenset[str] | None
    categories: frozenset[Category] | None
    external: bool | None
    issuers: frozenset[str] | None
    tenants: frozenset[str] | None
    subjects: frozenset[str] | None
    clients: frozenset[str] | None
    scopes: frozenset[str] | None
    auth_kinds: frozenset[str] | None
    interactive: bool | None
    autonomous: bool

    def __init__(
        self,
        id: str,
        effect: Outcome,
        *,
        tools: Iterable[str] | None = None,
        categories: Iterable[Category] | None = None,
        external: bool | None = None,
        issuers: Iterable[str] | None = None,
        tenants: Iterable[str] | None = None,
        subjects: Iterable[str] | None = None,
        clients: Iterable[str] | None = None,
        scopes: Iterable[str] | None = None,
        auth_kinds: Iterable[str] | None = None,
        interactive: bool | None = None,
        autonomous: bool = False,
    ) -> None:
        if not id:
            raise ValueError("a rule needs an id")
        if effect not in _OUTCOMES:
            raise ValueError(f"rule {id!r}: effect must be one of {_OUTCOMES}")
        cats = _names(categories)
        if cats is not None and not cats <= set(CATEGORIES):
            raise ValueError(f"rule {id!r}: unknown categories {sorted(cats - set(CATEGORIES))}")
        if autonomous and effect != "confirm":
            raise ValueError(f"rule {id!r}: autonomous applies to confirm rules only")
        values = {"id": id, "effect": effect, "tools": _names(tools), "categories": cats,
                  "external": external, "issuers": _names(issuers),
                  "tenants": _names(tenants), "subjects": _names(subjects),
                  "clients": _names(clients), "scopes": _names(scopes),
                  "auth_kinds": _names(auth_kinds),
                  "interactive": interactive, "autonomous": autonomous}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def matches(self, principal: Principal, tool: ToolPolicy, granted: frozenset[str],
                interactive: bool) -> bool:
        if self.tools is not None and not any(fnmatchcase(tool.name, t) for t in self.tools):
            return False
        if self.categories is not None and tool.category not in self.categories:
            return False
        if self.external is not None and tool.external != self.external:
            return False
        if self.issuers is not None and principal.issuer not in self.issuers:
            return False
        if self.tenants is not None and principal.tenant not in self.tenants:
            return False
        if self.subjects is not None and principal.subject not in self.subjects:
            return False
        if self.clients is not None and principal.client_id not in self.clients:
            return False
        if self.scopes is not None and not self.scopes <= granted:
            return False
        if self.auth_kinds is not None and auth_kind(principal) not in self.auth_kinds:
            return False
        return self.interactive is None or self.interactive == interactive

    def canonical(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if value is None or (value is False and name == "autonomous"):
                continue
            out[name] = sorted(value) if isinstance(value, frozenset) else value
        return out


@dataclass(frozen=True, slots=True, init=False)
class Ruleset:
    """The rule table and the settings around it; ``hash`` names this exact version.

    >>> rules = Ruleset([Rule("reads", "allow", categories={"read"})])
    >>> rules.hash == Ruleset([Rule("reads", "allow", categories={"read"})]).hash
    True

    Nothing matched → ``default`` (``"deny"``: fail closed). ``allowed_issuers`` and
    ``allowed_tenants`` (None: any) are checked first. Scopes: a tool's own
    ``required_scopes``, else ``category_scopes[category]``, judged against the
    principal's scopes expanded through ``scope_hierarchy``.
    """

    rules: tuple[Rule, ...]
    default: Outcome
    allowed_issuers: frozenset[str] | None
    allowed_tenants: frozenset[str] | None
    category_scopes: Mapping[Category, frozenset[str]]
    scope_hierarchy: Mapping[str, frozenset[str]]
    rate_limit: RateLimit | None
    tool_rate_limits: Mapping[str, RateLimit]
    non_interactive_kinds: frozenset[str]
    hash: str

    def __init__(
        self,
        rules: Iterable[Rule] = (),
        *,
        default: Outcome = "deny",
        allowed_issuers: Iterable[str] | None = None,
        allowed_tenants: Iterable[str] | None = None,
        category_scopes: Mapping[Category, Iterable[str]] = DEFAULT_CATEGORY_SCOPES,
        scope_hierarchy: Mapping[str, Iterable[str]] = DEFAULT_SCOPE_HIERARCHY,
        rate_limit: RateLimit | None = None,
        tool_rate_limits: Mapping[str, RateLimit] | None = None,
        non_interactive_kinds: Iterable[str] = NON_INTERACTIVE_KINDS,
    ) -> None:
        table = tuple(rules)
        ids = [r.id for r in table]
        if len(ids) != len(set(ids)):
            raise ValueError("rule ids must be unique")
        if default not in _OUTCOMES:
            raise ValueError(f"default must be one of {_OUTCOMES}")
        cat_scopes = {c: frozenset(category_scopes.get(c, DEFAULT_CATEGORY_SCOPES[c]))
                      for c in CATEGORIES}
        values: dict[str, Any] = {
            "rules": table,
            "default": default,
            "allowed_issuers": _names(allowed_issuers),
            "allowed_tenants": _names(allowed_tenants),
            "category_scopes": MappingProxyType(cat_scopes),
            "scope_hierarchy": MappingProxyType(
                {k: frozenset(v) for k, v in scope_hierarchy.items()}),
            "rate_limit": rate_limit,
            "tool_rate_limits": MappingProxyType(dict(tool_rate_limits or {})),
            "non_interactive_kinds": frozenset(non_interactive_kinds),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "hash", self._digest())

    def _digest(self) -> str:
        def limit(value: RateLimit | None) -> list[float] | None:
            return None if value is None else [value.calls, value.seconds]

        def opt(value: frozenset[str] | None) -> list[str] | None:
            return None if value is None else sorted(value)

        doc = {
            "v": 1,
            "rules": [r.canonical() for r in self.rules],
            "default": self.default,
            "issuers": opt(self.allowed_issuers),
            "tenants": opt(self.allowed_tenants),
            "categoryScopes": {k: sorted(v) for k, v in self.category_scopes.items()},
            "hierarchy": {k: sorted(v) for k, v in self.scope_hierarchy.items()},
            "rateLimit": limit(self.rate_limit),
            "toolRateLimits": {k: limit(v) for k, v in self.tool_rate_limits.items()},
            "nonInteractive": sorted(self.non_interactive_kinds),
        }
        raw = msgspec.json.encode(doc, order="sorted")
        return "sha256:" + hashlib.sha256(raw).hexdigest()[:32]

    def required_scopes(self, tool: ToolPolicy) -> frozenset[str]:
        return tool.required_scopes or self.category_scopes.get(
            tool.category, self.category_scopes[DESTRUCTIVE])

    def granted_scopes(self, principal: Principal) -> frozenset[str]:
        return expand_scopes(principal.scopes, self.scope_hierarchy)


@dataclass(frozen=True, slots=True)
class Decision:
    """What the engine decided, and why (``rule_id`` and ``reason_code``: for the audit
    trail and the operator, never for the client)."""

    outcome: Outcome
    rule_id: str
    ruleset_hash: str
    required_scopes: frozenset[str]
    reason_code: str


# -- the engine ---------------------------------------------------------------------------
def expand_scopes(scopes: Iterable[str], hierarchy: Mapping[str, Iterable[str]]
                  ) -> frozenset[str]:
    """Everything ``scopes`` grant, following the hierarchy transitively.

    >>> sorted(expand_scopes({"mcp:admin"}, DEFAULT_SCOPE_HIERARCHY))
    ['mcp:admin', 'mcp:read', 'mcp:write']
    """
    granted = set(scopes)
    todo = list(granted)
    while todo:
        for implied in hierarchy.get(todo.pop(), ()):
            if implied not in granted:
                granted.add(implied)
                todo.append(implied)
    return frozenset(granted)


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
    granted = ruleset.granted_scopes(principal)
    interactive = call.interactive and (
        auth_kind(principal, ruleset.non_interactive_kinds)
        not in ruleset.non_interactive_kinds)
    first: Rule | None = None
    for rule in ruleset.rules:
        if rule.matches(principal, tool, granted, interactive):
            if rule.effect == "deny":
                return Decision("deny", rule.id, h, required, "rule_deny")
            if first is None:
                first = rule
    outcome = first.effect if first is not None else ruleset.default
    rule_id = first.id if first is not None else "default"
    if outcome == "deny":
        return Decision("deny", rule_id, h, required, "default_deny")
    # Only now the scopes: what remains would succeed with a broader token (so a 403
    # step-up challenge is never sent for a call no token can unlock).
    if not required <= granted:
        return Decision("deny", "scope", h, required, "insufficient_scope")
    if outcome == "allow":
        return Decision("allow", rule_id, h, required,
                        "rule_allow" if first is not None else "default_allow")
    if interactive:
        return Decision("confirm", rule_id, h, required, "confirmation_required")
    if first is not None and first.autonomous:
        return Decision("allow", rule_id, h, required, "autonomous")
    return Decision("deny", rule_id, h, required, "confirmation_unavailable")


#: Denials no scope can fix; a filtered ``tools/list`` hides tools these apply to.
HIDING_REASONS = frozenset({"issuer_not_allowed", "tenant_not_allowed", "rule_deny",
                            "default_deny"})


# -- rate limits --------------------------------------------------------------------------
class RateLimiter(Protocol):
    """Counts calls; ``hit`` records one at ``now`` and says whether it is within ``limit``."""

    def hit(self, key: str, limit: RateLimit, now: float) -> bool: ...


class MemoryRateLimiter:
    """A sliding-window log per key, in this process (a fleet gets one per instance).

    Memory is bounded by ``limit.calls`` timestamps per key and ``max_keys`` keys; the
    oldest key is dropped when full (erring towards allowing, never towards a crash).
    """

    def __init__(self, max_keys: int = 100_000) -> None:
        self.max_keys = max_keys
        self._log: dict[str, deque[float]] = {}

    def hit(self, key: str, limit: RateLimit, now: float) -> bool:
        stamps = self._log.get(key)
        if stamps is None:
            if len(self._log) >= self.max_keys:
                self._log.pop(next(iter(self._log)))
            stamps = self._log[key] = deque()
        while stamps and stamps[0] <= now - limit.seconds:
            stamps.popleft()
        if len(stamps) >= limit.calls:
            return False
        stamps.append(now)
        return True


# -- audit --------------------------------------------------------------------------------
@dataclass(slots=True)
class AuditEvent:
    """One decision and its result. Digests only: never a token or an argument."""

    ts: float
    request_id: str
    method: str
    tool: str
    ruleset_hash: str = ""
    rule_id: str = ""
    decision: str = ""
    reason_code: str = ""
    issuer: str | None = None
    tenant: str | None = None
    subject: str = ""
    client_id: str | None = None
    auth_kind: str = ""
    token_id_sha256: str | None = None
    category: str | None = None
    external: bool | None = None
    args_digest: str = ""
    required_scopes: list[str] = field(default_factory=list)
    granted_scopes: list[str] = field(default_factory=list)
    confirmation_id: str | None = None
    confirmation: str | None = None
    #: The task the call became (the tasks extension), if it did.
    task_id: str | None = None
    result: str = ""
    error_code: int | None = None
    latency_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)


class AuditSink(Protocol):
    def emit(self, event: AuditEvent) -> None: ...


class LoggingAuditSink:
    """One JSON line per event on the ``mcpcore.audit`` logger, at INFO."""

    def __init__(self, logger: logging.Logger = audit_log) -> None:
        self.logger = logger

    def emit(self, event: AuditEvent) -> None:
        self.logger.info("%s", event.to_json())


class MemoryAuditSink:
    """Keeps events in a list (tests, debugging)."""

    def __init__(self) -> None:
        self.events: list[AuditEvent] = []

    def emit(self, event: AuditEvent) -> None:
        self.events.append(event)


def args_digest(arguments: Mapping[str, Any]) -> str:
    """SHA-256 over the canonical JSON of the arguments (keys sorted)."""
    try:
        raw = msgspec.json.encode(arguments, order="sorted")
    except (TypeError, msgspec.EncodeError):
        raw = repr(sorted(arguments.items())).encode()
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _sha256(value: str | None) -> str | None:
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


# -- confirmation messages ----------------------------------------------------------------
_SECRET_WORDS = ("password", "passwd", "secret", "token", "key", "auth", "credential",
                 "cookie", "session", "private", "otp", "pin")


def summarize_arguments(tool: ToolDef, arguments: Mapping[str, Any], *, limit: int = 5,
                        width: int = 40) -> str:
    """A short, secret-free view of the arguments for the confirmation message.

    Values of arguments whose names suggest a secret are hidden, long values cut,
    nested values reduced to their kind.

    >>> summarize_arguments(None, {"path": "/tmp/x", "api_key": "k-123"})  # type: ignore[arg-type]
    'path="/tmp/x", api_key=(hidden)'
    """
    parts: list[str] = []
    for name in list(arguments)[:limit]:
        value = arguments[name]
        if any(word in name.lower() for word in _SECRET_WORDS):
            shown = "(hidden)"
        elif isinstance(value, (str, int, float, bool)) or value is None:
            shown = json.dumps(value, ensure_ascii=False)
            if len(shown) > width:
                shown = shown[: width - 1] + "…"
        elif isinstance(value, list):
            shown = f"(list of {len(value)})"
        else:
            shown = "(object)"
        parts.append(f"{name}={shown}")
    if len(arguments) > limit:
        parts.append(f"… {len(arguments) - limit} more")
    return ", ".join(parts) if parts else "no arguments"


_CATEGORY_LABELS: Mapping[str, str] = MappingProxyType({
    READ: "read-only", WRITE_IDEMPOTENT: "idempotent write",
    WRITE_ADDITIVE: "write", DESTRUCTIVE: "destructive",
})


def confirmation_message(tool: ToolDef, arguments: Mapping[str, Any],
                         summarize: Callable[[ToolDef, Mapping[str, Any]], str]) -> str:
    label = _CATEGORY_LABELS.get(tool.category, tool.category)
    if tool.external:
        label += ", reaches external systems"
    return f"Allow the tool {tool.name!r} ({label}) to run with {summarize(tool, arguments)}?"


# -- the policy a server is given ---------------------------------------------------------
class Policy:
    """Gate every ``tools/call`` of a ``Server`` (and optionally filter ``tools/list``).

    >>> policy = Policy(Ruleset([
    ...     Rule("tenant-ok", "allow", tenants={"contoso"}, categories={"read"}),
    ...     Rule("confirm-destructive", "confirm", categories={"destructive"}),
    ... ], allowed_tenants={"contoso"}), sinks=[MemoryAuditSink()])
    >>> server = Server("demo", policy=policy)                       # doctest: +SKIP

    ``clock`` (seconds, wall time) stamps audit events and drives rate limits;
    ``resource_metadata`` goes into the 403 step-up challenge; ``filter_tools_list``
    hides tools a principal may never call and marks the list ``cacheScope: "private"``.
    Replace ``ruleset`` at any time; each decision names the ``ruleset_hash`` it used.
    """

    def __init__(
        self,
        ruleset: Ruleset,
        *,
        sinks: Sequence[AuditSink] | None = None,
        limiter: RateLimiter | None = None,
        clock: Callable[[], float] = time.time,
        filter_tools_list: bool = False,
        resource_metadata: str | None = None,
        summarize: Callable[[ToolDef, Mapping[str, Any]], str] = summarize_arguments,
    ) -> None:
        self.ruleset = ruleset
        self.sinks: list[AuditSink] = list(sinks) if sinks is not None else [
            LoggingAuditSink()]
        self.limiter: RateLimiter = limiter or MemoryRateLimiter()
        self.clock = clock
        self.filter_tools_list = filter_tools_list
        self.resource_metadata = resource_metadata
        self.summarize = summarize

    # -- pure parts, bound to the current rule set --------------------------------------
    def decide(self, principal: Principal, call: Call, tool: ToolPolicy) -> Decision:
        return decide(principal, call, tool, self.ruleset)

    def visible(self, principal: Principal, tool: ToolDef) -> bool:
        """Whether ``tool`` belongs in this principal's filtered ``tools/list``."""
        decision = decide(principal, Call("tools/list", tool.name), ToolPolicy.of(tool),
                          self.ruleset)
        return decision.reason_code not in HIDING_REASONS

    # -- one call ------------------------------------------------------------------------
    def begin(self, ctx: Context, name: str, arguments: Mapping[str, Any]) -> Gate:
        """Start gating one ``tools/call``; the server drives the returned ``Gate``."""
        return Gate(self, ctx, name, arguments)

    def emit(self, event: AuditEvent) -> None:
        for sink in self.sinks:
            try:
                sink.emit(event)
            except Exception:  # an audit sink failing must not change the call's outcome
                log.exception("audit sink %r failed", sink)


class Gate:
    """The policy's view of one ``tools/call``, from lookup to the audit event.

    ``Server._call_tool`` calls ``check`` before MRTR state is opened (tenant, rules,
    scopes), ``admit`` inside the handler round (confirmation, rate limit), and ``finish``
    or ``fail`` exactly once.
    """

    def __init__(self, policy: Policy, ctx: Context, name: str,
                 arguments: Mapping[str, Any]) -> None:
        self.policy = policy
        self.ctx = ctx
        self.arguments = arguments
        self.started = time.perf_counter()
        principal = ctx.principal
        ruleset = policy.ruleset
        self.event = AuditEvent(
            ts=policy.clock(), request_id=str(ctx.request_id), method=ctx.method, tool=name,
            ruleset_hash=ruleset.hash, issuer=principal.issuer, tenant=principal.tenant,
            subject=principal.subject, client_id=principal.client_id,
            auth_kind=auth_kind(principal, ruleset.non_interactive_kinds),
            token_id_sha256=_sha256(principal.token_id), args_digest=args_digest(arguments),
            granted_scopes=sorted(principal.scopes))
        self.decision: Decision | None = None

    def check(self, tool: ToolDef) -> Decision:
        """Tenant, rules and scopes; raises ``InsufficientScope`` (403) when a broader
        token would do, returns the decision otherwise."""
        self.event.category, self.event.external = tool.category, tool.external
        call = Call(self.ctx.method, tool.name, self.event.args_digest,
                    interactive=self.ctx.has_capability("elicitation"))
        decision = self.policy.decide(self.ctx.principal, call, ToolPolicy.of(tool))
        self._record(decision)
        if decision.reason_code == "insufficient_scope":
            raise InsufficientScope(decision.required_scopes,
                                    resource_metadata=self.policy.resource_metadata)
        return decision

    def _record(self, decision: Decision) -> None:
        self.decision = decision
        event = self.event
        event.ruleset_hash, event.rule_id = decision.ruleset_hash, decision.rule_id
        event.decision, event.reason_code = decision.outcome, decision.reason_code
        event.required_scopes = sorted(decision.required_scopes)

    def denied(self, reason_code: str | None = None) -> dict[str, Any]:
        """The tool error for a denial (generic text, no rule internals)."""
        if reason_code is not None:
            self.event.decision, self.event.reason_code = "deny", reason_code
        return error_result(DENIAL_TEXT.get(self.event.reason_code, DEFAULT_DENIAL))

    async def admit(self, tool: ToolDef) -> dict[str, Any] | None:
        """Inside the handler round: confirm if needed, then count the call against the
        rate limit. ``None`` means run the handler; otherwise the denial to return.

        May raise ``InputRequired`` (through ``ctx.elicit``) while the human is asked.
        """
        decision = self.decision
        assert decision is not None and decision.outcome != "deny"
        ctx = self.ctx
        if decision.outcome == "confirm":
            answer = await self._confirm(tool)
            if not isinstance(answer, ElicitAnswer) or not answer.accepted or (
                (answer.content or {}).get("confirm") is not True
            ):
                action = answer.action if isinstance(answer, ElicitAnswer) else "decline"
                self.event.confirmation = "cancelled" if action == "cancel" else "declined"
                return self.denied("confirmation_declined")
            self.event.confirmation = "accepted"
            self.event.decision, self.event.reason_code = "allow", "confirmed"
        ruleset = self.policy.ruleset
        limit = ruleset.tool_rate_limits.get(tool.name, ruleset.rate_limit)
        if limit is not None and not ctx.state.get(_RATED_STATE_KEY):
            principal = ctx.principal
            key = f"{principal.key}|{principal.tenant or ''}|{tool.name}"
            if not self.policy.limiter.hit(key, limit, self.policy.clock()):
                self.event.rule_id = "rate_limit"
                return self.denied("rate_limited")
            # A later MRTR round of the same call (the handler asking for more) is the
            # same call: the flag rides in the sealed state, so it is counted once.
            ctx.state[_RATED_STATE_KEY] = True
        return None

    async def _confirm(self, tool: ToolDef) -> Any:
        """Ask the human (MRTR form elicitation) and return the answer.

        The answer's key carries a random id chosen when the question is first asked and
        kept in ``ctx.state``, which MRTR seals into ``requestState`` bound to this
        principal, method and params digest. An approval the client sends without that
        state, or with another call's state, cannot name the key, so it is never seen.
        """
        ctx = self.ctx
        confirmation_id = ctx.state.get(CONFIRM_STATE_KEY)
        if not isinstance(confirmation_id, str):
            confirmation_id = secrets.token_urlsafe(12)
            ctx.state[CONFIRM_STATE_KEY] = confirmation_id
        self.event.confirmation_id = confirmation_id
        self.event.confirmation = "pending"
        message = confirmation_message(tool, self.arguments, self.policy.summarize)
        return await ctx.elicit(message, dict(CONFIRM_SCHEMA),
                                key=f"policy_confirm_{confirmation_id}")

    # -- the audit event, exactly once (a task: at creation and at its end) ----------------
    def finish(self, outcome: RouteOutcome) -> None:
        event = self.event
        if outcome.result_type == "task":
            # The call goes on as a task: say so now (a copy, since the work goes on
            # filling this event); the work's end calls finish or fail once more.
            event.result, event.task_id = "task", outcome.body.get("taskId")
            self.event = replace(event)
            self._emit(event)
            return
        if not outcome.complete:
            event.result = "input_required"
            if event.decision == "confirm":
                event.reason_code = "confirmation_required"
        else:
            event.result = "tool_error" if outcome.body.get("isError") is True else "ok"
        self._emit()

    def fail(self, exc: BaseException) -> None:
        event = self.event
        if isinstance(exc, McpError):
            event.result, event.error_code = "error", int(exc.code)
        else:
            event.result = "cancelled" if not isinstance(exc, Exception) else "internal_error"
        if not event.decision:  # refused before any decision (unknown tool, bad headers)
            event.decision = "deny"
            event.reason_code = "unknown_tool" if isinstance(exc, UnknownTool) else "error"
        self._emit()

    def _emit(self, event: AuditEvent | None = None) -> None:
        event = event or self.event
        event.latency_ms = round((time.perf_counter() - self.started) * 1000, 3)
        self.policy.emit(event)


__all__ = [
    "CONFIRM_SCHEMA",
    "DEFAULT_CATEGORY_SCOPES",
    "DEFAULT_SCOPE_HIERARCHY",
    "DESTRUCTIVE",
    "HIDING_REASONS",
    "NON_INTERACTIVE_KINDS",
    "READ",
    "WRITE_ADDITIVE",
    "WRITE_IDEMPOTENT",
    "AuditEvent",
    "AuditSink",
    "Call",
    "Decision",
    "Gate",
    "LoggingAuditSink",
    "MemoryAuditSink",
    "MemoryRateLimiter",
    "Outcome",
    "Policy",
    "RateLimit",
    "RateLimiter",
    "Rule",
    "Ruleset",
    "ToolPolicy",
    "args_digest",
    "auth_kind",
    "confirmation_message",
    "decide",
    "expand_scopes",
    "summarize_arguments",
]
