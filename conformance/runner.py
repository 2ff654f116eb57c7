"""Runs selected checks against a target: era detection, parallelism, timeouts, baseline.

``run(target, config)`` returns a ``Report``; it prints nothing itself (a ``Progress``
listener sees each check start and end, reporters render the report afterwards).
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from mcpcore.conformance import wire
from mcpcore.conformance.context import Context, EraSession, Options
from mcpcore.conformance.model import Check, CheckFailed, CheckSkipped, Outcome, Verdict
from mcpcore.conformance.registry import all_checks, select
from mcpcore.conformance.target import Target

#: Version of the JSON report format (docs/conformance.md, "The JSON report").
REPORT_FORMAT = "1"


@dataclass
class RunConfig:
    """What to run; the CLI fills it from flags, the library API from keywords."""

    spec: str = "auto"                      #: "auto", "2026-07-28" or "2025-11-25"
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    fixtures: bool = False                  #: the official fixture tools are exposed
    audit: frozenset[str] = frozenset()     #: audit packs to run ("auth")
    jobs: int = 4
    check_timeout: float = 30.0
    expected: frozenset[str] = frozenset()  #: "era:check-id" or "check-id"
    options: Options = field(default_factory=Options)


@dataclass
class Report:
    """Everything a run found; reporters turn it into JSON, JUnit XML or HTML."""

    target: str
    transport: str
    started: datetime
    duration: float = 0.0
    eras: list[str] = field(default_factory=list)
    detection: dict[str, str] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)
    stale_expected: list[str] = field(default_factory=list)

    def counts(self, era: str | None = None) -> dict[str, int]:
        tally = Counter(o.verdict.value for o in self.outcomes if era in (None, o.era))
        return {v.value: tally.get(v.value, 0) for v in Verdict}

    @property
    def blocking(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.blocking]

    @property
    def exit_status(self) -> int:
        """0 when no MUST-level check failed (or only baselined ones), else 1."""
        return 1 if self.blocking or not self.eras else 0


class Progress(Protocol):
    """Sees a run as it happens (the live display, or plain lines)."""

    def started(self, total: int, eras: list[str]) -> None: ...
    def check_started(self, check: Check, era: str) -> None: ...
    def check_done(self, outcome: Outcome) -> None: ...
    def finished(self, report: Report) -> None: ...


def load_expected(path: str | Path) -> frozenset[str]:
    """A baseline file: one ``check-id`` or ``era:check-id`` per line, ``#`` comments."""
    entries = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        entry = line.split("#", 1)[0].strip()
        if entry:
            entries.add(entry)
    return frozenset(entries)


def planned(config: RunConfig, eras: Iterable[str]) -> list[tuple[Check, str]]:
    """The ``(check, era)`` pairs a run with ``config`` executes, in order."""
    packs = {"core"}
    if config.fixtures:
        packs.add("fixtures")
    if config.audit:
        packs.add("audit")
    if config.options.fuzz_examples > 0:
        packs.add("fuzz")
    chosen = [c for c in select(all_checks(), config.include, config.exclude)
              if c.pack in packs
              and (c.pack != "audit" or c.tags & config.audit or "audit-any" in c.tags)]
    return [(c, era) for era in eras for c in chosen if era in c.eras]


async def detect(target: Target, config: RunConfig) -> tuple[list[str], dict[str, str]]:
    """Which eras the target serves: a ``server/discover`` probe for 2026-07-28, an
    ``initialize`` handshake for 2025-11-25 (as a dual-era client would)."""
    if config.spec != "auto":
        return [config.spec], {config.spec: "selected with --spec"}
    notes: dict[str, str] = {}
    served: list[str] = []
    transport = target.transport()
    try:
        body = wire.request("server/discover", id="detect-1")
        modern = await transport.send(wire.encode(body), headers=wire.standard_headers(body),
                                      request_id="detect-1", label="era detection")
        if modern.result is not None or modern.code in (-32020, -32022):
            # Any result, or an error only a 2026-era server sends: judge it as one.
            served.append(wire.MODERN)
            notes[wire.MODERN] = ("server/discover answered with a result"
                                  if modern.result is not None else
                                  f"server/discover answered the 2026 error {modern.code}")
        else:
            notes[wire.MODERN] = f"server/discover: {modern.describe()}"
    finally:
        await transport.aclose()
    transport = target.transport()  # a fresh process on stdio: initialize binds it
    try:
        init = {"jsonrpc": "2.0", "id": "detect-2", "method": "initialize", "params": {
            "protocolVersion": wire.LEGACY, "capabilities": {},
            "clientInfo": dict(wire.SUITE_CLIENT)}}
        legacy = await transport.send(wire.encode(init), headers=wire.legacy_headers(),
                                      request_id="detect-2", label="era detection")
        version = (legacy.result or {}).get("protocolVersion")
        if isinstance(version, str) and version in wire.LEGACY_VERSIONS:
            served.append(wire.LEGACY)
            notes[wire.LEGACY] = f"initialize answered with protocolVersion {version}"
            session = legacy.response_headers.get("mcp-session-id")
            if session and transport.kind == "http":
                await transport.send(b"", headers={"Mcp-Session-Id": session,
                                                   "MCP-Protocol-Version": version},
                                     http_method="DELETE", label="end detection session")
        else:
            notes[wire.LEGACY] = f"initialize: {legacy.describe()}"
    finally:
        await transport.aclose()
    return served, notes


async def run(target: Target, config: RunConfig | None = None,
              progress: Progress | None = None) -> Report:
    """Run the suite; see the module docstring."""
    config = config or RunConfig()
    report = Report(target.description, target.kind, datetime.now(UTC))
    start = time.monotonic()
    report.eras, report.detection = await detect(target, config)
    plan = planned(config, report.eras)
    if progress:
        progress.started(len(plan), report.eras)
    for era in report.eras:
        pairs = [c for c, e in plan if e == era]
        session = EraSession(target, era, target.transport(), config.options)
        try:
            first = [c for c in pairs if not c.final]
            last = [c for c in pairs if c.final]
            # A 2025-era stdio session is one conversation: server requests and logs carry
            # no request id to route them by, so its checks run one at a time.
            jobs = 1 if era == wire.LEGACY and target.kind == "stdio" else config.jobs
            for batch in (first, last):
                limit = asyncio.Semaphore(max(1, jobs))
                outcomes = await asyncio.gather(*(
                    _run_one(session, c, config, limit, progress) for c in batch))
                report.outcomes.extend(outcomes)
        finally:
            await session.aclose()
    keys = {o.key for o in report.outcomes} | {o.check.id for o in report.outcomes}
    failing = {o.key for o in report.outcomes if o.verdict in (
        Verdict.FAIL, Verdict.WARN, Verdict.ERROR)}
    failing |= {o.check.id for o in report.outcomes if o.key in failing}
    report.stale_expected = sorted(e for e in config.expected if e in keys and e not in failing)
    report.duration = time.monotonic() - start
    if progress:
        progress.finished(report)
    return report


async def _run_one(session: EraSession, check: Check, config: RunConfig,
                   limit: asyncio.Semaphore, progress: Progress | None) -> Outcome:
    async with limit:
        if progress:
            progress.check_started(check, session.era)
        ctx = Context(session, check)
        started = time.monotonic()
        verdict, message = Verdict.PASS, ""
        reason = _unmet_needs(check, session.target, session.transport.kind)
        timeout = config.check_timeout
        if check.pack == "fuzz":
            timeout = max(timeout, config.options.fuzz_seconds + 20)
        if reason:
            verdict, message = Verdict.SKIP, reason
        else:
            try:
                async with asyncio.timeout(timeout):
                    await check.run(ctx)
            except CheckFailed as exc:
                verdict, message = check.verdict_on_failure, str(exc)
            except CheckSkipped as exc:
                verdict, message = Verdict.SKIP, str(exc)
            except TimeoutError:
                verdict, message = Verdict.ERROR, f"the check did not finish within {timeout:g} s"
            except Exception as exc:
                where = traceback.extract_tb(exc.__traceback__)[-1]
                verdict = Verdict.ERROR
                message = (f"the check itself failed: {type(exc).__name__}: {exc} "
                           f"({Path(where.filename).name}:{where.lineno})")
        outcome = Outcome(check, session.era, verdict, message, ctx.evidence,
                          time.monotonic() - started, notes=ctx.notes)
        outcome.expected = outcome.key in config.expected or check.id in config.expected
        if progress:
            progress.check_done(outcome)
        return outcome


def _unmet_needs(check: Check, target: Target, kind: str) -> str:
    if "http" in check.needs and kind != "http":
        return "needs an HTTP target"
    if "loopback" in check.needs and not target.loopback:
        return "only meaningful for a server on a loopback address"
    if "auth" in check.needs and not target.bearer:
        return "needs credentials (--bearer or --oauth)"
    return ""


__all__ = ["REPORT_FORMAT", "Progress", "Report", "RunConfig", "detect", "load_expected",
           "planned", "run"]
