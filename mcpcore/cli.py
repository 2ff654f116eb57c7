"""The ``mcpcore`` command, and the command line every server module can share.

``mcpcore`` (installed as a console script; also ``python -m mcpcore``)::

    mcpcore new-key [KID]                 # a fresh entry for MCPCORE_STATE_KEYS
    mcpcore serve examples.quickstart     # uvicorn with our defaults, 127.0.0.1:8000/mcp
    mcpcore serve myapp:server --stdio    # a Server over stdin/stdout

``serve`` takes ``MODULE`` or ``MODULE:NAME``. ``NAME`` may be an ASGI app (for instance
``StreamableHTTP(server)``) or a ``Server``, which is then served by a default
``StreamableHTTP``; with only ``MODULE``, its ``app`` is used, else its ``server``. Once
the socket listens, one line ``mcpcore: serving NAME on http://HOST:PORT/mcp`` goes to
stdout, so scripts (and people) know when and where to connect.

Other subcommands live in their own modules and are imported only when used: see
``SUBCOMMANDS``. For a server module of your own, ``serve(server, app)`` gives it the same
flags (``--host``, ``--port``, ``--stdio``, ``--log-level``, and the connection and
shutdown limits of ``mcpcore.serving``) under ``python -m``.

Mistakes are one line on stderr and exit status 2, never a traceback: a usage error
(what is wrong, and ``--help``), a target that is not a Server or an ASGI app, a module
that refuses to load (a ``UsageError`` at registration, a ``ConfigError`` from an
environment variable), a port that cannot be listened on. The same holds for a server
module run with ``python -m`` that imports this module: a ``ConfigError`` or
``UsageError`` its top level raises is printed as one line (``sys.excepthook``). Output
piped into a reader that stops early (``| head``) ends quietly.

Behind a proxy that forwards the client's ``Host`` (``mcp.example.com``), the default
app must be told that name: ``MCPCORE_ALLOWED_HOSTS=mcp.example.com`` (comma-separated;
``allowed_hosts_from_env`` reads it, and the examples use it too).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import logging
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from types import ModuleType, TracebackType
from typing import Any, NoReturn

from mcpcore.errors import ConfigError, MissingExtra, UsageError
from mcpcore.stdout import stdout_to_devnull

#: ``name: (module, one-line help)``. Each module defines ``configure(parser)`` (adds its
#: arguments) and ``run(args) -> int``; it is imported only when its name is given.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "new-key": ("mcpcore.cli", "print a fresh key entry for MCPCORE_STATE_KEYS"),
    "serve": ("mcpcore.cli", "serve a server module with uvicorn (or over stdio)"),
    "authorization-server": ("mcpcore.auth.issuer.authorization_server",
                             "run the compact OAuth authorization server (demo mode)"),
    "conformance": ("mcpcore.conformance.cli",
                    "conformance and security audit of any MCP server"),
    "policy": ("mcpcore.policy.cli", "check a rule file, or explain one decision"),
    "gateway": ("mcpcore.gateway.cli", "serve one endpoint over many MCP servers, "
                                       "or check its configuration"),
}


class Parser(argparse.ArgumentParser):
    """argparse with a usage error on one line: what is wrong, and where to read more
    (argparse's own prints the whole usage first). Subcommand parsers inherit it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


#: The exit status after the reader of our output went away (``| head``): what a shell
#: reports for a command that SIGPIPE ended (128 + 13).
BROKEN_PIPE_STATUS = 141


def main(argv: Sequence[str] | None = None) -> int:
    """The ``mcpcore`` console script. Returns the exit status; every subcommand runs
    ``guarded`` (``mcpcore policy check ... | head`` ends quietly)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return guarded(lambda: _main(args), "mcpcore")


def guarded(body: Callable[[], int], prog: str) -> int:
    """``body()``'s exit status, with the endings every command shares: a reader that
    stops early (``| head``) ends it quietly, the recipe of the Python docs ("Note on
    SIGPIPE": stdout goes to devnull, so the interpreter's last flush cannot fail
    again); a ``ConfigError`` or a ``MissingExtra`` is one line and status 2; Ctrl-C is
    130, no traceback."""
    try:
        status = body()
        sys.stdout.flush()  # a broken pipe shows here, not in the interpreter's exit
    except BrokenPipeError:
        stdout_to_devnull()
        return BROKEN_PIPE_STATUS
    except (ConfigError, MissingExtra) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return status


def _main(args: list[str]) -> int:
    parser = Parser(
        prog="mcpcore", description="mcpcore: a stateless Model Context Protocol engine.",
        epilog="subcommands:\n" + "\n".join(
            f"  {name:<12}{text}" for name, (_, text) in SUBCOMMANDS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("command", nargs="?", choices=list(SUBCOMMANDS), metavar="COMMAND")
    head = parser.parse_args(args[:1])
    if head.version:
        from mcpcore import __version__

        print(f"mcpcore {__version__}")
        return 0
    if head.command is None:
        parser.print_help()
        return 2
    module_name, text = SUBCOMMANDS[head.command]
    if module_name == __name__:
        configure, run = _LOCAL[head.command]
    else:
        module = importlib.import_module(module_name)
        configure, run = module.configure, module.run
    sub = Parser(prog=f"mcpcore {head.command}", description=text)
    configure(sub)
    status: int = run(sub.parse_args(args[1:]))
    return status


#: The environment variable ``allowed_hosts_from_env`` reads.
ALLOWED_HOSTS_ENV = "MCPCORE_ALLOWED_HOSTS"


def allowed_hosts_from_env(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The ``Host`` names to answer for, from ``MCPCORE_ALLOWED_HOSTS``.

    Comma-separated names (``mcp.example.com,localhost``; a port is ignored when the
    header is checked); ``*`` alone accepts any Host (``ANY_HOST``: only behind a proxy
    that checks Host itself). Unset or empty: ``LOCAL_HOSTS``, the loopback names.
    ``ConfigError`` (a ``ValueError``) for ``*`` among other names.

    >>> sorted(allowed_hosts_from_env({"MCPCORE_ALLOWED_HOSTS": "mcp.example.com, localhost"}))
    ['localhost', 'mcp.example.com']
    """
    from mcpcore.transports.http import ANY_HOST, LOCAL_HOSTS

    names = [name.strip().lower() for name in environ.get(ALLOWED_HOSTS_ENV, "").split(",")]
    names = [name for name in names if name]
    if not names:
        return LOCAL_HOSTS
    if "*" in names:
        if names != ["*"]:
            raise ConfigError(f"{ALLOWED_HOSTS_ENV}: '*' (any host) cannot be combined with "
                              "other names; set either '*' alone or a list of names")
        return ANY_HOST
    return frozenset(names)


# -- new-key ----------------------------------------------------------------------------


def _configure_new_key(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kid", nargs="?", help="key id (default: k<date>-<random>)")


def _run_new_key(args: argparse.Namespace) -> int:
    from mcpcore.sealing import KeyRing

    try:
        print(KeyRing.new_key(args.kid))
    except ValueError as exc:
        print(f"mcpcore new-key: {exc}", file=sys.stderr)
        return 2
    return 0


# -- serve ------------------------------------------------------------------------------


def port_number(text: str) -> int:
    """An argparse type for ``--port``: 0 to 65535 (0: a free one), else a one-line
    usage error."""
    from mcpcore.serving import PORTS

    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if port not in PORTS:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port: use 1 to 65535, or 0 "
                                         "for a free one")
    return port


def _number(kind: Callable[[str], float], low: float, what: str
            ) -> Callable[[str], Any]:
    """An argparse type: a finite ``kind`` of at least ``low``."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(value) or value < low:
            raise argparse.ArgumentTypeError(f"{text} is out of range: use {what} of at "
                                             f"least {low:g}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


_SECONDS = _number(float, 0, "a number of seconds")
_POSITIVE_SECONDS = _number(float, 0.001, "a number of seconds")
_WHOLE_SECONDS = _number(int, 0, "a whole number of seconds")
_COUNT = _number(int, 1, "a whole number")


class _HttpFlag(argparse.Action):
    """A flag that means something only over HTTP: stored as usual, and its name kept
    in ``http_flags`` (``stdio_conflict``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        given = getattr(namespace, "http_flags", None) or []
        if option_string not in given:
            namespace.http_flags = [*given, option_string]


def stdio_conflict(args: argparse.Namespace) -> str | None:
    """With ``--stdio``, the HTTP-only flags also given (``--port``, ``--host``, the
    connection and shutdown limits), as the one-line usage error that refuses them;
    None if there are none."""
    given = getattr(args, "http_flags", None) or []
    if not getattr(args, "stdio", False) or not given:
        return None
    return (f"{', '.join(given)} {'has' if len(given) == 1 else 'have'} no meaning with "
            "--stdio (it serves over stdin/stdout, not HTTP): drop "
            f"{'it' if len(given) == 1 else 'them'} or --stdio")


def add_serving_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of ``mcpcore serve`` (``--host``, ``--port``, ``--stdio``,
    ``--log-level`` and the connection and shutdown limits), for commands that serve.
    The HTTP-only ones given with ``--stdio`` are a usage error (``stdio_conflict``)."""
    parser.set_defaults(http_flags=[])
    parser.add_argument("--host", default="127.0.0.1", action=_HttpFlag,
                        help="interface to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=port_number, default=8000, action=_HttpFlag,
                        help="TCP port (default 8000; 0 picks a free one)")
    parser.add_argument("--stdio", action="store_true",
                        help="serve over stdin/stdout instead of HTTP")
    parser.add_argument("--log-level", default="warning",
                        choices=["critical", "error", "warning", "info", "debug"])
    limits = parser.add_argument_group("connections and shutdown (docs/deploying.md)")
    limits.add_argument("--header-timeout", type=_POSITIVE_SECONDS, default=10.0,
                        metavar="SECONDS", action=_HttpFlag,
                        help="close a connection that sends no complete request head "
                             "within this long of opening or of its last response "
                             "(default 10)")
    limits.add_argument("--keep-alive", type=_WHOLE_SECONDS, default=5, metavar="SECONDS",
                        action=_HttpFlag,
                        help="close an idle keep-alive connection after this long "
                             "(default 5; keep a proxy's upstream keep-alive below it)")
    limits.add_argument("--max-connections", type=_COUNT, default=None, metavar="N",
                        action=_HttpFlag,
                        help="answer 503 beyond N open connections (default: no limit)")
    limits.add_argument("--drain-seconds", type=_SECONDS, default=1.0, metavar="SECONDS",
                        action=_HttpFlag,
                        help="on SIGTERM, keep accepting and serving for this long "
                             "(/readyz answers 503 draining, each answer closes its "
                             "connection) so a balancer moves on cleanly, then refuse "
                             "new connections (default 1; above the balancer's upstream "
                             "keep-alive timeout)")
    limits.add_argument("--graceful-timeout", type=_SECONDS, default=30.0, metavar="SECONDS",
                        action=_HttpFlag,
                        help="on SIGTERM, let requests in flight finish for this long, "
                             "then cancel them (default 30)")


def _configure_serve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="MODULE or MODULE:NAME (an ASGI app or a Server)")
    add_serving_flags(parser)


def _run_serve(args: argparse.Namespace) -> int:
    try:
        server, app = load_target(args.target)
    except TargetError as exc:
        print(f"mcpcore serve: {exc}", file=sys.stderr)
        return 2
    return _serve_with(server, app, args)


class TargetError(Exception):
    """``MODULE:NAME`` does not name something ``mcpcore serve`` can serve."""


def load_target(target: str) -> tuple[Any, Any]:
    """``(server or None, asgi app or None)`` for ``MODULE`` or ``MODULE:NAME``.

    ``TargetError``, with a message that says what to write instead, for a file path, a
    module that cannot be imported or refuses to load (``UsageError`` at registration,
    ``ValueError``/``ConfigError`` from its configuration, a syntax error), and a name
    that is neither a ``Server`` nor an ASGI app."""
    module_name, colon, attr = target.partition(":")
    _check_module_name(module_name, target)
    if colon and not attr:
        raise TargetError(f"{target!r} names nothing after ':'; write {module_name}:NAME, "
                          f"or just {module_name}")
    module = _import(module_name)
    names = [attr] if attr else ["app", "server"]
    for name in names:
        value = getattr(module, name, None)
        if value is None:
            continue
        kind = _kind(value)
        if kind == "a Server":
            return value, None
        if kind == "an ASGI app":
            server = getattr(module, "server", None)
            return (server if _kind(server) == "a Server" else None), value
        raise TargetError(f"{module_name}:{name} is {kind}, neither a Server nor an ASGI "
                          f"app{_instead(module, module_name)}")
    raise TargetError(f"{module_name} has no {' or '.join(repr(n) for n in names)}"
                      f"{_instead(module, module_name)}")


def _check_module_name(module_name: str, target: str) -> None:
    if not module_name:
        raise TargetError(f"{target!r} names no module; write MODULE or MODULE:NAME, e.g. "
                          "examples.quickstart or examples.quickstart:server")
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        path = PurePath(module_name.replace("\\", "/"))
        stem = path.with_suffix("") if path.suffix == ".py" else path
        if path.is_absolute() or ".." in stem.parts:
            raise TargetError(f"{module_name!r} is a file path; serve takes a module name: "
                              f"cd {stem.parent} and serve {stem.name}")
        dotted = ".".join(part for part in stem.parts if part != ".")
        raise TargetError(f"{module_name!r} is a file path; serve takes a module name: "
                          f"write {dotted} (from the folder it is relative to)")
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise TargetError(f"{module_name!r} is not a module name; write dotted Python "
                          "identifiers, e.g. examples.quickstart")


def _import(module_name: str) -> ModuleType:
    sys.path.insert(0, "")  # the current folder, as `python -m` and uvicorn do
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            raise TargetError(f"cannot import {module_name!r}: {exc}; run from the folder "
                              f"that holds it (here: {os.getcwd()})") from None
        raise TargetError(f"cannot import {module_name!r}: {exc} (it imports {missing!r}: "
                          "is that installed in this environment?)") from None
    except ImportError as exc:
        raise TargetError(f"cannot import {module_name!r}: {exc}") from None
    except SyntaxError as exc:
        raise TargetError(f"cannot import {module_name!r}: {exc.msg} at "
                          f"{exc.filename}:{exc.lineno}") from None
    except UsageError as exc:  # a tool, resource or prompt the engine cannot serve
        raise TargetError(f"{module_name}: {exc}") from None
    except ValueError as exc:  # configuration refused at import, e.g. an empty key ring
        raise TargetError(f"{module_name} refused to start: {exc}") from None
    finally:
        sys.path.remove("")


def _kind(value: Any) -> str:
    """``"a Server"``, ``"an ASGI app"``, or what else ``value`` is (for a message)."""
    from mcpcore.server import Server

    if isinstance(value, Server):
        return "a Server"
    if isinstance(value, type):
        return "a class"
    if not callable(value):
        return f"a {type(value).__name__}"
    # An ASGI app is awaited as app(scope, receive, send): a coroutine function, or an
    # object whose __call__ takes those three.
    if inspect.isroutine(value) and not inspect.iscoroutinefunction(value):
        return "a function"
    try:
        inspect.signature(value).bind(None, None, None)
    except TypeError:
        return "a function" if inspect.isroutine(value) else f"a {type(value).__name__}"
    except ValueError:  # no signature to read (a builtin): let the server try it
        pass
    return "an ASGI app"


def _instead(module: ModuleType, module_name: str) -> str:
    """``; it has server (a Server): write MODULE:server`` for what could be served."""
    found = [(name, kind) for name, value in vars(module).items()
             if not name.startswith("_") and (kind := _kind(value)) in ("a Server",
                                                                        "an ASGI app")]
    if not found:
        return "; define a Server or an ASGI app in it, e.g. server = Server('name')"
    listed = ", ".join(f"{name} ({kind})" for name, kind in found)
    return f"; it has {listed}: write {module_name}:{found[0][0]}"


def serve(server: Any, app: Any = None, argv: Sequence[str] | None = None,
          *, description: str | None = None) -> None:
    """Give a server module the ``mcpcore serve`` flags under ``python -m``::

        if __name__ == "__main__":
            serve(server, app, description=__doc__)

    ``--stdio`` serves ``server`` over stdin/stdout; otherwise ``app`` (by default a
    ``StreamableHTTP(server)`` answering for ``allowed_hosts_from_env()``) runs under
    uvicorn. Exits with the status.
    """
    parser = Parser(description=description or f"Serve {server.name}")
    add_serving_flags(parser)
    raise SystemExit(guarded(lambda: _serve_with(server, app, parser.parse_args(argv)),
                             parser.prog))


def _serve_with(server: Any, app: Any, args: argparse.Namespace) -> int:
    if (conflict := stdio_conflict(args)) is not None:
        print(f"mcpcore serve: {conflict}", file=sys.stderr)
        return 2
    if args.stdio:
        if server is None:
            print("mcpcore serve: --stdio needs a Server (MODULE:server), not an ASGI app",
                  file=sys.stderr)
            return 2
        from mcpcore.transports.stdio import run_stdio

        logging.basicConfig(stream=sys.stderr, level=args.log_level.upper())
        run_stdio(server)
        return 0
    if app is None:
        from mcpcore.transports.http import StreamableHTTP

        try:
            hosts = allowed_hosts_from_env()
        except ConfigError as exc:
            print(f"mcpcore serve: {exc}", file=sys.stderr)
            return 2
        app = StreamableHTTP(server, allowed_hosts=hosts)
    from mcpcore.serving import ListenError, run

    name = server.name if server is not None else "app"
    path = getattr(app, "path", None) or ""
    try:
        run(app, host=args.host, port=args.port, log_level=args.log_level, name=name,
            path=path, header_timeout=args.header_timeout, keep_alive=args.keep_alive,
            graceful_timeout=args.graceful_timeout, drain_seconds=args.drain_seconds,
            max_connections=args.max_connections)
    except ListenError as exc:
        print(f"mcpcore serve: {exc}", file=sys.stderr)
        return 2
    return 0


def _one_line(kind: type[BaseException], value: BaseException,
              tb: TracebackType | None) -> None:
    """``sys.excepthook`` while this module is imported: a ``ConfigError`` or a
    ``UsageError`` that reaches the top of a program (a server module run with
    ``python -m``, whose top level builds its ``Server``) is one line and status 2;
    anything else goes to the hook that was there before."""
    if not isinstance(value, ConfigError | UsageError):
        _previous_hook(kind, value, tb)
        return
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    prog = spec.name if spec is not None else os.path.basename(sys.argv[0] or "python")
    print(f"{prog}: {value}", file=sys.stderr)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or its reader is gone
            stream.flush()
    # The interpreter is exiting with this exception, and an excepthook cannot change
    # its status (1): leave with the status of a usage error instead.
    os._exit(2)


_previous_hook = sys.excepthook
if getattr(sys.excepthook, "__name__", "") != _one_line.__name__:
    sys.excepthook = _one_line


_LOCAL: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                        Callable[[argparse.Namespace], int]]] = {
    "new-key": (_configure_new_key, _run_new_key),
    "serve": (_configure_serve, _run_serve),
}

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "BROKEN_PIPE_STATUS",
    "SUBCOMMANDS",
    "Parser",
    "TargetError",
    "add_serving_flags",
    "allowed_hosts_from_env",
    "guarded",
    "load_target",
    "main",
    "port_number",
    "serve",
    "stdio_conflict",
]
