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

Behind a proxy that forwards the client's ``Host`` (``mcp.example.com``), the default
app must be told that name: ``MCPCORE_ALLOWED_HOSTS=mcp.example.com`` (comma-separated;
``allowed_hosts_from_env`` reads it, and the examples use it too).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: ``name: (module, one-line help)``. Each module defines ``configure(parser)`` (adds its
#: arguments) and ``run(args) -> int``; it is imported only when its name is given.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "new-key": ("mcpcore.cli", "print a fresh key entry for MCPCORE_STATE_KEYS"),
    "serve": ("mcpcore.cli", "serve a server module with uvicorn (or over stdio)"),
    "authorization-server": ("mcpcore.auth.authorization_server",
                             "run the compact OAuth authorization server (demo mode)"),
    "conformance": ("mcpcore.conformance.cli",
                    "conformance and security audit of any MCP server"),
    "policy": ("mcpcore.policy.cli", "check a rule file, or explain one decision"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """The ``mcpcore`` console script. Returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
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
    sub = argparse.ArgumentParser(prog=f"mcpcore {head.command}", description=text)
    configure(sub)
    return run(sub.parse_args(args[1:]))


#: The environment variable ``allowed_hosts_from_env`` reads.
ALLOWED_HOSTS_ENV = "MCPCORE_ALLOWED_HOSTS"


def allowed_hosts_from_env(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The ``Host`` names to answer for, from ``MCPCORE_ALLOWED_HOSTS``.

    Comma-separated names (``mcp.example.com,localhost``; a port is ignored when the
    header is checked); ``*`` alone accepts any Host (``ANY_HOST``: only behind a proxy
    that checks Host itself). Unset or empty: ``LOCAL_HOSTS``, the loopback names.

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
            raise ValueError(f"{ALLOWED_HOSTS_ENV}: '*' (any host) cannot be combined with "
                             "other names")
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


def _add_serving_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000,
                        help="TCP port (default 8000; 0 picks a free one)")
    parser.add_argument("--stdio", action="store_true",
                        help="serve over stdin/stdout instead of HTTP")
    parser.add_argument("--log-level", default="warning",
                        choices=["critical", "error", "warning", "info", "debug"])
    limits = parser.add_argument_group("connections and shutdown (docs/deploying.md)")
    limits.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="close a connection that sends no complete request head "
                             "within this long of opening or of its last response "
                             "(default 10)")
    limits.add_argument("--keep-alive", type=int, default=5, metavar="SECONDS",
                        help="close an idle keep-alive connection after this long "
                             "(default 5; keep a proxy's upstream keep-alive below it)")
    limits.add_argument("--max-connections", type=int, default=None, metavar="N",
                        help="answer 503 beyond N open connections (default: no limit)")
    limits.add_argument("--drain-seconds", type=float, default=1.0, metavar="SECONDS",
                        help="on SIGTERM, after refusing new connections, keep serving "
                             "requests on open ones (each then closed) for up to this "
                             "long, so a balancer moves on cleanly (default 1)")
    limits.add_argument("--graceful-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="on SIGTERM, let requests in flight finish for this long, "
                             "then cancel them (default 30)")


def _configure_serve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="MODULE or MODULE:NAME (an ASGI app or a Server)")
    _add_serving_flags(parser)


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
    """``(server or None, asgi app or None)`` for ``MODULE`` or ``MODULE:NAME``."""
    from mcpcore.server import Server

    module_name, _, attr = target.partition(":")
    sys.path.insert(0, "")  # the current folder, as `python -m` and uvicorn do
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"cannot import {module_name!r}: {exc}") from None
    except ValueError as exc:  # configuration refused at import, e.g. an empty key ring
        raise TargetError(f"{module_name} refused to start: {exc}") from None
    finally:
        sys.path.remove("")
    names = [attr] if attr else ["app", "server"]
    for name in names:
        value = getattr(module, name, None)
        if value is None:
            continue
        if isinstance(value, Server):
            return value, None
        if callable(value):
            server = getattr(module, "server", None)
            return (server if isinstance(server, Server) else None), value
        raise TargetError(f"{module_name}:{name} is neither a Server nor an ASGI app")
    raise TargetError(f"{module_name} has no {' or '.join(repr(n) for n in names)}")


def serve(server: Any, app: Any = None, argv: Sequence[str] | None = None,
          *, description: str | None = None) -> None:
    """Give a server module the ``mcpcore serve`` flags under ``python -m``::

        if __name__ == "__main__":
            serve(server, app, description=__doc__)

    ``--stdio`` serves ``server`` over stdin/stdout; otherwise ``app`` (by default a
    ``StreamableHTTP(server)`` answering for ``allowed_hosts_from_env()``) runs under
    uvicorn. Exits with the status.
    """
    parser = argparse.ArgumentParser(description=description or f"Serve {server.name}")
    _add_serving_flags(parser)
    raise SystemExit(_serve_with(server, app, parser.parse_args(argv)))


def _serve_with(server: Any, app: Any, args: argparse.Namespace) -> int:
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
        except ValueError as exc:
            print(f"mcpcore serve: {exc}", file=sys.stderr)
            return 2
        app = StreamableHTTP(server, allowed_hosts=hosts)
    from mcpcore.serving import run

    name = server.name if server is not None else "app"
    path = getattr(app, "path", None) or ""
    run(app, host=args.host, port=args.port, log_level=args.log_level, name=name, path=path,
        header_timeout=args.header_timeout, keep_alive=args.keep_alive,
        graceful_timeout=args.graceful_timeout, drain_seconds=args.drain_seconds,
        max_connections=args.max_connections)
    return 0


_LOCAL: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                        Callable[[argparse.Namespace], int]]] = {
    "new-key": (_configure_new_key, _run_new_key),
    "serve": (_configure_serve, _run_serve),
}

__all__ = ["ALLOWED_HOSTS_ENV", "SUBCOMMANDS", "TargetError", "allowed_hosts_from_env",
           "load_target", "main", "serve"]
