"""stdio for the client: a supervised server subprocess speaking newline-delimited JSON-RPC.

The transport starts the server, writes one message per line to its stdin and hands every
line read from its stdout to ``on_message`` (the era routes it: ``wire.Pending``). What it
does for supervision:

- the server runs in its own process group (a new session), so a launcher such as
  ``npx`` and the server it starts are stopped together, and a signal meant for our
  process group does not reach it;
- its stderr goes to the ``mcpcore.client.stderr`` logger, line by line (or wherever
  ``stderr`` says: a file, ``subprocess.DEVNULL``, or ``None`` to inherit ours);
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
    ) -> None:
        if isinstance(command, str) or not command:
            raise LocalProtocolError("stdio command must be a non-empty list of arguments")
        self.command = list(command)
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._stderr = stderr
        self.shutdown_timeout = shutdown_timeout
        self.on_message: Callable[[object], None] = _unrouted
        self.on_close: Callable[[], None] = _nothing
        self._process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._write_lock = asyncio.Lock()
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

    async def open(self) -> None:
        stderr: int | IO[Any] | None = (
            asyncio.subprocess.PIPE if self._stderr == "log" else self._stderr)
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=stderr, env=self._env, cwd=self._cwd, limit=MAX_LINE_BYTES,
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(f"cannot start {self.command[0]!r}: {exc}") from exc
        self.closed_reason = None
        self._tasks = [asyncio.ensure_future(self._read_loop())]
        if self._process.stderr is not None:
            self._tasks.append(asyncio.ensure_future(self._stderr_loop(self._process.stderr)))

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
                if not await _exited(process, self.shutdown_timeout):
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
        try:
            while True:
                try:
                    line = await process.stdout.readline()
                except ValueError:  # a line beyond the limit: the stream is unusable
                    self.closed_reason = "the server sent a line beyond the size limit"
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    value = decode_json(line)
                except RemoteProtocolError as exc:
                    log.warning("stdio server wrote a line that is not JSON: %s", exc)
                    continue
                self.on_message(value)
        finally:
            if self.closed_reason is None:
                try:
                    code = await asyncio.wait_for(process.wait(), 1.0)
                    self.closed_reason = f"the server process exited (status {code})"
                except TimeoutError:
                    self.closed_reason = "the server closed its stdout"
            if process.returncode is not None:
                self._signal(signal.SIGKILL)  # it crashed: reap what it left behind
            self.on_close()

    async def _stderr_loop(self, stream: asyncio.StreamReader) -> None:
        name = os.path.basename(self.command[0])
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # an overlong line: log what fits, keep reading
                line = await stream.read(MAX_STDERR_LINE)
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                server_log.info("[%s] %s", name, text[:MAX_STDERR_LINE])


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
