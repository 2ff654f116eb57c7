"""The tasks extension through the gateway (``io.modelcontextprotocol/tasks``, SEP-2663).

In SEP-2663 the server decides, call by call, whether a ``tools/call`` becomes a task;
the client only declares the extension (per request). The gateway relays that decision
and keeps nothing:

- **The call.** A caller that declared the extension calls a tool of a 2026-07-28
  upstream: the upstream's request declares it too (``bridge.py``). If the upstream
  answers with a task, the caller gets the gateway's own task handle (``created``): the
  upstream's ``CreateTaskResult`` with its ``taskId`` replaced by an id the gateway
  seals with the server's key ring (``MCPCORE_STATE_KEYS``, as its cursors and relay
  state) over the upstream's name, the upstream's task id, the served tool name and a
  digest of the principal. Any instance of a fleet with the same keys opens it: no
  store, no stickiness.
- **The methods.** ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` with that id
  (``Server._task_request``: through the policy gate, judged as the tool whose call made
  the task) go to the owning upstream with the upstream's own id, as the caller (its
  credential for that upstream); the answer comes back with the gateway's id in it.
  Refused before anything is sent, with -32602 and ``data.reason``: an id that is not
  one (malformed, tampered with, sealed by a key no longer in the ring, or older than
  ``TASK_ID_LIFETIME``: ``invalid_task_id``), another principal's
  (``other_principal``), one whose upstream is no longer configured
  (``upstream_removed``, with ``data.upstream``). ``tasks/result`` and ``tasks/list``
  do not exist in this revision (-32601, as on any server).
- **Status notifications.** ``subscriptions/listen`` with ``taskIds``: the ids the
  caller owns (and whose tool the policy lets it reach) are acknowledged, at most
  ``MAX_WATCHED``; the gateway looks at each unfinished one on its upstream
  (``tasks/get``) every ``WATCH_INTERVAL`` seconds and sends ``notifications/tasks``
  (the full task, the gateway's id in it) when it changed. The upstream's own
  notifications are not relayed: that would take an upstream listen stream per
  downstream stream, held by the instance that has it.
- **No task upstream.** A 2025 upstream, an upstream that answers at once, a caller
  without the extension or a 2025 caller: the call is synchronous, which SEP-2663 lets
  any server do. The gateway makes no task of its own (docs/gateway.md, "Calls").

Bounds (an upstream is hostile until bounded): its task id at most
``MAX_UPSTREAM_TASK_ID`` printable ASCII characters; ``statusMessage`` and a failed
task's error cut like relayed errors; input requests checked like relayed questions
(``bridge.questions``); a completed task's result checked as a ``CallToolResult``;
``ttlMs`` at most the lifetime of the gateway's id.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import msgspec

from mcpcore import types
from mcpcore.errors import InvalidParams, InvalidRequestState, McpError
from mcpcore.gateway.bridge import questions
from mcpcore.gateway.credentials import caller_of
from mcpcore.gateway.errors import (
    MAX_RELAYED_MESSAGE,
    UpstreamError,
    UpstreamRejected,
    bounded_data,
    cut,
)
from mcpcore.outcome import Outcome
from mcpcore.policy.engine import ToolPolicy
from mcpcore.sealing import Sealer, StateBinding
from mcpcore.tasks.engine import ServerTasks, require
from mcpcore.tasks.ids import owner_digest, same_owner
from mcpcore.tasks.wire import CreateTaskResult, DetailedTask

if TYPE_CHECKING:
    from mcpcore.context import Context
    from mcpcore.gateway.upstreams import Upstream
    from mcpcore.params import TaskParams, UpdateTaskParams
    from mcpcore.policy import Policy
    from mcpcore.policy.engine import PolicyTarget
    from mcpcore.subscriptions import SubscriptionHub
    from mcpcore.tools import ToolRegistry

#: Seconds a gateway task id opens after it was issued (``ttlMs`` relayed is at most
#: this); past it the id is ``invalid_task_id``. Keep a key in the ring this long after
#: it stops sealing, or its tasks' ids stop opening with it.
TASK_ID_LIFETIME: Final = 7 * 24 * 3600.0
#: The longest upstream task id carried (the engine's own are 32 characters).
MAX_UPSTREAM_TASK_ID: Final = 256
#: Task ids one listen stream may watch through the gateway (each look at one is a
#: ``tasks/get`` to its upstream); more are left out of the acknowledgement.
MAX_WATCHED: Final = 32
#: Seconds between two looks at the unfinished tasks a listen stream watches.
WATCH_INTERVAL: Final = 2.0
#: The longest ``createdAt``/``lastUpdatedAt`` relayed (an ISO 8601 time is shorter).
MAX_TIMESTAMP: Final = 64
#: What a gateway task id is sealed for (its principal is compared in ``open``, so that
#: another principal's id gets its own error).
_BINDING: Final = StateBinding("", "gateway/task", "")
_UPSTREAM_ID: Final = re.compile(rf"[\x21-\x7e]{{1,{MAX_UPSTREAM_TASK_ID}}}")
#: What a completed task's ``result`` is checked with besides its own fields (a 2026-07-28
#: result carries them; the check must not fail on their absence).
_RESULT_DEFAULTS: Final = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}

#: Why a gateway task id is refused (``data.reason``).
TaskIdReason = Literal["invalid_task_id", "other_principal", "upstream_removed"]


class TaskIdRefused(InvalidParams):
    """A ``tasks/*`` request whose task id the gateway will not route: -32602 (the
    extension's "task not found" code) with ``data: {"reason": REASON}`` (and
    ``"upstream"`` for ``upstream_removed``); nothing was sent upstream."""

    def __init__(self, reason: TaskIdReason, detail: str, upstream: str | None = None
                 ) -> None:
        data: dict[str, Any] = {"reason": reason}
        if upstream is not None:
            data["upstream"] = upstream
        super().__init__(f"Failed to retrieve task: {detail}", data=data)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RelayedTask:
    """What a gateway task id names: the upstream running the task, its id there, and
    the served name of the tool whose call made it (what the policy judges)."""

    upstream: str
    task_id: str
    tool: str


class GatewayTasks(ServerTasks):
    """The gateway ``Server``'s tasks extension (``server.tasks``): its upstreams' tasks
    under ids of its own (module docstring). ``sealer``: the server's MRTR sealer
    (``server.mrtr.get_sealer``), whose key ring seals the ids; ``policy``: the
    gateway's (filters the ids a listen stream watches)."""

    def __init__(self, hub: SubscriptionHub, tools: ToolRegistry,
                 upstreams: Mapping[str, Upstream], sealer: Callable[[], Sealer],
                 policy: Policy | None = None) -> None:
        super().__init__(hub, tools)
        self.upstreams = upstreams
        self.policy = policy
        #: Seconds between two looks at the unfinished tasks a listen stream watches.
        self.watch_interval = WATCH_INTERVAL
        self._ring_sealer = sealer
        self._sealer: Sealer | None = None

    def sealer(self) -> Sealer:
        """The sealer of task ids: the server's key ring, ``TASK_ID_LIFETIME``."""
        ring = self._ring_sealer().ring
        if self._sealer is None or self._sealer.ring is not ring:
            self._sealer = Sealer(ring, ttl_seconds=TASK_ID_LIFETIME, max_blob_bytes=2048)
        return self._sealer

    # -- ids --------------------------------------------------------------------------------
    def seal(self, relayed: RelayedTask, principal_key: str) -> str:
        return self.sealer().seal(_BINDING, round=0, data={
            "u": relayed.upstream, "t": relayed.task_id, "n": relayed.tool,
            "o": owner_digest(principal_key)})

    def open(self, task_id: str, ctx: Context) -> RelayedTask:
        """The task ``task_id`` names, for this request's principal; -32021 if the
        request did not declare the extension, ``TaskIdRefused`` saying why not."""
        require(ctx)
        try:
            data = self.sealer().open(task_id, _BINDING).data
        except InvalidRequestState:
            raise TaskIdRefused("invalid_task_id", "not a task id this gateway issued (or "
                                "it was modified, or has expired)") from None
        upstream, upstream_id, tool, owner = (data.get(k) for k in ("u", "t", "n", "o"))
        if not (isinstance(upstream, str) and isinstance(upstream_id, str)
                and isinstance(tool, str) and isinstance(owner, str)):
            raise TaskIdRefused("invalid_task_id", "not a task id this gateway issued")
        if not same_owner(owner, ctx.principal.key):
            raise TaskIdRefused("other_principal", "this task belongs to another principal")
        if upstream not in self.upstreams:
            raise TaskIdRefused("upstream_removed", f"the upstream {upstream!r} that runs "
                                "this task is no longer configured", upstream)
        return RelayedTask(upstream, upstream_id, tool)

    # -- the call ---------------------------------------------------------------------------
    def created(self, upstream: str, tool: str, result: dict[str, Any], ctx: Context
                ) -> Outcome:
        """The caller's task handle for the upstream's ``CreateTaskResult`` of a call
        of ``tool`` (its served name)."""
        try:
            created = msgspec.convert(result, CreateTaskResult)
        except msgspec.ValidationError as exc:
            raise UpstreamError(upstream, "invalid_response",
                                f"tools/call: not a valid CreateTaskResult: {exc}") from None
        _check_id(upstream, created.task_id)
        task_id = self.seal(RelayedTask(upstream, created.task_id, tool), ctx.principal.key)
        body = _rewritten(upstream, msgspec.to_builtins(created), task_id)
        body.pop("resultType", None)  # the engine stamps the outcome's own
        return Outcome(body, "task")

    # -- the methods (Server._task_request) -------------------------------------------------
    async def target(self, task_id: str, ctx: Context) -> PolicyTarget:
        """The tool whose call made the task, as the policy judges it: its entry in the
        catalog while the upstream still serves it under that name, else the name and
        upstream alone (the strictest category)."""
        relayed = self.open(task_id, ctx)
        tool = self.tools.find(relayed.tool)
        if tool is not None and tool.upstream == relayed.upstream:
            return tool
        return ToolPolicy(relayed.tool, upstream=relayed.upstream)

    async def get(self, params: TaskParams, ctx: Context, headers: Mapping[str, str] | None
                  ) -> Outcome:
        """``tasks/get``: the upstream's task, under the gateway's id."""
        relayed = self.open(params.task_id, ctx)
        return Outcome(await self.fetch(relayed, params.task_id, ctx))

    async def update(self, params: UpdateTaskParams, ctx: Context,
                     headers: Mapping[str, str] | None) -> Outcome:
        """``tasks/update``: the answers go to the upstream as they are (it checks them
        against its questions); an empty ack."""
        relayed = self.open(params.task_id, ctx)
        await self._send(relayed, "tasks/update", ctx,
                         {"inputResponses": params.input_responses})
        return Outcome({})

    async def cancel(self, params: TaskParams, ctx: Context, headers: Mapping[str, str] | None
                     ) -> Outcome:
        """``tasks/cancel``: relayed; an empty ack."""
        relayed = self.open(params.task_id, ctx)
        await self._send(relayed, "tasks/cancel", ctx, {})
        return Outcome({})

    async def fetch(self, relayed: RelayedTask, task_id: str, ctx: Context
                    ) -> dict[str, Any]:
        """The upstream's ``tasks/get`` of ``relayed``, checked, as ``task_id``."""
        body = await self._send(relayed, "tasks/get", ctx, {})
        return _detailed(relayed, task_id, body)

    async def _send(self, relayed: RelayedTask, method: str, ctx: Context,
                    params: dict[str, Any]) -> dict[str, Any]:
        upstream = self.upstreams[relayed.upstream]
        return await upstream.call(
            f"{method} {relayed.tool}",
            lambda client: client.tasks.request(method, relayed.task_id, **params),
            caller=caller_of(ctx))

    # -- listen streams ---------------------------------------------------------------------
    def watch(self, ctx: Context, task_ids: list[str]) -> GatewayTaskWatch:  # type: ignore[override]
        """What a listen stream asking for ``task_ids`` reports (-32021 without the
        extension, as on any server)."""
        require(ctx)
        return GatewayTaskWatch(self, ctx, task_ids)


class GatewayTaskWatch:
    """The relayed tasks one listen stream reports on (``mcpcore.subscriptions.Watch``):
    ids this principal owns, whose tool the policy lets it reach, at most
    ``MAX_WATCHED``; each looked at on its upstream every ``WATCH_INTERVAL`` seconds
    while unfinished, and sent when it changed."""

    def __init__(self, tasks: GatewayTasks, ctx: Context, requested: list[str]) -> None:
        self._tasks = tasks
        self._ctx = ctx
        self._requested = list(dict.fromkeys(requested))[:MAX_WATCHED]
        self._watched: dict[str, RelayedTask] = {}
        #: Watched id -> the last task body sent for it.
        self._sent: dict[str, dict[str, Any]] = {}

    @property
    def interval(self) -> float | None:
        if not any(body.get("status") in (None, "working", "input_required")
                   for body in self._sent.values()):
            return None
        return self._tasks.watch_interval

    async def acknowledge(self) -> list[str]:
        policy = self._tasks.policy
        for task_id in self._requested:
            try:
                relayed = self._tasks.open(task_id, self._ctx)
                target = await self._tasks.target(task_id, self._ctx)
            except McpError:
                continue  # not one of ours, or not this principal's: dropped unsaid
            if policy is not None and policy.gates("tasks/get") and not policy.visible(
                    self._ctx.principal, target, "tasks/get"):
                continue
            self._watched[task_id] = relayed
            self._sent[task_id] = {}
        return list(self._watched)

    async def changed(self, task_id: str) -> dict[str, Any] | None:
        relayed = self._watched.get(task_id)
        if relayed is None:
            return None
        try:
            body = await self._tasks.fetch(relayed, task_id, self._ctx)
        except UpstreamRejected:  # the upstream no longer knows it (expired)
            del self._watched[task_id], self._sent[task_id]
            return None
        except McpError:
            return None  # the upstream is down for now: the next look may do
        if body == self._sent[task_id]:
            return None
        self._sent[task_id] = body
        return dict(body)

    async def poll(self) -> list[dict[str, Any]]:
        ids = [task_id for task_id, body in self._sent.items()
               if body.get("status") in (None, "working", "input_required")]
        bodies = await asyncio.gather(*(self.changed(task_id) for task_id in ids))
        return [body for body in bodies if body is not None]


def _check_id(upstream: str, task_id: str) -> None:
    if not _UPSTREAM_ID.fullmatch(task_id):
        raise UpstreamError(upstream, "invalid_response",
                            f"a task id must be 1 to {MAX_UPSTREAM_TASK_ID} printable "
                            f"ASCII characters, not {cut(task_id, 40)!r}")


def _rewritten(upstream: str, body: dict[str, Any], task_id: str) -> dict[str, Any]:
    """A task's fields as the caller sees them: the gateway's id, ``ttlMs`` between 0
    and the id's lifetime, a ``pollIntervalMs`` that is not positive left out,
    ``statusMessage`` cut, the upstream's ``_meta`` left out; timestamps longer than any
    ISO 8601 one are ``UpstreamError``."""
    for field in ("createdAt", "lastUpdatedAt"):
        if len(body[field]) > MAX_TIMESTAMP:
            raise UpstreamError(upstream, "invalid_response",
                                f"a task's {field} is not a timestamp")
    body["taskId"] = task_id
    body.pop("_meta", None)
    ttl = body.get("ttlMs")
    lifetime = int(TASK_ID_LIFETIME * 1000)
    body["ttlMs"] = lifetime if ttl is None else max(0, min(ttl, lifetime))
    if body.get("pollIntervalMs", 1) < 1:
        del body["pollIntervalMs"]
    message = body.get("statusMessage")
    if isinstance(message, str):
        body["statusMessage"] = cut(message, MAX_RELAYED_MESSAGE)
    return body


def _detailed(relayed: RelayedTask, task_id: str, answer: dict[str, Any]
              ) -> dict[str, Any]:
    """The upstream's ``tasks/get`` answer, checked and bounded, as ``task_id``."""
    upstream = relayed.upstream
    try:  # a union of tagged Structs (the stubs take only one type: hence the cast)
        task = msgspec.convert(answer, cast(Any, DetailedTask))
    except msgspec.ValidationError as exc:
        raise UpstreamError(upstream, "invalid_response",
                            f"tasks/get: not a valid task: {exc}") from None
    if task.task_id != relayed.task_id:
        raise UpstreamError(upstream, "invalid_response",
                            "tasks/get: the answer is about another task")
    body: dict[str, Any] = _rewritten(upstream, msgspec.to_builtins(task), task_id)
    if "inputRequests" in body:
        body["inputRequests"] = {request.key: request.wire() for request in
                                 questions(upstream, answer.get("inputRequests"))}
    if "result" in body:
        try:
            msgspec.convert({**_RESULT_DEFAULTS, **body["result"]}, types.CallToolResult)
        except msgspec.ValidationError as exc:
            raise UpstreamError(upstream, "invalid_response",
                                f"tasks/get: the task's result is not a valid "
                                f"CallToolResult: {exc}") from None
    if "error" in body:
        error = body["error"]
        code, message = error.get("code"), error.get("message")
        body["error"] = {
            "code": code if isinstance(code, int) and not isinstance(code, bool) else -32603,
            "message": cut(message, MAX_RELAYED_MESSAGE) if isinstance(message, str)
            else "The task failed"}
        data = bounded_data(error.get("data"))
        if data is not None:
            body["error"]["data"] = data
    return body


__all__ = ["MAX_UPSTREAM_TASK_ID", "MAX_WATCHED", "TASK_ID_LIFETIME", "WATCH_INTERVAL",
           "GatewayTaskWatch", "GatewayTasks", "RelayedTask", "TaskIdReason",
           "TaskIdRefused"]
