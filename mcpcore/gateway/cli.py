"""``mcpcore gateway``: its verbs (docs/gateway.md).

::

    mcpcore gateway serve GATEWAY.toml [--host --port] [--stdio]
        serve the gateway (``mcpcore.gateway.serve``)

A usage mistake is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from mcpcore.cli import Parser
from mcpcore.gateway import serve as serving

#: Each verb: what adds its arguments, what runs it, its one-line help.
VERBS: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                       Callable[[argparse.Namespace], int], str]] = {
    "serve": (serving.configure, serving.serve,
              "serve the gateway over HTTP (both eras) or stdio"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB",
                                  parser_class=Parser)
    for name, (add_arguments, _, text) in VERBS.items():
        add_arguments(verbs.add_parser(name, help=text, description=text))


def run(args: argparse.Namespace) -> int:
    return VERBS[args.verb][1](args)


__all__ = ["VERBS", "configure", "run"]
