"""Fixtures shared by the engine and transport tests.

``peer`` runs a test once per transport: ``direct`` (``Server.handle``), ``http``
(the ASGI app in-process through httpx) and ``stdio`` (a real subprocess, one per test
module, marked ``integration``). Every message a peer receives is schema-checked.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from mcpcore.sealing import KeyRing
from tests.support.budgets import profile
from tests.support.peers import DirectPeer, HttpPeer, Peer, StdioPeer
from tests.support.processes import StdioProcess
from tests.support.schema import SchemaChecker, schema_checker

# The cyclic garbage collector while the test modules load: off. Collection builds a
# quarter of a million objects that live for the whole run (modules, test items,
# hypothesis strategies, parsed schemas), and each full collection walked them all again:
# 3.5 s of the 10 s that collecting the unit tests took. Once collected they are frozen
# (gc.freeze: left out of every later collection), and the collector is back on for the
# tests themselves, so garbage a test makes is collected as before.
gc.disable()


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()
    gc.enable()


# Hypothesis profiles, named by HYPOTHESIS_PROFILE: "default" (hypothesis' own settings;
# the slow properties run their small budgets) and "full" (their full budgets, on demand;
# tests/support/budgets.py).
settings.register_profile("full", print_blob=True)
settings.load_profile(profile())


def _ci_skips(config: pytest.Config) -> int:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not os.environ.get("CI") or reporter is None:
        return 0
    return len(reporter.stats.get("skipped", []))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI a skipped test fails the run: CI installs everything the tests need, so a
    skip there means something is missing, and it must not pass unnoticed."""
    if _ci_skips(session.config) and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    skipped = _ci_skips(config)
    if skipped:
        terminalreporter.write_line(
            f"CI: {skipped} test(s) skipped, so the run fails: in CI every test must run",
            red=True, bold=True)


@pytest.fixture(scope="session", autouse=True)
def state_keys() -> Iterator[str]:
    """A sealing key for the whole session (``mcpcore new-key``), so
    MRTR never falls back to the per-process dev key and its warning; subprocesses
    inherit it through the environment."""
    spec = KeyRing.new_key("tests")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MCPCORE_STATE_KEYS", spec)
        yield spec


@pytest.fixture(scope="session")
def checker() -> SchemaChecker:
    return schema_checker()


@pytest.fixture(scope="module")
def stdio_process(state_keys: str) -> Iterator[StdioProcess]:
    process = StdioProcess()
    try:
        yield process
    finally:
        code = process.close()
        assert process.garbage == [], f"non-JSON on stdout: {process.garbage[:3]}"
        assert code == 0, bytes(process.stderr[-2000:]).decode(errors="replace")


@pytest.fixture(params=["direct", "http", pytest.param("stdio", marks=pytest.mark.integration)])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    """The fixture server (``examples.everything``) behind each transport."""
    import examples.everything as everything

    kind: str = request.param
    if kind == "direct":
        yield DirectPeer(everything.server)
    elif kind == "http":
        yield HttpPeer(everything.app)
    else:
        stdio = StdioPeer(request.getfixturevalue("stdio_process"))
        yield stdio
        stdio.pump()
        assert stdio.stray == [], f"notifications for no request: {stdio.stray[:3]}"
        assert stdio.unmatched_responses == [], stdio.unmatched_responses[:3]
