"""The gateway's policy: its rule file, and what the rules know of each upstream's items.

The gateway has no policy path of its own. ``gateway_policy`` loads ``config.policy``
(a rule file, docs/policy.md) into the engine's own ``Policy``, gating every routed
method that names a target (``ROUTED_METHODS``: ``tools/call``, ``resources/read``,
``prompts/get``, ``completion/complete``) in both eras, and the tasks extension's
methods (``TASK_METHODS``: a relayed task is judged as the tool whose call made it,
``tasks.py``), and filtering the lists by the same rules. The gateway's ``Server``
is given it, so the one seam is the engine's gate (``Server._gate``): allow, deny,
confirm (``input_required`` for 2026-07-28 clients, ``elicitation/create`` for 2025
ones), throttle, one audit event per call.

What the rules match, for a forwarded item (``Gateway._install`` passes it to
``add_raw``): its served name (prefixed), its ``upstream`` (a rule's ``upstreams``),
and for a tool its category and external flag: the upstream's ``categories`` globs
over the upstream's own tool name win, else the tool's annotations
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``:
``category_from_annotations``, ``external_from_annotations``). An upstream's
annotations are its own claims: a config glob is how an operator overrides them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from mcpcore.policy import AuditSink, Policy, RateLimiter, Ruleset, load
from mcpcore.policy.gate import GATEABLE_METHODS
from mcpcore.tools import Category, category_from_annotations, external_from_annotations


def gateway_policy(config: GatewayConfig, *, ruleset: Ruleset | None = None,
                   sinks: Sequence[AuditSink] | None = None,
                   limiter: RateLimiter | None = None) -> Policy | None:
    """The policy of ``config`` (``None``: no ``policy`` file and no ``ruleset``).

    ``ruleset`` replaces the file's (tests, or rules built in Python); ``sinks`` (default:
    one JSON line per event on ``mcpcore.audit``); ``limiter`` (default: per process;
    ``RedisRateLimiter`` for a fleet). A bad rule file raises ``RuleFileError`` with every
    problem and its line, so the gateway does not start.
    """
    if ruleset is None:
        if config.policy is None:
            return None
        ruleset = load(config.policy)
    return Policy(ruleset, sinks=sinks, limiter=limiter, filter_tools_list=True,
                  methods=GATEABLE_METHODS)


def tool_category(upstream: UpstreamConfig, name: str,
                  annotations: Mapping[str, Any] | None) -> tuple[Category, bool]:
    """The category and external flag of ``upstream``'s tool ``name`` (its own name):
    the first of the upstream's ``categories`` globs that matches wins (external then
    still from ``openWorldHint``), else the annotations decide both."""
    external = external_from_annotations(annotations)
    for pattern, category in upstream.categories.items():
        if fnmatchcase(name, pattern):
            return category, external
    return category_from_annotations(annotations), external


__all__ = ["gateway_policy", "tool_category"]
