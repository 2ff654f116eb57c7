"""The command blocks of docs/policy.md and docs/operating.md, run as written.

- policy.md: every ``mcpcore policy ...`` command exits 0, and the ``explain`` output
  the page shows is what the command prints;
- operating.md: the example server starts as the page says and answers each ``curl``
  of the block; every series the alert rules name exists in ``/metrics``.
"""

from __future__ import annotations

import re
import subprocess

import httpx
import yaml

from tests.docs_blocks import (
    ROOT,
    commands,
    marked,
    run_printed,
    start_printed,
    stop_printed,
)
from tests.support.processes import free_port, wait_for_port

POLICY = ROOT / "docs" / "policy.md"
OPERATING = ROOT / "docs" / "operating.md"
MARKER = "tests/test_docs_operations.py"


def run_mcpcore(command: str) -> subprocess.CompletedProcess[str]:
    """A ``mcpcore policy`` line of the page, run as printed (``docs_blocks``)."""
    assert " policy " in command, command
    return run_printed(command)


def test_every_mcpcore_policy_command_of_policy_md_runs() -> None:
    lines = [c for b in marked(POLICY, MARKER, "bash") for c in commands(b)]
    assert len(lines) >= 3
    for command in lines:
        done = run_mcpcore(command)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.strip()


def test_the_explain_output_policy_md_shows_is_what_the_command_prints() -> None:
    explain = next(c for b in marked(POLICY, MARKER, "bash") for c in commands(b)
                   if " explain " in c)
    printed = run_mcpcore(explain).stdout.splitlines()
    (shown,) = marked(POLICY, MARKER, "")
    lines = [line for line in shown.code.splitlines() if line.strip() not in ("", "...")]
    assert len(lines) >= 10
    for line in lines:
        assert line in printed, line


def test_the_operated_server_answers_as_operating_md_says() -> None:
    """The block's lines up to the server, run as printed (its port swapped for a free
    one, the server kept in the foreground), then each ``curl``."""
    (block,) = marked(OPERATING, MARKER, "bash")
    lines = commands(block)
    at = next(i for i, line in enumerate(lines) if "-m examples.operated" in line)
    assert "--port 8000" in lines[at] and lines[at].endswith("&")
    curls = [line for line in lines if line.startswith("curl ")]
    assert len(curls) == 3
    port = free_port()
    script = "\n".join([*lines[:at], lines[at].removesuffix("&").replace(
        "--port 8000", f"--port {port}")])
    proc = start_printed(script, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        with httpx.Client(timeout=10) as client:
            for curl in curls:
                url = re.search(r"http://\S+", curl)
                assert url is not None
                response = client.get(url.group().replace(":8000", f":{port}"))
                assert response.status_code == 200, (curl, response.text)
                wanted = re.search(r"\| grep (\S+)", curl)
                if wanted:
                    assert wanted.group(1) in response.text, curl
                elif "healthz" in curl or "readyz" in curl:
                    assert response.text in ("ok\n", "ready\n")
    finally:
        stop_printed(proc)


def test_every_series_the_alert_rules_name_exists() -> None:
    import asyncio

    from mcpcore import Server
    from mcpcore.metrics import Metrics

    (block,) = marked(OPERATING, MARKER, "yaml")
    rules = yaml.safe_load(block.code)["groups"][0]["rules"]
    assert len(rules) >= 6 and all({"alert", "expr"} <= set(rule) for rule in rules)
    text = asyncio.run(Metrics(Server("s")).render()).decode()
    declared = set(re.findall(r"^# TYPE (\S+) (\S+)", text, re.M))
    names: set[str] = set()
    for name, kind in declared:
        names.add(name)
        if kind == "counter":
            names.add(name + "_total")
        if kind == "histogram":
            names.update(name + suffix for suffix in ("_bucket", "_count", "_sum"))
    for rule in rules:
        for series in re.findall(r"\bmcpcore_\w+", rule["expr"]):
            assert series in names, (rule["alert"], series)
