"""The one-pass decode of a modern request (``jsonrpc.decode_request_as``, the tool's
``direct_params``): it serves exactly what the two-step path serves, and anything it does
not recognise goes the two-step way, errors and all."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import pytest

from mcpcore import AdmissionLimits, Context, Server, StreamableHTTP, jsonrpc
from mcpcore.conformance.asgi import http_scope
from mcpcore.params import CallToolParams
from mcpcore.transports.admission import Admission
from tests.support.asgi import Exchange
from tests.support.clock import ManualClock
from tests.support.wire import make_meta, standard_headers


def server() -> Server:
    srv = Server("one-pass")

    @srv.tool()
    def add(a: int, b: int = 1) -> str:
        """Adds."""
        return str(a + b)

    @srv.tool()
    async def ask(ctx: Context) -> str:
        """Asks."""
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {
            "name": {"type": "string"}}}, key="n")
        return str(answer.content)

    return srv


def call(name: str, arguments: Any, **headers: str) -> tuple[bytes, dict[str, str]]:
    params = {"name": name, "arguments": arguments, "_meta": make_meta()}
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
    return body.encode(), {**standard_headers("tools/call", params), **headers}


def test_decode_request_as_takes_only_what_it_expects() -> None:
    ok = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}'
    got = jsonrpc.decode_request_as(ok, "tools/call", CallToolParams)
    assert got is not None
    request, params = got
    assert (request.id, request.method, request.params, params.name) == (3, "tools/call",
                                                                           None, "x")
    for body in (
        b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"name":"x"}}',
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}',  # notification
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":null}',
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}',
        b'{"jsonrpc":"1.0","id":3,"method":"tools/call","params":{"name":"x"}}',
        b'{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}',
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"},"result":1}',
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"',
        b"[" * 100 + b"]" * 100,
    ):
        assert jsonrpc.decode_request_as(body, "tools/call", CallToolParams) is None, body


def test_a_tool_whose_arguments_only_its_handler_reads_decodes_them_with_the_body() -> None:
    srv = server()
    direct = srv.params_type("tools/call", "add")
    assert direct is not None and direct is not CallToolParams
    assert issubclass(direct, CallToolParams)
    # A handler taking the Context may ask (its arguments are bound into sealed state).
    assert srv.params_type("tools/call", "ask") is CallToolParams
    assert srv.params_type("tools/call", "nope") is CallToolParams
    assert srv.params_type("tools/list") is not None
    assert srv.params_type("initialize") is None
    params = msgspec.json.decode(b'{"name":"add","arguments":{"a":2}}', type=direct)
    assert params.salient() == {"name": "add", "arguments": {"a": 2, "b": 1}}


@pytest.mark.parametrize(("arguments", "text", "is_error"), [
    ({"a": 2, "b": 3}, "5", False),
    ({"a": 2}, "3", False),
    ({"a": "two"}, "Invalid arguments: Expected `int`, got `str` - at `$.a`", True),
    ({}, "Invalid arguments: Object missing required field `a`", True),
])
async def test_through_http_the_answers_are_the_two_step_ones(
        arguments: Any, text: str, is_error: bool) -> None:
    app = StreamableHTTP(server())
    body, headers = call("add", arguments)
    exchange = Exchange(app, headers=headers, body=body)
    await exchange.run()
    reply = exchange.json()
    assert exchange.status == 200 and reply["id"] == 7
    assert reply["result"]["content"][0]["text"] == text
    assert reply["result"].get("isError", False) is is_error


async def test_bad_params_and_a_name_mismatch_keep_their_errors() -> None:
    app = StreamableHTTP(server())
    body, headers = call("add", [1, 2])
    exchange = Exchange(app, headers=headers, body=body)
    await exchange.run()
    assert exchange.status == 200
    assert exchange.json()["error"] == {"code": -32602, "message": "Invalid params: "
                                        "`arguments` must be an object - at `$.arguments`"}
    body, headers = call("add", {"a": 1}, **{"Mcp-Name": "ask"})
    exchange = Exchange(app, headers=headers, body=body)
    await exchange.run()
    assert exchange.status == 400 and exchange.json()["id"] == 7
    assert exchange.json()["error"]["message"] == "Mcp-Name header does not match params.name"


async def test_a_wrapped_app_keeps_its_body_deadline_until_the_body_ends() -> None:
    """``Admission`` around an app that does not report its body: ``receive`` is
    watched, so a slow second chunk is 408 and a handler after the body is not."""
    seen: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            seen.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        await clock.sleep(60)  # longer than the body timeout: only the body counts
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    clock = ManualClock()
    admission = Admission(app, AdmissionLimits(body_timeout=30), clock=clock)
    exchange = Exchange(admission, headers={"Content-Type": "application/json"}, body=b"{}")
    served = asyncio.ensure_future(exchange.run())
    await clock.until_sleeping(2)  # the handler and the watchdog
    for _ in range(60):  # a minute, the watchdog looking every second
        await clock.advance(1)
    await served
    assert exchange.status == 200 and seen == [b"{}"] and not admission._reading


async def test_streamable_http_is_served_through_the_one_admission_layer() -> None:
    """``StreamableHTTP`` has no admission ladder of its own (issue 25): the object it
    holds is the generic ASGI ``Admission`` layer around its request path, so that
    layer alone serves a request, counts it while it runs and lets it go after."""
    app = StreamableHTTP(server())
    admission = app.admission
    assert admission is not None and admission.app == app._respond
    assert admission.reports_body  # the app ends the body deadline itself
    assert StreamableHTTP.__call__ is Admission.__call__  # one ladder for both
    running: list[int] = []

    async def counted(message: Any) -> None:
        running.append(admission.requests)

    body, headers = call("add", {"a": 1, "b": 2})
    exchange = Exchange(admission, headers=headers, body=body)
    await exchange.run()
    assert exchange.status == 200 and exchange.json()["result"]["content"][0]["text"] == "3"
    assert admission.requests == 0 and not admission._reading
    await admission(http_scope("POST", "/mcp", headers), _body(body), counted)
    assert running and set(running) == {1}  # counted in while it answered


def _body(body: bytes) -> Any:
    async def receive() -> Any:
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _never(*_: Any) -> Any:
    raise AssertionError("nothing is received or sent")
