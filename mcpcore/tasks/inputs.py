"""How a handler's questions are answered once it runs as a task.

The same handler serves a call answered synchronously and one that became a task: it
writes ``await ctx.elicit(...)`` either way. Synchronously, ``mcpcore.mrtr`` stops the
handler and answers ``input_required`` (the client retries). In a task there is no
retry to wait for: ``TaskFlow`` records the question on the task (status
``input_required``, under a key minted for it) and the handler simply waits until a
``tasks/update`` on any instance of the fleet brings the answer (``TaskRun.ask``); an
approval can take hours without a held connection.

Questions are checked as in MRTR: the request must have declared the capability
answering it takes (-32021 otherwise, which fails the task), and a form must be the flat
schema elicitation allows (a ``UsageError`` naming the tool).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcore.inputs import Answer, InputRequest, check_capability, check_form
from mcpcore.outcome import Outcome

if TYPE_CHECKING:
    from mcpcore.context import Context
    from mcpcore.inputs import Handler, Retryable
    from mcpcore.tasks.run import TaskRun


class TaskFlow:
    """A task's ``mcpcore.inputs.Flow``: each question becomes an input request of the task.

    Several questions may be outstanding at once (``asyncio.gather`` of two
    ``ctx.elicit`` calls puts both on the task), and each is answered on its own.
    """

    __slots__ = ("_ctx", "_run")

    def __init__(self, ctx: Context, run: TaskRun) -> None:
        self._ctx = ctx
        self._run = run

    async def gather(self, *requests: InputRequest) -> list[Answer]:
        for request in requests:
            check_capability(self._ctx, request)
        return await self._run.ask(*requests)

    async def gather_one(self, request: InputRequest) -> Any:
        return (await self.gather(request))[0]

    def check_form(self, request: InputRequest) -> None:
        check_form(self._ctx, request)


class TaskInputs:
    """The ``InputStrategy`` of a task's work: the handler runs once, to its end, and
    asks through the task (never ``input_required``, never a retry)."""

    __slots__ = ("_run",)

    def __init__(self, run: TaskRun) -> None:
        self._run = run

    async def run(self, ctx: Context, params: Retryable, handler: Handler) -> Outcome:
        ctx.enter_task(self._run.task_id, TaskFlow(ctx, self._run), self._run.note)
        return Outcome(await handler())


__all__ = ["TaskFlow", "TaskInputs"]
