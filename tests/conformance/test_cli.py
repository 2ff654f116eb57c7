"""The command line, the reporters and the progress display, without long runs."""

from __future__ import annotations

import asyncio
import http.server
import io
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from junitparser import JUnitXml

from mcpcore.conformance import reports, run_suite
from mcpcore.conformance.cli import main
from mcpcore.conformance.progress import PlainProgress, choose
from mcpcore.conformance.registry import all_checks, select
from mcpcore.conformance.runner import NOT_AUDITED, load_expected
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
    (["--stdio", "true", "--oauth", "missing.json"], "--oauth needs an HTTP target"),
    (["--url", "http://127.0.0.1:9/mcp", "--oauth", "/nonexistent.json"], "--oauth"),
    (["--url", "127.0.0.1:8000/mcp"], "is not an http:// or https:// URL (for example --url "
                                      "http://127.0.0.1:8000/mcp)"),
    (["--url", "ftp://127.0.0.1/mcp"], "is not an http:// or https:// URL"),
    (["--stdio", "no-such-binary-x9 --flag"], "no command 'no-such-binary-x9'"),
])
def test_usage_errors_exit_2(argv: list[str], message: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err   # one line


def test_missing_stdio_binary_from_the_library_is_a_cause_not_a_traceback() -> None:
    """The runner itself (not only the CLI) turns a command that cannot start into the
    reason the target was not audited."""
    report = asyncio.run(run_suite(stdio="no-such-binary-x9"))
    assert report.exit_status == NOT_AUDITED
    assert report.problem.startswith("cannot start the server")
    assert "no-such-binary-x9" in report.problem


def test_unreachable_target_says_why(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listening: one line saying so (even with --no-progress), exit 3, and the
    cause heads every report instead of a verdict over an empty table."""
    out = {kind: tmp_path / f"r.{kind}" for kind in ("json", "junit", "html", "markdown")}
    argv = ["--url", "http://127.0.0.1:9/mcp", "--no-progress"]
    for kind, path in out.items():
        argv += [f"--{kind}", str(path)]
    assert main(argv) == NOT_AUDITED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot connect to http://127.0.0.1:9/mcp" in err
    assert "is the server running" in err
    data = json.loads(out["json"].read_text())
    Draft202012Validator(reports.schema()).validate(data)
    assert data["problem"].startswith("cannot connect") and data["summary"]["exit_status"] == 3
    page = out["html"].read_text()
    assert "NOT AUDITED" in page and "cannot connect" in page and "FAIL: 0" not in page
    assert page.index("cannot connect") < page.index("</h1>") + 400
    assert out["markdown"].read_text().splitlines()[2].startswith("**NOT AUDITED: cannot")
    xml = JUnitXml.fromfile(str(out["junit"]))
    [case] = [c for suite in xml for c in suite]
    assert case.name == "target.reachable" and "cannot connect" in case.result[0].message


@pytest.mark.parametrize("url", [
    "http://alice:S3cretPassw0rd99@127.0.0.1:9/mcp",
    "http://ghp_UserNameToken0123456789@127.0.0.1:9/mcp",
    "http://127.0.0.1:9/mcp?api_key=QueryKeySecret0123456",
])
def test_credentials_in_the_target_url_reach_no_output(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A password, a token as the user name, a query credential: none reaches a report
    (the report's target line carried them) or the terminal."""
    secret = next(part for part in ("S3cretPassw0rd99", "ghp_UserNameToken0123456789",
                                    "QueryKeySecret0123456") if part in url)
    out = {kind: tmp_path / f"r.{kind}" for kind in ("json", "junit", "html", "markdown")}
    argv = ["--url", url, "--no-progress"]
    for kind, path in out.items():
        argv += [f"--{kind}", str(path)]
    assert main(argv) == NOT_AUDITED
    captured = capsys.readouterr()
    assert secret not in captured.err + captured.out
    for path in out.values():
        assert secret not in path.read_text(), path.name


def test_a_mistyped_header_does_not_echo_its_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "http://127.0.0.1:9/mcp", "--header",
                 "Authorization=Bearer HeaderSecret12345"]) == 2
    err = capsys.readouterr().err
    assert "HeaderSecret12345" not in err and "expected 'Name: value'" in err


def test_plain_progress_prints_the_cause() -> None:
    stream = io.StringIO()
    report = asyncio.run(run_suite(url="http://127.0.0.1:9/mcp",
                                   progress=PlainProgress(stream)))
    assert stream.getvalue().startswith("not audited: cannot connect")
    assert "running 0 checks" not in stream.getvalue()
    assert report.exit_status == NOT_AUDITED


class _NotMcp(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = b"<html><body>Welcome to nginx!</body></html>"
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_web_server_that_is_not_mcp_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotMcp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        assert main(["--url", url, "--no-progress"]) == NOT_AUDITED
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert "does not answer as an MCP server" in err and "HTTP 404" in err
    assert "is this the MCP endpoint" in err and err.count("\n") == 1


def test_a_protected_server_without_or_with_a_wrong_token(
        capsys: pytest.CaptureFixture[str]) -> None:
    from examples.protected_server import build_app

    app, _, _ = build_app("http://127.0.0.1:8000")
    missing = asyncio.run(run_suite(app=app, run_lifespan=False))
    assert "requires authorization (HTTP 401" in missing.problem
    assert "give --bearer TOKEN or --oauth FILE" in missing.problem
    wrong = asyncio.run(run_suite(app=app, bearer="not-a-valid-token-x9", run_lifespan=False))
    assert "refused the credentials (HTTP 401" in wrong.problem
    assert "check the --bearer token" in wrong.problem
    assert "not-a-valid-token-x9" not in wrong.problem + str(wrong.detection)


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
    command = f"{sys.executable} -m examples.quickstart --stdio"  # the smallest target
    assert main(["--stdio", command, "--spec", "2026-07-28", "--check", "discover.result",
                 "--json", "-", "--no-progress"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["pass"] == 1 and data["transport"] == "stdio"


def test_junit_carries_a_fuzzed_control_character() -> None:
    """A decisive exchange may hold any byte (a fuzzed body): the JUnit file stays XML."""
    from mcpcore.conformance.model import CheckOutcome, Verdict
    from mcpcore.conformance.runner import Report
    from mcpcore.conformance.transport import RecordedExchange

    check = next(c for c in all_checks() if c.id == "jsonrpc.parse-error")
    bad = RecordedExchange("fuzz", "http", b"\x00\x01\x1b[0m", status=500, body=b"oops \x07")
    report = Report("x", "http", __import__("datetime").datetime.now(),
                    eras=["2026-07-28"], outcomes=[CheckOutcome(
                        check, "2026-07-28", Verdict.FAIL, "HTTP 500 for \x00", [bad],
                        decisive=bad)])
    xml = JUnitXml.fromstring(reports.to_junit(report))
    [case] = [c for suite in xml for c in suite]
    assert "\\x00" in case.result[0].message
