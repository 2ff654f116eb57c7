"""The slow properties' budgets follow HYPOTHESIS_PROFILE (tests/support/budgets.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.budgets import budget, profile

ROOT = Path(__file__).resolve().parents[2]


def examples_under(name: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    if name is not None:
        env["HYPOTHESIS_PROFILE"] = name
    code = ("from tests.support.budgets import budget; "
            "print(budget(small=3, full=9, deadline=None).max_examples)")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(("name", "examples"), [(None, "3"), ("", "3"), ("default", "3"),
                                                ("full", "9")])
def test_the_profile_picks_the_budget(name: str | None, examples: str) -> None:
    done = examples_under(name)
    assert (done.returncode, done.stdout.strip()) == (0, examples), done.stderr


def test_a_profile_that_does_not_exist_is_refused() -> None:
    done = examples_under("ful")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        "ValueError: HYPOTHESIS_PROFILE='ful' is not a profile of these tests: "
        "use one of default, full")


def test_the_run_loaded_the_named_profile() -> None:
    # tests/conftest.py loads it; only the full profile prints reproduction blobs.
    assert settings.default.print_blob is (profile() == "full")


def test_a_small_budget_is_at_most_the_full_one() -> None:
    with pytest.raises(ValueError) as refused:
        budget(small=10, full=5)
    assert str(refused.value) == "a small budget is 1..full examples, not 10 of 5"
