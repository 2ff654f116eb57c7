"""``mcpcore gateway``: check a gateway's configuration (docs/gateway-config.md), serve
it (docs/gateway.md).

::

    mcpcore gateway check GATEWAY.toml [--no-env]
        validate the file, the secrets it names (unless --no-env) and the files it
        names (policy, auth, an existing lock file); print a summary (exit 0), or
        every problem as FILE:LINE: message (exit 1)
    mcpcore gateway serve GATEWAY.toml [--host --port] [--stdio]
        serve the gateway (``mcpcore.gateway.serve``)

A usage mistake (no such file, an unknown flag) is one line on stderr and exit 2. The
summary never shows a secret: only where each one is read from.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpcore.gateway import pins_cli
from mcpcore.gateway import serve as serving
from mcpcore.gateway.config import (
    GatewayConfig,
    GatewayConfigError,
    SecretRef,
    UpstreamConfig,
    load,
    resolve_secrets,
)
from mcpcore.tomlfile import Problem, TomlFileError


def configure(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    check = verbs.add_parser("check", help="validate a gateway configuration without "
                                           "starting the gateway")
    check.add_argument("config", help="the gateway's configuration file (TOML)")
    check.add_argument("--no-env", action="store_true",
                       help="do not read the secrets the file names (check the file on a "
                            "machine where they are not set)")
    serve = verbs.add_parser("serve", help="serve the gateway over HTTP (both eras) or "
                                           "stdio")
    serving.configure(serve)
    pins_cli.add_verbs(verbs)


def run(args: argparse.Namespace) -> int:
    verb: Callable[[argparse.Namespace], int] = VERBS[args.verb]
    return verb(args)


def check(args: argparse.Namespace) -> int:
    path = Path(args.config)
    if not path.is_file():
        print(f"mcpcore gateway check: {args.config}: no such file (name the gateway's "
              "TOML configuration)", file=sys.stderr)
        return 2
    errors: list[TomlFileError] = []
    try:
        config = load(path)
    except GatewayConfigError as exc:
        return _problems([exc])
    if not args.no_env:
        try:
            resolve_secrets(config, os.environ)
        except GatewayConfigError as exc:
            errors.append(exc)
    rules = _referenced_files(config, errors)
    if errors:
        status = _problems(errors)
        if not args.no_env and any(e.source == config.source for e in errors):
            print("(set the variables and files the gateway reads its secrets from, or "
                  "check the file alone with --no-env)", file=sys.stderr)
        return status
    print(f"{args.config}: gateway {config.name!r} {config.version}, "
          f"{len(config.upstreams)} upstream{'s' if len(config.upstreams) != 1 else ''}")
    for line in _summary(config):
        print(f"  {line}")
    if config.policy is not None and rules is not None:
        print(f"  policy     {config.policy} ({len(rules.rules)} rules, {rules.hash})")
    if config.pins is not None:
        state = "" if Path(config.pins).is_file() else (
            " (not written yet: mcpcore gateway pin)")
        if state == "" and _legacy_lock(config.pins):
            state = (" (version 1: tools' _meta not pinned; upgrade it: mcpcore gateway "
                     "pin CONFIG --upgrade)")
        print(f"  pins       {config.pins}{state}")
    if config.store_url is not None:
        where = (f"${config.store_url.env}" if config.store_url.env is not None
                 else config.store_url.file)
        print(f"  store      shared (its URL from {where})")
    if args.no_env:
        print("  secrets    not read (--no-env)")
    return 0


def _referenced_files(config: GatewayConfig, errors: list[TomlFileError]) -> Any:
    """Read every file the configuration names that the gateway reads at start (its
    rule file, its resource server's file, an existing lock file), each problem added to
    ``errors``: all of them are reported at once. The rule set, if it was read."""
    rules = None
    if config.policy is not None:
        from mcpcore.policy.rulefile import RuleFileError
        from mcpcore.policy.rulefile import load as load_rules

        try:
            rules = load_rules(config.policy)
        except RuleFileError as exc:
            errors.append(exc)
    if config.auth is not None:
        from mcpcore.auth import ResourceServerConfig

        try:
            ResourceServerConfig.from_toml(config.auth)
        except ValueError as exc:  # ConfigurationError: one line naming what is wrong
            errors.append(TomlFileError(config.auth, [Problem(0, _without(str(exc),
                                                                          config.auth))]))
    if config.pins is not None and Path(config.pins).is_file():
        from mcpcore.gateway.pinning import LockError, Pins

        try:
            Pins.load(config.pins)
        except LockError as exc:
            errors.append(TomlFileError(config.pins, [Problem(0, _without(str(exc),
                                                                          config.pins))]))
    return rules


def _legacy_lock(path: str) -> bool:
    from mcpcore.gateway.pinning import LockError, Pins

    try:
        return Pins.load(path).legacy
    except LockError:
        return False  # reported as a problem already


def _without(message: str, source: str) -> str:
    """``message`` without a leading ``source: `` (``TomlFileError`` adds it)."""
    return message.removeprefix(f"{source}: ")


def pins(args: argparse.Namespace) -> int:
    """``pin``, ``approve`` and ``diff`` (``mcpcore.gateway.pins_cli``) for the file's
    upstreams."""
    path = Path(args.config)
    if not path.is_file():
        print(f"mcpcore gateway {args.verb}: {args.config}: no such file (name the "
              "gateway's TOML configuration)", file=sys.stderr)
        return 2
    try:
        config = load(path)
    except GatewayConfigError as exc:
        return _problems([exc])
    return pins_cli.run(args, config)


def _problems(errors: list[TomlFileError]) -> int:
    count = 0
    for exc in errors:
        print(exc, file=sys.stderr)
        count += len(exc.problems)
    print(f"{count} problem{'s' if count != 1 else ''}; the gateway would not start",
          file=sys.stderr)
    return 1


def _summary(config: GatewayConfig) -> list[str]:
    naming = (f"names prefixed: <upstream>{config.separator}<name>" if config.prefixing
              else "names not prefixed")
    lines = [f"catalog    {naming}; refreshed every {config.refresh:g}s"
             + (f"; aliases {', '.join(sorted(config.aliases))}" if config.aliases else "")]
    width = max(len(u.name) for u in config.upstreams)
    for upstream in config.upstreams:
        lines.append(f"upstream   {upstream.name:<{width}}  {_transport(upstream)}  "
                     f"era {upstream.era}  credentials {_credentials(upstream)}")
    return lines


def _transport(upstream: UpstreamConfig) -> str:
    if upstream.url is not None:
        return f"http {upstream.url}"
    command = shlex.join([upstream.command or "", *upstream.args])
    env = [*upstream.env, *(f"{child} from ${ours}" for child, ours
                            in upstream.env_from.items())]
    return f"stdio {command}" + (f" (env {', '.join(env)})" if env else "")


def _credentials(upstream: UpstreamConfig) -> str:
    c = upstream.credentials
    parts: list[str] = [c.kind]
    if c.secret is not None:
        parts.append(f"secret {_where(c.secret)}")
    if c.client_secret is not None:
        parts.append(f"client {c.client_id}, secret {_where(c.client_secret)}")
    if c.audience or c.resource:
        parts.append(f"for {c.audience or c.resource}")
    return " ".join(parts[:1]) + (f" ({', '.join(parts[1:])})" if parts[1:] else "")


def _where(ref: SecretRef) -> str:
    return f"from ${ref.env}" if ref.env is not None else f"from file {ref.file}"


#: Each verb and what runs it.
VERBS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": check, "serve": serving.serve, "pin": pins, "approve": pins, "diff": pins}


__all__ = ["VERBS", "check", "configure", "pins", "run"]
