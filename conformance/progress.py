"""Progress of a run: a live ``rich`` display on a terminal, plain lines otherwise.

``rich`` is an optional dependency (the ``conformance`` extra); without it, or when the
output is not a terminal (CI logs), each finished check prints one line.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from mcpcore.conformance.model import Check, CheckOutcome, Verdict
from mcpcore.conformance.runner import Report

_MARK = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.WARN: "WARN",
         Verdict.SKIP: "SKIP", Verdict.ERROR: "ERR "}
_STYLE = {Verdict.PASS: "green", Verdict.FAIL: "bold red", Verdict.WARN: "yellow",
          Verdict.SKIP: "dim", Verdict.ERROR: "magenta"}


def line(outcome: CheckOutcome) -> str:
    """``FAIL MUST   2026-07-28 headers.method-match: <message>``"""
    mark = _MARK[outcome.verdict] + ("*" if outcome.expected else " ")
    text = f"{mark} {outcome.check.level.value:<6} {outcome.era} {outcome.check.id}"
    if outcome.verdict is not Verdict.PASS and outcome.message:
        text += f": {outcome.message}"
    return text


def summary(report: Report) -> str:
    if report.problem or not report.eras:
        return f"not audited: {report.problem or 'the target served neither era'}"
    parts = []
    for era in report.eras:
        counts = report.counts(era)
        parts.append(f"{era}: " + ", ".join(f"{counts[v.value]} {v.value}" for v in Verdict))
    verdict = ("no MUST-level failure" if report.exit_status == 0
               else f"{len(report.blocking)} MUST-level failure(s)")
    tail = f"; {len(report.stale_expected)} stale expected-failure entries" \
        if report.stale_expected else ""
    return "\n".join([*parts, f"{verdict} in {report.duration:.1f} s{tail}"])


class PlainProgress:
    """One line per finished check (``quiet``: only failures and warnings)."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet

    def started(self, total: int, eras: list[str]) -> None:
        if eras:   # with none, the summary says why the target could not be audited
            print(f"running {total} checks for {', '.join(eras)}", file=self.stream)

    def check_started(self, check: Check, era: str) -> None:
        pass

    def check_done(self, outcome: CheckOutcome) -> None:
        if self.quiet and outcome.verdict in (Verdict.PASS, Verdict.SKIP):
            return
        print(line(outcome), file=self.stream, flush=True)

    def finished(self, report: Report) -> None:
        print(summary(report), file=self.stream, flush=True)


class RichProgress:  # pragma: no cover - drawn on a terminal only
    """A live bar with the running checks, failures printed above it as they happen."""

    def __init__(self, *, quiet: bool = False) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.console = Console(stderr=True)
        self.quiet = quiet
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[current]}"), console=self.console,
                            transient=True)
        self.task: Any = None
        self.running: list[str] = []

    def started(self, total: int, eras: list[str]) -> None:
        self.bar.start()
        self.task = self.bar.add_task(f"conformance {', '.join(eras)}", total=total, current="")

    def check_started(self, check: Check, era: str) -> None:
        self.running.append(check.id)
        self.bar.update(self.task, current=", ".join(self.running[-3:]))

    def check_done(self, outcome: CheckOutcome) -> None:
        if outcome.check.id in self.running:
            self.running.remove(outcome.check.id)
        self.bar.update(self.task, advance=1, current=", ".join(self.running[-3:]))
        if self.quiet and outcome.verdict in (Verdict.PASS, Verdict.SKIP):
            return
        self.console.print(line(outcome), style=_STYLE[outcome.verdict], markup=False,
                           highlight=False)

    def finished(self, report: Report) -> None:
        self.bar.stop()
        style = "bold green" if report.exit_status == 0 else "bold red"
        self.console.print(summary(report), style=style, markup=False, highlight=False)


def choose(*, quiet: bool = False, enabled: bool = True) -> PlainProgress | RichProgress | None:
    """The live display on a terminal with ``rich`` installed, else plain lines."""
    if not enabled:
        return None
    if sys.stderr.isatty():
        try:
            return RichProgress(quiet=quiet)
        except ImportError:
            print("(install mcpcore[conformance] for the live display)", file=sys.stderr)
    return PlainProgress(quiet=quiet)


__all__ = ["PlainProgress", "RichProgress", "choose", "line", "summary"]
