"""stdio for the client: a supervised server subprocess speaking newline-delimited JSON-RPC.

The transport starts the server, writes one message per line to its stdin and hands every
line read from its stdout to ``on_message`` (the era routes it: ``wire.Pending``). What it
does for supervision:

- the server runs in its own process group (a new session), so a launcher such as
  ``npx`` and the server it starts are stopped together, and a signal meant for our
  process group does not reach it;
- its stderr goes to the ``mcpcore.client.stderr`` logger, line by line (or wherever
  ``stderr`` says: a file, ``subprocess.DEVNULL``, or ``None`` to inherit ours); the last
  ``STDERR_TAIL_LINES`` lines are also kept, and shown in the error when the server
  fails, so its own explanation is seen even where logging is not configured;
- a line on stdout that is not a JSON-RPC message, before the server's first message,
  ends the connection at once with that line (cut, control characters escaped) in the
  error: it is a server started without its stdio option printing a banner, and waiting
  for an answer would only time out. After the first message such a line is logged and
  skipped;
- what a hostile server can make us hold is bounded: one line at most
  ``max_line_bytes`` (a longer one ends the connection), ``READ_AHEAD_BYTES`` read
  ahead of it, the stderr tail; and a flood of messages yields to the event loop every
  ``YIELD_EVERY`` messages, so the client's own tasks keep running;
- shutdown follows the stdio transport page ("Shutdown"): close stdin, wait, SIGTERM,
  wait, SIGKILL — to the whole group, so nothing it started outlives it;
- when the server exits on its own (a crash), it is reaped at once, what is left of its
  group is killed, and every waiting request fails with ``TransportError``;
- when the task closing it is cancelled, the group is killed without waiting (asyncio's
  child watcher reaps it), so a cancelled caller leaves neither a zombie nor an orphan.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Final, Literal

from mcpcore.client.errors import LocalProtocolError, RemoteProtocolError, TransportError
from mcpcore.client.wire import decode_json, encode_message

log = logging.getLogger("mcpcore.client")
server_log = logging.getLogger("mcpcore.client.stderr")

#: Longest stdio line we accept from a server (one JSON-RPC message).
MAX_LINE_BYTES: Final = 64 * 1024 * 1024
#: Longest stderr line logged as one record.
MAX_STDERR_LINE: Final = 64 * 1024
#: What is read from a pipe ahead of the line being assembled (asyncio stops reading
#: the pipe once twice this is buffered).
READ_AHEAD_BYTES: Final = 256 * 1024
#: Lines of the server's stderr kept for the error raised when it fails, and the
#: characters kept of each.
STDERR_TAIL_LINES: Final = 20
STDERR_TAIL_CHARS: Final = 300
#: Characters of an offending stdout line shown in an error or a warning.
SHOWN_CHARS: Final = 200
#: Messages handled in a row before the read loop lets other tasks run.
YIELD_EVERY: Final = 64

Stderr = int | IO[Any] | Literal["log"] | None


class StdioTransport:
    """A server subprocess on stdin/stdout; see the module docstring.

    ``on_message`` receives each decoded JSON value from stdout (an object, or a batch
    array for 2025-03-26 sessions); ``on_close`` is called once when stdout ends.
    """

    uses_headers = False

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: Stderr = "log",
        shutdown_timeout: float = 5.0,
        max_line_bytes: int = MAX_LINE_BYTES,
        name: str | None = None,
    ) -> None:
        if isinstance(command, str) or not command:
            raise LocalProtocolError("stdio command must be a non-empty list of arguments")
        self.command = list(command)
        #: What its stderr lines are logged under (``[name] line``): the command's
        #: file name unless given (a gateway gives the upstream's name).
        self.name = name or os.path.basename(self.command[0])
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._stderr = stderr
        self.shutdown_timeout = shutdown_timeout
        self.max_line_bytes = max_line_bytes
        self.on_message: Callable[[object], None] = _unrouted
        self.on_close: Callable[[], None] = _nothing
        self._process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr_task: asyncio.Task[None] | None = None
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._write_lock = asyncio.Lock()
        #: The server broke the protocol (not JSON-RPC, a line too long): stop it at once.
        self._broken = False
        self.closed_reason: str | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id (also its process group id)."""
        return None if self._process is None else self._process.pid

    @property
    def returncode(self) -> int | None:
        """The server's exit status once it has exited."""
        return None if self._process is None else self._process.returncode

    @property
    def origin(self) -> str:
        return "stdio:" + " ".join(self.command)

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        """The server's last stderr lines (at most ``STDERR_TAIL_LINES``, each cut to
        ``STDERR_TAIL_CHARS``, control characters escaped); empty unless ``stderr="log"``."""
        return tuple(self._stderr_tail)

    async def open(self) -> None:
        stderr: int | IO[Any] | None = (
            asyncio.subprocess.PIPE if self._stderr == "log" else self._stderr)
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=stderr, env=self._env, cwd=self._cwd, limit=READ_AHEAD_BYTES,
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(f"cannot start {self.command[0]!r}: {exc}") from exc
        self.closed_reason = None
        self._broken = False
        self._stderr_tail.clear()
        self._tasks = [asyncio.ensure_future(self._read_loop())]
        self._stderr_task = None
        if self._process.stderr is not None:
            self._stderr_task = asyncio.ensure_future(self._stderr_loop(self._process.stderr))
            self._tasks.append(self._stderr_task)

    async def write(self, message: object) -> None:
        line = encode_message(message) + b"\n"  # msgspec never emits raw newlines
        if self.closed_reason is not None:
            raise TransportError(f"stdio server unavailable: {self.closed_reason}")
        process = self._process
        if process is None or process.stdin is None:
            raise LocalProtocolError("the client is not open: use `async with Client...`")
        async with self._write_lock:
            try:
                process.stdin.write(line)
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise TransportError(f"stdio server closed its stdin: {exc}") from exc

    def write_nowait(self, message: object) -> None:
        """Best-effort write without waiting (safe while being cancelled)."""
        process = self._process
        if process is None or process.stdin is None or process.stdin.is_closing():
            return
        with contextlib.suppress(Exception):
            process.stdin.write(encode_message(message) + b"\n")

    async def close(self) -> None:
        """Stop the server (see the module docstring); idempotent."""
        process = self._process
        if process is None:
            return
        self.closed_reason = self.closed_reason or "the client is closed"
        try:
            if process.returncode is None:
                if process.stdin is not None and not process.stdin.is_closing():
                    process.stdin.close()  # EOF: a stdio server ends once its work is done
                # A server that broke the protocol is not waited for: it is not serving us.
                if self._broken or not await _exited(process, self.shutdown_timeout):
                    self._signal(signal.SIGTERM)
                    if not await _exited(process, self.shutdown_timeout):
                        self._signal(signal.SIGKILL)
                        await process.wait()
            self._signal(signal.SIGKILL)  # whatever the server started and left behind
        except BaseException:
            self._signal(signal.SIGKILL)  # cancelled mid-shutdown: no waiting, no orphans
            raise
        finally:
            for task in self._tasks:
                task.cancel()
            self.on_close()

    def _signal(self, signum: int) -> None:
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)

    async def _read_loop(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        lines = _LineReader(process.stdout, self.max_line_bytes)
        answered = False  # a first JSON-RPC message came: the server speaks stdio
        handled = 0
        try:
            while True:
                try:
                    line = await lines.readline()
                except _LineTooLong:
                    self._broken = True
                    self.closed_reason = (
                        f"the server sent a line longer than {self.max_line_bytes} bytes")
                    break
                if line is None:
                    break
                if not line.strip():
                    continue
                try:
                    value = decode_json(line)
                except RemoteProtocolError:
                    value = _NOT_JSON
                if not answered and not isinstance(value, dict | list):
                    self._broken = True
                    self.closed_reason = (
                        f"the server wrote a line that is not JSON-RPC before any message: "
                        f"{shown(line)} (is it started in its stdio mode? a server started "
                        "for HTTP prints such banners)")
                    break
                if value is _NOT_JSON:
                    log.warning("stdio server wrote a line that is not JSON (skipped): %s",
                                shown(line))
                    continue
                answered = True
                self.on_message(value)
                handled += 1
                if handled % YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # a flood must not starve the client's own tasks
        finally:
            server_failed = self.closed_reason is None or self._broken
            if self.closed_reason is None:
                try:
                    code = await asyncio.wait_for(process.wait(), 1.0)
                    self.closed_reason = f"the server process exited (status {code})"
                except TimeoutError:
                    self.closed_reason = "the server closed its stdout"
            if server_failed:
                await self._stderr_settled(process)
                self.closed_reason += self._stderr_summary()
            if process.returncode is not None:
                self._signal(signal.SIGKILL)  # it crashed: reap what it left behind
            self.on_close()

    async def _stderr_settled(self, process: asyncio.subprocess.Process) -> None:
        """Let the stderr reader catch up with what the server wrote before it failed:
        until stderr ends if the server exited (bounded), a moment otherwise."""
        task = self._stderr_task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=1.0 if process.returncode is not None else 0.1)

    def _stderr_summary(self) -> str:
        if not self._stderr_tail:
            return ""
        return "; the last lines of its stderr:\n  " + "\n  ".join(self._stderr_tail)

    async def _stderr_loop(self, stream: asyncio.StreamReader) -> None:
        name = self.name
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # an overlong line: log what fits, keep reading
                line = await stream.read(MAX_STDERR_LINE)
            if not line:
                return
            text = printable(line.decode("utf-8", "replace").rstrip())
            if text:
                server_log.info("[%s] %s", name, text[:MAX_STDERR_LINE], extra={"upstream": name})
                self._stderr_tail.append(_cut(text, STDERR_TAIL_CHARS))


class _LineTooLong(Exception):
    pass


class _LineReader:
    """Newline-delimited lines from a stream, each at most ``limit`` bytes, reading
    ``READ_AHEAD_BYTES`` at a time and scanning each byte once (never the whole unfinished
    line again). ``readline`` returns a line without its newline, ``None`` at the end."""

    def __init__(self, stream: asyncio.StreamReader, limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._buffer = bytearray()
        self._start = 0  # where the next line begins in the buffer
        self._scanned = 0  # no newline before this offset

    async def readline(self) -> bytes | None:
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n", max(self._start, self._scanned))
            if end >= 0:
                if end - self._start > self._limit:
                    raise _LineTooLong
                line = bytes(buffer[self._start:end])
                self._start = self._scanned = end + 1
                return line
            if len(buffer) - self._start > self._limit:
                raise _LineTooLong
            del buffer[:self._start]  # what was handed out goes, once per read
            self._start, self._scanned = 0, len(buffer)
            chunk = await self._stream.read(READ_AHEAD_BYTES)
            if not chunk:
                if not buffer:
                    return None
                line = bytes(buffer)
                buffer.clear()
                self._scanned = 0
                return line
            buffer += chunk


_NOT_JSON: Final = object()


def printable(text: str) -> str:
    """``text`` with control and format characters escaped (``\\x1b``), so what a server
    wrote cannot drive a terminal or fake lines in a log or an error message."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _cut(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size] + f"... ({len(text)} characters)"


def shown(line: bytes) -> str:
    """An offending line from a server, safe to show: cut, decoded, quoted, and control
    characters escaped (``repr`` escapes what is not printable)."""
    text = line[:SHOWN_CHARS * 4].decode("utf-8", "replace").rstrip()
    if len(line) > SHOWN_CHARS * 4 or len(text) > SHOWN_CHARS:
        return repr(text[:SHOWN_CHARS]) + f"... ({len(line)} bytes)"
    return repr(text)


async def _exited(process: asyncio.subprocess.Process, timeout: float) -> bool:
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except TimeoutError:
        return False
    return True


def _unrouted(value: object) -> None:
    log.debug("stdio message before any era listens: %.200r", value)


def _nothing() -> None:
    return None


__all__ = ["MAX_LINE_BYTES", "Stderr", "StdioTransport"]
