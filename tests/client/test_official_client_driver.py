"""The official-suite driver (``mcpcore.conformance.official_client``): canned answers, flows,
exit codes; and, as an integration test, the official client scenarios themselves."""

from __future__ import annotations

import os
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
SCENARIOS = [
    "tools_call", "request-metadata", "sep-2322-client-request-state",
    "http-standard-headers", "http-custom-headers", "http-invalid-tool-headers",
    "json-schema-ref-no-deref", "json-schema-2020-12-preservation",
]

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


def test_elicitation_is_accepted_with_every_field_filled() -> None:
    answer = driver.on_elicit({"message": "m", "requestedSchema": {
        "type": "object", "properties": {"confirmed": {"type": "boolean"},
                                         "name": {"type": "string"}}}})
    assert answer == {"action": "accept", "content": {"confirmed": True, "name": "conformance"}}
    assert driver.on_elicit({"mode": "url", "message": "m", "url": "https://x"}) == {
        "action": "accept"}
    assert driver.on_roots()["roots"][0]["uri"].startswith("file://")
    assert driver.on_sample({})["role"] == "assistant"


@pytest.mark.parametrize("env, code", [
    ({"MCP_CONFORMANCE_PROTOCOL_VERSION": "2025-11-25"}, 1),
    ({"MCP_CONFORMANCE_SCENARIO": "auth/basic-cimd"}, 1),
    ({"MCP_CONFORMANCE_CONTEXT": "{not json"}, 1),
])
def test_unsupported_runs_exit_non_zero_with_a_message(
        env: dict[str, str], code: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert driver.main(["http://127.0.0.1:9/mcp"]) == code
    err = capsys.readouterr().err
    assert err.strip()
    if "2025-11-25" in env.values():
        assert "not supported yet (legacy client)" in err


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
        await driver.generic(client, None)
        await driver.standard_headers(client, None)
        await driver.custom_headers(client, {"toolCalls": [
            {"name": "test_custom_header", "arguments": {"region": " padded "}}]})


@pytest.mark.integration
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_official_client_scenario_passes(scenario: str) -> None:
    if shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("npm is missing, but CI needs it to install the official suite")
        pytest.skip("SKIPPED LOUDLY: npm is missing; `make test` installs it")
    command = f"{sys.executable} -m mcpcore.conformance.official_client"
    done = subprocess.run(
        [str(SUITE), "client", "--command", command, "--scenario", scenario,
         "--spec-version", "2026-07-28", "--force"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "MCPCORE_SUITE_QUIET": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "OVERALL: PASSED" in done.stdout + done.stderr
