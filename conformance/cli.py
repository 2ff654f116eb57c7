"""``mcpcore conformance``: the suite from the command line (also ``python -m
mcpcore.conformance``). See docs/conformance.md for every flag.

Exit status: 0 when no MUST-level check failed (or only baselined ones did), 1 when one
did, 2 for bad usage (unknown check pattern, missing optional dependency, bad config, a
URL that is not http(s), a command that does not exist), 3 when the target could not be
audited (nothing listening, not an MCP endpoint, credentials refused): the one-line
reason is printed and heads every report.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mcpcore.conformance import wire

if TYPE_CHECKING:
    from mcpcore.conformance.redaction import Redactor


def configure(parser: argparse.ArgumentParser) -> None:
    """The subcommand's flags."""
    where = parser.add_argument_group("target")
    which = where.add_mutually_exclusive_group()
    which.add_argument("--url", help="Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    which.add_argument("--stdio", metavar="COMMAND",
                       help='a server command speaking stdio, e.g. "python -m myserver"')
    where.add_argument("--bearer", metavar="TOKEN", default=os.environ.get(
        "MCPCORE_CONFORMANCE_BEARER"), help="access token sent on every request "
        "(default: $MCPCORE_CONFORMANCE_BEARER)")
    where.add_argument("--oauth", metavar="FILE",
                       help="a pre-registered client (JSON: client_id, client_secret, scope): "
                            "the OAuth client discovers the AS and fetches a token")
    where.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                       help="an extra header on every request (repeatable)")
    what = parser.add_argument_group("what to run")
    what.add_argument("--spec", default="auto", choices=["auto", *wire.ERAS],
                      help="era to test; auto detects and runs every era served")
    what.add_argument("--check", action="append", default=[], metavar="PATTERN",
                      help="only checks matching an id, glob (headers.*), tag or level "
                           "(repeatable, or comma-separated)")
    what.add_argument("--skip", action="append", default=[], metavar="PATTERN",
                      help="leave out checks matching PATTERN")
    what.add_argument("--fixtures", choices=["official"],
                      help="the server exposes the official suite's fixture tools")
    what.add_argument("--audit", action="append", default=[], choices=["auth", "destructive"],
                      help="run a security audit pack (destructive: calls the tools that "
                           "--audit-config names, with its scratch arguments)")
    what.add_argument("--audit-config", metavar="FILE",
                      help="JSON settings for the audit pack (docs/conformance.md)")
    what.add_argument("--fuzz", type=int, default=0, metavar="N",
                      help="also send N generated malformed messages (needs hypothesis)")
    what.add_argument("--fuzz-seconds", type=float, default=None, metavar="S",
                      help="time budget of the whole fuzz run (default: 50, or 10 ms per "
                           "message when N is larger)")
    what.add_argument("--seed", type=int, help="fuzz seed (default: random)")
    what.add_argument("--expected-failures", metavar="FILE",
                      help="baseline: one check-id or era:check-id per line")
    what.add_argument("--list", action="store_true", help="list the checks and exit")
    how = parser.add_argument_group("how")
    how.add_argument("-j", "--jobs", type=int, default=4, help="checks run at once (default 4)")
    how.add_argument("--timeout", type=float, default=30.0, metavar="S",
                     help="per-check time limit (default 30)")
    how.add_argument("--request-timeout", type=float, default=10.0, metavar="S",
                     help="per-request time limit (default 10)")
    out = parser.add_argument_group("reports")
    out.add_argument("--json", metavar="FILE", help="JSON report ('-' for stdout)")
    out.add_argument("--junit", metavar="FILE", help="JUnit XML report")
    out.add_argument("--html", metavar="FILE", help="self-contained HTML report")
    out.add_argument("--markdown", metavar="FILE",
                     help="Markdown summary: problems, how to fix them, the failing exchange "
                          "(for a pull request or a CI step summary; '-' for stdout)")
    out.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    out.add_argument("--no-progress", action="store_true", help="print nothing while running")


def _patterns(values: list[str]) -> list[str]:
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def run(args: argparse.Namespace) -> int:
    """Run from parsed flags; returns the exit status."""
    from mcpcore.conformance.registry import all_checks, unknown_patterns

    include, exclude = _patterns(args.check), _patterns(args.skip)
    checks = all_checks()
    unknown = unknown_patterns(checks, include + exclude)
    if unknown:
        return _usage(f"no check matches {', '.join(unknown)} (see --list)")
    if args.list:
        for item in checks:
            eras = ",".join(sorted(item.eras))
            print(f"{item.id:<40} {item.level.value:<6} {item.pack:<8} {eras:<21} {item.title}")
        return 0
    if not args.url and not args.stdio:
        return _usage("give a target: --url URL or --stdio COMMAND")
    if args.url:
        parts = urlsplit(args.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            example = "http://" + args.url.split("://", 1)[-1]
            return _usage(f"--url {args.url!r} is not an http:// or https:// URL "
                          f"(for example --url {example})")
    if args.stdio:
        try:
            argv = shlex.split(args.stdio)
        except ValueError as exc:
            return _usage(f"--stdio {args.stdio!r}: {exc}")
        if not argv:
            return _usage("--stdio needs a command")
        if shutil.which(argv[0]) is None:
            return _usage(f"--stdio: no command {argv[0]!r} (not on PATH, or not executable)")
    if args.fuzz:
        try:
            import hypothesis  # noqa: F401
        except ImportError:
            return _usage("--fuzz needs hypothesis: pip install 'mcpcore[conformance]'")
    from mcpcore.conformance import redaction

    redactor = redaction.Redactor()
    redactor.add(args.bearer, "the --bearer token")
    try:
        with redaction.scrub_logs(redactor):
            return asyncio.run(_main(args, include, exclude, redactor))
    except _UsageError as exc:
        return _usage(redactor.text(str(exc)))
    except KeyboardInterrupt:
        return 130


class _UsageError(Exception):
    pass


async def _main(args: argparse.Namespace, include: list[str], exclude: list[str],
                redactor: Redactor) -> int:
    from mcpcore.conformance import progress as progress_module
    from mcpcore.conformance import redaction, reports
    from mcpcore.conformance.context import Options
    from mcpcore.conformance.credentials import CredentialsError, load_config, obtain
    from mcpcore.conformance.runner import RunConfig, load_expected
    from mcpcore.conformance.runner import run as run_suite
    from mcpcore.conformance.target import Target

    headers = {}
    for item in args.header:
        name, sep, value = item.partition(":")
        if not sep:
            # Not the value: it is likely a credential, and not yet known to the redactor.
            shown = re.split(r"[=\s]", item, maxsplit=1)[0]
            raise _UsageError(f"--header {shown!r}…: expected 'Name: value' (the value is "
                              "not shown)")
        headers[name.strip()] = value.strip()
    redactor.add_settings(headers, "--header")
    with redaction.use(redactor):
        bearer = args.bearer
        oauth: dict[str, object] = {}
        if args.oauth:
            if not args.url:
                raise _UsageError("--oauth needs an HTTP target (--url)")
            try:
                oauth = load_config(args.oauth)
                redactor.add_settings(oauth, "--oauth")
                bearer, endpoint = await obtain(oauth, args.url,
                                                allow_loopback=Target.http(args.url).loopback)
            except (CredentialsError, OSError, ValueError) as exc:
                raise _UsageError(f"--oauth: {exc}") from None
            oauth["token_endpoint"] = endpoint
        audit_settings = {}
        if args.audit_config:
            try:
                audit_settings = json.loads(Path(args.audit_config).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise _UsageError(f"--audit-config: {exc}") from None
            if not isinstance(audit_settings, dict):
                raise _UsageError(f"--audit-config {args.audit_config}: expected a JSON object")
        if oauth:
            audit_settings.setdefault("oauth", oauth)
        if "destructive" in args.audit and not isinstance(audit_settings.get("destructive"),
                                                          dict):
            raise _UsageError("--audit destructive calls only the tools you name: give "
                              "--audit-config FILE with a \"destructive\" object (see "
                              "docs/conformance.md, 'The destructive mode')")
        target = (Target.http(args.url, bearer=bearer, headers=headers) if args.url
                  else Target.stdio(args.stdio))
        expected = (load_expected(args.expected_failures) if args.expected_failures
                    else frozenset())
        fuzz_seconds = args.fuzz_seconds if args.fuzz_seconds is not None else \
            default_fuzz_seconds(args.fuzz)
        config = RunConfig(
            spec=args.spec, include=include, exclude=exclude, fixtures=bool(args.fixtures),
            audit=frozenset(args.audit), jobs=args.jobs, check_timeout=args.timeout,
            expected=expected, options=Options(
                request_timeout=args.request_timeout, fuzz_examples=args.fuzz,
                fuzz_seconds=fuzz_seconds, fuzz_seed=args.seed, audit=audit_settings))
        display = progress_module.choose(quiet=args.quiet, enabled=not args.no_progress)
        report = await run_suite(target, config, display)
    if report.problem and display is None:
        print(f"mcpcore conformance: not audited: {report.problem}", file=sys.stderr)
    outputs = {"json": reports.to_json, "junit": reports.to_junit, "html": reports.to_html,
               "markdown": reports.to_markdown}
    for flag, render in outputs.items():
        path = getattr(args, flag)
        if not path:
            continue
        text = render(report)
        if path == "-":
            sys.stdout.write(text)
        else:
            Path(path).write_text(text, encoding="utf-8")
    return report.exit_status


def default_fuzz_seconds(messages: int) -> float:
    """The fuzz run's time budget when ``--fuzz-seconds`` is not given: 50 s, or 10 ms
    per message for larger runs (a loaded 2-core machine sends about 100 a second)."""
    return max(50.0, messages / 100)


def _usage(message: str) -> int:
    print(f"mcpcore conformance: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """``python -m mcpcore.conformance``."""
    parser = argparse.ArgumentParser(prog="python -m mcpcore.conformance",
                                     description="Conformance and security audit of an MCP "
                                                 "server.")
    configure(parser)
    return run(parser.parse_args(argv))


__all__ = ["configure", "main", "run"]
