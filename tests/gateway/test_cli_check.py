"""``mcpcore gateway check``: a summary and exit 0 for a good file (never a secret),
every problem as FILE:LINE: message and exit 1 for a bad one (its secrets and its
policy file too), one line and exit 2 for a usage mistake."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpcore.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gateway_config.toml"
SECRETS = {"NOTES_CLIENT_SECRET": "very-secret-client-secret",
           "FILES_API_KEY": "very-secret-api-key"}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def test_a_good_file_prints_a_summary_without_secrets(
        secrets: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gateway", "check", str(EXAMPLE)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"{EXAMPLE}: gateway 'acme-gateway' 0.1.0, 2 upstreams"
    assert ("  upstream   notes  http http://127.0.0.1:8001/mcp  era auto  credentials "
            "token_exchange (client gateway, secret from $NOTES_CLIENT_SECRET, for "
            "https://notes.example)") in lines
    assert ("  upstream   files  stdio python -m examples.everything --stdio (env "
            "LOG_LEVEL, API_KEY from $FILES_API_KEY)  era auto  credentials none") in lines
    assert f"  policy     {ROOT / 'examples' / 'policy.toml'} (8 rules, sha256:" in out
    for value in SECRETS.values():
        assert value not in out


def test_missing_secrets_are_problems_unless_no_env(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    assert main(["gateway", "check", str(EXAMPLE)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"{EXAMPLE}: upstream 'notes': credentials.client_secret_env: $NOTES_CLIENT_SECRET "
        "is not set in the gateway's environment",
        f"{EXAMPLE}: upstream 'files': env_from.API_KEY names $FILES_API_KEY, which is not "
        "set in the gateway's environment",
        "2 problems; the gateway would not start",
        "(set the variables and files the gateway reads its secrets from, or check the file "
        "alone with --no-env)",
    ]
    assert main(["gateway", "check", str(EXAMPLE), "--no-env"]) == 0
    assert "  secrets    not read (--no-env)" in capsys.readouterr().out.splitlines()


BAD = """\
[gateway]
seperator = "__"

[[upstream]]
name = "notes"
url = "https://notes.example/mcp"
era = "2026-07-82"

[upstream.credentials]
kind = "static"
token = "ghp_literal"
"""


def test_a_bad_file_lists_every_problem_with_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(BAD)
    assert main(["gateway", "check", str(path), "--no-env"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert [line.split(": ", 1)[0] for line in lines[:-1]] == [
        f"{path}:2", f"{path}:7", f"{path}:11"]
    assert "(did you mean 'separator'?)" in lines[0]
    assert "(did you mean '2026-07-28'?)" in lines[1]
    assert 'secret_env = "VAR"' in lines[2] and "ghp_literal" not in err
    assert lines[-1] == "3 problems; the gateway would not start"


def test_the_policy_file_is_checked_too(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rules.toml").write_text('[[rules]]\nid = "r"\neffect = "alow"\n')
    path = tmp_path / "gateway.toml"
    path.write_text('[gateway]\npolicy = "rules.toml"\n[[upstream]]\nname = "a"\n'
                    'command = "x"\n')
    assert main(["gateway", "check", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{tmp_path / 'rules.toml'}:3: rule 'r': effect must be one of")
    assert err[-1] == "1 problem; the gateway would not start"


@pytest.mark.parametrize(("argv", "message"), [
    (["gateway", "check", "no/such/gateway.toml"],
     "mcpcore gateway check: no/such/gateway.toml: no such file"),
    (["gateway", "check"], "mcpcore gateway check: the following arguments are required: "
                           "config"),
    (["gateway"], "mcpcore gateway: the following arguments are required: VERB"),
    (["gateway", "chek", "x.toml"], "mcpcore gateway: argument VERB: invalid choice: 'chek'"),
    (["gateway", "check", str(EXAMPLE), "--no-envs"], "unrecognized arguments: --no-envs"),
])
def test_usage_mistakes_are_one_line_and_exit_2(argv: list[str], message: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own exit
        status = exc.code  # type: ignore[assignment]
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_the_console_script_checks_a_file(tmp_path: Path) -> None:
    env = {**os.environ, **SECRETS}
    done = subprocess.run([sys.executable, "-m", "mcpcore", "gateway", "check", str(EXAMPLE)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "upstream   notes" in done.stdout and SECRETS["NOTES_CLIENT_SECRET"] not in (
        done.stdout + done.stderr)
    path = tmp_path / "gateway.toml"
    path.write_text(BAD)
    done = subprocess.run([sys.executable, "-m", "mcpcore", "gateway", "check", str(path)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "3 problems; the gateway would not start"
    assert "Traceback" not in done.stderr


def test_every_bad_file_it_names_is_reported_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A bad rule file, a resource server file that is not TOML, a damaged lock file:
    # three problems, each reported (the rule file's alone was, and the other two only
    # when the gateway failed to start).
    (tmp_path / "rules.toml").write_text('[[rules]]\nid = "r"\neffect = "alow"\n')
    (tmp_path / "auth.toml").write_text("resource = [not toml\n")
    (tmp_path / "gateway.lock").write_text('{"version": 1, "upstreams": []}\n')
    path = tmp_path / "gateway.toml"
    path.write_text('[gateway]\npolicy = "rules.toml"\nauth = "auth.toml"\n'
                    'pins = "gateway.lock"\n[[upstream]]\nname = "a"\ncommand = "x"\n')
    assert main(["gateway", "check", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'rules.toml'}:3: rule 'r': effect must be")
    assert lines[1].startswith(f"{tmp_path / 'auth.toml'}: not a TOML document")
    assert lines[2].startswith(f"{tmp_path / 'gateway.lock'}: 'upstreams' is not an object")
    assert lines[-1] == "3 problems; the gateway would not start"
