"""The library API: run the suite from your own code or tests.

::

    from mcpcore.conformance import run_suite, assert_conformant

    async def test_my_server_conforms() -> None:          # pytest-asyncio
        report = await run_suite(app=my_asgi_app)         # in-process, no socket
        assert_conformant(report)                         # fails listing MUST failures

``run_suite`` takes exactly one of ``app`` (an ASGI app), ``url`` or ``stdio`` (a
command), plus the ``RunConfig`` fields as keywords; ``run_suite_sync`` is the same for
synchronous callers. Reports render with ``mcpcore.conformance.reports``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from mcpcore.conformance.asgi import lifespan
from mcpcore.conformance.context import Options
from mcpcore.conformance.model import Verdict
from mcpcore.conformance.progress import line
from mcpcore.conformance.runner import Progress, Report, RunConfig, run
from mcpcore.conformance.target import Target


async def run_suite(*, app: Any = None, url: str | None = None, stdio: str | None = None,
                    target: Target | None = None, bearer: str | None = None,
                    app_url: str = "http://127.0.0.1:8000/mcp", spec: str = "auto",
                    checks: Iterable[str] = (), skip: Iterable[str] = (),
                    fixtures: bool = False, audit: Iterable[str] = (), jobs: int = 4,
                    check_timeout: float = 30.0, expected: Iterable[str] = (),
                    options: Options | None = None, progress: Progress | None = None,
                    run_lifespan: bool = True) -> Report:
    """Run the suite against one target; see the module docstring."""
    given = [x for x in (app, url, stdio, target) if x is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of app=, url=, stdio= or target=")
    config = RunConfig(spec=spec, include=list(checks), exclude=list(skip), fixtures=fixtures,
                       audit=frozenset(audit), jobs=jobs, check_timeout=check_timeout,
                       expected=frozenset(expected), options=options or Options())
    if target is None:
        if app is not None:
            target = Target.asgi(app, url=app_url, bearer=bearer)
        elif url is not None:
            target = Target.http(url, bearer=bearer)
        else:
            assert stdio is not None
            target = Target.stdio(stdio)
    if app is not None and run_lifespan:
        async with lifespan(app):
            return await run(target, config, progress)
    return await run(target, config, progress)


def run_suite_sync(**kwargs: Any) -> Report:
    """``run_suite`` for synchronous code (starts its own event loop)."""
    return asyncio.run(run_suite(**kwargs))


def assert_conformant(report: Report, *, strict: bool = False) -> None:
    """Raise ``AssertionError`` listing every blocking outcome (with ``strict``, warnings
    and errors of any level too)."""
    bad = [o for o in report.outcomes if o.blocking or (
        strict and not o.expected and o.verdict in (Verdict.WARN, Verdict.ERROR, Verdict.FAIL))]
    if report.problem or not report.eras:
        raise AssertionError(f"{report.target}: not audited: "
                             f"{report.problem or 'the target served neither era'}")
    if bad:
        raise AssertionError(f"{len(bad)} conformance failure(s) on {report.target}:\n"
                             + "\n".join(line(o) for o in bad))


__all__ = ["assert_conformant", "run_suite", "run_suite_sync"]
