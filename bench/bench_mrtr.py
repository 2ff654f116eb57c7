"""The cost of one MRTR round against a plain call, through the engine in-process.

    python bench/bench_mrtr.py [--iterations 20000] [--rounds 3]
    python bench/bench_mrtr.py --only round1 --iterations 1000   # for an instruction counter

Measures ``Server.handle`` (decode params, validate, run the handler, build the
result) for three requests, all in this one process so the ratios are fair:

- a plain ``tools/call`` of an ``echo`` tool (the baseline);
- round 1 of an elicitation tool: the handler stops, state is sealed, and the
  ``input_required`` result is built;
- round 2: the retry with ``inputResponses`` + ``requestState`` (open and verify the
  state, validate the answer against the form, run the handler to completion).

Wire encoding is included (``jsonrpc.encode_result``); HTTP is not, so the numbers are
the engine's own share of a request. Times are CPU time of this process
(``time.process_time``, best of five batches), so another process on the same core
costs less here than in wall time; ``--rounds`` repeats the three measurements, one
after another, and prints each figure's range over the rounds.

On a machine too busy for times, count instructions instead: ``--only KIND`` serves that
one request (after 300 to warm up) ``--iterations`` times, untimed, so that
``valgrind --tool=cachegrind --cache-sim=no`` run with ``--iterations 0`` and with
``--iterations 1000`` gives, from the difference of the two ``I refs`` totals, the
instructions of one request (set ``PYTHONHASHSEED=0`` for the same count each time).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

import msgspec

from mcpcore import Context, MrtrConfig, Server, jsonrpc
from mcpcore.jsonrpc import Request
from mcpcore.sealing import KeyRing, Sealer

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def build_server() -> Server:
    ring = KeyRing.from_config(KeyRing.new_key("bench"))
    server = Server("bench", "1", mrtr=MrtrConfig(sealer=Sealer(ring)))

    @server.tool()
    def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool()
    async def greet(ctx: Context) -> str:
        """Ask a name."""
        answer = await ctx.elicit("Name?", NAME, key="user_name")
        return f"Hello, {answer.content['name']}!"

    return server


def request(method: str, params: dict[str, Any]) -> Request:
    return Request(1, method, msgspec.Raw(msgspec.json.encode({**params, "_meta": META})))


async def per_op_us(server: Server, make: Callable[[], Request], iterations: int) -> float:
    for _ in range(min(1000, iterations)):  # warm-up
        jsonrpc.encode_result(1, await server.handle(make()))
    best = float("inf")
    for _ in range(5):
        start = time.process_time_ns()
        for _ in range(iterations):
            jsonrpc.encode_result(1, await server.handle(make()))
        best = min(best, (time.process_time_ns() - start) / iterations / 1000)
    return best


def span(values: list[float], fmt: str = ".1f") -> str:
    low, high = min(values), max(values)
    return f"{low:{fmt}}" if len(values) == 1 else f"{low:{fmt}}-{high:{fmt}}"


async def main(iterations: int, rounds: int, only: str | None) -> None:
    server = build_server()
    plain = request("tools/call", {"name": "echo", "arguments": {"text": "hello"}})
    round1 = request("tools/call", {"name": "greet", "arguments": {}})
    first = await server.handle(round1)
    assert first["resultType"] == "input_required"
    round2 = request("tools/call", {
        "name": "greet", "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": first["requestState"]})
    done = await server.handle(round2)
    assert done["resultType"] == "complete", done
    if only is not None:
        one = {"plain": plain, "round1": round1, "round2": round2}[only]
        for _ in range(300 + iterations):
            jsonrpc.encode_result(1, await server.handle(one))
        return

    base: list[float] = []
    r1: list[float] = []
    r2: list[float] = []
    for _ in range(rounds):
        base.append(await per_op_us(server, lambda: plain, iterations))
        r1.append(await per_op_us(server, lambda: round1, iterations))
        r2.append(await per_op_us(server, lambda: round2, iterations))
    print(f"{'request':<40}{'CPU µs/op':>14}{'x plain':>12}{'adds µs':>12}")
    print(f"{'plain tools/call (echo)':<40}{span(base):>14}")
    for label, values in (("MRTR round 1 (seal, input_required)", r1),
                          ("MRTR round 2 (open, validate, complete)", r2)):
        # Each round against the plain call measured just before it.
        ratios = [v / b for v, b in zip(values, base, strict=True)]
        adds = [v - b for v, b in zip(values, base, strict=True)]
        print(f"{label:<40}{span(values):>14}{span(ratios, '.2f'):>12}{span(adds):>12}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat the measurements; each figure is printed as a range")
    parser.add_argument("--only", choices=("plain", "round1", "round2"),
                        help="serve only this request, untimed (for an instruction counter)")
    args = parser.parse_args()
    asyncio.run(main(args.iterations, args.rounds, args.only))
