"""The policy a ``Server`` is given, and its view of each ``tools/call`` (the ``Gate``).

What lives here: what is not pure about a decision — the clock, the rate limiter, the
audit sinks, asking the human (MRTR form elicitation), the downstream audiences a
running tool may exchange tokens for — around the pure engine (``engine.decide``).

The order for ``tools/call``, stopping at the first terminal result::

    issuer, tenant allowed ──► rule table (DENY beats the rest) ──► scopes ──► ALLOW |
    CONFIRM (ask through MRTR) ──► rate limit ──► input validation ──► handler (with
    its timeout and downstream allowances) ──► audit

Every call, whatever its outcome, gives exactly one ``AuditEvent``; a call that became a
task (the tasks extension) gives one when the task is created (``result: "task"``) and
one when its work ends, both naming the ``task_id``. A confirmation asked inside a task
is the task's ``input_required``: the approval may take hours, no connection held.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from mcpcore.call_gate import CallDenied
from mcpcore.errors import (
    InsufficientScope,
    McpError,
    PolicyDenied,
    RateLimited,
    ResourceNotFound,
    UnknownPrompt,
    UnknownTool,
)
from mcpcore.inputs import ElicitAnswer
from mcpcore.outcome import Outcome
from mcpcore.policy.audit import (
    AuditEvent,
    AuditSink,
    LoggingAuditSink,
    args_digest,
    sha256_hex,
)
from mcpcore.policy.engine import (
    DESTRUCTIVE,
    HIDING_REASONS,
    READ,
    WRITE_ADDITIVE,
    WRITE_IDEMPOTENT,
    Call,
    Decision,
    PolicyTarget,
    Ruleset,
    ToolPolicy,
    auth_kind,
    decide,
)
from mcpcore.policy.limits import MemoryRateLimiter, RateLimiter
from mcpcore.principal import Principal
from mcpcore.tools import error_result

if TYPE_CHECKING:
    from mcpcore.context import Context
    from mcpcore.inputs import Handler

log = logging.getLogger("mcpcore.policy")

#: The routed methods that name a target a policy can gate: the tool, the resource's
#: URI, the prompt, the prompt or template a completion is for.
ROUTED_METHODS: frozenset[str] = frozenset({"tools/call", "resources/read", "prompts/get",
                                            "completion/complete"})
#: The tasks extension's methods (SEP-2663): a server whose tasks name the tool that
#: made them (a gateway's: ``mcpcore.gateway.tasks``) gates them as follow-ups of that
#: call: judged as the tool by the rules again (a deny holds), without the arguments
#: (the call's were judged), with nothing asked (a confirmation was, for the call) and
#: nothing counted against rate limits (a poll is not a call).
TASK_METHODS: frozenset[str] = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
#: Every method a policy can gate (a gateway's gates them all).
GATEABLE_METHODS: frozenset[str] = ROUTED_METHODS | TASK_METHODS
#: What a ``Policy`` gates unless told otherwise (docs/policy.md).
TOOL_METHODS: frozenset[str] = frozenset({"tools/call"})
#: The list each gated method's targets are listed by (filtered by the same rules).
LISTS: Mapping[str, str] = MappingProxyType({
    "tools/list": "tools/call", "resources/list": "resources/read",
    "resources/templates/list": "resources/read", "prompts/list": "prompts/get"})
#: A follow-up of a task (``TASK_METHODS``) with these reasons was decided at the call.
_ASKED_AT_CALL = frozenset({"confirmation_required", "confirmation_unavailable"})

#: The requests that subscribe to resources' updates (a 2025 session's
#: ``resources/subscribe``; each URI of a 2026-07-28 listen's ``resourceSubscriptions``)
#: → the method they are judged as: a subscription shows what reads would (when the
#: resource changes), so each URI is gated as a read of it, when reads are
#: (``Server.subscribe``), with an audit event of its own.
SUBSCRIBING: Mapping[str, str] = MappingProxyType({
    "resources/subscribe": "resources/read", "subscriptions/listen": "resources/read"})
#: Methods whose caller cannot be asked mid-request (no MRTR round runs around them):
#: a confirm rule denies them unless it is ``autonomous``.
_NO_ROUND = frozenset({"completion/complete", *SUBSCRIBING})
#: What the confirmation message calls a target, by method.
_KIND_WORDS: Mapping[str, str] = MappingProxyType({
    "tools/call": "the tool", "resources/read": "reading the resource",
    "prompts/get": "the prompt", "completion/complete": "completing"})

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
    "confirmation_declined": "The user did not approve this tool call.",
    "confirmation_unavailable": "This tool call needs a person's approval, which this "
                                "client cannot ask for.",
})
DEFAULT_DENIAL = "This tool call is not permitted."

#: The gate of the ``tools/call`` whose handler is running in this context (if any).
_RUNNING: ContextVar[Gate | None] = ContextVar("mcpcore.policy.running", default=None)


def permits_downstream(audience: str, scopes: frozenset[str]) -> bool:
    """May the tool running in this context obtain a token for ``audience`` with
    ``scopes``? True outside a gated ``tools/call``; inside one, only what its rule set
    declares for the tool (``ToolSettings.downstream``). Each answer is audited."""
    gate = _RUNNING.get()
    return True if gate is None else gate.downstream(audience, scopes)


# -- confirmation messages ----------------------------------------------------------------
_SECRET_WORDS = ("password", "passwd", "secret", "token", "key", "auth", "credential",
                 "cookie", "session", "private", "otp", "pin")


def summarize_arguments(tool: PolicyTarget, arguments: Mapping[str, Any], *, limit: int = 5,
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


def confirmation_message(tool: PolicyTarget, arguments: Mapping[str, Any],
                         summarize: Callable[[PolicyTarget, Mapping[str, Any]], str],
                         method: str = "tools/call") -> str:
    label = _CATEGORY_LABELS.get(tool.category, tool.category)
    if tool.external:
        label += ", reaches external systems"
    upstream = getattr(tool, "upstream", None)
    if upstream is not None:
        label += f", on {upstream}"
    kind = _KIND_WORDS.get(method, method)
    if method == "resources/read":
        return f"Allow {kind} {tool.name!r} ({label})?"
    return f"Allow {kind} {tool.name!r} ({label}) to run with {summarize(tool, arguments)}?"


# -- the policy a server is given ---------------------------------------------------------
class Policy:
    """Gate every ``tools/call`` of a ``Server`` (and optionally filter ``tools/list``);
    with ``methods=ROUTED_METHODS``, every routed method that names a target.

    >>> policy = Policy(Ruleset([
    ...     Rule("tenant-ok", "allow", tenants={"contoso"}, categories={"read"}),
    ...     Rule("confirm-destructive", "confirm", categories={"destructive"}),
    ... ], allowed_tenants={"contoso"}), sinks=[MemoryAuditSink()])
    >>> server = Server("demo", policy=policy)                       # doctest: +SKIP

    ``clock`` (seconds, wall time) stamps audit events, drives rate limits and time
    windows; ``limiter`` counts calls (``MemoryRateLimiter`` per process, or
    ``RedisRateLimiter`` for a fleet); ``resource_metadata`` goes into the 403 step-up
    challenge; ``filter_tools_list`` hides tools a principal may never call and marks
    the list ``cacheScope: "private"`` (and, for each other gated method, its lists:
    ``LISTS``). ``methods``: the routed methods gated (``tools/call`` always; a gateway
    gates ``ROUTED_METHODS``, where a rule's ``tools`` matches the prompt's name or the
    resource's URI too). Replace ``ruleset`` at any time; each decision
    names the ``ruleset_hash`` it used. ``Policy.from_file("rules.toml")`` loads a rule
    file (``mcpcore.policy.rulefile``) and raises ``RuleFileError`` if it is bad.
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
        summarize: Callable[[PolicyTarget, Mapping[str, Any]], str] = summarize_arguments,
        methods: frozenset[str] = TOOL_METHODS,
    ) -> None:
        methods = frozenset(methods)
        if "tools/call" not in methods or not methods <= GATEABLE_METHODS:
            raise ValueError(f"methods must include tools/call, within "
                             f"{sorted(GATEABLE_METHODS)}")
        self.methods = methods
        self.ruleset = ruleset
        self.sinks: list[AuditSink] = list(sinks) if sinks is not None else [
            LoggingAuditSink()]
        self.limiter: RateLimiter = limiter or MemoryRateLimiter()
        self.clock = clock
        self.filter_tools_list = filter_tools_list
        self.resource_metadata = resource_metadata
        self.summarize = summarize

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> Policy:
        """A policy for the rule file at ``path``; ``options`` as for ``Policy``.
        Raises ``RuleFileError`` (every problem, with its line) for a bad file."""
        from mcpcore.policy.rulefile import load

        return cls(load(path), **options)

    # -- pure parts, bound to the current rule set --------------------------------------
    def decide(self, principal: Principal, call: Call, tool: ToolPolicy) -> Decision:
        return decide(principal, call, tool, self.ruleset)

    def visible(self, principal: Principal, tool: PolicyTarget, listing: str = "tools/list"
                ) -> bool:
        """Whether ``tool`` belongs in this principal's filtered ``listing``."""
        decision = decide(principal, Call(listing, tool.name, now=self.clock()),
                          ToolPolicy.of(tool), self.ruleset)
        return decision.reason_code not in HIDING_REASONS

    def filters(self, listing: str) -> bool:
        """Whether ``listing`` (``tools/list``, ``prompts/list``...) is filtered per
        principal: ``filter_tools_list`` is set and the policy gates its method."""
        return self.filter_tools_list and LISTS.get(listing) in self.methods

    @property
    def gates_every_route(self) -> bool:
        """Whether every routed method that names a target goes through this policy, the
        tasks extension's included (``GATEABLE_METHODS``)."""
        return self.methods == GATEABLE_METHODS

    def gates(self, method: str) -> bool:
        """Whether requests of ``method`` go through this policy's gate (a resource
        subscription's when reads do: ``SUBSCRIBING``)."""
        return SUBSCRIBING.get(method, method) in self.methods

    def timeout_for(self, name: str) -> float | None:
        return self.ruleset.timeout_for(name)

    # -- one call ------------------------------------------------------------------------
    def begin(self, ctx: Context, name: str, arguments: Mapping[str, Any]) -> Gate:
        """Start gating one call (``ctx.method``: ``tools/call``, or another of
        ``methods``); the server drives the returned ``Gate``."""
        return Gate(self, ctx, name, arguments)

    def emit(self, event: AuditEvent) -> None:
        for sink in self.sinks:
            try:
                sink.emit(event)
            except Exception:  # an audit sink failing must not change the call's outcome
                log.exception("audit sink %r failed", sink)


class _RuleTimeouts:
    """A rule set's tool timeouts as ``get(name, default)`` (``call_gate.Timeouts``)."""

    __slots__ = ("ruleset",)

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset

    def get(self, name: str, default: float | None, /) -> float | None:
        seconds = self.ruleset.timeout_for(name)
        return default if seconds is None else seconds


class Gate:
    """The policy's view of one gated call, from lookup to the audit event.

    ``Server._call_tool`` (and the other gated routes) call ``check`` before MRTR state
    is opened (tenant, rules, scopes), ``admit`` inside the handler round
    (confirmation, rate limit), run the handler inside ``running()`` (downstream
    allowances), and call ``finish`` or ``fail`` exactly once. A denial of a
    ``tools/call`` is a tool error; of any other method, ``PolicyDenied``.
    """

    def __init__(self, policy: Policy, ctx: Context, name: str,
                 arguments: Mapping[str, Any]) -> None:
        self.policy = policy
        self.ctx = ctx
        self.arguments = arguments
        self.started = time.perf_counter()
        self.ruleset = ruleset = policy.ruleset
        principal = ctx.principal
        self.now = policy.clock()
        self.event = AuditEvent(
            ts=self.now, request_id=str(ctx.request_id), method=ctx.method, tool=name,
            ruleset_hash=ruleset.hash, issuer=principal.issuer, tenant=principal.tenant,
            subject=principal.subject, client_id=principal.client_id,
            auth_kind=auth_kind(principal, ruleset.non_interactive_kinds),
            token_id_sha256=sha256_hex(principal.token_id),
            args_digest=args_digest(arguments), granted_scopes=sorted(principal.scopes))
        self.decision: Decision | None = None
        self.target = ToolPolicy(name)

    def check(self, tool: PolicyTarget) -> Decision:
        """Tenant, rules and scopes; raises ``InsufficientScope`` (403) when a broader
        token would do, returns the decision otherwise."""
        method = self.ctx.method
        follow_up = method in TASK_METHODS
        # A tool is judged by its own name (an alias: the name it stands for), and so
        # is a task of its call; any other target by the name the request gives (a
        # resource: the URI read).
        self.target = target = ToolPolicy.of(tool, None if method == "tools/call"
                                             or follow_up else self.event.tool)
        event = self.event
        event.category, event.external = target.category, target.external
        event.upstream = target.upstream
        call = Call(method, target.name, event.args_digest,
                    interactive=(method not in _NO_ROUND
                                 and self.ctx.has_capability("elicitation")),
                    # A task's follow-up: the call's arguments were judged (unknown
                    # here: an allow rule on them is taken to match, a deny not).
                    arguments=None if follow_up else self.arguments, now=self.now)
        decision = decide(self.ctx.principal, call, target, self.ruleset)
        if follow_up and decision.reason_code in _ASKED_AT_CALL:
            # The confirmation belonged to the call that made the task: not asked again.
            decision = replace(decision, outcome="allow", reason_code="task_of_call")
        self._record(decision)
        if decision.reason_code == "insufficient_scope":
            raise InsufficientScope(decision.required_scopes,
                                    resource_metadata=self.policy.resource_metadata)
        return decision

    # -- the steps of Server._call_tool (mcpcore.call_gate.CallGate) ---------------------
    @property
    def timeouts(self) -> _RuleTimeouts:
        """The rule set's timeout for a tool, else the server's default."""
        return _RuleTimeouts(self.ruleset)

    def guard(self, tool: PolicyTarget, run: Handler) -> Handler:
        """``check`` (``CallDenied`` with the denial's tool error if the rules deny a
        ``tools/call``, ``PolicyDenied`` for another method); else ``run`` after
        ``admit`` (confirmation, rate limit), inside ``running()``."""
        if self.check(tool).outcome == "deny":
            raise CallDenied(self.denied())

        async def guarded() -> dict[str, Any]:
            denial = await self.admit(tool)
            if denial is not None:
                return denial
            with self.running():
                return await run()

        return guarded

    def _record(self, decision: Decision) -> None:
        self.decision = decision
        event = self.event
        event.ruleset_hash, event.rule_id = decision.ruleset_hash, decision.rule_id
        event.decision, event.reason_code = decision.outcome, decision.reason_code
        event.required_scopes = sorted(decision.required_scopes)

    def denied(self, reason_code: str | None = None) -> dict[str, Any]:
        """The tool error for a denial of a ``tools/call`` (generic text, no rule
        internals); for another method, raises ``PolicyDenied`` naming the reason and
        the rule."""
        event = self.event
        if reason_code is not None:
            event.decision, event.reason_code = "deny", reason_code
        text = DENIAL_TEXT.get(event.reason_code, DEFAULT_DENIAL)
        if self.ctx.method != "tools/call":
            raise PolicyDenied(event.reason_code, event.rule_id,
                               text.replace("tool call", self.ctx.method + " request"))
        return error_result(text)

    async def admit(self, tool: PolicyTarget) -> dict[str, Any] | None:
        """Inside the handler round: confirm if needed, then count the call against the
        rate limit. ``None`` means run the handler; otherwise the denial to return.

        May raise ``InputRequired`` (through ``ctx.elicit``) while the human is asked,
        and ``RateLimited`` (a JSON-RPC error with a retry hint) past the limit.
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
        target = self.target
        limit = self.ruleset.rate_limit_for(target)
        if limit is not None and not ctx.state.get(_RATED_STATE_KEY) and \
                ctx.method not in TASK_METHODS:  # a task's poll is not a call
            principal = ctx.principal
            # Per (principal, upstream, target): a gateway's upstreams never share a
            # window, even for one name served unprefixed.
            key = f"{principal.key}|{principal.tenant or ''}|{target.name}"
            if target.upstream is not None:
                key += f"|{target.upstream}"
            admission = await self.policy.limiter.acquire(key, limit, self.policy.clock())
            if not admission.allowed:
                event = self.event
                event.decision, event.reason_code = "deny", "rate_limited"
                event.rule_id = "rate_limit"
                raise RateLimited(admission.retry_after)
            # A later MRTR round of the same call (the handler asking for more) is the
            # same call: the flag rides in the sealed state, so it is counted once.
            ctx.state[_RATED_STATE_KEY] = True
        return None

    async def _confirm(self, tool: PolicyTarget) -> Any:
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
        message = confirmation_message(tool if ctx.method == "tools/call" else self.target,
                                       self.arguments, self.policy.summarize, ctx.method)
        return await ctx.elicit(message, dict(CONFIRM_SCHEMA),
                                key=f"policy_confirm_{confirmation_id}")

    # -- while the handler runs -----------------------------------------------------------
    @contextmanager
    def running(self) -> Iterator[None]:
        """Make this gate the one ``permits_downstream`` asks, for the handler's run."""
        token = _RUNNING.set(self)
        try:
            yield
        finally:
            _RUNNING.reset(token)

    def downstream(self, audience: str, scopes: frozenset[str]) -> bool:
        """Whether the running tool may get a token for ``audience`` with ``scopes``;
        recorded in the audit event either way."""
        allowed = any(d.allows(audience, scopes)
                      for d in self.ruleset.downstream_for(self.event.tool))
        self.event.downstream.append({"audience": audience, "scopes": sorted(scopes),
                                      "result": "allowed" if allowed else "refused"})
        if not allowed:
            log.warning("tool %s may not exchange tokens for %s %s", self.event.tool,
                        audience, sorted(scopes))
        return allowed

    def timed_out(self, seconds: float) -> None:
        self.event.result, self.event.timeout_seconds = "timeout", seconds

    # -- the audit event, exactly once (a task: at creation and at its end) ----------------
    def finish(self, outcome: Outcome) -> None:
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
        elif event.result != "timeout":
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
            event.reason_code = ("unknown_tool" if isinstance(
                exc, UnknownTool | UnknownPrompt | ResourceNotFound) else "error")
        self._emit()

    def _emit(self, event: AuditEvent | None = None) -> None:
        event = event or self.event
        event.latency_ms = round((time.perf_counter() - self.started) * 1000, 3)
        self.policy.emit(event)


__all__ = [
    "CONFIRM_SCHEMA",
    "CONFIRM_STATE_KEY",
    "DEFAULT_DENIAL",
    "DENIAL_TEXT",
    "GATEABLE_METHODS",
    "LISTS",
    "ROUTED_METHODS",
    "SUBSCRIBING",
    "TASK_METHODS",
    "TOOL_METHODS",
    "Gate",
    "Policy",
    "confirmation_message",
    "permits_downstream",
    "summarize_arguments",
]
