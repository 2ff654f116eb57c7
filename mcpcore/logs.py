"""Structured logs: one JSON object per line, credentials scrubbed, audit kept apart.

What lives here: ``JsonFormatter`` (a record as one JSON line, its message and traceback
passed through ``mcpcore.auth``'s redaction), ``RequestLog`` (an observer of the engine
that logs one line per request on ``mcpcore.requests``), and ``configure_logging``,
which wires both to streams or files. The audit events (``mcpcore.audit``, one JSON line
per ``tools/call`` under a policy) get their own handler and never mix with the
operational log unless asked to.

    configure_logging(level="INFO", audit="/var/log/mcp/audit.jsonl")
    RequestLog(server)
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mcpcore import observe
from mcpcore.auth.redaction import redact
from mcpcore.errors import McpError

if TYPE_CHECKING:
    from mcpcore.context import Context
    from mcpcore.server import Server

#: Record attributes that ``JsonFormatter`` copies into the line when present.
FIELDS = ("request_id", "method", "tool", "outcome", "code", "duration_ms", "trace_id",
          "principal", "tenant", "upstream")
REQUEST_LOG = "mcpcore.requests"
AUDIT_LOG = "mcpcore.audit"


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message", ...FIELDS, "exc"}`` on one line.

    The message and any traceback are redacted (bearer tokens, JWTs, secrets in forms):
    the same rules as ``mcpcore.auth.redaction``.
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                line[name] = value
        if record.exc_info and record.exc_info[1] is not None:
            line["exc"] = redact(self.formatException(record.exc_info))
        elif record.exc_text:
            line["exc"] = redact(record.exc_text)
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)


class _AuditFormatter(logging.Formatter):
    """Audit lines are already JSON: written as they are."""

    def format(self, record: logging.LogRecord) -> str:
        return record.getMessage()


class _AuditLines(logging.StreamHandler):  # type: ignore[type-arg]
    """The audit trail's handler: each line written and flushed at once (nothing
    buffered in the process: a crash loses no event that was emitted), from a record
    (``emit``) or, without one, from ``mcpcore.policy.LoggingAuditSink``
    (``write_line``: an ``AuditLineWriter``)."""

    def write_line(self, line: str) -> None:
        with self.lock:  # type: ignore[union-attr]
            stream = self._writable()
            if stream is not None:
                stream.write(line + self.terminator)
                stream.flush()

    def _writable(self) -> IO[str] | None:
        return self.stream  # type: ignore[no-any-return]


class _AuditFile(_AuditLines, logging.FileHandler):
    def _writable(self) -> IO[str] | None:
        # As ``FileHandler.emit``: a file closed (or never opened) is opened again.
        if self.stream is None and (self.mode != "w" or not self._closed):  # type: ignore[attr-defined]
            self.stream = self._open()
        return self.stream


def _audit_handler(target: str | Path | IO[str]) -> logging.Handler:
    if isinstance(target, str | Path):
        return _AuditFile(target, encoding="utf-8")
    return _AuditLines(target)


def configure_logging(*, level: str | int = "INFO", stream: IO[str] | None = None,
                      audit: str | Path | IO[str] | None = None,
                      audit_in_log: bool = False) -> None:
    """JSON lines on ``stream`` (default stderr) for the root logger, redacted.

    ``audit``: where audit events go (a path or a stream; default stdout), on a handler
    of their own: the ``mcpcore.audit`` logger stops propagating, so the operational log
    holds none of them unless ``audit_in_log`` is set.
    """
    reset_logging()
    root = logging.getLogger()
    # The formatter redacts what it writes; a filter would rewrite the record for every
    # other handler too (``mcpcore.auth.install_redaction`` does that, on purpose).
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._mcpcore = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    trail = logging.getLogger(AUDIT_LOG)
    sink = _audit_handler(audit if audit is not None else sys.stdout)
    sink.setFormatter(_AuditFormatter())
    sink._mcpcore = True  # type: ignore[attr-defined]
    trail.addHandler(sink)
    trail.setLevel(logging.INFO)
    trail.propagate = audit_in_log


def reset_logging() -> None:
    """Undo ``configure_logging``: its handlers removed, the audit logger propagating
    again (for tests, and for a reload that configures again)."""
    for name in ("", AUDIT_LOG):
        logger = logging.getLogger(name)
        for handler in [h for h in logger.handlers if getattr(h, "_mcpcore", False)]:
            logger.removeHandler(handler)
            handler.close()
    logging.getLogger(AUDIT_LOG).propagate = True


class RequestLog:
    """One INFO line per request on ``mcpcore.requests``: method, tool, outcome, JSON-RPC
    error code, duration, request id and the trace id when a span is current.

    >>> RequestLog(server)                                          # doctest: +SKIP
    """

    def __init__(self, server: Server | None = None, *,
                 logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger(REQUEST_LOG)
        if server is not None:
            observe.attach(server, self)

    def begin(self, method: str, headers: Mapping[str, str] | None) -> _Line:
        return _Line(self.logger, method)


class _Line:
    __slots__ = ("_ctx", "_logger", "_method", "_started", "_timed_out")

    def __init__(self, logger: logging.Logger, method: str) -> None:
        self._logger = logger
        self._method = method
        self._started = time.perf_counter()
        self._ctx: Context | None = None
        self._timed_out = False

    def started(self, ctx: Context) -> None:
        self._ctx = ctx

    def timed_out(self, tool: str, seconds: float) -> None:
        self._timed_out = True

    def finished(self, result: Mapping[str, Any] | None, error: BaseException | None
                 ) -> None:
        if not self._logger.isEnabledFor(logging.INFO):
            return
        code = None
        if error is not None:
            outcome = "error" if isinstance(error, Exception) else "cancelled"
            code = int(error.code) if isinstance(error, McpError) else -32603
        elif self._timed_out:
            outcome = "timeout"
        elif result is not None and result.get("resultType") == "input_required":
            outcome = "input_required"
        elif result is not None and result.get("isError") is True:
            outcome = "tool_error"
        else:
            outcome = "ok"
        ctx = self._ctx
        extra: dict[str, Any] = {
            "method": self._method, "outcome": outcome, "code": code,
            "duration_ms": round((time.perf_counter() - self._started) * 1000, 3),
            "request_id": str(ctx.request_id) if ctx is not None else None,
            "tool": ctx.target if ctx is not None and self._method == "tools/call" else None,
            "trace_id": _trace_id(),
        }
        self._logger.info("%s %s", self._method, outcome, extra=extra)


def _trace_id() -> str | None:
    """The current OpenTelemetry trace id, if tracing is loaded and a span is current."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    span_context = trace.get_current_span().get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else None


__all__ = ["AUDIT_LOG", "FIELDS", "REQUEST_LOG", "JsonFormatter", "RequestLog",
           "configure_logging", "reset_logging"]
