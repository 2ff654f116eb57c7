"""Conformance tooling: our own conformance and security audit suite for any MCP server,
and the drivers that run our client under the official suite.

The suite (``mcpcore conformance --url …``; docs/conformance.md) is importable too::

    from mcpcore.conformance import run_suite, assert_conformant

Modules: ``model`` (Check, Level, Verdict, CheckOutcome), ``registry`` (``@check``,
selection), ``checks/`` (one module per area), ``runner`` (eras, parallelism, baseline),
``reports`` (JSON, JUnit, HTML), ``progress``, ``cli``; on the wire: ``wire``,
``transport``, ``asgi``, ``legacy``, ``validate``, ``target``. Heavy imports wait until
an attribute is used, so ``import mcpcore.conformance`` stays cheap.
"""

from __future__ import annotations

from mcpcore.lazy import lazy_exports as _lazy_exports

# This folder is installed, and imported, as ``mcpcore.conformance`` (pyproject.toml's
# package-dir). With a checkout on sys.path (pytest, ``python -m examples.NAME``) it could
# also be imported as ``conformance``: a second copy of every class in it, so that is refused.
if __name__ != "mcpcore.conformance":  # pragma: no cover - only a mistaken import reaches this
    raise ImportError(f"import this package as mcpcore.conformance, not as {__name__}")

_LAZY = {
    "run_suite": "mcpcore.conformance.api", "run_suite_sync": "mcpcore.conformance.api",
    "assert_conformant": "mcpcore.conformance.api", "Target": "mcpcore.conformance.target",
    "RunConfig": "mcpcore.conformance.runner", "Report": "mcpcore.conformance.runner",
    "Options": "mcpcore.conformance.context", "check": "mcpcore.conformance.registry",
    "Level": "mcpcore.conformance.model", "Verdict": "mcpcore.conformance.model",
}


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY)


__all__ = ["Level", "Options", "Report", "RunConfig", "Target", "Verdict", "assert_conformant",
           "check", "run_suite", "run_suite_sync"]
