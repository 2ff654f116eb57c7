"""Legacy session records and their state table (mcpcore/legacy/sessions.py).

The table is tried exhaustively, as h2 tries every (state, input): every allowed pair
goes where the table says, every other raises ``SessionStateError``.
"""

from __future__ import annotations

import itertools
import string
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.errors import ErrorCode, InvalidParams, InvalidRequest
from mcpcore.legacy.sessions import (
    SESSION_PREFIX,
    TRANSITIONS,
    Phase,
    SessionEvent,
    SessionManager,
    SessionStateError,
    next_phase,
)
from mcpcore.stores.memory import MemoryStore
from mcpcore.versions import LEGACY

PHASES: tuple[Phase, ...] = get_args(Phase)
EVENTS: tuple[SessionEvent, ...] = get_args(SessionEvent)
ALL_PAIRS = list(itertools.product(PHASES, EVENTS))

#: The lifecycle, written out independently of the table under test.
EXPECTED: dict[tuple[str, str], str] = {
    ("initializing", "initialized"): "ready",
    ("initializing", "request"): "initializing",       # pipelined right after initialize
    ("initializing", "notification"): "initializing",
    ("initializing", "response"): "initializing",
    ("initializing", "delete"): "closed",
    ("ready", "initialized"): "ready",                   # a repeated initialized is harmless
    ("ready", "request"): "ready",
    ("ready", "notification"): "ready",
    ("ready", "response"): "ready",
    ("ready", "delete"): "closed",
}


def test_phases_and_events_are_the_ones_the_table_uses() -> None:
    assert set(PHASES) == {"initializing", "ready", "closed"}
    assert set(EVENTS) == {"initialized", "request", "notification", "response", "delete"}
    assert {p for p, _ in TRANSITIONS} | set(TRANSITIONS.values()) <= set(PHASES)
    assert {e for _, e in TRANSITIONS} <= set(EVENTS)


def test_table_is_the_documented_lifecycle() -> None:
    assert TRANSITIONS == EXPECTED


@pytest.mark.parametrize(("phase", "event"), ALL_PAIRS)
def test_every_phase_event_pair(phase: Phase, event: SessionEvent) -> None:
    if (phase, event) in TRANSITIONS:
        assert next_phase(phase, event) == TRANSITIONS[(phase, event)]
    else:
        with pytest.raises(SessionStateError) as info:
            next_phase(phase, event)
        assert phase in info.value.message and event in info.value.message


def test_closed_is_terminal() -> None:
    assert not any(p == "closed" for p, _ in TRANSITIONS)
    for event in EVENTS:
        with pytest.raises(SessionStateError):
            next_phase("closed", event)


def test_session_state_error_is_an_invalid_request() -> None:
    error = SessionStateError("x")
    assert isinstance(error, InvalidRequest)
    assert error.code == ErrorCode.INVALID_REQUEST == -32600


@given(st.lists(st.sampled_from(EVENTS), max_size=30))
def test_any_event_sequence_follows_the_table_or_stops_at_the_first_error(
        events: list[SessionEvent]) -> None:
    phase: Phase = "initializing"
    for event in events:
        if (phase, event) not in TRANSITIONS:
            with pytest.raises(SessionStateError):
                next_phase(phase, event)
            return
        phase = next_phase(phase, event)
        assert phase in PHASES
        if event == "delete":
            assert phase == "closed"


# -- SessionManager on a MemoryStore with a hand-driven clock ---------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def manager(clock: Clock) -> SessionManager:
    return SessionManager(MemoryStore(clock=clock), idle_ttl=60.0, clock=clock)


VISIBLE_ASCII = set(chr(c) for c in range(0x21, 0x7F))


async def test_session_ids_are_visible_ascii_unguessable_and_unique(
        manager: SessionManager) -> None:
    ids = set()
    for _ in range(200):
        record = await manager.create(version="2025-11-25", capabilities={}, client_info=None)
        assert set(record.id) <= VISIBLE_ASCII
        assert set(record.id) <= set(string.ascii_letters + string.digits + "-_")
        assert len(record.id) >= 43  # 256 bits of token_urlsafe
        ids.add(record.id)
    assert len(ids) == 200


async def test_create_load_roundtrip(manager: SessionManager) -> None:
    record = await manager.create(version="2025-06-18", capabilities={"elicitation": {}},
                                  client_info={"name": "c", "version": "1"})
    loaded = await manager.load(record.id)
    assert loaded == record
    assert loaded is not None and loaded.phase == "initializing"
    meta = loaded.meta(progress_token="p1")
    assert meta.protocol_version == "2025-06-18"
    assert meta.client_capabilities == {"elicitation": {}}
    assert meta.progress_token == "p1"


@pytest.mark.parametrize("session_id", ["", "nope", "x" * 129, "a b", "\x00"])
async def test_unknown_or_malformed_ids_load_as_none(manager: SessionManager,
                                                     session_id: str) -> None:
    assert await manager.load(session_id) is None


async def test_a_corrupt_record_loads_as_none(manager: SessionManager) -> None:
    await manager.store.set(SESSION_PREFIX + "corrupt", b"\xc1not msgpack", ttl=60.0)
    assert await manager.load("corrupt") is None


async def test_apply_moves_phase_and_delete_removes_the_record(
        manager: SessionManager) -> None:
    record = await manager.create(version="2025-11-25", capabilities={}, client_info=None)
    await manager.apply(record, "request")
    assert (await manager.load(record.id)).phase == "initializing"  # type: ignore[union-attr]
    await manager.apply(record, "initialized")
    assert (await manager.load(record.id)).phase == "ready"  # type: ignore[union-attr]
    await manager.apply(record, "delete")
    assert await manager.load(record.id) is None


async def test_sessions_expire_after_the_idle_ttl(manager: SessionManager,
                                                  clock: Clock) -> None:
    record = await manager.create(version="2025-11-25", capabilities={}, client_info=None)
    clock.now += 59.0
    assert await manager.load(record.id) is not None
    clock.now += 2.0
    assert await manager.load(record.id) is None


async def test_activity_keeps_a_session_alive(manager: SessionManager, clock: Clock) -> None:
    """This used to expire busy sessions: apply() saved only on a phase change."""
    record = await manager.create(version="2025-11-25", capabilities={}, client_info=None)
    await manager.apply(record, "initialized")
    for event in ("request", "notification", "response", "request", "request"):
        clock.now += 30.0  # one message every 30 s for 2.5 minutes, TTL 60 s
        loaded = await manager.load(record.id)
        assert loaded is not None
        await manager.apply(loaded, event)  # type: ignore[arg-type]
    clock.now += 61.0
    assert await manager.load(record.id) is None  # idle again: it expires


async def test_a_session_is_bound_to_its_principal(manager: SessionManager) -> None:
    record = await manager.create(version="2025-11-25", capabilities={}, client_info=None,
                                  principal="idp|alice")
    assert await manager.load(record.id, "idp|alice") is not None
    assert await manager.load(record.id, "idp|mallory") is None
    assert await manager.load(record.id) is not None  # no principal given: no check


async def test_log_level_is_validated_and_saved(manager: SessionManager) -> None:
    record = await manager.create(version="2025-11-25", capabilities={}, client_info=None)
    with pytest.raises(InvalidParams):
        await manager.set_log_level(record, "loud")
    await manager.set_log_level(record, "warning")
    assert (await manager.load(record.id)).log_level == "warning"  # type: ignore[union-attr]


async def test_subscribe_and_unsubscribe_are_idempotent(manager: SessionManager) -> None:
    record = await manager.create(version="2025-11-25", capabilities={}, client_info=None)
    for _ in range(2):
        await manager.subscribe(record, "test://a")
    await manager.subscribe(record, "test://b")
    assert (await manager.load(record.id)).subscriptions == [  # type: ignore[union-attr]
        "test://a", "test://b"]
    for _ in range(2):
        await manager.unsubscribe(record, "test://a")
    assert (await manager.load(record.id)).subscriptions == [  # type: ignore[union-attr]
        "test://b"]


NEGOTIATION = [
    ("2025-11-25", "2025-11-25"),
    ("2025-06-18", "2025-06-18"),
    ("2025-03-26", "2025-03-26"),
    ("2026-07-28", "2025-11-25"),   # never the handshake-less modern revision
    ("2099-01-01", "2025-11-25"),
    ("2024-11-05", "2025-11-25"),   # older than we serve: our latest, the client decides
    ("", "2025-11-25"),
    (None, "2025-11-25"),
    (20251125, "2025-11-25"),
]


@pytest.mark.parametrize(("requested", "answered"), NEGOTIATION)
def test_negotiation(manager: SessionManager, requested: object, answered: str) -> None:
    assert manager.negotiate(requested) == answered
    assert manager.negotiate(requested) in LEGACY


async def test_a_session_whose_write_failed_is_not_left_behind(clock: Clock) -> None:
    """A write that lands though its answer is lost (a timeout as Redis comes back): the
    client is told to retry and opens another session; this one is removed at once."""
    from mcpcore.stores.base import StoreUnavailable

    class LostAnswer(MemoryStore):
        async def set(self, key: str, value: bytes, *, ttl: float | None) -> None:
            await super().set(key, value, ttl=ttl)
            raise StoreUnavailable("the answer timed out")

    store = LostAnswer(clock=clock)
    manager = SessionManager(store, idle_ttl=60.0, clock=clock)
    with pytest.raises(StoreUnavailable):
        await manager.create(version="2025-11-25", capabilities={}, client_info=None)
    assert store._data == {}  # type: ignore[attr-defined]
