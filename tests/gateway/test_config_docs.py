"""docs/gateway-config.md, run as written: its ``mcpcore gateway check`` commands exit 0,
its example is examples/gateway_config.toml, its bad file gets the output it shows, and
its tables list every key the reader knows, with the dataclasses' defaults."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

from mcpcore.gateway import config as gateway_config
from tests.docs_blocks import (
    ROOT,
    as_printed,
    blocks,
    commands,
    marked,
    reader_env,
    run_printed,
)

PAGE = ROOT / "docs" / "gateway-config.md"
TEXT = PAGE.read_text(encoding="utf-8")
MARKER = "tests/gateway/test_config_docs.py"
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|", re.M)


def run_check(command: str) -> subprocess.CompletedProcess[str]:
    assert " gateway check " in command, command
    return run_printed(command)


def test_every_command_of_the_page_runs_as_printed() -> None:
    lines = [c for b in marked(PAGE, MARKER, "bash") for c in commands(b)]
    assert len(lines) == 2
    for command in lines:
        done = run_check(command)
        assert done.returncode == 0, (command, done.stderr)
        assert "upstream   notes" in done.stdout and "s3cret" not in done.stdout


def test_the_example_on_the_page_is_the_example_file() -> None:
    shown = next(b for b in blocks(PAGE) if b.lang == "toml" and b.marker is None)
    assert shown.code == (ROOT / "examples" / "gateway_config.toml").read_text()


def test_the_bad_file_gets_the_output_the_page_shows(tmp_path: Path) -> None:
    (bad,) = marked(PAGE, MARKER, "toml")
    (output,) = marked(PAGE, MARKER, "")
    (tmp_path / "bad.toml").write_text(bad.code)
    done = subprocess.run(["bash", "-c", as_printed(".venv/bin/mcpcore gateway check bad.toml")],
                          cwd=tmp_path, env=reader_env(), capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == output.code


def _section(heading: str) -> dict[str, str]:
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", TEXT, re.M | re.S)
    assert match, heading
    return {name: cell for name, cell in ROW.findall(match.group(1)) if name != "Key"}


def _default(cell: str) -> Any:
    """A table's default cell as a TOML value (``"__"``, ``true``, ``300``, ``{}``)."""
    return tomllib.loads(f"v = {cell.strip('`')}")["v"]


def _check_defaults(rows: dict[str, str], cls: type[Any], skip: set[str]) -> None:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, cell in rows.items():
        if key in skip or cell.startswith("—"):
            continue
        field = fields[key]
        default = (field.default_factory() if field.default_factory is not dataclasses.MISSING
                   else field.default)
        shown = _default(cell)
        assert (tuple(shown) if isinstance(shown, list) else shown) == default, (key, cell)


def test_the_gateway_table_lists_every_key_with_its_default() -> None:
    rows = _section("`[gateway]`")
    assert list(rows) == list(gateway_config._GATEWAY_KEYS)
    _check_defaults(rows, gateway_config.GatewayConfig, set())


def test_the_upstream_table_lists_every_key_with_its_default() -> None:
    rows = _section("`[[upstream]]`")
    assert set(rows) == set(gateway_config._UPSTREAM_KEYS)
    _check_defaults(rows, gateway_config.UpstreamConfig,
                    {"prefix", "tools", "resources", "prompts", "credentials"})


def test_the_credentials_table_lists_every_key() -> None:
    rows = _section("Credentials")
    assert set(rows) == {"kind", *gateway_config._CREDENTIAL_KEYS}
    kinds = next(line for line in TEXT.splitlines() if line.startswith("| `kind` |"))
    for kind in gateway_config.CREDENTIAL_KINDS:
        assert f"`{kind}`" in kinds
