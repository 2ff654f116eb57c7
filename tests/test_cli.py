"""The ``mcpcore`` command: ``new-key``, ``serve`` and the shared server flags — the
commands docs/install.md lists."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpcore import Server, StreamableHTTP
from mcpcore.cli import TargetError, load_target, main
from mcpcore.sealing import KeyRing

ROOT = Path(__file__).resolve().parents[1]


def test_new_key_prints_a_usable_key_ring_entry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new-key"]) == 0
    line = capsys.readouterr().out.strip()
    ring = KeyRing.from_config(line)
    assert line.startswith(ring.active_kid + ":")
    assert main(["new-key", "prod-1"]) == 0
    assert capsys.readouterr().out.startswith("prod-1:")
    assert KeyRing.new_key() != KeyRing.new_key()


def test_new_key_refuses_a_bad_kid_loudly(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new-key", "bad kid"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing a `$(...)` could mistake for a key
    assert "mcpcore new-key:" in captured.err


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert "new-key" in out and "serve" in out


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import mcpcore

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"mcpcore {mcpcore.__version__}"


def test_load_target_prefers_the_modules_app_then_its_server() -> None:
    server, app = load_target("examples.quickstart")
    assert isinstance(server, Server) and isinstance(app, StreamableHTTP)
    server, app = load_target("examples.quickstart:server")
    assert isinstance(server, Server) and app is None


@pytest.mark.parametrize(("target", "message"), [
    ("no_such_module_xyz", "cannot import 'no_such_module_xyz'"),
    ("examples.quickstart:nothing", "has no 'nothing'"),
    ("examples.quickstart:__doc__", "neither a Server nor an ASGI app"),
])
def test_load_target_explains_what_is_wrong(target: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        load_target(target)


def test_serve_with_a_bad_target_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "no_such_module_xyz"]) == 2
    assert "mcpcore serve: cannot import" in capsys.readouterr().err


@contextlib.contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``python -m mcpcore serve ARGS --port 0``; yields the URL it announces."""
    import os

    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", "serve", *args, "--port", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("mcpcore: serving "), line + (proc.stderr.read()
                                                             if proc.stderr else "")
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def call_echo(url: str, host: str | None = None) -> object:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hi"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    request = urllib.request.Request(url, data=body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo",
        **({"Host": host} if host else {})})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.parametrize("target", ["examples.quickstart", "examples.quickstart:server"])
def test_serve_announces_its_url_once_it_listens(target: str) -> None:
    with serving(target) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        reply = call_echo(url)
    assert isinstance(reply, dict) and reply["id"] == 1
    assert reply["result"]["content"] == [{"type": "text", "text": "hi"}]
    assert reply["result"]["resultType"] == "complete"


def test_serve_stdio_speaks_on_stdin_and_stdout() -> None:
    request = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}}
    done = subprocess.run(
        [sys.executable, "-m", "mcpcore", "serve", "examples.quickstart:server", "--stdio"],
        cwd=ROOT, input=json.dumps(request) + "\n", capture_output=True, text=True,
        timeout=30, check=False)
    reply = json.loads(done.stdout.splitlines()[0])
    assert reply["id"] == 7 and reply["result"]["supportedVersions"] == ["2026-07-28"]
    assert reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "quickstart"


def test_serve_stdio_needs_a_server(capsys: pytest.CaptureFixture[str]) -> None:
    import types

    async def app(scope: object, receive: object, send: object) -> None:
        """An ASGI app, and no Server."""

    module = types.ModuleType("only_an_app")
    module.app = app  # type: ignore[attr-defined]
    sys.modules["only_an_app"] = module
    try:
        assert main(["serve", "only_an_app", "--stdio"]) == 2
    finally:
        del sys.modules["only_an_app"]
    assert "--stdio needs a Server" in capsys.readouterr().err


def test_the_authorization_server_command_starts_without_warnings() -> None:
    """``python -m mcpcore.auth.authorization_server`` used to print a runpy
    RuntimeWarning (the package imports the module before running it as ``__main__``)."""
    done = subprocess.run([sys.executable, "-W", "error", "-m", "mcpcore",
                           "authorization-server", "--help"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "--approve-as" in done.stdout and done.stderr == ""


def test_serve_refuses_an_empty_key_ring_clearly() -> None:
    """``export MCPCORE_STATE_KEYS=$(failing command)`` leaves it empty: the server must
    not start sealing with a throwaway key."""
    import os

    done = subprocess.run([sys.executable, "-m", "mcpcore", "serve", "examples.quickstart"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "MCPCORE_STATE_KEYS": ""})
    assert done.returncode == 2
    assert "MCPCORE_STATE_KEYS is set but empty" in done.stderr
    assert "Traceback" not in done.stderr


def test_allowed_hosts_come_from_the_environment() -> None:
    from mcpcore.cli import allowed_hosts_from_env
    from mcpcore.transports.http import ANY_HOST, LOCAL_HOSTS

    assert allowed_hosts_from_env({}) == LOCAL_HOSTS
    assert allowed_hosts_from_env({"MCPCORE_ALLOWED_HOSTS": " , "}) == LOCAL_HOSTS
    assert allowed_hosts_from_env({"MCPCORE_ALLOWED_HOSTS": "MCP.example.com, localhost"}) == {
        "mcp.example.com", "localhost"}
    assert allowed_hosts_from_env({"MCPCORE_ALLOWED_HOSTS": "*"}) == ANY_HOST
    with pytest.raises(ValueError, match="cannot be combined"):
        allowed_hosts_from_env({"MCPCORE_ALLOWED_HOSTS": "*,localhost"})


def test_serve_answers_for_the_hosts_in_mcpcore_allowed_hosts() -> None:
    """Behind a proxy that forwards ``Host: mcp.example.com`` (docs/troubleshooting.md)."""
    import urllib.error

    with serving("examples.quickstart:server",
                 env={"MCPCORE_ALLOWED_HOSTS": "mcp.example.com"}) as url:
        reply = call_echo(url, host="mcp.example.com")
        assert isinstance(reply, dict) and reply["result"]["resultType"] == "complete"
        with pytest.raises(urllib.error.HTTPError) as refused:
            call_echo(url)  # Host: 127.0.0.1:PORT is no longer one of its names
    refused.value.close()
    assert refused.value.code == 403
