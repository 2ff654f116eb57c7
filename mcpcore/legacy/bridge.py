"""Asking a 2025-era client: the handler's questions as server→client requests.

The same handler serves both eras. When it asks for input, ``Bridge.run`` (the era's
``InputStrategy``) sends each outstanding question as a real JSON-RPC request
(``elicitation/create``, ``sampling/createMessage``, ``roots/list``) and waits for the
client's response; then it runs the handler again from the top with every answer so
far, exactly as a 2026-07-28 retry would. How a request reaches the client and its
response comes back is the transport's ``AskClient``: on HTTP the request goes out on the
POST's SSE stream and the response may arrive at any instance (routed back through the
Store); on stdio both are lines.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcpcore import jsonrpc
from mcpcore.errors import InternalError, InvalidRequestState
from mcpcore.inputs import Handler, InputFlow, InputRequest, Retryable
from mcpcore.mrtr import flow_of, run_round
from mcpcore.outcome import Outcome
from mcpcore.timing import Sleep, wait_with_timeout

if TYPE_CHECKING:
    from mcpcore.context import Context

#: Send one request (its id, its encoded bytes) to the client; the client's response.
AskClient = Callable[[str, bytes], Awaitable[jsonrpc.Response]]


class Bridge:
    """The input strategy of one session request.

    >>> bridge = Bridge("2025-11-25", exchange, timeout=300.0)      # doctest: +SKIP
    >>> await server.dispatch(request, meta=record.meta(), inputs=bridge)  # doctest: +SKIP
    """

    def __init__(self, version: str, exchange: AskClient, *, timeout: float,
                 max_rounds: int = 16, sleep: Sleep = asyncio.sleep) -> None:
        self.version = version
        self.exchange = exchange
        self.timeout = timeout
        self.max_rounds = max_rounds
        self.sleep = sleep
        #: Ids of requests sent to the client and not answered yet (withdrawn with
        #: ``notifications/cancelled`` when the request that asked is cancelled).
        self.outstanding: set[str] = set()

    async def run(self, ctx: Context, params: Retryable, handler: Handler) -> Outcome:
        answers: dict[str, Any] = {}
        for _ in range(self.max_rounds):
            flow = await run_round(ctx, handler, answers, {}, frozenset(), flow_of, None)
            if isinstance(flow, Outcome):
                return flow
            keys = list(flow.pending)
            results = await asyncio.gather(*(self.ask(flow.pending[k]) for k in keys))
            answers.update(zip(keys, results, strict=True))
        raise InvalidRequestState(f"Too many input rounds (limit {self.max_rounds})")

    async def ask(self, request: InputRequest) -> Any:
        """Send ``request`` to the client; its result object, or ``InternalError``."""
        request_id = f"mcpcore-{secrets.token_hex(8)}"
        params = dict(request.params)
        if request.method == "elicitation/create":
            if params.get("mode") == "url":
                # 2025-11-25 URL elicitation requires an id; 2026-07-28 has none.
                params["elicitationId"] = secrets.token_urlsafe(16)
            elif self.version != "2025-11-25":
                params.pop("mode", None)  # 2025-06-18 forms have no mode field
        payload = jsonrpc.encode_request(request_id, request.method, params)
        self.outstanding.add(request_id)
        try:
            response = await wait_with_timeout(self.exchange(request_id, payload),
                                               self.timeout, self.sleep)
        except TimeoutError:
            self.outstanding.discard(request_id)
            raise InternalError(f"Timed out after {self.timeout:g}s waiting for the "
                                f"client's answer to {request.method}") from None
        # Left in ``outstanding`` when cancelled, so the caller can withdraw it.
        self.outstanding.discard(request_id)
        if response.error is not None:
            error = jsonrpc.decode_any(response.error)
            text = error.get("message") if isinstance(error, dict) else None
            raise InternalError(f"The client answered {request.method} with an error: "
                                f"{text or 'unknown error'}")
        return jsonrpc.decode_any(response.result) if response.result is not None else {}


class NoBridge:
    """Requests inside a JSON-RPC batch (2025-03-26) answer in one array: no stream to
    put a question on, so a handler that asks fails with a clear error."""

    async def run(self, ctx: Context, params: Retryable, handler: Handler) -> Outcome:
        flow = await run_round(ctx, handler, {}, {}, frozenset(), flow_of, None)
        if isinstance(flow, InputFlow):
            method = next(iter(flow.pending.values())).method
            raise InternalError(f"{method} cannot be sent from inside a JSON-RPC batch; "
                                "send the request on its own")
        return flow


__all__ = ["AskClient", "Bridge", "NoBridge"]
