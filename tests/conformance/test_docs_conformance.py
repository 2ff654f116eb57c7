"""docs/conformance.md: its code runs, its flags exist, its claims match the suite."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from mcpcore.conformance.cli import configure
from mcpcore.conformance.registry import all_checks

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
TEXT = DOC.read_text()


def test_every_flag_in_the_docs_exists() -> None:
    parser = argparse.ArgumentParser()
    configure(parser)
    known = {option for action in parser._actions for option in action.option_strings}
    mentioned = set(re.findall(r"`(--[a-z][a-z-]+)", TEXT.split(
        "## The official suite against our example")[0]))
    official = {"--requirements", "--scenario", "--spec-version"}   # the official suite's
    assert mentioned - known - official == set()


def test_the_add_a_check_recipe_registers_and_runs(tmp_path: Path) -> None:
    """The recipe's block, run in a fresh process against examples.everything."""
    section = TEXT[TEXT.index("### Adding a check"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    script = tmp_path / "recipe.py"
    script.write_text(code.group(1) + """
import asyncio
from examples.everything import app
from mcpcore.conformance import run_suite
report = asyncio.run(run_suite(app=app, spec="2026-07-28",
                               checks=["prompts.unknown-argument"]))
[outcome] = report.outcomes
print(outcome.check.id, outcome.verdict.value)
""")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=DOC.parents[1], timeout=120, check=False,
                          env={"PYTHONPATH": str(DOC.parents[1]), "PATH": "/usr/bin:/bin",
                               "MCPCORE_STATE_KEYS":
                               "docs:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"})
    assert done.returncode == 0, done.stderr[-2000:]
    check_id, verdict = done.stdout.split()
    assert check_id == "prompts.unknown-argument" and verdict in ("pass", "warn")


def test_the_pack_flags_match_the_registry() -> None:
    packs = {c.pack for c in all_checks()}
    assert packs == {"core", "fixtures", "audit", "fuzz"}
    for flag in ("--fixtures official", "--audit auth", "--fuzz N"):
        assert flag in TEXT


async def test_the_library_api_block_runs() -> None:
    """The "From your own tests" block, as a server author would paste it."""
    section = TEXT[TEXT.index("### From your own tests"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec(compile(code.group(1), "conformance.md#library-api", "exec"), namespace)
    await namespace["test_my_server_conforms"]()  # type: ignore[operator]
