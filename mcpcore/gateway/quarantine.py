"""The quarantine of tools whose definitions differ from the lock file: the screen the
catalog passes each upstream's tools through at every refresh, the error a call to a
held tool gets, and the counts metrics show (docs/gateway-pinning.md).

The verdicts come from ``pinning``; this module only decides what is served: a
``pinned`` tool, a ``new`` one when ``admit_new_tools`` is on, nothing else.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from mcpcore.errors import InvalidParams
from mcpcore.gateway.pinning import (
    LockError,
    PinningError,
    Pins,
    QuarantineReason,
    ToolLike,
    definition_digest,
    tool_name,
)

log = logging.getLogger("mcpcore.gateway.pinning")

T = TypeVar("T", bound=ToolLike)


class ToolQuarantined(InvalidParams):
    """A call to a quarantined tool (-32602, like an unknown tool: the client cannot
    call it), saying why and who can release it; ``data`` has ``tool`` (the name the
    client used) and ``reason``."""

    def __init__(self, tool: str, reason: QuarantineReason) -> None:
        why = {
            "changed": "its definition changed since it was approved",
            "new": "it is new since the tool definitions were pinned",
            "invalid": "its definition cannot be pinned",
            "duplicate": "its server lists it twice with different definitions",
        }[reason]
        super().__init__(
            f"Tool {tool} is quarantined: {why}. The gateway's operator can review it "
            "with `mcpcore gateway diff` and admit it with `mcpcore gateway approve`",
            data={"tool": tool, "reason": reason, "quarantined": True})
        self.tool = tool
        self.reason = reason


# -- the quarantine ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuarantinedTool:
    """A tool held back from the catalog: which, why, and the digests (``pinned`` is
    ``None`` for a new tool; ``digest`` is ``None`` for a definition that cannot be
    pinned)."""

    upstream: str
    name: str
    reason: QuarantineReason
    digest: str | None
    pinned: str | None

    def error(self, listed_as: str | None = None) -> ToolQuarantined:
        """The error a call to this tool gets (``listed_as``: the name the client
        called, e.g. the prefixed one; default the upstream's own name)."""
        return ToolQuarantined(listed_as or self.name, self.reason)


@dataclass
class QuarantineCounts:
    """What metrics show: the tools held now, by upstream (a gauge), and how many times
    a tool entered or left the quarantine, by upstream and reason (counters)."""

    held: dict[str, int] = field(default_factory=dict)
    quarantined_total: dict[tuple[str, str], int] = field(default_factory=dict)
    released_total: dict[str, int] = field(default_factory=dict)


class Quarantine:
    """The screen the catalog passes each upstream's tools through at every refresh.

    ::

        quarantine = Quarantine(Pins.load("gateway.lock"), lock_path="gateway.lock",
                                admit_new_tools=config.admit_new_tools,
                                on_quarantine=audit_log, on_release=audit_log)
        quarantine.reload()                        # once per refresh: a newer lock?
        admitted, held = quarantine.screen("files", tools)
        ...
        if (held := quarantine.held("files").get(name)) is not None:
            raise held.error(prefixed_name)         # the call's clear error

    ``screen`` returns the tools to serve (the same objects, in order: ``pinned`` ones,
    and ``new`` ones when ``admit_new_tools``) and the ones held back. A tool whose
    definition changed is never admitted; nor is one that cannot be pinned, nor a name
    listed twice with different definitions. ``on_quarantine(tool)`` is called once
    when a tool enters the quarantine (or is held for another reason or definition),
    not at every refresh; ``on_release(upstream, name)`` when a held tool is admitted
    (after ``approve``; a held tool the upstream stops listing just leaves the
    quarantine). ``counts`` feeds metrics.
    """

    def __init__(self, pins: Pins, *, admit_new_tools: bool = False,
                 lock_path: str | os.PathLike[str] | None = None,
                 on_quarantine: Callable[[QuarantinedTool], None] | None = None,
                 on_release: Callable[[str, str], None] | None = None) -> None:
        self.pins = pins
        self.admit_new_tools = admit_new_tools
        self.lock_path = None if lock_path is None else os.fspath(lock_path)
        self.on_quarantine = on_quarantine
        self.on_release = on_release
        self.counts = QuarantineCounts()
        self._held: dict[str, dict[str, QuarantinedTool]] = {}
        self._lock_seen = self._lock_stamp()

    def screen(self, upstream: str, tools: Sequence[T]) -> tuple[list[T], list[QuarantinedTool]]:
        """The tools of ``upstream`` (all it lists now) to serve, and those held back."""
        digests: dict[str, str | None] = {}
        names: list[str | None] = []
        duplicates: set[str] = set()
        for tool in tools:
            try:
                name = tool_name(tool)
            except PinningError:
                names.append(None)  # nameless: the catalog cannot serve it anyway
                continue
            names.append(name)
            digest: str | None
            try:
                digest = definition_digest(tool)
            except PinningError as exc:
                log.warning("upstream %r, tool %r: %s", upstream, name, exc,
                            extra={"upstream": upstream})
                digest = None
            if name in digests and digests[name] != digest:
                duplicates.add(name)
            digests.setdefault(name, digest)
        admitted: list[T] = []
        held: dict[str, QuarantinedTool] = {}
        for tool, listed_as in zip(tools, names, strict=True):
            if listed_as is None:
                continue
            name, digest = listed_as, digests[listed_as]
            pin = self.pins.pin(upstream, name)
            pinned = None if pin is None else pin.digest
            reason: QuarantineReason | None
            if name in duplicates:
                reason = "duplicate"
            elif digest is None:
                reason = "invalid"
            else:
                try:
                    verdict = self.pins.verdict_of(upstream, name, digest, tool)
                except PinningError:  # cannot be compared with a version 1 pin
                    verdict = "changed"
                reason = (None if verdict == "pinned"
                          or (verdict == "new" and self.admit_new_tools) else verdict)
            if reason is None:
                admitted.append(tool)
            elif name not in held:
                held[name] = QuarantinedTool(upstream, name, reason, digest, pinned)
        self._update(upstream, held, {name for name in names if name is not None})
        return admitted, list(held.values())

    def held(self, upstream: str) -> Mapping[str, QuarantinedTool]:
        """The tools of ``upstream`` held back at its last screen, by name."""
        return dict(self._held.get(upstream, {}))

    def _update(self, upstream: str, held: dict[str, QuarantinedTool],
                listed: set[str]) -> None:
        before = self._held.get(upstream, {})
        for name, tool in held.items():
            if before.get(name) != tool:
                key = (upstream, tool.reason)
                self.counts.quarantined_total[key] = self.counts.quarantined_total.get(key,
                                                                                       0) + 1
                log.warning("quarantined tool %r of upstream %r (%s; digest %s, pinned %s)",
                            name, upstream, tool.reason, tool.digest, tool.pinned,
                            extra={"upstream": upstream})
                if self.on_quarantine is not None:
                    self.on_quarantine(tool)
        for name in sorted(before.keys() - held.keys()):
            if name not in listed:
                continue  # no longer listed at all: nothing is admitted
            self.counts.released_total[upstream] = self.counts.released_total.get(upstream,
                                                                                  0) + 1
            log.info("released tool %r of upstream %r from quarantine", name, upstream,
                     extra={"upstream": upstream})
            if self.on_release is not None:
                self.on_release(upstream, name)
        self._held[upstream] = held
        self.counts.held[upstream] = len(held)

    # -- a lock approved while the gateway runs ------------------------------------------
    def _lock_stamp(self) -> tuple[int, int, int] | None:
        if self.lock_path is None:
            return None
        try:
            stat = os.stat(self.lock_path)
        except OSError:
            return None
        return (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def reload(self) -> bool:
        """Read the lock file again if it changed since it was last read (``approve``
        wrote it): True if new pins were taken. A lock that cannot be read now keeps
        the pins in force (logged): the quarantine never opens because a file broke."""
        stamp = self._lock_stamp()
        if self.lock_path is None or stamp is None or stamp == self._lock_seen:
            return False
        try:
            pins = Pins.load(self.lock_path)
        except LockError as exc:
            log.error("keeping the pins in force: %s", exc)
            return False
        self._lock_seen = stamp
        changed = pins != self.pins
        self.pins = pins
        return changed


__all__ = ["Quarantine", "QuarantineCounts", "QuarantinedTool", "ToolQuarantined"]
