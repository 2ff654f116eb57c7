"""Policy before handler: tool categories, rules, decisions, confirmation and audit.

The package's rooms:

- ``engine``: the pure, deterministic engine (``decide``, ``explain``), its inputs and
  the ``Ruleset`` with its canonical form and hash;
- ``matchers``: argument predicates, time windows, globs;
- ``rulefile``: the rule set as a reviewed TOML file, with line-numbered errors;
- ``gate``: the ``Policy`` a ``Server`` is given and its per-call ``Gate``
  (confirmation through MRTR, rate limits, downstream allowances, audit);
- ``limits``: rate limiters (``MemoryRateLimiter``; the fleet's is
  ``mcpcore.stores.redis_ratelimit.RedisRateLimiter``);
- ``audit``: the audit event and its sinks;
- ``cli``: ``mcpcore policy check`` and ``mcpcore policy explain``.

Every name below is importable from ``mcpcore.policy`` itself (docs/policy.md).
"""

from mcpcore.policy.audit import (
    AuditEvent,
    AuditSink,
    LoggingAuditSink,
    MemoryAuditSink,
    args_digest,
)
from mcpcore.policy.engine import (
    DEFAULT_CATEGORY_SCOPES,
    DEFAULT_SCOPE_HIERARCHY,
    DESTRUCTIVE,
    HIDING_REASONS,
    NON_INTERACTIVE_KINDS,
    READ,
    WRITE_ADDITIVE,
    WRITE_IDEMPOTENT,
    Call,
    Decision,
    Downstream,
    Effect,
    Explanation,
    RateLimit,
    Rule,
    Ruleset,
    ToolPolicy,
    ToolSettings,
    auth_kind,
    decide,
    expand_scopes,
    explain,
)
from mcpcore.policy.gate import (
    CONFIRM_SCHEMA,
    Gate,
    Policy,
    confirmation_message,
    permits_downstream,
    summarize_arguments,
)
from mcpcore.policy.limits import MemoryRateLimiter, RateAdmission, RateLimiter
from mcpcore.policy.matchers import ArgCondition, TimeWindow
from mcpcore.policy.rulefile import RuleFileError, load, loads

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
    "ArgCondition",
    "AuditEvent",
    "AuditSink",
    "Call",
    "Decision",
    "Downstream",
    "Effect",
    "Explanation",
    "Gate",
    "LoggingAuditSink",
    "MemoryAuditSink",
    "MemoryRateLimiter",
    "Policy",
    "RateAdmission",
    "RateLimit",
    "RateLimiter",
    "Rule",
    "RuleFileError",
    "Ruleset",
    "TimeWindow",
    "ToolPolicy",
    "ToolSettings",
    "args_digest",
    "auth_kind",
    "confirmation_message",
    "decide",
    "expand_scopes",
    "explain",
    "load",
    "loads",
    "permits_downstream",
    "summarize_arguments",
]
