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
flags (``--host``, ``--port``, ``--stdio``, ``--log-level``) under ``python -m``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
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
    ``StreamableHTTP(server)``) runs under uvicorn. Exits with the status.
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

        app = StreamableHTTP(server)
    name = server.name if server is not None else "app"
    path = getattr(app, "path", None) or ""
    _run_uvicorn(app, args.host, args.port, args.log_level, name=name, path=path)
    return 0


def _run_uvicorn(app: Any, host: str, port: int, log_level: str, *, name: str,
                 path: str) -> None:
    import uvicorn

    class _Announcing(uvicorn.Server):
        """uvicorn, plus one line on stdout once the socket listens."""

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.should_exit:
                return
            bound = [s.getsockname() for server in self.servers for s in server.sockets]
            where = bound[0] if bound else (host, port)
            shown = f"[{where[0]}]" if ":" in str(where[0]) else where[0]
            print(f"mcpcore: serving {name} on http://{shown}:{where[1]}{path}", flush=True)

    # loop/http "auto": uvloop and httptools when the `fast` extra is installed.
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on")
    _Announcing(config).run()


_LOCAL: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                        Callable[[argparse.Namespace], int]]] = {
    "new-key": (_configure_new_key, _run_new_key),
    "serve": (_configure_serve, _run_serve),
}

__all__ = ["SUBCOMMANDS", "TargetError", "load_target", "main", "serve"]
