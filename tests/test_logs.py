"""JSON log lines, scrubbed of credentials; the audit trail on its own handler; one
request line per request, with the trace id when a span is current."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from mcpcore import MemoryAuditSink, Policy, Principal, Rule, Ruleset, Server
from mcpcore.jsonrpc import Request
from mcpcore.logs import (
    AUDIT_LOG,
    JsonFormatter,
    RequestLog,
    configure_logging,
    reset_logging,
)
from mcpcore.policy import LoggingAuditSink
from tests.support.wire import make_meta

JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"


@pytest.fixture
def streams() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    root = logging.getLogger()
    level = root.level
    log, audit = io.StringIO(), io.StringIO()
    configure_logging(level="INFO", stream=log, audit=audit)
    yield log, audit
    reset_logging()
    root.setLevel(level)
    assert logging.getLogger(AUDIT_LOG).propagate is True


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_record_is_one_json_line_without_credentials(
        streams: tuple[io.StringIO, io.StringIO]) -> None:
    log, _ = streams
    logger = logging.getLogger("someapp")
    logger.warning("calling upstream with Authorization: Bearer %s", JWT)
    try:
        raise ValueError(f"bad token {JWT}")
    except ValueError:
        logger.exception("client_secret=s3cr3t failed")
    first, second = lines(log)
    assert first["level"] == "warning" and first["logger"] == "someapp"
    assert JWT not in json.dumps(first) and "[redacted]" in first["message"]
    assert "s3cr3t" not in json.dumps(second) and JWT not in second["exc"]


async def test_audit_events_and_request_lines_go_where_they_belong(
        streams: tuple[io.StringIO, io.StringIO]) -> None:
    log, audit = streams
    server = Server("logged", policy=Policy(Ruleset([Rule("all", "allow")], category_scopes={
        c: [] for c in ("read", "write_idempotent", "write_additive", "destructive")}),
        sinks=[LoggingAuditSink(), MemoryAuditSink()]))

    @server.tool()
    def echo(text: str) -> str:
        return text

    RequestLog(server)
    params = {"name": "echo", "arguments": {"text": "a secret-ish value"},
              "_meta": make_meta({})}
    await server.handle(Request(id=3, method="tools/call", params=msgspec.json.encode(params)),
                        principal=Principal("alice", auth_method="jwt"))
    trail = lines(audit)
    assert len(trail) == 1 and trail[0]["tool"] == "echo" and trail[0]["result"] == "ok"
    operational = lines(log)
    assert not any(line["logger"] == AUDIT_LOG for line in operational)
    request = [line for line in operational if line["logger"] == "mcpcore.requests"]
    assert len(request) == 1
    assert {k: request[0][k] for k in ("method", "tool", "outcome", "request_id")} == {
        "method": "tools/call", "tool": "echo", "outcome": "ok", "request_id": "3"}
    assert request[0]["duration_ms"] >= 0 and "a secret-ish value" not in log.getvalue()


def test_other_handlers_still_see_the_traceback(streams: tuple[io.StringIO, io.StringIO],
                                                caplog: pytest.LogCaptureFixture) -> None:
    """Redaction happens in our formatter: the record other handlers get is untouched."""
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("someapp").exception("failed")
    assert caplog.records[-1].exc_info is not None
    assert "boom" in lines(streams[0])[-1]["exc"]


def test_the_formatter_copies_known_fields_only() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    record.method, record.password = "tools/call", "hunter2"  # type: ignore[attr-defined]
    line = json.loads(JsonFormatter().format(record))
    assert line["method"] == "tools/call" and "password" not in line
