"""The command line, the reporters and the progress display, without long runs."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from junitparser import JUnitXml

from mcpcore.conformance import reports, run_suite
from mcpcore.conformance.cli import main
from mcpcore.conformance.progress import PlainProgress, choose
from mcpcore.conformance.registry import all_checks, select
from mcpcore.conformance.runner import load_expected
from mcpcore.conformance.target import Target
from tests.integration.conftest import REPO


def test_list_prints_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == len(all_checks())
    assert any(line.startswith("headers.method-match ") and " MUST " in line
               for line in listed)


@pytest.mark.parametrize(("argv", "message"), [
    ([], "give a target"),
    (["--url", "http://127.0.0.1:9/mcp", "--check", "no.such-check"], "no check matches"),
    (["--url", "http://127.0.0.1:9/mcp", "--header", "no-colon"], "expected 'Name: value'"),
    (["--stdio", "x", "--oauth", "missing.json"], "--oauth needs an HTTP target"),
    (["--url", "http://127.0.0.1:9/mcp", "--oauth", "/nonexistent.json"], "--oauth"),
])
def test_usage_errors_exit_2(argv: list[str], message: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_unreachable_target_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "http://127.0.0.1:9/mcp", "--no-progress"]) == 1


def test_the_mcpcore_command_has_the_subcommand() -> None:
    done = subprocess.run([sys.executable, "-m", "mcpcore", "conformance", "--list"],
                          capture_output=True, text=True, cwd=REPO, check=False, timeout=60)
    assert done.returncode == 0 and "discover.result" in done.stdout


def test_selection_by_id_glob_tag_and_level() -> None:
    checks = all_checks()
    assert [c.id for c in select(checks, ["discover.result"])] == ["discover.result"]
    assert {c.id for c in select(checks, ["headers.*"])} == {
        c.id for c in checks if c.id.startswith("headers.")}
    assert all("security" in c.tags for c in select(checks, ["security"]))
    assert all(c.level.value == "SHOULD" for c in select(checks, ["SHOULD"]))
    assert not {c.id for c in select(checks, [], ["headers.*"])} & {"headers.method-match"}


def test_baseline_file(tmp_path: Path) -> None:
    path = tmp_path / "baseline.txt"
    path.write_text("# comment\nheaders.method-match\n\n2025-11-25:legacy.ping  # why\n")
    assert load_expected(path) == {"headers.method-match", "2025-11-25:legacy.ping"}


async def test_reports_are_valid_and_redacted() -> None:
    from examples.everything import app

    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzZWNyZXQtdXNlciJ9.c2lnbmF0dXJlLXNlY3JldA"
    report = await run_suite(target=Target.asgi(app, bearer=token), spec="2026-07-28",
                             checks=["discover.*", "headers.method-*", "methods.unknown"])
    data = reports.to_dict(report)
    Draft202012Validator(reports.schema()).validate(data)
    text = reports.to_json(report) + reports.to_junit(report) + reports.to_html(report)
    assert token not in text and "secret-user" not in text
    assert "Bearer <redacted" in reports.to_json(report)
    xml = JUnitXml.fromstring(reports.to_junit(report))
    assert sum(len(list(suite)) for suite in xml) == len(report.outcomes)
    page = reports.to_html(report)
    assert page.startswith("<!doctype html>") and "methods.unknown" in page


def test_plain_progress_lines() -> None:
    stream = io.StringIO()
    progress = PlainProgress(stream)
    assert isinstance(choose(), PlainProgress)   # stderr is not a terminal under pytest
    assert choose(enabled=False) is None
    progress.started(2, ["2026-07-28"])
    assert "running 2 checks" in stream.getvalue()


async def test_stdio_target() -> None:
    command = f"{sys.executable} -m examples.everything --stdio"
    report = await run_suite(stdio=command, checks=["discover.*", "tools.*", "legacy.ping",
                                                    "listen.acknowledged", "headers.*"])
    verdicts = {(o.era, o.check.id): o.verdict.value for o in report.outcomes}
    assert verdicts[("2026-07-28", "discover.result")] == "pass"
    assert verdicts[("2026-07-28", "listen.acknowledged")] == "pass"
    assert verdicts[("2025-11-25", "legacy.ping")] == "pass"
    assert verdicts[("2026-07-28", "headers.method-match")] == "skip"   # no HTTP layer
    assert report.exit_status == 0, [(o.key, o.message) for o in report.blocking]


def test_json_report_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    command = f"{sys.executable} -m examples.everything --stdio"
    assert main(["--stdio", command, "--spec", "2026-07-28", "--check", "discover.result",
                 "--json", "-", "--no-progress"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["pass"] == 1 and data["transport"] == "stdio"
