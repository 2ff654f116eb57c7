"""Fixtures for the suite's own tests: the apps under test, in-process."""

from __future__ import annotations

import os

import pytest

from tests.integration.conftest import TEST_STATE_KEYS


@pytest.fixture(autouse=True)
def _state_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # The example seals MRTR state with this ring; every test process shares it.
    monkeypatch.setenv("MCPCORE_STATE_KEYS", os.environ.get("MCPCORE_STATE_KEYS",
                                                            TEST_STATE_KEYS))


from tests.integration.conftest import official_suite  # noqa: E402,F401 - shared fixture
