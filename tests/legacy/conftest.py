"""Fixtures for the legacy shim tests: the everything example in-process, a client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.legacy import LegacyClient

#: The integration conftest's fixed test key ring (MRTR sealing needs one; no dev key).
TEST_STATE_KEYS = "test1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"


@pytest.fixture(autouse=True)
def state_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """MRTR never falls back to the per-process dev key (and its warning)."""
    import os

    if not os.environ.get("MCPCORE_STATE_KEYS"):
        monkeypatch.setenv("MCPCORE_STATE_KEYS", TEST_STATE_KEYS)


@pytest.fixture
def app(state_keys: None) -> Any:
    import examples.everything as everything

    return everything.app


@pytest.fixture
async def client(app: Any) -> AsyncIterator[LegacyClient]:
    legacy = LegacyClient(app)
    yield legacy
    await legacy.aclose()
