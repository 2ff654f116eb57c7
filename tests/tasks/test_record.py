"""``TaskRecord``: its changes keep the extension's rules, and its wire shapes are the
extension's (flat ``CreateTaskResult``, one ``DetailedTask`` variant per status)."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.tasks import InvalidTransition, TaskRecord, TaskStatus
from mcpcore.tasks.record import decode_record, encode_record, iso8601
from mcpcore.tasks.wire import CreateTaskResult, DetailedTask
from mcpcore.types import CallToolResult, InputRequiredResult

START_MS = 1_785_196_800_000
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
FORM = {"method": "elicitation/create",
        "params": {"mode": "form", "message": "Sure?",
                   "requestedSchema": {"type": "object",
                                       "properties": {"confirm": {"type": "boolean"}}}}}


def new(**options: Any) -> TaskRecord:
    options = {"now_ms": START_MS, "ttl_ms": 60_000, "worker": "w1", "lease_ms": 30_000,
               "poll_interval_ms": 500, **options}
    return TaskRecord.new("A" * 32, "owner", **options)


def wire(value: object) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(value)
    return data


def test_create_task_result_is_flat() -> None:
    created = wire(new(status_message="queued").created())
    assert created == {
        "resultType": "task", "taskId": "A" * 32, "status": "working",
        "statusMessage": "queued", "createdAt": "2026-07-28T00:00:00.000Z",
        "lastUpdatedAt": "2026-07-28T00:00:00.000Z", "ttlMs": 60_000,
        "pollIntervalMs": 500,
    }


def test_optional_fields_are_left_out() -> None:
    created = wire(new(poll_interval_ms=None).created())
    assert "pollIntervalMs" not in created and "statusMessage" not in created
    assert created["ttlMs"] == 60_000


def test_a_client_tells_a_task_from_a_result_by_result_type() -> None:
    union = CallToolResult | InputRequiredResult | CreateTaskResult
    body = msgspec.json.encode(new().created())
    decoded = msgspec.json.decode(body, type=union)
    assert isinstance(decoded, CreateTaskResult) and decoded.task_id == "A" * 32
    plain = msgspec.json.decode(b'{"resultType":"complete","content":[]}', type=union)
    assert isinstance(plain, CallToolResult)


def progressions() -> list[tuple[str, TaskRecord, dict[str, Any]]]:
    working = new()
    asked, keys = working.ask([("confirm", FORM)], START_MS + 10)
    return [
        ("working", working, {}),
        ("input_required", asked, {"inputRequests": {keys[0]: FORM}}),
        ("completed", working.complete({"content": [], "isError": True}, START_MS + 20),
         {"result": {"content": [], "isError": True}}),
        ("failed", working.fail({"code": -32603, "message": "boom"}, START_MS + 20, "boom"),
         {"error": {"code": -32603, "message": "boom"}, "statusMessage": "boom"}),
        ("cancelled", asked.cancel(START_MS + 30), {"statusMessage": "Cancelled by the client"}),
    ]


@pytest.mark.parametrize("status, record, payload",
                         progressions(), ids=[p[0] for p in progressions()])
def test_each_status_has_its_own_variant_with_only_its_payload(
        status: str, record: TaskRecord, payload: dict[str, Any]) -> None:
    detailed = wire(record.detailed())
    assert detailed["status"] == status
    for field in ("inputRequests", "result", "error"):
        assert (field in detailed) is (field in payload), field
    for field, value in payload.items():
        assert detailed[field] == value
    assert "requestState" not in detailed and "resultType" not in detailed
    assert ISO.fullmatch(detailed["createdAt"]) and ISO.fullmatch(detailed["lastUpdatedAt"])
    assert isinstance(detailed["ttlMs"], int)
    # And a client decodes it back by status.
    decoded = msgspec.json.decode(msgspec.json.encode(record.detailed()), type=DetailedTask)
    assert decoded == record.detailed()


def test_an_error_result_completes() -> None:
    done = new().complete({"content": [{"type": "text", "text": "no"}], "isError": True},
                          START_MS + 1)
    assert done.status is TaskStatus.COMPLETED


def test_input_required_exactly_while_requests_are_outstanding() -> None:
    record, (a, b) = new().ask([("a", FORM), ("b", FORM)], START_MS + 1)
    assert record.status is TaskStatus.INPUT_REQUIRED and set(record.inputs) == {a, b}
    partial = record.answer([a, "never-issued"], START_MS + 2)
    assert partial.status is TaskStatus.INPUT_REQUIRED and set(partial.inputs) == {b}
    assert partial.answer(["never-issued"], START_MS + 3) is partial
    done = partial.answer([b], START_MS + 3)
    assert done.status is TaskStatus.WORKING and done.inputs == {}


def test_keys_are_never_reused() -> None:
    record, first = new().ask([("k", FORM)], START_MS)
    record = record.answer(first, START_MS)
    record, second = record.ask([("k", FORM)], START_MS)
    assert first != second


def test_finished_tasks_do_not_move_and_drop_their_lease_and_inputs() -> None:
    asked, _ = new().ask([(None, FORM)], START_MS + 1)
    for ended in (asked.cancel(START_MS + 2), asked.lapse(START_MS + 2),
                  asked.complete({"content": []}, START_MS + 2)):
        assert ended.finished and ended.inputs == {} and ended.worker is None
        with pytest.raises(InvalidTransition):
            ended.cancel(START_MS + 3)
        with pytest.raises(InvalidTransition):
            ended.ask([(None, FORM)], START_MS + 3)
        with pytest.raises(InvalidTransition):
            ended.renew("w1", START_MS + 4)


def test_a_lapsed_lease_fails_the_task_with_a_clear_error() -> None:
    record = new(lease_ms=1000)
    assert not record.lapsed(START_MS + 999) and record.lapsed(START_MS + 1000)
    failed = record.lapse(START_MS + 1000)
    assert failed.status is TaskStatus.FAILED
    assert failed.error is not None and failed.error["code"] == -32603
    assert "lease lapsed" in failed.error["message"]
    assert not failed.lapsed(START_MS + 10_000)


def test_renewal_is_invisible_and_only_for_the_lease_holder() -> None:
    record = new()
    renewed = record.renew("w1", START_MS + 90_000)
    assert renewed.lease_until_ms == START_MS + 90_000 and renewed.updated_ms == record.updated_ms
    assert renewed.same_view(record)
    with pytest.raises(ValueError, match="belongs to 'w1'"):
        record.renew("w2", START_MS + 90_000)
    assert not record.note("half way", START_MS + 1).same_view(record)


def test_ttl_counts_from_creation() -> None:
    record = new(ttl_ms=60_000)
    assert record.remaining_ms(START_MS + 59_000) == 1000
    assert record.remaining_ms(START_MS + 61_000) == 1  # never zero: a store TTL must be > 0
    with pytest.raises(ValueError):
        new(ttl_ms=0)


def test_last_updated_never_goes_back() -> None:
    record = new().note("x", START_MS + 100)
    assert record.note("y", START_MS + 50).updated_ms == START_MS + 100


def test_iso8601_is_utc_with_milliseconds() -> None:
    assert iso8601(START_MS + 1234) == "2026-07-28T00:00:01.234Z"


Step = st.one_of(
    st.tuples(st.just("ask"), st.integers(1, 3)),
    st.tuples(st.just("answer"), st.integers(0, 3)),
    st.tuples(st.just("note"), st.integers(0, 0)),
    st.tuples(st.sampled_from(["complete", "fail", "cancel", "lapse"]), st.integers(0, 0)),
)


@given(st.lists(Step, max_size=25))
def test_any_sequence_keeps_the_rules(steps: list[tuple[str, int]]) -> None:
    """input_required iff outstanding; keys unique; terminal is final; times grow;
    the record survives the store's encoding at every step."""
    record, now, issued = new(), START_MS, set[str]()
    for op, n in steps:
        now += 7
        before = record
        try:
            if op == "ask":
                record, keys = record.ask([(f"h{i}", FORM) for i in range(n)], now)
                assert issued.isdisjoint(keys)
                issued.update(keys)
            elif op == "answer":
                record = record.answer(sorted(record.inputs)[:n], now)
            elif op == "note":
                record = record.note(f"at {now}", now)
            else:
                record = getattr(record, op)(*([{"content": []}] if op == "complete" else
                                               [{"code": -1, "message": "m"}] if op == "fail"
                                               else []), now)
        except InvalidTransition:
            assert before.finished
            continue
        if record is before:
            continue  # nothing to answer: no change
        assert not before.finished
        if not record.finished:
            assert (record.status is TaskStatus.INPUT_REQUIRED) == bool(record.inputs)
        else:
            assert record.inputs == {}
        assert record.updated_ms >= before.updated_ms
        assert decode_record(encode_record(record)) == record
