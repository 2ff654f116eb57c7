"""The official-suite driver (``mcpcore.conformance.official_client``): canned answers, flows,
exit codes; and, as an integration test, the official client scenarios themselves, run
as docs/conformance.md shows (``official-suite.sh client --command ...``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from client_doubles import Connect

from mcpcore.conformance import official_client as driver

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "scripts" / "official-suite.sh"
#: Every client scenario of the suite that is not ``auth/*`` or an extension, at each
#: wire version it runs at (``scripts/official-suite.sh list --client``).
SCENARIOS = {
    "2026-07-28": [
        "tools_call", "request-metadata", "sep-2322-client-request-state",
        "http-standard-headers", "http-custom-headers", "http-invalid-tool-headers",
        "json-schema-ref-no-deref", "json-schema-2020-12-preservation",
    ],
    "2025-11-25": [
        "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
        "json-schema-2020-12-preservation",
    ],
    "2025-06-18": ["initialize", "tools_call"],
}
RUNS = [(version, name) for version, names in SCENARIOS.items() for name in names]

VALUES = [
    ({"type": "string"}, "conformance"),
    ({"type": "string", "default": "d"}, "d"),
    ({"type": "string", "format": "email"}, "conformance@example.com"),
    ({"type": "string", "minLength": 15}, "conformancexxxx"),
    ({"type": "string", "maxLength": 3}, "con"),
    ({"type": "string", "enum": ["b", "a"]}, "b"),
    ({"type": "string", "oneOf": [{"const": "v1", "title": "V1"}]}, "v1"),
    ({"type": "integer", "minimum": 5}, 5),
    ({"type": "number", "maximum": 0}, 0),
    ({"type": "boolean"}, True),
    ({"type": "array", "items": {"type": "string", "enum": ["x"]}}, ["x"]),
    ({"type": "array", "items": {"anyOf": [{"const": "y", "title": "Y"}]}}, ["y"]),
    ({"type": ["null", "boolean"]}, True),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
     {"a": 1}),
]


@pytest.mark.parametrize("schema, value", VALUES)
def test_sample_values_fit_their_schema(schema: dict[str, Any], value: Any) -> None:
    assert driver.sample_value(schema) == value


def test_elicitation_is_accepted_with_every_field_filled_but_the_defaulted() -> None:
    # The client fills in the defaults itself (SEP-1034): the canned answer leaves them.
    answer = driver.on_elicit({"message": "m", "requestedSchema": {
        "type": "object", "properties": {"confirmed": {"type": "boolean"},
                                         "name": {"type": "string"},
                                         "age": {"type": "integer", "default": 30}}}})
    assert answer == {"action": "accept", "content": {"confirmed": True, "name": "conformance"}}
    assert driver.on_elicit({"mode": "url", "message": "m", "url": "https://x"}) == {
        "action": "accept"}
    assert driver.on_roots()["roots"][0]["uri"].startswith("file://")
    assert driver.on_sample({})["role"] == "assistant"


@pytest.mark.parametrize("env, code", [
    ({"MCP_CONFORMANCE_CONTEXT": "{not json"}, 1),
])
def test_unsupported_runs_exit_non_zero_with_a_message(
        env: dict[str, str], code: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert driver.main(["http://127.0.0.1:9/mcp"]) == code
    assert capsys.readouterr().err.strip()


def test_auth_scenarios_go_to_the_auth_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CONFORMANCE_SCENARIO", "auth/basic-cimd")
    monkeypatch.setenv("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    monkeypatch.setenv("MCP_CONFORMANCE_CONTEXT", '{"client_id": "x"}')
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr("mcpcore.conformance.official_auth.main",
                        lambda *args: calls.append(args) or 0)
    assert driver.main(["http://127.0.0.1:9/mcp"]) == 0
    assert calls == [("http://127.0.0.1:9/mcp", "auth/basic-cimd", {"client_id": "x"},
                      "2025-11-25")]


@pytest.mark.parametrize("version, mode", [
    ("2026-07-28", "2026-07-28"), ("2025-11-25", "2025-11-25"),
    ("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"), ("2099-01-01", "auto"),
])
def test_the_wire_follows_the_suite_version(version: str, mode: str) -> None:
    assert driver.mode_for(version) == mode


def test_no_url_is_a_usage_error() -> None:
    assert driver.main([]) == 2


def test_unreachable_server_exits_1(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MCP_CONFORMANCE_SCENARIO", "tools_call")
    monkeypatch.setenv("MCP_CONFORMANCE_PROTOCOL_VERSION", "2026-07-28")
    assert driver.main(["http://127.0.0.1:9/mcp"]) == 1
    assert "failed" in capsys.readouterr().err


async def test_generic_and_header_flows_against_the_fixture_server(connect: Connect) -> None:
    options = {"on_elicit": driver.on_elicit, "on_sample": driver.on_sample,
               "on_roots": driver.on_roots}
    async with connect(**options) as client:
        await driver.initialize(client, None)
        await driver.request_metadata(client, None)
        await driver.no_deref(client, None)
        await driver.generic(client, None)
        await driver.standard_headers(client, None)
        await driver.custom_headers(client, {"toolCalls": [
            {"name": "test_custom_header", "arguments": {"region": " padded "}}]})


def require_suite() -> None:
    if shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("npm is missing, but CI needs it to install the official suite")
        pytest.skip("SKIPPED LOUDLY: npm is missing; `make test` installs it")


@pytest.mark.integration
def test_the_table_covers_every_client_scenario_of_the_suite() -> None:
    """A scenario the suite adds (or a version it adds one to) fails here until the
    driver's table and ``SCENARIOS`` above cover it."""
    require_suite()
    listed = subprocess.run([str(SUITE), "list", "--client"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "MCPCORE_SUITE_QUIET": "1"})
    assert listed.returncode == 0, listed.stderr
    found = set()
    for name, versions in re.findall(r"^\s*- (\S+) \[([^\]]+)\]", listed.stdout, re.M):
        if name.startswith("auth/") or "extension" in versions:
            continue
        for version in versions.split(","):
            if version in SCENARIOS:
                found.add((version, name))
    assert found and found <= set(RUNS), sorted(found - set(RUNS))


@pytest.mark.integration
@pytest.mark.parametrize("version, scenario", RUNS)
def test_official_client_scenario_passes(version: str, scenario: str) -> None:
    require_suite()
    command = f"{sys.executable} -m mcpcore.conformance.official_client"
    done = subprocess.run(
        [str(SUITE), "client", "--command", command, "--scenario", scenario,
         "--spec-version", version, "--force"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "MCPCORE_SUITE_QUIET": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "OVERALL: PASSED" in done.stdout + done.stderr
