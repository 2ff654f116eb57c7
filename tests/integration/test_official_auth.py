"""The official suite judges our OAuth: its ``auth/*`` client scenarios drive our client
(``mcpcore.conformance.official_client`` → ``official_auth``), and its ``authorization``
command drives our authorization server. A regression fails CI. These are the commands
docs/auth.md gives for both (``official-suite.sh client --requirements 2026-07-28``,
``mcpcore authorization-server``, ``official-suite.sh authorization``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import REPO, free_port, stop, wait_for_port

pytestmark = pytest.mark.integration

DRIVER = f"{sys.executable} -m mcpcore.conformance.official_client"
#: Required by the 2026-07-28 requirements file (25 scenarios).
REQUIRED_2026 = {
    *(f"auth/{name}" for name in (
        "metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
        "scope-from-www-authenticate", "scope-from-scopes-supported",
        "scope-omitted-when-undefined", "scope-step-up", "scope-retry-limit",
        "token-endpoint-auth-basic", "token-endpoint-auth-post", "token-endpoint-auth-none",
        "pre-registration", "resource-mismatch", "offline-access-scope",
        "offline-access-not-supported", "authorization-server-migration", "iss-supported",
        "iss-not-advertised", "iss-supported-missing", "iss-wrong-issuer", "iss-unexpected",
        "iss-normalized", "metadata-issuer-mismatch")),
}
#: Extension scenarios, not scored upstream, required of us.
EXTENSIONS = {"auth/client-credentials-basic", "auth/client-credentials-jwt", "auth/dpop",
              "auth/dpop-nonce", "auth/wif-jwt-bearer", "auth/enterprise-managed-authorization"}
#: The 2025-11-25 auth scenarios (the stateful wire).
REQUIRED_2025 = sorted(name for name in REQUIRED_2026 if name.removeprefix("auth/") in {
    "metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
    "scope-from-www-authenticate", "scope-from-scopes-supported",
    "scope-omitted-when-undefined", "scope-step-up", "scope-retry-limit",
    "token-endpoint-auth-basic", "token-endpoint-auth-post", "token-endpoint-auth-none",
    "pre-registration"})


def results(out: Path) -> dict[str, list[dict[str, object]]]:
    """Checks per ``auth/<name>`` from ``-o`` output (``auth/<name>-<timestamp>/``)."""
    found: dict[str, list[dict[str, object]]] = {}
    for checks_file in out.glob("auth/*/checks.json"):
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks_file.parent.name)
        found["auth/" + name] = json.loads(checks_file.read_text())
    return found


def bad(checks: dict[str, list[dict[str, object]]], names: set[str]) -> dict[str, list[str]]:
    """Failing or warning checks per scenario, each with the suite's reason and details."""
    return {
        name: sorted({f"{c['id']}: {c.get('errorMessage') or c.get('description')} "
                      f"{json.dumps(c.get('details'))[:300]}"
                      for c in found if c["status"] in ("FAILURE", "WARNING")})
        for name, found in checks.items()
        if name in names and any(c["status"] in ("FAILURE", "WARNING") for c in found)
    }


def test_auth_client_scenarios_2026(official_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(official_suite), "client", "--command", DRIVER, "--requirements", "2026-07-28",
         "-o", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    summary = proc.stdout[-4000:]
    checks = results(out)
    wanted = REQUIRED_2026 | EXTENSIONS
    assert not wanted - set(checks), f"did not run: {sorted(wanted - set(checks))}\n{summary}"
    assert not bad(checks, wanted), f"failing or warning: {bad(checks, wanted)}\n{summary}"


def test_enterprise_managed_authorization(official_suite: Path, tmp_path: Path) -> None:
    """The EMA scenario on its own, forced onto the 2026 wire: the suite's IdP gets the
    token exchange, its authorization server the ID-JAG, its server our token."""
    out = tmp_path / "out"
    scenario = "auth/enterprise-managed-authorization"
    proc = subprocess.run(
        [str(official_suite), "client", "--command", DRIVER, "--scenario", scenario,
         "--spec-version", "2026-07-28", "--force", "-o", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    checks = results(out).get(scenario, [])
    passed = {str(c["id"]) for c in checks if c["status"] == "SUCCESS"}
    assert {"complete-flow-token-exchange", "complete-flow-jwt-bearer",
            "valid-bearer-token"} <= passed, proc.stdout[-4000:]
    assert not bad({scenario: checks}, {scenario}), proc.stdout[-4000:]
    assert proc.returncode == 0, proc.stdout[-4000:]


@pytest.mark.parametrize("scenario", REQUIRED_2025)
def test_auth_client_scenarios_2025(official_suite: Path, tmp_path: Path, scenario: str) -> None:
    out = tmp_path / "out"
    subprocess.run(
        [str(official_suite), "client", "--command", DRIVER, "--scenario", scenario,
         "--spec-version", "2025-11-25", "-o", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    checks = results(out)
    assert scenario in checks and not bad(checks, {scenario})


def test_authorization_server_scenarios(official_suite: Path, tmp_path: Path) -> None:
    """Both ``authorization`` scenarios against ``mcpcore authorization-server``.

    ``authorization-code-grant`` waits for a person to open the URL it prints; here that
    person is a thread that GETs it (the demo server approves at once) and follows the
    redirect to the suite's callback listener.
    """
    as_port, callback_port = free_port(), free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mcpcore", "authorization-server", "--port", str(as_port)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for_port(as_port, server)
        issuer = f"http://127.0.0.1:{as_port}"
        lines: list[str] = []
        pattern = re.compile(re.escape(issuer) + r"/authorize\?\S+")

        def person(url: str) -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:  # until the callback listener is up
                try:
                    answer = httpx.get(url, follow_redirects=True, timeout=5)
                except httpx.ConnectError:
                    time.sleep(0.1)
                    continue
                if answer.status_code == 200:
                    return
                time.sleep(0.1)

        with subprocess.Popen(
            [str(official_suite), "authorization", "--url", issuer, "--client-id",
             "demo-public", "-p", str(callback_port), "-o", str(tmp_path / "out")],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        ) as suite:
            assert suite.stdout is not None
            for line in suite.stdout:
                lines.append(line)
                match = pattern.search(line)
                if match:
                    threading.Thread(target=person, args=(match.group(),), daemon=True).start()
            suite.wait(timeout=120)
    finally:
        stop(server)
    output = "".join(lines)
    assert "authorization-server-metadata-endpoint: 2 passed, 0 failed" in output, output
    assert "authorization-code-grant: 1 passed, 0 failed" in output, output
    assert "0 warnings" in output or "WARNING" not in output, output
    assert suite.returncode == 0, output
