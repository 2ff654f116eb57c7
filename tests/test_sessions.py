"""Legacy session records: ownership, expiry, and the state table's edges."""

from __future__ import annotations

import pytest

from mcpcore.legacy.sessions import SessionManager, SessionStateError, next_phase
from mcpcore.stores.memory import MemoryStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_session_belongs_to_the_principal_that_opened_it() -> None:
    manager = SessionManager(MemoryStore())
    record = await manager.create(version="2025-11-25", capabilities={}, client_info=None,
                                  principal="https://idp|alice")
    assert await manager.load(record.id, "https://idp|alice") is not None
    # A stolen session id is worth nothing to another principal.
    assert await manager.load(record.id, "https://idp|mallory") is None
    assert await manager.load(record.id, "") is None


async def test_idle_sessions_expire_and_activity_keeps_them_alive() -> None:
    clock = Clock()
    manager = SessionManager(MemoryStore(clock=clock), idle_ttl=60, clock=clock)
    record = await manager.create(version="2025-11-25", capabilities={}, client_info=None)
    idle = await manager.create(version="2025-11-25", capabilities={}, client_info=None)
    for _ in range(5):  # five minutes of steady use
        clock.now += 59
        assert await manager.load(record.id) is not None
        await manager.apply(record, "request")
    assert await manager.load(idle.id) is None
    clock.now += 61
    assert await manager.load(record.id) is None


async def test_delete_removes_the_record() -> None:
    manager = SessionManager(MemoryStore())
    record = await manager.create(version="2025-06-18", capabilities={}, client_info=None)
    await manager.apply(record, "delete")
    assert await manager.load(record.id) is None


@pytest.mark.parametrize("session_id", ["", "x" * 129, "no-such-session"])
async def test_unknown_or_malformed_ids_load_nothing(session_id: str) -> None:
    assert await SessionManager(MemoryStore()).load(session_id) is None


def test_closed_sessions_accept_nothing() -> None:
    for event in ("initialized", "request", "notification", "response", "delete"):
        with pytest.raises(SessionStateError):
            next_phase("closed", event)  # type: ignore[arg-type]
