"""``--fuzz N``: hypothesis-generated malformed and edge-case messages.

Whatever arrives, a server must answer like a server: no 5xx, no dropped connection, no
hang, nothing that is not JSON-RPC where JSON-RPC is due. The budget (N examples, and
``--fuzz-seconds``) is shared among four strategies, each its own check, and each failure
is shrunk by hypothesis to a minimal input before it is reported. Hypothesis runs in a
worker thread; every example is sent on the run's event loop, through the same transport
as the other checks.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.transport import RecordedExchange

COMMON: dict[str, Any] = {"pack": "fuzz", "tags": ["fuzz", "robustness"], "eras": [wire.MODERN]}
METHODS = ["server/discover", "tools/list", "tools/call", "resources/list", "resources/read",
           "resources/templates/list", "prompts/list", "prompts/get", "completion/complete",
           "initialize", "ping", "notifications/cancelled"]
#: Share of the budget per strategy.
SHARES = {"fuzz.bytes": 0.15, "fuzz.envelopes": 0.35, "fuzz.params": 0.35, "fuzz.headers": 0.15}
STATUS_WITHOUT_RPC = frozenset({202, 401, 403, 404, 405, 406, 413, 415, 429})


def problem(exchange: RecordedExchange, expects_answer: bool) -> str | None:
    """What is wrong with the server's answer to a fuzzed message (``None``: fine)."""
    if exchange.failure:
        if "hang" in exchange.failure and not expects_answer:
            return None
        return exchange.failure
    if exchange.status is not None and exchange.status >= 500:
        return f"HTTP {exchange.status}"
    if exchange.transport == "stdio":
        return None
    if exchange.status in STATUS_WITHOUT_RPC or not exchange.body.strip():
        return None
    if exchange.status is not None and 400 <= exchange.status < 500:
        return None    # a clean refusal; the header checks judge what its body must say
    if not exchange.messages or not all(m.get("jsonrpc") == "2.0" for m in exchange.messages):
        return f"HTTP {exchange.status} with a body that is not JSON-RPC: {exchange.text[:120]!r}"
    return None


def _strategies() -> dict[str, Any]:
    from hypothesis import strategies as st

    # Kept small on purpose: generation, not the server, is the cost of a fuzz run.
    scalars = (st.none() | st.booleans() | st.integers(-2**63, 2**64) | st.floats(
        allow_nan=False, allow_infinity=False) | st.text(max_size=16))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                          max_leaves=6)
    header_text = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=40)
    method = st.sampled_from(METHODS) | st.text(max_size=24)
    envelope = st.fixed_dictionaries({
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", None]),
        "id": st.integers() | st.text(max_size=8) | st.none(),
        "method": method,
        "params": values | st.builds(lambda v: {"_meta": v}, values)})
    params = st.builds(
        lambda field, value, arguments: {"_meta": wire.meta(), field: value,
                                         "arguments": arguments},
        st.sampled_from(["name", "uri", "cursor", "notifications", "ref", "inputResponses",
                         "requestState", "argument"]), values, values)
    return {
        "bytes": st.binary(max_size=300) | st.text(max_size=200).map(str.encode),
        "envelopes": envelope | values,
        "params": st.tuples(st.sampled_from(METHODS), params),
        "headers": st.fixed_dictionaries({
            "MCP-Protocol-Version": st.sampled_from([wire.MODERN, ""]) | header_text,
            "Mcp-Method": st.sampled_from(["tools/list", ""]) | header_text,
            "Mcp-Name": header_text,
            "Content-Type": st.sampled_from(["application/json", "text/plain", ""]),
            "Accept": st.sampled_from(["application/json, text/event-stream", "*/*", ""])}),
    }


def _message_for(kind: str, example: Any) -> tuple[bytes, dict[str, str], bool]:
    """``(body, headers, expects an answer)`` for one generated example."""
    if kind == "bytes":
        return example, wire.standard_headers({"method": "tools/list"}), False
    if kind == "envelopes":
        body = example
        base = body if isinstance(body, dict) else {"method": "tools/list"}
        method = base.get("method") if isinstance(base.get("method"), str) else "tools/list"
        headers = wire.standard_headers({"method": method, "params": {}})
        expects = isinstance(body, dict) and "id" in body and "method" in body
        return _encode(body), headers, expects
    if kind == "params":
        method, params = example
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return _encode(body), wire.standard_headers(body), True
    body = wire.request("tools/list")
    headers = {**wire.standard_headers(body), **example}
    return wire.encode(body), {k: v for k, v in headers.items() if v != ""}, True


def _encode(value: Any) -> bytes:
    try:
        return json.dumps(value, separators=(",", ":")).encode()
    except (TypeError, ValueError):
        return repr(value).encode()


class _OutOfTime(BaseException):
    """Stops hypothesis when the time budget is spent (a ``BaseException``, so it is not
    taken for a failing example and shrunk)."""


#: Seconds a found failure may spend being shrunk past the budget before the smallest
#: example so far is reported.
SHRINK_SECONDS = 20.0


def _make(kind: str, check_id: str) -> Callable[[AuditContext], Any]:
    async def run(ctx: AuditContext) -> None:
        try:
            from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
        except ImportError:
            ctx.skip("--fuzz needs hypothesis: pip install 'mcpcore[conformance]'")
        budget = max(1, int(ctx.options.fuzz_examples * SHARES[check_id]))
        seconds = ctx.options.fuzz_seconds * SHARES[check_id]
        loop = asyncio.get_running_loop()
        strategy = _strategies()[kind]
        deadline = float("inf")
        state: dict[str, Any] = {"sent": 0, "failing": None}
        timeout = min(ctx.options.request_timeout, 5.0)

        def send(body: bytes, headers: dict[str, str], expects: bool) -> RecordedExchange:
            future = asyncio.run_coroutine_threadsafe(ctx.transport.send(
                body, headers=headers, request_id=1 if expects else None, timeout=timeout,
                label=f"{kind} fuzz"), loop)
            return future.result(timeout + 5)

        @settings(max_examples=budget, deadline=None, database=None, derandomize=False,
                  verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate, Phase.shrink])
        @given(strategy)
        def probe(example: Any) -> None:
            now = time.monotonic()
            if now > deadline and (state["failing"] is None
                                   or now > deadline + SHRINK_SECONDS):
                raise _OutOfTime
            body, headers, expects = _message_for(kind, example)
            exchange = send(body, headers, expects)
            state["sent"] += 1
            found = problem(exchange, expects)
            if found:
                state["failing"] = (example, exchange, found)
                raise AssertionError(found)

        if ctx.options.fuzz_seed is not None:
            probe = seed(ctx.options.fuzz_seed)(probe)
        # Hypothesis is not thread-safe: one strategy at a time, each in a worker thread.
        lock = await ctx.session.once("fuzz-lock", _new_lock)
        cut = False
        try:
            async with lock:
                deadline = time.monotonic() + seconds
                await asyncio.to_thread(probe)
        except AssertionError:
            pass
        except _OutOfTime:
            cut = True
        if state["failing"] is not None:
            example, exchange, found = state["failing"]
            ctx.keep(exchange)
            smallest = "minimal input found so far" if cut else "minimal input"
            ctx.fail(f"{found}; {smallest} after {state['sent']} messages: "
                     f"{_show(example)}", exchange)
        if cut:
            # Never a failure for time: the server was not shown to mishandle anything.
            ctx.skip(f"cut short: the {seconds:g} s share of the time budget ran out after "
                     f"{state['sent']} of {budget} messages, none mishandled (raise "
                     "--fuzz-seconds to send them all)")
        ctx.note(f"{state['sent']} generated messages, none mishandled")

    return run


async def _new_lock() -> asyncio.Lock:
    return asyncio.Lock()


def _show(example: Any) -> str:
    text = repr(example)
    return text if len(text) <= 400 else text[:400] + "…"


REQUIREMENT = ("“All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 "
               "specification.” (basic/index) JSON-RPC 2.0 answers every request, malformed ones "
               "with an error object (-32700, -32600, -32602); on Streamable HTTP a refusal is a "
               "4xx. A 5xx, a dropped connection or a hang answers nothing.")
FIX = ("Parse and validate untrusted input before dispatch and answer what is wrong with a "
       "JSON-RPC error and a 4xx; run the minimal failing input shown to reproduce the crash.")
for _kind, _title in (("bytes", "arbitrary bytes and text bodies"),
                      ("envelopes", "malformed JSON-RPC envelopes"),
                      ("params", "known methods with edge-case params"),
                      ("headers", "edge-case MCP header values")):
    _id = f"fuzz.{_kind}"
    check(_id, title=f"fuzz: {_title}",
          requirement=REQUIREMENT, fix=FIX, level=Level.MUST, spec=spec("basic", "error-codes"),
          needs=["http"] if _kind == "headers" else [], **COMMON)(_make(_kind, _id))
