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
from mcpcore.policy.audit import AuditEvent
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


def _server_with_audit() -> Server:
    server = Server("audited", policy=Policy(Ruleset([Rule("all", "allow")], category_scopes={
        c: [] for c in ("read", "write_idempotent", "write_additive", "destructive")})))

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


async def _call(server: Server, n: int) -> None:
    params = {"name": "echo", "arguments": {"text": "x"}, "_meta": make_meta({})}
    await server.handle(Request(id=n, method="tools/call", params=msgspec.json.encode(params)),
                        principal=Principal("alice", auth_method="jwt"))


async def test_the_audit_file_gets_each_line_at_once_without_a_log_record(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The audit handler configure_logging installs writes the event's line itself:
    # no LogRecord (its creation and the caller lookup cost more than the event's
    # encoding), one encoding per event, and the line on disk before the call returns.
    path = tmp_path / "audit.jsonl"
    configure_logging(level="WARNING", stream=io.StringIO(), audit=str(path))
    records: list[str] = []
    encoded: list[str] = []
    make_record = logging.Logger.makeRecord
    to_json = AuditEvent.to_json

    def counting_make_record(self: logging.Logger, name: str, *args: Any, **kw: Any
                             ) -> logging.LogRecord:
        records.append(name)
        return make_record(self, name, *args, **kw)

    def counting_to_json(self: AuditEvent) -> str:
        encoded.append(self.tool)
        return to_json(self)

    monkeypatch.setattr(logging.Logger, "makeRecord", counting_make_record)
    monkeypatch.setattr(AuditEvent, "to_json", counting_to_json)
    try:
        server = _server_with_audit()
        for n in range(3):
            await _call(server, n)
            written = path.read_text().splitlines()  # flushed: readable now
            assert len(written) == n + 1 and json.loads(written[-1])["request_id"] == str(n)
    finally:
        reset_logging()
    assert AUDIT_LOG not in records
    assert encoded == ["echo"] * 3


async def test_an_audit_logger_with_a_filter_or_handlers_of_its_own_gets_records(
        streams: tuple[io.StringIO, io.StringIO]) -> None:
    _, audit = streams
    trail = logging.getLogger(AUDIT_LOG)
    seen: list[logging.LogRecord] = []

    def keep(record: logging.LogRecord) -> bool:
        seen.append(record)
        return True

    trail.addFilter(keep)
    try:
        await _call(_server_with_audit(), 1)
    finally:
        trail.removeFilter(keep)
    assert len(seen) == 1 and json.loads(seen[0].getMessage())["tool"] == "echo"
    assert lines(audit) == [json.loads(seen[0].getMessage())]


@pytest.mark.parametrize("subject", ["alice", "zoë", "line\u2028break", "lone\ud800"])
def test_an_audit_line_is_the_sorted_ascii_json_of_the_event(subject: str) -> None:
    event = AuditEvent(ts=1796189856.7053773, request_id="7", method="tools/call",
                       tool="echo", upstream="quick", subject=subject,
                       granted_scopes=["a", "b"], latency_ms=0.125, external=True,
                       downstream=[{"audience": "https://x", "scopes": ["s"],
                                    "result": "allowed"}])
    line = event.to_json()
    assert line == json.dumps(event.to_dict(), separators=(",", ":"), sort_keys=True)
    assert line.isascii() and "\n" not in line
