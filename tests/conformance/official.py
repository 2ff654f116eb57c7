"""Our suite and the official one on the same server: where both check the same rule,
compare their verdicts.

``MAPPING`` pairs an official check id with the checks of ours that test the same rule
(all of them must pass for our side to pass). Official statuses collapse to one per id
(the worst); SKIPPED and INFO are no verdict. ``compare`` returns the pairs that
disagree; tests/conformance/test_third_party.py holds each disagreement to the
explanation in ``DISAGREEMENTS`` (also in docs/conformance.md).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mcpcore.conformance.runner import Report
from tests.integration.conftest import OFFICIAL_SUITE

HEADERS = ("headers.method-required", "headers.method-match", "headers.name-required",
           "headers.name-match")
MAPPING: dict[str, tuple[str, ...]] = {
    "sep-2575-server-implements-discover": ("discover.result",),
    "sep-2575-server-identifies-in-result-meta": ("discover.server-info",),
    "sep-2575-request-meta-client-info-optional": ("meta.client-info-optional",),
    "sep-2575-request-meta-invalid-missing-meta": ("meta.required",),
    "sep-2575-request-meta-invalid-missing-protocol-version": ("meta.required",),
    "sep-2575-request-meta-invalid-missing-client-capabilities": ("meta.required",),
    "sep-2575-http-server-meta-invalid-400": ("meta.required",),
    "sep-2575-server-unsupported-version-error": ("version.unsupported",),
    "sep-2575-http-server-unsupported-version-400": ("version.unsupported",),
    "sep-2575-http-server-header-mismatch-400": ("version.header-mismatch",),
    "sep-2575-http-server-method-not-found-404": ("methods.unknown",),
    **{f"sep-2575-http-server-method-not-found-404-{m}": ("methods.removed",) for m in (
        "initialize", "ping", "logging-setlevel", "resources-subscribe",
        "resources-unsubscribe")},
    "sep-2575-discover-capabilities-match-handlers": ("methods.capability-gated",),
    "sep-2575-server-declares-prompts-in-discover": ("methods.capability-gated",),
    "sep-2575-http-server-error-jsonrpc-id": ("errors.id-echo",),
    # A -32601 to listen: ours skips listen.acknowledged and judges listen.served (SHOULD).
    "sep-2575-server-sends-subscription-ack": ("listen.acknowledged", "listen.served"),
    "sep-2575-server-tags-subscription-id": ("listen.acknowledged",),
    # Ours judges rejection and acceptance together: compared on the rejection only.
    # The official probe sends a foreign Host and a foreign Origin at once; ours are two.
    "localhost-host-rebinding-rejected": ("http.origin", "http.host-rebinding"),
    **{f"sep-2549-{m}-caching-hints": ("cache.hints",) for m in (
        "tools-list", "prompts-list", "resources-list", "resources-templates-list",
        "resources-read")},
    "sep-2549-ttl-non-negative": ("cache.hints",),
    "sep-2549-cache-scope-valid": ("cache.hints",),
    "tools-list": ("tools.definitions",),
    "tools-name-format": ("tools.names",),
    "tools-list-deterministic-order": ("tools.deterministic-order",),
    "sep-2164-no-empty-contents": ("resources.not-found",),
    "sep-2164-error-code": ("resources.not-found",),
    "sep-2243-server-reject-invalid-headers": HEADERS,
    "sep-2243-server-reject-error-code": HEADERS,
    "sep-2243-header-name-case-insensitive": ("headers.name-case-insensitive",),
    "sep-2243-server-accepts-whitespace-header-value": ("headers.name-whitespace",),
    "wire-schema-valid": ("wire.schema-valid",),
    "server-initialize": ("legacy.initialize",),
    "server-session-id-visible-ascii": ("legacy.session-id",),
    "ping": ("legacy.ping",),
    "server-session-terminated-returns-404": ("legacy.ended-session",),
}
_RANK = {"FAILURE": 3, "WARNING": 2, "SUCCESS": 1}
_OURS = {"fail": 3, "error": 3, "warn": 2, "pass": 1}


#: The official scenarios that emit the checks in ``MAPPING``, per era.
SCENARIOS = {
    "2026-07-28": ("server-stateless", "dns-rebinding-protection", "caching", "tools-list",
                   "sep-2164-resource-not-found", "http-header-validation"),
    "2025-11-25": ("server-initialize", "ping", "tools-list", "dns-rebinding-protection",
                   "server-session-lifecycle"),
}


def run_official(url: str, era: str, out: Path) -> dict[str, str]:
    """The official suite's worst status per check id, from the scenarios that hold the
    mapped checks (``--scenario S --spec-version era``, one run each)."""
    for scenario in SCENARIOS[era]:
        subprocess.run([str(OFFICIAL_SUITE), "server", "--url", url, "--scenario", scenario,
                        "--spec-version", era, "-o", str(out)],
                       capture_output=True, text=True, timeout=300, check=False)
    worst: dict[str, str] = {}
    for path in out.glob("server-*/checks.json"):
        for item in json.loads(path.read_text()):
            status = str(item.get("status"))
            if _RANK.get(status, 0) > _RANK.get(worst.get(item["id"], ""), 0) or (
                    item["id"] not in worst):
                worst[item["id"]] = status
    return worst


def compare(official: dict[str, str], report: Report, era: str) -> dict[str, tuple[str, str]]:
    """``{official id: (official status, our verdict)}`` where the two disagree."""
    ours: dict[str, str] = {o.check.id: o.verdict.value for o in report.outcomes
                            if o.era == era}
    out: dict[str, tuple[str, str]] = {}
    for official_id, ours_ids in MAPPING.items():
        status = official.get(official_id)
        if status not in _RANK:
            continue  # not run, skipped or informational: no verdict to compare
        verdicts = [ours[i] for i in ours_ids if i in ours and ours[i] in _OURS]
        if not verdicts:
            continue
        mine = max(verdicts, key=lambda v: _OURS[v])
        if _RANK[status] != _OURS[mine]:
            out[official_id] = (status, mine)
    return out
