"""``mcpcore conformance`` end to end: real processes on loopback, real reports (the
quick start of docs/conformance.md, run as written against examples.everything).

* examples.everything, both eras, core + fixtures + fuzz: exit 0, nothing fails;
* the broken server (tests/conformance/broken_server.py) in four groups of defects (some
  defects hide others: a server that answers 503 to concurrent listings hides what the
  listings would show), every defect reported by the checks mapped to it, exit 1;
* every JSON report validates against the documented schema, every JUnit file is read by
  junitparser, a real JUnit consumer, with counts that match the JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from junitparser import Error, Failure, JUnitXml, Skipped

from mcpcore.conformance import reports
from tests.conformance.test_checks import CHECK_DEFECTS
from tests.conformance.test_packs import (
    FIXTURE_DEFECTS,
    FUZZ_DEFECTS,
    MRTR_TOOLS,
    STATE_CHECK_DEFECTS,
)
from tests.integration.conftest import REPO, TEST_STATE_KEYS, running_example
from tests.support.processes import free_port, stop, wait_for_port

pytestmark = pytest.mark.integration

MAPPED = {k: v for k, v in {**CHECK_DEFECTS, **FIXTURE_DEFECTS, **FUZZ_DEFECTS,
                            **STATE_CHECK_DEFECTS}.items() if v}
#: Defects that would hide others if planted together with them; a server that refuses
#: concurrent listings hides almost everything, so it runs alone.
ALONE = frozenset({"one-at-a-time"})
SECOND_GROUP = frozenset({
    "tampered-state-accepted", "state-reuse-accepted",
    "capability-error-shape", "padded-header-refused", "tool-schema-not-object",
    "prompt-bad-role", "unknown-prompt-ok", "completion-too-many", "ack-everything",
    "batch-processed"})
#: Defects whose checks the first group masks: listen-unsupported answers every listen
#: with -32601 (hiding the listen defects), delete-ignored answers DELETE before
#: delete-500 can, and the first group's other MRTR defects change what the elicitation
#: tool answers before its form is checked.
THIRD_GROUP = frozenset({"listen-unsolicited", "ack-id-stringified", "elicitation-unvalidated",
                         "delete-ignored"})
GROUPS = [frozenset(MAPPED.values()) - SECOND_GROUP - THIRD_GROUP - ALONE, SECOND_GROUP,
          ALONE, THIRD_GROUP]


@contextlib.contextmanager
def broken_server(defects: frozenset[str]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.conformance.broken_server", "--port", str(port),
         "--defects", ",".join(sorted(defects))], cwd=REPO,
        env={**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


def run_cli(url: str, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "mcpcore.conformance", "--url", url, "--json",
         str(out / "r.json"), "--junit", str(out / "r.xml"), "--html", str(out / "r.html"),
         *extra], cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    report = json.loads((out / "r.json").read_text())
    Draft202012Validator(reports.schema()).validate(report)
    return done.returncode, report, done.stderr


def check_junit(path: Path, report: dict[str, Any]) -> None:
    xml = JUnitXml.fromfile(str(path))
    cases = [case for suite in xml for case in suite]
    assert len(cases) == report["summary"]["total"]
    kinds: dict[str, int] = {"failure": 0, "error": 0, "skipped": 0}
    for case in cases:
        for result in case.result:
            kind = {Failure: "failure", Error: "error", Skipped: "skipped"}[type(result)]
            kinds[kind] += 1
    summary = report["summary"]
    expected_skips = summary["skip"] + sum(1 for r in report["results"] if r[
        "expected_failure"] and r["verdict"] in ("fail", "warn", "error"))
    assert kinds == {"failure": summary["fail"], "error": summary["error"],
                     "skipped": expected_skips}


def test_everything_passes_end_to_end(tmp_path: Path) -> None:
    with running_example("everything") as url:
        code, report, stderr = run_cli(url, tmp_path, "--fixtures", "official", "--fuzz",
                                       "400", "--fuzz-seconds", "30", "--no-progress")
    bad = [(r["era"], r["id"], r["verdict"], r["message"]) for r in report["results"]
           if r["verdict"] not in ("pass", "skip")]
    assert code == 0 and not bad, (bad, stderr[-2000:])
    assert report["eras"] == ["2026-07-28", "2025-11-25"]
    packs = {r["pack"] for r in report["results"]}
    assert packs == {"core", "fixtures", "fuzz"}
    check_junit(tmp_path / "r.xml", report)
    page = (tmp_path / "r.html").read_text()
    assert all(r["id"] in page for r in report["results"])
    assert "<script src" not in page and "<link" not in page   # self-contained


@pytest.mark.parametrize("group", range(len(GROUPS)))
def test_broken_server_every_defect_reported(tmp_path: Path, group: int) -> None:
    defects = GROUPS[group]
    settings = tmp_path / "audit.json"
    # What a security team's run names: the MRTR tools, and a tool that changes a list.
    settings.write_text(json.dumps({"mrtr_tools": MRTR_TOOLS,
                                    "listen_trigger": {"name": "test_trigger_tool_change"}}))
    with broken_server(defects) as url:
        code, report, stderr = run_cli(url, tmp_path, "--fixtures", "official", "--audit",
                                       "auth", "--audit-config", str(settings), "--fuzz",
                                       "600", "--fuzz-seconds", "40", "--no-progress",
                                       "--seed", "3")
    assert code == 1, stderr[-2000:]
    verdicts: dict[str, set[str]] = {}
    for result in report["results"]:
        verdicts.setdefault(result["id"], set()).add(result["verdict"])
    missed = sorted(f"{check} ({defect})" for check, defect in MAPPED.items()
                    if defect in defects and not verdicts.get(check, set()) & {"fail", "warn"})
    assert not missed, f"defects not reported: {missed}"
    assert report["summary"]["exit_status"] == 1 and report["summary"]["blocking"] > 0
    check_junit(tmp_path / "r.xml", report)


def test_expected_failures_baseline(tmp_path: Path) -> None:
    """A baseline listing the failures turns the exit status to 0; an unlisted one or a
    check that errs keeps it at 1."""
    with broken_server(frozenset({"missing-result-type"})) as url:
        first, report, _ = run_cli(url, tmp_path / "a", "--spec", "2026-07-28",
                                   "--no-progress")
        failing = sorted({f"{r['era']}:{r['id']}" for r in report["results"]
                          if r["blocking"]})
        assert first == 1 and failing
        baseline = tmp_path / "expected.txt"
        baseline.write_text("# known gaps\n" + "\n".join(failing) + "\n")
        second, report, _ = run_cli(url, tmp_path / "b", "--spec", "2026-07-28",
                                    "--expected-failures", str(baseline), "--no-progress")
        assert second == 0, [r["id"] for r in report["results"] if r["blocking"]]
        baseline.write_text("\n".join(failing[1:]) + "\n")
        third, _, _ = run_cli(url, tmp_path / "c", "--spec", "2026-07-28",
                              "--expected-failures", str(baseline), "--no-progress")
        assert third == 1
