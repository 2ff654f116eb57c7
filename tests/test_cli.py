"""The ``mcpcore`` command: ``new-key``, ``serve`` and the shared server flags — the
commands docs/install.md lists."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
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


@pytest.mark.parametrize(("flags", "named"), [
    (["--port", "9000"], "--port has"),
    (["--host=0.0.0.0", "--keep-alive", "3"], "--host, --keep-alive have"),
    (["--max-connections", "5", "--graceful-timeout", "1", "--drain-seconds", "0",
      "--header-timeout", "2"],
     "--max-connections, --graceful-timeout, --drain-seconds, --header-timeout have"),
])
def test_serve_stdio_refuses_the_flags_of_http(flags: list[str], named: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # They were accepted and ignored: a --port meant to be served on was not.
    assert main(["serve", "examples.quickstart:server", "--stdio", *flags]) == 2
    err = capsys.readouterr().err
    assert err == (f"mcpcore serve: {named} no meaning with --stdio (it serves over "
                   f"stdin/stdout, not HTTP): drop {'it' if ' has' in named else 'them'} "
                   "or --stdio\n")


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
    """``python -m mcpcore.auth.issuer.authorization_server`` used to print a runpy
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


# -- mistakes are one line on stderr and exit status 2 (issue 23, items 15 and 16) ------

BAD_HINT = '''
from mcpcore import Server
server = Server("bad")
@server.tool()
def f(x: complex) -> str:
    return "x"
'''
CTX_WITHOUT_CONTEXT = BAD_HINT.replace("x: complex", "ctx")
BROKEN_SYNTAX = "server = (\n"
#: A key ring entry that is not ``kid:base64url-key``.
BAD_KEYS = {"MCPCORE_STATE_KEYS": "garbage"}


def one_line_error(argv: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None
                   ) -> str:
    """Run a real command; it must fail with status 2 and one line on stderr."""
    import os

    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, **(env or {})})
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def mcpcore(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpcore", *args]


#: Runs a command in this process; it must end with status 2 and one line on stderr.
InProcess = Callable[..., str]


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
               ) -> InProcess:
    """``run(command, cwd=ROOT, env=None)``: the ``mcpcore`` command (a list of its
    arguments, given to ``main``) or a server module run as ``python -m`` (a module name,
    then its arguments: ``["-m", "examples.quickstart", "--port", "0"]``), in this process,
    from ``cwd`` with ``env`` added. It must end with status 2 and one line on stderr, as
    the same command in its own interpreter (the tests that start one, above and below,
    prove the entry points themselves). A command that would start serving fails the test
    instead of blocking it."""
    import runpy

    import uvicorn

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the command started serving instead of refusing")

    monkeypatch.setattr(uvicorn.Server, "run", refuse)

    def run(command: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
        monkeypatch.chdir(cwd)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        try:
            if command[:1] == ["-m"]:
                monkeypatch.setattr(sys, "argv", [command[1], *command[2:]])
                # as `python -m` finds it: not yet imported (runpy warns otherwise)
                monkeypatch.delitem(sys.modules, command[1], raising=False)
                runpy.run_module(command[1], run_name="__main__", alter_sys=True)
                status: object = 0
            else:
                status = main(command)
        except SystemExit as exc:
            status = exc.code
        finally:
            sys.modules.pop("authored", None)  # a module a test wrote into its tmp_path
        err = capsys.readouterr().err
        assert status == 2, (status, err)
        lines = err.splitlines()
        assert len(lines) == 1, err
        return lines[0]

    return run


@pytest.mark.parametrize(("source", "wanted"), [
    (BAD_HINT, "mcpcore serve: authored: tool 'f': parameter 'x': unsupported type hint"),
    (CTX_WITHOUT_CONTEXT, "parameter 'ctx' has no type hint; write `ctx: Context`"),
    (BROKEN_SYNTAX, "cannot import 'authored': "),
], ids=["bad-hint", "ctx-without-context", "syntax-error"])
def test_serve_names_an_authoring_mistake_in_one_line(tmp_path: Path, source: str,
                                                      wanted: str, in_process: InProcess
                                                      ) -> None:
    (tmp_path / "authored.py").write_text(source)
    line = in_process(["serve", "authored", "--port", "0"], cwd=tmp_path)
    assert line.startswith(wanted) or wanted in line, line


@pytest.mark.parametrize(("target", "wanted"), [
    ("examples.quickstart:echo", "examples.quickstart:echo is a function, neither a Server "
     "nor an ASGI app; it has server (a Server), app (an ASGI app): write "
     "examples.quickstart:server"),
    ("examples.quickstart:Server", "is a class, neither a Server nor an ASGI app"),
    ("examples/quickstart.py", "'examples/quickstart.py' is a file path; serve takes a "
     "module name: write examples.quickstart"),
    ("./examples/quickstart.py", "write examples.quickstart"),
    (":app", "':app' names no module; write MODULE or MODULE:NAME"),
    ("examples.quickstart:", "names nothing after ':'"),
    ("my-server", "'my-server' is not a module name"),
])
def test_serve_says_what_to_write_instead_of_a_bad_target(target: str, wanted: str,
                                                          in_process: InProcess) -> None:
    line = in_process(["serve", target, "--port", "0"])
    assert line.startswith("mcpcore serve: ") and wanted in line, line
    assert "  " not in line  # ':app' used to say "mcpcore serve:  refused to start"


@pytest.mark.parametrize(("flags", "wanted"), [
    (["--port", "70000"], "argument --port: 70000 is not a TCP port: use 1 to 65535"),
    (["--port", "65536"], "argument --port: 65536 is not a TCP port"),
    (["--port", "-1"], "argument --port: -1 is not a TCP port"),
    (["--port", "eighty"], "argument --port: 'eighty' is not a port number"),
    (["--header-timeout", "nan"], "argument --header-timeout: nan is out of range"),
    (["--max-connections", "0"], "argument --max-connections: 0 is out of range"),
    (["--graceful-timeout", "-5"], "argument --graceful-timeout: -5 is out of range"),
    (["--host", "192.0.2.1"], "cannot listen on 192.0.2.1:0: '192.0.2.1' is not an address "
     "of this machine"),
])
def test_serve_refuses_a_port_or_limit_it_cannot_use(flags: list[str], wanted: str,
                                                     in_process: InProcess) -> None:
    """``--port 70000`` used to serve on 4464, ``65536`` on a random port, ``-1`` ended in
    a raw socket error; ``nan`` seconds was accepted."""
    argv = ["serve", "examples.quickstart", *flags]
    if "--port" not in flags:
        argv += ["--port", "0"]
    line = in_process(argv)
    assert line.startswith("mcpcore serve: ") and wanted in line, line
    assert line.endswith("(see mcpcore serve --help)") or "listen" in line


def test_serve_and_python_m_name_a_port_in_use(in_process: InProcess) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for argv in (["serve", "examples.quickstart", "--port", port],
                     ["-m", "examples.quickstart", "--port", port],
                     ["authorization-server", "--port", port]):
            line = in_process(argv)
            assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in line, line


@pytest.mark.parametrize("argv", [
    [sys.executable, "-m", "examples.quickstart", "--port", "0"],
    mcpcore("serve", "examples.quickstart", "--port", "0"),
    [sys.executable, "-c", "from mcpcore.cli import serve\nfrom mcpcore import Server\n"
                           "serve(Server('mine'), argv=['--port', '0'])"],
], ids=["python-m", "mcpcore-serve", "serve()"])
def test_a_bad_state_key_ring_is_one_line_under_every_entry_point(argv: list[str]) -> None:
    """Under ``python -m examples.quickstart`` this was a 15-line traceback."""
    line = one_line_error(argv, env=BAD_KEYS)
    assert "MCPCORE_STATE_KEYS: key entry #1 is not of the form 'kid:base64url-key'" in line
    assert "mcpcore new-key" in line


@pytest.mark.parametrize(("env", "wanted"), [
    ({"MCPCORE_MAX_REQUESTS": "lots"}, "MCPCORE_MAX_REQUESTS='lots' is not a number"),
    ({"MCPCORE_MAX_STREAMS": "0"}, "MCPCORE_MAX_STREAMS must be at least 1"),
    ({"MCPCORE_ALLOWED_HOSTS": "*,localhost"}, "MCPCORE_ALLOWED_HOSTS: '*' (any host) "
     "cannot be combined"),
    ({"MCPCORE_TASK_LEASE": "soon"}, "MCPCORE_TASK_LEASE='soon' is not a positive number"),
    ({"MCPCORE_TASK_TTL": "-5"}, "MCPCORE_TASK_TTL='-5' is not a positive number"),
])
def test_bad_environment_configuration_is_a_config_error(
        env: dict[str, str], wanted: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m examples.everything``'s top level, run here: each bad setting is a
    ``ConfigError`` naming it, which a program's top level turns into one line (the next
    test runs the real command)."""
    import runpy

    from mcpcore.errors import ConfigError

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # as `python -m` finds it: not yet imported (runpy warns otherwise)
    monkeypatch.delitem(sys.modules, "examples.everything", raising=False)
    with pytest.raises(ConfigError) as refused:
        runpy.run_module("examples.everything", run_name="__main__")
    assert wanted in str(refused.value)


def test_bad_environment_configuration_is_one_line() -> None:
    line = one_line_error([sys.executable, "-m", "examples.everything", "--port", "0"],
                          env={"MCPCORE_MAX_REQUESTS": "lots"})
    assert line.startswith("examples.everything: ") and (
        "MCPCORE_MAX_REQUESTS='lots' is not a number" in line), line


def test_a_mistake_in_a_python_m_server_module_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "authored.py").write_text(
        "from mcpcore.cli import serve\n" + CTX_WITHOUT_CONTEXT
        + "\nif __name__ == '__main__':\n    serve(server)\n")
    line = one_line_error([sys.executable, "-m", "authored"], cwd=tmp_path)
    assert line.startswith("authored: tool 'f': parameter 'ctx' has no type hint"), line


GUARDED = ("from mcpcore.cli import serve\nfrom mcpcore import Server\n"
           "from mcpcore.auth import ResourceServerConfig\n"
           "config = ResourceServerConfig.from_env()\n"
           "if __name__ == '__main__':\n    serve(Server('guarded'))\n")


@pytest.mark.parametrize(("env", "wanted"), [
    ({"MCPCORE_AUTH_CONFIG": "/nonexistent/auth.toml"},
     "MCPCORE_AUTH_CONFIG=/nonexistent/auth.toml: cannot read the file"),
    ({"MCPCORE_AUTH_RESOURCE": "https://mcp.example.com/mcp"},
     "MCPCORE_AUTH_ISSUER (or authorization_servers in MCPCORE_AUTH_CONFIG) is required"),
    ({"MCPCORE_AUTH_RESOURCE": "http://mcp.example.com/mcp",
      "MCPCORE_AUTH_ISSUER": "https://as.example.com"}, "allow_loopback"),
])
def test_a_bad_auth_configuration_is_a_config_error(
        tmp_path: Path, env: dict[str, str], wanted: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The auth package's ConfigurationError is the engine's ConfigError, which a
    program's top level turns into one line (the next test runs the real command)."""
    import runpy

    from mcpcore.errors import ConfigError

    (tmp_path / "guarded.py").write_text(GUARDED)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as refused:
        runpy.run_path(str(tmp_path / "guarded.py"), run_name="__main__")
    assert wanted in str(refused.value)


def test_a_bad_auth_configuration_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "guarded.py").write_text(GUARDED)
    line = one_line_error([sys.executable, "-m", "guarded"], cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT),
                               "MCPCORE_AUTH_CONFIG": "/nonexistent/auth.toml"})
    assert line.startswith("guarded: ") and (
        "MCPCORE_AUTH_CONFIG=/nonexistent/auth.toml: cannot read the file" in line), line


@pytest.mark.parametrize("args", [
    ["policy"], ["policy", "explain", "examples/policy.toml", "--tool", "x"],
    ["policy", "explain", "examples/policy.toml", "--tool", "x", "--principal",
     '{"sub": "a", "groups": 5}'],
    ["policy", "explain", "examples/policy.toml", "--tool", "x", "--principal",
     '{"sub": "a", "act": [{}]}'],
    ["frobnicate"], ["new-key", "bad kid"],
    ["policy", "explain", "examples/policy.toml", "--tool", "x", "--principal", "sub=a",
     "--server", "examples.quickstart:echo"],
])
def test_every_subcommands_usage_error_is_one_line(args: list[str],
                                                   in_process: InProcess) -> None:
    line = in_process(args)
    assert line.startswith("mcpcore"), line


EXPLAIN = ["policy", "explain", "examples/policy.toml", "--server", "examples.policy_server",
           "--principal", "sub=eddie,tenant=contoso,scopes=mcp:write,client=notes-app",
           "--tool", "add_note", "--args", '{"name": "system.motd", "text": "hi"}']


@pytest.mark.parametrize("args", [
    ["policy", "check", "examples/policy.toml"], EXPLAIN, ["conformance", "--list"],
    ["new-key"],
], ids=["policy-check", "policy-explain", "conformance-list", "new-key"])
def test_a_reader_that_stops_early_ends_the_command_quietly(args: list[str]) -> None:
    """``mcpcore policy check ... | head`` ended in a BrokenPipeError traceback. Here the
    reader has gone before the first write: a real pipe, its read end closed."""
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(mcpcore(*args), cwd=ROOT, stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=60, check=False)
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 141  # what a shell reports for a command SIGPIPE ended


def test_a_server_whose_stdout_reader_is_gone_serves_on() -> None:
    """The announcement line into a closed pipe ended ``python -m examples.quickstart``
    with two tracebacks; the server does not need its stdout, so it serves on."""
    import os

    from tests.support.processes import free_port

    read, write = os.pipe()
    os.close(read)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "examples.quickstart", "--port", str(port)],
                            cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True)
    os.close(write)
    try:
        reply = None
        for _ in range(200):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                reply = call_echo(f"http://127.0.0.1:{port}/mcp")
                break
            except OSError:
                import time

                time.sleep(0.1)
        assert isinstance(reply, dict) and reply["result"]["resultType"] == "complete"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_install_md_commands_run_as_printed() -> None:
    """docs/install.md's command block, from a checkout as a reader runs it (no venv
    activated): version and key as shown, the server announcing its URL (on a free port,
    not 8000), the stdio server answering."""
    from tests.docs_blocks import blocks, commands, run_printed, start_printed, stop_printed

    (block,) = [b for b in blocks(ROOT / "docs" / "install.md")
                if b.marker == "tests/test_cli.py"]
    version, new_key, http, stdio = (line.split(" #")[0].strip() for line in commands(block))
    assert run_printed(version).stdout.startswith("mcpcore ")
    KeyRing.from_config(run_printed(new_key).stdout.strip())
    proc = start_printed(http + " --port 0", stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"mcpcore: serving quickstart on http://")
    finally:
        stop_printed(proc)
    request = {"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}}
    done = run_printed(stdio, stdin=json.dumps(request) + "\n")
    assert json.loads(done.stdout.splitlines()[0])["id"] == 3, done.stderr


def test_the_authorization_server_without_its_extra_is_one_line_and_status_2() -> None:
    """``mcpcore authorization-server`` on an install without the ``issuer`` extra: what
    is missing and the command that installs it, no traceback."""
    code = ("import sys\nsys.modules['starlette'] = None\n"
            "from mcpcore.cli import main\nsys.exit(main(['authorization-server']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == (
        "mcpcore: mcpcore.auth.issuer (the authorization server and test IdP) needs the "
        "'issuer' extra (missing: starlette): pip install 'mcpcore[issuer]'\n")
