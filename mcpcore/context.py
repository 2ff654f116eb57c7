"""What a handler may know and do during one request.

A ``Context`` is made by the engine for every request and handed to handlers that ask for
it (a parameter annotated ``Context``). It exposes the request's declared client
capabilities, client info, the authenticated principal, trace context, and three actions:
report progress, log, and ask the client for input (``mcpcore.inputs``), answered
through the request's ``InputStrategy`` (MRTR's is ``mcpcore.mrtr.SealedRetries``).
A ``tools/call`` may also go on as a task (``start_task``, the tasks extension): then
its questions become the task's input requests (``mcpcore.tasks.inputs``).

Notifications only flow where the spec allows them: progress only when the request
carried a ``progressToken``, log messages only when it set ``logLevel`` (and at or above
it), both only on the request's own stream and never after the final response, and
never from a task (SEP-2663, "Task Status Notifications").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol

from mcpcore.errors import InternalError, MissingRequiredClientCapability, UsageError
from mcpcore.inputs import (
    Flow,
    Handler,
    InputFlow,
    InputRequest,
    Retryable,
    elicitation,
    roots,
    sampling,
    url_elicitation,
)
from mcpcore.jsonrpc import RequestId, encode_notification
from mcpcore.meta import LOG_LEVEL_RANK, RequestMeta
from mcpcore.outcome import Outcome
from mcpcore.principal import ANONYMOUS, Principal

#: Writes one encoded JSON-RPC message on the request's stream.
Sink = Callable[[bytes], Awaitable[None]]


class InputStrategy(Protocol):
    """How a handler that asks the client for input gets its answers.

    The engine knows one strategy per request and nothing else about the client:
    ``mcpcore.mrtr.SealedRetries`` (2026-07-28: stop, seal, answer ``input_required``, run
    again on the retry) by default, or whatever the caller of ``Server.dispatch`` passes
    (say, one that sends the question to the client as a request of its own:
    ``mcpcore.legacy.bridge``; or a task's, ``mcpcore.tasks.inputs``).
    """

    async def run(self, ctx: Context, params: Retryable, handler: Handler) -> Outcome:
        """Run ``handler`` until it completes or must wait for the client."""
        ...


class _NoInput:
    """The strategy of a context made outside the engine: asking is an error."""

    async def run(self, ctx: Context, params: Retryable, handler: Handler) -> Outcome:
        raise InternalError(f"{ctx.method} cannot ask the client for input here")


_NO_INPUT = _NoInput()


class _Asking:
    """What ``ctx.elicit(...)`` and friends return: the question is only put when it is
    awaited, so one that never is can be reported (``Context.check_asked``). One
    request is put with the flow's ``gather_one``, a tuple of them with ``gather``."""

    __slots__ = ("_ctx", "_requests", "awaited")

    def __init__(self, ctx: Context, requests: InputRequest | tuple[Any, ...]) -> None:
        self._ctx = ctx
        self._requests = requests
        self.awaited = False
        ctx.unawaited += 1

    def __await__(self) -> Generator[Any, None, Any]:
        ctx = self._ctx
        if not self.awaited:
            self.awaited = True
            ctx.unawaited -= 1
        flow = ctx.flow
        if flow is None:  # asking made it, unless the round has ended since
            flow = ctx._input_flow()
        requests = self._requests
        if isinstance(requests, tuple):
            return (yield from flow.gather(*requests).__await__())
        if type(flow) is InputFlow:
            # This round's answers are at hand: no coroutine to make and drive.
            return flow.answer(requests)
        return (yield from flow.gather_one(requests).__await__())


class Context:
    """Per-request view for handlers.

    >>> @server.tool()                                   # doctest: +SKIP
    ... async def slow(ctx: Context) -> str:
    ...     await ctx.report_progress(50, total=100)
    ...     await ctx.log("info", "half way")
    ...     return "done"
    """

    __slots__ = (
        "_closed",
        "_last_progress",
        "_sink",
        "_status",
        "flow",
        "inputs",
        "meta",
        "method",
        "principal",
        "request_id",
        "round_answers",
        "state",
        "target",
        "task_id",
        "task_start",
        "unawaited",
    )

    # Positional or keyword: the engine passes them by position, as a class called with
    # keywords costs twice as much to make (CPython 3.11 builds a dict for them).
    def __init__(
        self,
        request_id: RequestId,
        method: str,
        meta: RequestMeta,
        principal: Principal = ANONYMOUS,
        sink: Sink | None = None,
        inputs: InputStrategy | None = None,
    ) -> None:
        self.request_id = request_id
        self.method = method
        self.meta = meta
        self.principal = principal
        self._sink = sink
        self._last_progress: float | None = None
        self._closed = False
        #: Where this handler's questions go (the engine's, not the handler's): made from
        #: ``round_answers`` on the first question, or a task's flow (``enter_task``).
        self.flow: Flow | None = None
        #: The answers this round may use: (carried, fresh, asked); set by the
        #: ``InputStrategy`` before it runs the handler.
        self.round_answers: tuple[dict[str, Any], dict[str, Any], frozenset[str]] | None = None
        #: How many questions were asked and not awaited (``check_asked``, and the
        #: engine after the handler returns).
        self.unawaited = 0
        #: Handler state carried across MRTR rounds (sealed into requestState).
        self.state: dict[str, Any] = {}
        #: The tool or prompt name, or the resource URI, this request serves.
        self.target: str | None = None
        #: How this request's handler gets answers from the client (set by the engine).
        self.inputs: InputStrategy = inputs if inputs is not None else _NO_INPUT
        #: The task this handler runs as, once it does (the tasks extension).
        self.task_id: str | None = None
        #: Turns this request into a task, where the engine allows it (``start_task``);
        #: set by the tasks extension (``mcpcore.tasks.engine``).
        self.task_start: Callable[[], Awaitable[bool]] | None = None
        #: Sets the task's ``statusMessage`` (``report_status``), once in a task.
        self._status: Callable[[str | None], Awaitable[None]] | None = None

    # -- what the request declared -------------------------------------------------
    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.meta.client_capabilities

    @property
    def client_info(self) -> dict[str, Any] | None:
        """Self-reported; never base security decisions on it."""
        return self.meta.client_info

    @property
    def protocol_version(self) -> str:
        return self.meta.protocol_version

    def has_capability(self, *path: str) -> bool:
        return self.meta.has_capability(*path)

    def require_capability(self, *path: str) -> None:
        """Raise -32021 naming ``path`` unless the request declared it."""
        if not self.meta.has_capability(*path):
            required: dict[str, Any] = {}
            node = required
            for key in path:
                node[key] = {}
                node = node[key]
            raise MissingRequiredClientCapability(required)

    # -- notifications on this request's stream -------------------------------------
    @property
    def streaming(self) -> bool:
        """True when notifications for this request can reach the client."""
        return self._sink is not None and not self._closed

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the request asked for it; else do nothing."""
        token = self.meta.progress_token
        if token is None or not self.streaming:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            raise ValueError("progress must increase with each notification")
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if the request set a ``logLevel`` at or below
        ``level``; otherwise nothing is sent (spec: no logLevel, no log messages)."""
        threshold = self.meta.log_level
        if threshold is None or not self.streaming:
            return
        rank = LOG_LEVEL_RANK.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}")
        if rank < LOG_LEVEL_RANK[threshold]:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.notify("notifications/message", params)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send one notification on this request's stream, if it still has one (the
        engine's own: listen streams; a handler uses ``report_progress`` and ``log``)."""
        if self._sink is not None and not self._closed:
            await self._sink(encode_notification(method, params))

    def close(self) -> None:
        """Called by the engine once the final response is decided: nothing more flows.

        Also drops the MRTR flow, which points back here: without the cycle a request's
        objects are freed at once instead of waiting for the garbage collector. A task's
        handler goes on asking through its flow, until its work ends (``finish_task``).
        (A question asked, ``_Asking``, points here too, but nothing here points to it.)
        """
        self._closed = True
        if self.task_id is None:
            self.flow = None
            self.round_answers = None

    # -- going on as a task (the tasks extension) ----------------------------------------
    async def start_task(self) -> bool:
        """Answer the request with a task handle now and go on as that task.

        For a tool registered ``task_start="handler"``: gather what must be known
        before committing (MRTR questions, answered synchronously as SEP-2663 asks),
        then ``await ctx.start_task()``; the client gets the ``CreateTaskResult`` and
        the rest of the handler is the task's work, whose questions become the task's
        ``inputRequests``. Returns True if the handler now runs as a task (a no-op
        inside one), False if this call cannot become one (the client did not declare
        the extension, or the tool allows no tasks): then it goes on synchronously.
        """
        if self.task_id is not None:
            return True
        start = self.task_start
        return await start() if start is not None else False

    async def report_status(self, message: str | None) -> None:
        """Inside a task, set its ``statusMessage`` (``None`` clears it): what every
        ``tasks/get`` and listen stream shows, on any instance. A task has no progress
        notifications (SEP-2663), so this is how it says how far it got. Outside a
        task nothing is sent (use ``report_progress``)."""
        if self._status is not None:
            await self._status(message)

    def enter_task(self, task_id: str, flow: Flow,
                   status: Callable[[str | None], Awaitable[None]] | None = None) -> None:
        """Called by the task machinery: from now on this handler is task ``task_id``,
        asks through ``flow``, sets its ``statusMessage`` through ``status`` and sends
        no notifications (SEP-2663 allows none)."""
        self.task_id = task_id
        self.flow = flow
        self._status = status
        self.task_start = None
        self._sink = None

    def finish_task(self) -> None:
        """Called by the task machinery when the task's work has ended."""
        self._closed = True
        self.flow = None
        self.round_answers = None
        self._status = None

    # -- asking the client for input (MRTR) --------------------------------------------
    def _input_flow(self) -> Flow:
        flow = self.flow
        if flow is None:
            if self.round_answers is None or self._closed:
                raise InternalError(f"{self.method} cannot ask the client for input")
            flow = self.flow = InputFlow(self, *self.round_answers)
        return flow

    def check_asked(self) -> None:
        """Raise ``UsageError`` if the handler asked the client something and never
        awaited the answer (a sync handler cannot: it must be ``async def``)."""
        if self.unawaited:
            raise UsageError(f"{self.describe()} asked the client for input without "
                             "awaiting the answer: declare it `async def` and write "
                             "`await ctx.elicit(...)`")

    def describe(self) -> str:
        """``tool 'greet'``, ``prompt 'review'``, ``resource 'file:///x'``: for messages."""
        kind = {"tools/call": "tool", "prompts/get": "prompt",
                "resources/read": "resource"}.get(self.method)
        return f"{kind} {self.target!r}" if kind and self.target else self.method

    def elicit(self, message: str, schema: dict[str, Any], *, key: str | None = None,
               bound: bool = False) -> Awaitable[Any]:
        """Ask the user to fill a form; await it for an ``ElicitAnswer``.

        ``schema`` must be the flat form elicitation allows (elicitation.mdx, "Requested
        Schema"); anything else is a ``UsageError`` naming this tool, at once.
        ``bound=True`` accepts the answer only as a reply to this question, proven by the
        sealed requestState of the round that asked it (use it for approvals).
        """
        request = elicitation(message, schema, key=key, bound=bound)
        self._input_flow().check_form(request)
        return _Asking(self, request)

    def elicit_url(self, message: str, url: str, *, key: str | None = None) -> Awaitable[Any]:
        """Send the user to ``url`` (URL-mode elicitation); await the consent answer."""
        return _Asking(self, url_elicitation(message, url, key=key))

    def sample(self, messages: list[dict[str, Any]], *, max_tokens: int,
               key: str | None = None, **params: Any) -> Awaitable[Any]:
        """Ask the client's model for a completion (``sampling/createMessage``)."""
        return _Asking(self, sampling(messages, max_tokens=max_tokens, key=key, **params))

    def list_roots(self, *, key: str | None = None) -> Awaitable[Any]:
        """Ask the client for its roots (``roots/list``)."""
        return _Asking(self, roots(key=key))

    def ask(self, *requests: Any) -> Awaitable[list[Any]]:
        """Ask several things in one round; await the answers, in order."""
        flow = self._input_flow()
        for request in requests:
            flow.check_form(request)
        return _Asking(self, requests)


__all__ = ["Context", "InputStrategy", "Sink"]
