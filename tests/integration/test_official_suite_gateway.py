"""The official MCP conformance suite through ``mcpcore gateway``: the gateway in front
of ``examples.everything`` alone (prefixing off, so the suite finds the tools it knows)
passes every scored scenario the example passes directly, in both eras (issue "the
gateway", Done when 6), and the tasks extension's scenarios (unscored upstream) as the
example passes them directly. The suite talks to the gateway only; every call crosses it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import REPO, TEST_STATE_KEYS, running_example
from tests.integration.test_official_suite import (
    EXTRA_2025,
    EXTRA_2026,
    SCORED_2025,
    SCORED_2026,
    TASK_SCENARIOS,
    scenario_results,
)
from tests.support.processes import free_port, stop, wait_for_port

pytestmark = pytest.mark.integration

#: SHOULD-level warnings the gateway may give through the suite that the example does not
#: give directly, each with why (none today: an upstream's list changes reach a listen
#: stream through the gateway's own refresh, ``tests/gateway/test_list_changes.py``).
KNOWN_WARNINGS: dict[str, set[str]] = {}


@contextmanager
def gateway_over(upstream_url: str, tmp_path: Path) -> Iterator[str]:
    config = tmp_path / "gateway.toml"
    config.write_text(
        '[gateway]\nname = "suite-gateway"\nprefixing = false\n\n'
        f'[[upstream]]\nname = "everything"\nurl = {json.dumps(upstream_url)}\n',
        encoding="utf-8")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcore", "gateway", "serve", str(config),
         "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO, env={**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc, timeout=60)
        deadline = time.monotonic() + 60
        while httpx.get(f"http://127.0.0.1:{port}/readyz").status_code != 200:
            assert time.monotonic() < deadline, "the gateway's catalog was never built"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


def _run(suite: Path, url: str, era: str, out: Path
         ) -> tuple[str, dict[str, list[dict[str, object]]]]:
    proc = subprocess.run([str(suite), "server", "--url", url, "--requirements", era,
                           "-o", str(out)], capture_output=True, text=True, timeout=600)
    return proc.stdout[proc.stdout.find("=== SUMMARY"):], scenario_results(out)


@pytest.mark.parametrize("era, wanted", [("2026-07-28", SCORED_2026 | EXTRA_2026),
                                         ("2025-11-25", SCORED_2025 | EXTRA_2025)])
def test_official_suite_through_the_gateway(official_suite: Path, tmp_path: Path, era: str,
                                           wanted: set[str]) -> None:
    with running_example("everything") as upstream, gateway_over(upstream, tmp_path) as url:
        summary, results = _run(official_suite, url, era, tmp_path / "out")
    assert not wanted - set(results), f"did not run: {sorted(wanted - set(results))}"
    failing = {name: sorted({str(c["id"]) for c in checks if c["status"] == "FAILURE"})
               for name, checks in results.items()
               if name in wanted and any(c["status"] == "FAILURE" for c in checks)}
    assert not failing, f"failing scenarios: {failing}\n{summary}"
    warnings = {name: {str(c["id"]) for c in checks if c["status"] == "WARNING"}
                for name, checks in results.items() if name in wanted}
    unexpected = {name: sorted(ids - KNOWN_WARNINGS.get(name, set()))
                  for name, ids in warnings.items() if ids - KNOWN_WARNINGS.get(name, set())}
    assert not unexpected, f"scenarios with warnings: {unexpected}\n{summary}"


def test_tasks_extension_through_the_gateway(official_suite: Path, tmp_path: Path) -> None:
    """The tasks extension's scenarios (SEP-2663), each run on its own through the
    gateway: the example's tasks become the caller's under the gateway's ids, and every
    scenario that checks anything passes, as it does directly
    (``test_official_suite_all_with_extensions``; the suite skips
    ``tasks-status-notifications`` itself for now)."""
    out = tmp_path / "out"
    summaries: list[str] = []
    with running_example("everything") as upstream, gateway_over(upstream, tmp_path) as url:
        for scenario in sorted(TASK_SCENARIOS):
            proc = subprocess.run([str(official_suite), "server", "--url", url,
                                   "--scenario", scenario, "-o", str(out)],
                                  capture_output=True, text=True, timeout=600)
            summaries.append(proc.stdout[proc.stdout.find("=== SUMMARY"):])
    results = scenario_results(out)
    summary = "\n".join(summaries)
    assert not TASK_SCENARIOS - set(results), f"did not run: {TASK_SCENARIOS - set(results)}"
    checked = {name for name in TASK_SCENARIOS
               if any(c["status"] == "SUCCESS" for c in results[name])}
    assert checked == TASK_SCENARIOS - {"tasks-status-notifications"}, summary
    bad = {name: sorted({str(c["id"]) for c in checks
                         if c["status"] in ("FAILURE", "WARNING")})
           for name, checks in results.items()
           if any(c["status"] in ("FAILURE", "WARNING") for c in checks)}
    assert not bad, f"failing or warning scenarios: {bad}\n{summary}"
