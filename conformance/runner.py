"""Runs selected checks against a target: era detection, parallelism, timeouts, baseline.

``run(target, config)`` returns a ``Report``; it prints nothing itself (a ``Progress``
listener sees each check start and end, reporters render the report afterwards). Every
outcome passes through the run's ``Redactor`` as it is made (``redaction``), so nothing
downstream holds a credential.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from mcpcore.conformance import redaction, wire
from mcpcore.conformance.context import AuditContext, EraSession, Options
from mcpcore.conformance.model import Check, CheckFailed, CheckOutcome, CheckSkipped, Verdict
from mcpcore.conformance.registry import all_checks, select
from mcpcore.conformance.target import Target
from mcpcore.conformance.transport import RecordedExchange

#: Exit status when the target could not be audited at all (unreachable, not an MCP
#: endpoint, credentials refused): neither a pass nor a conformance failure.
NOT_AUDITED = 3
#: Slack a fuzz check gets beyond its share of ``--fuzz-seconds`` (shrinking a failure,
#: the last requests in flight, waiting for the fuzz lock behind the other strategies).
FUZZ_SLACK = 60.0

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
    outcomes: list[CheckOutcome] = field(default_factory=list)
    stale_expected: list[str] = field(default_factory=list)
    #: Why the target could not be audited (one line), or "" when it could.
    problem: str = ""

    def counts(self, era: str | None = None) -> dict[str, int]:
        tally = Counter(o.verdict.value for o in self.outcomes if era in (None, o.era))
        return {v.value: tally.get(v.value, 0) for v in Verdict}

    @property
    def blocking(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if o.blocking]

    @property
    def exit_status(self) -> int:
        """0 when no MUST-level check failed (or only baselined ones), 1 when one did,
        ``NOT_AUDITED`` (3) when the target could not be audited (``problem``)."""
        if self.problem or not self.eras:
            return NOT_AUDITED
        return 1 if self.blocking else 0


class Progress(Protocol):
    """Sees a run as it happens (the live display, or plain lines)."""

    def started(self, total: int, eras: list[str]) -> None: ...
    def check_started(self, check: Check, era: str) -> None: ...
    def check_done(self, outcome: CheckOutcome) -> None: ...
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


async def detect(target: Target, config: RunConfig) -> tuple[list[str], dict[str, str], str]:
    """Which eras the target serves: a ``server/discover`` probe for 2026-07-28, an
    ``initialize`` handshake for 2025-11-25 (as a dual-era client would). Also returns
    why the target cannot be audited ("" when it can)."""
    probes: list[RecordedExchange] = []
    notes: dict[str, str] = {}
    served: list[str] = []
    if config.spec in ("auto", wire.MODERN):
        modern = await _probe(target, wire.request("server/discover", id="detect-1"),
                              wire.standard_headers({"method": "server/discover"}), "detect-1")
        probes.append(modern)
        if modern.result is not None or modern.code in (-32020, -32022):
            # Any result, or an error only a 2026-era server sends: judge it as one.
            served.append(wire.MODERN)
            notes[wire.MODERN] = ("server/discover answered with a result"
                                  if modern.result is not None else
                                  f"server/discover answered the 2026 error {modern.code}")
        else:
            notes[wire.MODERN] = f"server/discover: {modern.describe()}"
    if config.spec in ("auto", wire.LEGACY):
        init = {"jsonrpc": "2.0", "id": "detect-2", "method": "initialize", "params": {
            "protocolVersion": wire.LEGACY, "capabilities": {},
            "clientInfo": dict(wire.SUITE_CLIENT)}}
        legacy = await _probe(target, init, wire.legacy_headers(), "detect-2", end_session=True)
        probes.append(legacy)
        version = (legacy.result or {}).get("protocolVersion")
        if isinstance(version, str) and version in wire.LEGACY_VERSIONS:
            served.append(wire.LEGACY)
            notes[wire.LEGACY] = f"initialize answered with protocolVersion {version}"
        else:
            notes[wire.LEGACY] = f"initialize: {legacy.describe()}"
    if config.spec != "auto":
        # The era was chosen: run it unless the target is not there at all.
        notes = {config.spec: "selected with --spec"}
        problem = unreachable(target, probes, transport_only=True)
        return ([] if problem else [config.spec]), notes, problem
    return served, notes, "" if served else unreachable(target, probes)


async def _probe(target: Target, body: Mapping[str, Any], headers: dict[str, str],
                 request_id: str, *, end_session: bool = False) -> RecordedExchange:
    """One detection request on a fresh transport (on stdio a fresh process: initialize
    binds it); a command that cannot start is a failed exchange, not an exception."""
    transport = target.transport()
    try:
        try:
            exchange = await transport.send(wire.encode(body), headers=headers,
                                            request_id=request_id, label="era detection")
        except OSError as exc:
            return RecordedExchange("era detection", target.kind, wire.encode(body),
                            failure=f"cannot start the server: {exc.strerror or exc}")
        tail = getattr(transport, "stderr_tail", b"")
        if exchange.failure and tail:
            last = [x for x in bytes(tail).decode("utf-8", "replace").splitlines() if x.strip()]
            if last:
                exchange.failure += f"; its last words: {last[-1].strip()[:200]}"
        session = exchange.response_headers.get("mcp-session-id")
        version = (exchange.result or {}).get("protocolVersion")
        if end_session and session and transport.kind == "http" and isinstance(version, str):
            await transport.send(b"", headers={"Mcp-Session-Id": session,
                                               "MCP-Protocol-Version": version},
                                 http_method="DELETE", label="end detection session")
        return exchange
    finally:
        await transport.aclose()


def unreachable(target: Target, probes: list[RecordedExchange], *,
                transport_only: bool = False) -> str:
    """Why ``probes`` (the detection requests) show the target cannot be audited, in one
    line that says what to do; "" when they do not show that."""
    where = target.description
    failures = [p.failure for p in probes if p.failure]
    if probes and len(failures) == len(probes):
        first = failures[0]
        if first.startswith("cannot connect"):
            reason = first.split(":", 1)[1].strip() or "refused"
            return (f"cannot connect to {where} ({reason}): is the server running, and is "
                    "this its address?")
        if first.startswith("cannot start"):
            return f"{first} ({where}): check the --stdio command"
        if target.kind == "stdio":
            return f"the server command {where!r} gave no answer: {first}"
        return f"{where} gave no usable answer: {first}"
    if transport_only:
        return ""
    statuses = {p.status for p in probes if p.status is not None}
    if statuses and statuses <= {401, 403}:
        status = min(statuses)
        challenge = next((p.response_headers.get("www-authenticate", "") for p in probes
                          if p.response_headers.get("www-authenticate")), "")
        said = f"; it says: {challenge[:160]}" if challenge else ""
        if target.bearer:
            return (f"{where} refused the credentials (HTTP {status}{said}): check the "
                    "--bearer token or the --oauth settings")
        return (f"{where} requires authorization (HTTP {status}{said}): give --bearer TOKEN "
                "or --oauth FILE")
    answers = "; ".join(f"{p.label.replace('era detection', m)}: {p.describe()}"
                        for p, m in zip(probes, ("server/discover", "initialize"),
                                        strict=False))
    return (f"{where} does not answer as an MCP server ({answers}): is this the MCP "
            "endpoint (often …/mcp)?")


async def run(target: Target, config: RunConfig | None = None,
              progress: Progress | None = None) -> Report:
    """Run the suite; see the module docstring."""
    config = config or RunConfig()
    redactor = redaction.current()      # the CLI's, which already knows --oauth secrets
    redactor.add(target.bearer, "the --bearer token")
    redactor.add_settings(target.headers, "--header")
    redactor.add_url(target.url, "the target URL")
    redactor.add_settings(config.options.audit)
    with redaction.use(redactor):
        return await _run(target, config, progress, redactor)


async def _run(target: Target, config: RunConfig, progress: Progress | None,
               redactor: redaction.Redactor) -> Report:
    report = Report(redactor.text(target.description), target.kind, datetime.now(UTC))
    start = time.monotonic()
    report.eras, detection, problem = await detect(target, config)
    report.detection = {era: redactor.text(note) for era, note in detection.items()}
    report.problem = redactor.text(problem)
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
                    _run_one(session, c, config, limit, progress, redactor) for c in batch))
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
                   limit: asyncio.Semaphore, progress: Progress | None,
                   redactor: redaction.Redactor) -> CheckOutcome:
    async with limit:
        if progress:
            progress.check_started(check, session.era)
        ctx = AuditContext(session, check)
        started = time.monotonic()
        verdict, message = Verdict.PASS, ""
        reason = _unmet_needs(check, session.target, session.transport.kind)
        timeout = config.check_timeout
        if check.pack == "fuzz":
            # The fuzz checks take turns (one strategy at a time) within one shared
            # --fuzz-seconds budget, and stop themselves when it runs out.
            timeout = max(timeout, config.options.fuzz_seconds + FUZZ_SLACK * 4)
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
                if check.pack == "fuzz":   # a time budget ran out: no verdict on the server
                    verdict = Verdict.SKIP
                    message += " (cut short: the machine is too slow for this budget; " \
                        "raise --fuzz-seconds)"
            except Exception as exc:
                where = traceback.extract_tb(exc.__traceback__)[-1]
                verdict = Verdict.ERROR
                message = (f"the check itself failed: {type(exc).__name__}: {exc} "
                           f"({Path(where.filename).name}:{where.lineno})")
        decisive = ctx.decisive if verdict in (Verdict.FAIL, Verdict.WARN, Verdict.ERROR) \
            else None
        evidence = list(ctx.evidence)
        if decisive is not None and decisive not in evidence:
            evidence.append(decisive)
        outcome = redactor.outcome(CheckOutcome(
            check, session.era, verdict, message, evidence, time.monotonic() - started,
            notes=list(ctx.notes), decisive=decisive))
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


__all__ = ["NOT_AUDITED", "REPORT_FORMAT", "Progress", "Report", "RunConfig", "detect",
           "load_expected", "planned", "run", "unreachable"]
