"""The tasks extension through the gateway (docs/gateway.md, "Calls"): an upstream's task
is the caller's under an id the gateway seals; ``tasks/get``, ``tasks/update`` and
``tasks/cancel`` with it reach the owner with the upstream's own id; another principal's,
a tampered or a removed upstream's id is refused with a typed error; status
notifications reach a listen stream; an upstream that makes no task (or a 2025 one)
answers synchronously."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpcore import StreamableHTTP
from mcpcore.client import TaskHandle
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.client.tasks import task_of
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.tasks import RelayedTask
from mcpcore.principal import ANONYMOUS
from mcpcore.tasks.wire import TASKS_EXTENSION
from tests.gateway.inprocess import (
    alpha_server,
    beta_server,
    downstream,
    jobs_server,
    serving,
    two_upstreams,
    with_jobs,
)

TASKS = {"extensions": {TASKS_EXTENSION: {}}}


def accept(params: dict[str, Any]) -> dict[str, Any]:
    if "name" in params["requestedSchema"]["properties"]:
        return {"action": "accept", "content": {"name": "Ada"}}
    return {"action": "accept", "content": {"confirm": True}}


def apps() -> tuple[dict[str, object], dict[str, str]]:
    """The three upstreams, and what the ``jobs`` upstream's tasks are now (its own task
    id -> status), as it records them."""
    jobs = jobs_server()
    seen: dict[str, str] = {}
    manager = jobs.tasks.manager
    announce = manager.on_change
    assert announce is not None

    async def spy(record: Any) -> None:
        seen[record.task_id] = record.status.value
        await announce(record)

    manager.on_change = spy
    return ({"alpha": StreamableHTTP(alpha_server()), "beta": StreamableHTTP(beta_server()),
             "jobs": StreamableHTTP(jobs)}, seen)


async def test_an_upstream_task_is_the_callers_under_a_sealed_id() -> None:
    served, jobs = apps()
    async with serving(with_jobs(two_upstreams()), served) as gateway, \
            downstream(gateway, "2026-07-28", on_elicit=accept) as client:
        handle = await client.tasks.call_tool("jobs__build", {"seconds": 0.2})
        assert isinstance(handle, TaskHandle)
        assert handle.created is not None and handle.created.status == "working"
        [upstream_id] = list(jobs)
        # The caller's id is the gateway's: the upstream's own never shows in clear.
        assert handle.task_id != upstream_id and upstream_id not in handle.task_id
        result = await handle.wait()
        assert result.content[0].text == "built in 0.2 s"
        assert handle.last is not None and handle.last.task_id == handle.task_id
        # A second call is a second task, with an id of its own.
        other = await client.tasks.call_tool("jobs__build", {"seconds": 0})
        assert isinstance(other, TaskHandle) and other.task_id != handle.task_id
