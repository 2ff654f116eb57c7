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


def examples_under(name: str | None, monkeypatch: pytest.MonkeyPatch) -> int:
    """The small-3, full-9 budget under ``HYPOTHESIS_PROFILE=name`` (unset for None):
    ``budget`` reads the variable each time it is called."""
    if name is None:
        monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    else:
        monkeypatch.setenv("HYPOTHESIS_PROFILE", name)
    examples: int = budget(small=3, full=9, deadline=None).max_examples
    return examples


@pytest.mark.parametrize(("name", "examples"), [(None, 3), ("", 3), ("default", 3),
                                                ("full", 9)])
def test_the_profile_picks_the_budget(name: str | None, examples: int,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    assert examples_under(name, monkeypatch) == examples


def test_a_profile_that_does_not_exist_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError) as refused:
        examples_under("ful", monkeypatch)
    assert str(refused.value) == (
        "HYPOTHESIS_PROFILE='ful' is not a profile of these tests: use one of default, full")


def test_a_process_started_with_a_profile_uses_it() -> None:
    """The variable reaches a fresh interpreter's budgets (the on-demand command of
    docs/performance.md)."""
    code = ("from tests.support.budgets import budget; "
            "print(budget(small=3, full=9, deadline=None).max_examples)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                          env={**os.environ, "HYPOTHESIS_PROFILE": "full"},
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "9"), done.stderr


def test_the_run_loaded_the_named_profile() -> None:
    # tests/conftest.py loads it; only the full profile prints reproduction blobs.
    assert settings.default.print_blob is (profile() == "full")


def test_a_small_budget_is_at_most_the_full_one() -> None:
    with pytest.raises(ValueError) as refused:
        budget(small=10, full=5)
    assert str(refused.value) == "a small budget is 1..full examples, not 10 of 5"
