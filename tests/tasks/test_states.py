"""The state table: every (status, event) pair, and the rules it must keep."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.tasks import (
    TERMINAL,
    TRANSITIONS,
    InvalidTransition,
    TaskEvent,
    TaskStatus,
    next_status,
)

W, IR, C, F, X = (TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED, TaskStatus.COMPLETED,
                  TaskStatus.FAILED, TaskStatus.CANCELLED)
E = TaskEvent

#: The whole machine, written out: anything not here is invalid.
EXPECTED = {
    (W, E.ASK): IR, (W, E.NOTE): W, (W, E.RENEW): W,
    (W, E.COMPLETE): C, (W, E.FAIL): F, (W, E.CANCEL): X, (W, E.LAPSE): F,
    (IR, E.ASK): IR, (IR, E.ANSWER_SOME): IR, (IR, E.ANSWER_ALL): W, (IR, E.NOTE): IR,
    (IR, E.RENEW): IR,
    (IR, E.COMPLETE): C, (IR, E.FAIL): F, (IR, E.CANCEL): X, (IR, E.LAPSE): F,
}


@pytest.mark.parametrize("status, event", list(itertools.product(TaskStatus, TaskEvent)))
def test_every_pair_moves_as_the_table_says_or_is_invalid(status: TaskStatus,
                                                          event: TaskEvent) -> None:
    expected = EXPECTED.get((status, event))
    if expected is None:
        with pytest.raises(InvalidTransition) as info:
            next_status(status, event)
        assert info.value.status is status and info.value.event is event
        assert status.value in str(info.value)
    else:
        assert next_status(status, event) is expected


def test_the_table_is_exactly_the_expected_machine() -> None:
    assert TRANSITIONS == EXPECTED


def test_terminal_statuses_have_no_way_out() -> None:
    assert {C, F, X} == TERMINAL
    assert not [pair for pair in TRANSITIONS if pair[0] in TERMINAL]


def test_answers_only_arrive_while_input_is_required() -> None:
    assert (W, E.ANSWER_ALL) not in TRANSITIONS and (W, E.ANSWER_SOME) not in TRANSITIONS


@given(st.lists(st.sampled_from(list(TaskEvent)), max_size=30))
def test_once_terminal_a_task_never_changes(events: list[TaskEvent]) -> None:
    status = TaskStatus.WORKING
    ended: TaskStatus | None = None
    for event in events:
        try:
            status = next_status(status, event)
        except InvalidTransition:
            assert ended is not None or (status, event) not in TRANSITIONS
            continue
        assert ended is None, "a terminal status moved"
        if status in TERMINAL:
            ended = status
    if ended is not None:
        assert status is ended
