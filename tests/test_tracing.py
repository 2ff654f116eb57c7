"""Traces with the OpenTelemetry SDK's in-memory exporter: a span per request that
continues the client's ``traceparent`` (``_meta`` first, then the HTTP header), its
attributes, child spans of handlers, and the trace carried into a token exchange."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpcore import Policy, Principal, Rule, Ruleset, Server, StreamableHTTP
from mcpcore.auth.client_auth import ClientSecretPost
from mcpcore.auth.server.downstream import DownstreamCredentials, TokenExchange
from mcpcore.auth.server.inbound import InboundToken
from mcpcore.auth.urls import NetworkPolicy
from mcpcore.context import Context
from mcpcore.observe import set_propagator
from mcpcore.policy import Downstream, MemoryAuditSink, ToolSettings
from mcpcore.principal import PRINCIPAL_SCOPE_KEY
from mcpcore.tracing import Tracing
from tests.support.wire import make_meta, standard_headers

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT}-01"
HEADER_TRACE = "0af7651916cd43dd8448eb211c80319c"
HEADER_PARENT = "b7ad6b7169203331"
STS = "https://sts.example/token"
API = "https://api.example"


class Sts:
    """A recording token service: what each exchange request carried."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json={"access_token": "downstream-token",
                                         "token_type": "Bearer", "expires_in": 300})


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    yield InMemorySpanExporter()
    set_propagator(None)


def rig(exporter: InMemorySpanExporter, sts: Sts | None = None
        ) -> tuple[Server, TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rules = Ruleset([Rule("all", "allow")], category_scopes={c: [] for c in (
        "read", "write_idempotent", "write_additive", "destructive")},
        tools={"report": ToolSettings(downstream=(Downstream(API, frozenset({"r"})),))})
    server = Server("traced", policy=Policy(rules, sinks=[MemoryAuditSink()]))
    tracer = provider.get_tracer("tool-code")
    credentials = DownstreamCredentials(exchange=TokenExchange(
        STS, issuer="https://sts.example", client_auth=ClientSecretPost("mcp", "s"),
        network=NetworkPolicy(),
        client=httpx.AsyncClient(transport=httpx.MockTransport(sts or Sts()))))

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        with tracer.start_as_current_span("inside echo"):
            return text

    @server.tool(annotations={"readOnlyHint": True})
    async def report(ctx: Context) -> str:
        token = await credentials.for_principal(ctx.principal, audience=API, scopes={"r"},
                                                inbound=InboundToken("inbound-token"))
        return token.audience

    @server.tool(annotations={"readOnlyHint": True})
    def broken() -> str:
        raise RuntimeError("boom")

    Tracing(server, tracer_provider=provider)
    return server, provider


async def post(server: Server, tool: str, arguments: dict[str, Any] | None = None, *,
               meta: dict[str, Any] | None = None, headers: dict[str, str] | None = None
               ) -> dict[str, Any]:
    inner = StreamableHTTP(server)
    alice = Principal("alice", issuer="https://idp.example", tenant="contoso",
                      client_id="app", auth_method="jwt")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await inner({**scope, PRINCIPAL_SCOPE_KEY: alice}, receive, send)

    params = {"name": tool, "arguments": arguments or {},
              "_meta": {**make_meta({}), **(meta or {})}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    sent = {**standard_headers("tools/call", params), "Accept": "application/json",
            **(headers or {})}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://localhost") as c:
        answer: dict[str, Any] = (await c.post("/mcp", json=body, headers=sent)).json()
        return answer


def server_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert len(spans) == 1, spans
    return spans[0]


async def test_the_clients_traceparent_in_meta_is_continued(
        exporter: InMemorySpanExporter) -> None:
    server, _ = rig(exporter)
    answer = await post(server, "echo", {"text": "hi"},
                        meta={"traceparent": TRACEPARENT, "tracestate": "vendor=1"},
                        headers={"traceparent": f"00-{HEADER_TRACE}-{HEADER_PARENT}-01"})
    assert answer["result"]["content"][0]["text"] == "hi"
    span = server_span(exporter)
    context = span.get_span_context()
    assert context is not None and span.parent is not None
    assert format(context.trace_id, "032x") == TRACE_ID        # _meta wins over the header
    assert format(span.parent.span_id, "016x") == PARENT
    assert span.parent.is_remote
    assert context.trace_state.to_header() == "vendor=1"
    assert span.name == "tools/call echo"
    attributes = dict(span.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["jsonrpc.request.id"] == "7"
    assert attributes["mcpcore.outcome"] == "ok"
    assert attributes["mcpcore.tenant"] == "contoso"
    assert len(str(attributes["mcpcore.principal"])) == 16 and "enduser.id" not in attributes
    # The handler's own span is a child of the request's span.
    inner = [s for s in exporter.get_finished_spans() if s.name == "inside echo"]
    assert inner[0].parent is not None and inner[0].parent.span_id == context.span_id


async def test_the_http_header_is_the_fallback_and_else_a_new_trace(
        exporter: InMemorySpanExporter) -> None:
    server, _ = rig(exporter)
    await post(server, "echo", {"text": "x"},
               headers={"traceparent": f"00-{HEADER_TRACE}-{HEADER_PARENT}-01"})
    span = server_span(exporter)
    assert span.parent is not None and format(span.parent.span_id, "016x") == HEADER_PARENT
    exporter.clear()
    await post(server, "echo", {"text": "x"})
    fresh = server_span(exporter)
    assert fresh.parent is None and format(fresh.context.trace_id, "032x") != HEADER_TRACE


async def test_outcomes_and_errors_are_on_the_span(exporter: InMemorySpanExporter) -> None:
    server, _ = rig(exporter)
    await post(server, "broken", meta={"traceparent": TRACEPARENT})
    failed = server_span(exporter)
    assert dict(failed.attributes or {})["mcpcore.outcome"] == "tool_error"
    exporter.clear()
    answer = await post(server, "missing", meta={"traceparent": TRACEPARENT})
    assert answer["error"]["code"] == -32602
    refused = server_span(exporter)
    attributes = dict(refused.attributes or {})
    assert attributes["mcpcore.outcome"] == "error"
    assert attributes["rpc.jsonrpc.error_code"] == -32602
    assert refused.status.status_code == StatusCode.ERROR


async def test_an_early_refusal_still_gets_a_span(exporter: InMemorySpanExporter) -> None:
    server, _ = rig(exporter)
    await post(server, "echo", {"text": "x"}, headers={"MCP-Protocol-Version": "1999-01-01",
                                                       "traceparent": TRACEPARENT})
    span = server_span(exporter)
    assert dict(span.attributes or {})["error.type"] == "UnsupportedProtocolVersion"
    assert format(span.context.trace_id, "032x") == TRACE_ID


async def test_the_trace_reaches_the_token_exchange(exporter: InMemorySpanExporter) -> None:
    sts = Sts()
    server, _ = rig(exporter, sts)
    answer = await post(server, "report", meta={"traceparent": TRACEPARENT})
    assert answer["result"]["content"][0]["text"] == API
    assert len(sts.requests) == 1
    sent = sts.requests[0].headers["traceparent"]
    span = server_span(exporter)
    assert sent.split("-")[1] == TRACE_ID
    assert sent.split("-")[2] == format(span.context.span_id, "016x")


def test_without_tracing_nothing_is_loaded() -> None:
    import subprocess
    import sys

    code = ("import sys\nfrom mcpcore import Server, StreamableHTTP\n"
            "import mcpcore.auth.server.downstream\n"
            "print([m for m in sys.modules if m.startswith(('opentelemetry', "
            "'prometheus_client'))])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
    assert trace.get_tracer_provider() is not None
