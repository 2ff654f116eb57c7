"""Pinned tool definitions: what a reviewer approved, in a lock file, and the quarantine
of every tool that differs from it (docs/gateway-pinning.md).

An upstream server can change a tool's description or schema after it was reviewed (a
"rug pull": the model reads the new description, so new instructions reach it without
anyone looking). The gateway keeps a lock file (``gateway.lock``) with a digest of each
upstream tool's definition, and the definition itself; at run time a tool whose
definition differs from the lock (``changed``), or that the lock does not know
(``new``), is quarantined: left out of lists and refused on call, until an operator
approves it (``mcpcore gateway approve``). ``admit_new_tools`` admits new tools; a
changed tool is never admitted without approval.

What lives here: the approved part of a definition and its digest
(``approved_definition``, ``definition_digest``), the lock file (``Pins``: read strictly
and within bounds, written in a stable order), verdicts and approvals, . No network
I/O; the only files touched are the lock file's. The ``Quarantine`` the catalog screens
each upstream's tools through is ``quarantine``; the readable diff is ``pin_diff``; the
commands are ``pins_cli``.

What is hashed (the spec's ``Tool``, schema/2026-07-28 ``#/$defs/Tool``): every member
of the definition. That is ``name``, ``title``, ``description``, ``inputSchema``,
``outputSchema``, ``annotations`` (what the model reads and what the policy derives
categories from), ``icons`` (what a person sees next to the tool: a changed ``src`` can
point at another host), ``_meta`` (served to the client with the tool, and what a
client may act on: an MCP Apps tool names the UI resource the host renders there, so a
changed ``_meta`` can swap the interface a person trusts) and any other member a server
sends that the gateway would serve (the 2025-11-25 ``execution``, a future member):
present or absent matters, and an unknown member is pinned rather than trusted.

Lock file versions: ``2`` pins ``_meta`` too; ``1`` (written before) pinned every member
but ``_meta``. A version 1 lock is still read and still verifies each tool as it did
(its ``Pin.meta`` is False: the digest of the definition without ``_meta``), with a
warning; ``mcpcore gateway pin CONFIG --upgrade`` rewrites it as version 2, pinning the
``_meta`` each tool has now where the rest of its definition still matches its pin
(``Pins.upgraded``). Nothing else writes pins of version 1: ``approve`` asks for the
upgrade first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from mcpcore import types

log = logging.getLogger("mcpcore.gateway.pinning")

#: The digest's algorithm, written as the prefix of every digest (``sha256:<hex>``).
DIGEST_ALGORITHM = "sha256"
#: The lock file's format written (``_meta`` pinned); a reader reads this one and
#: ``LEGACY_LOCK_VERSION`` (module docstring) and refuses any other.
LOCK_VERSION = 2
#: The lock file's format before ``_meta`` was pinned.
LEGACY_LOCK_VERSION = 1
#: Members of a definition left out of a version 1 lock's digests.
UNPINNED_MEMBERS = frozenset({"_meta"})

# Bounds on what a lock file, and a definition, may hold: a lock is read at every start
# and by every command, and is data a person or a script may have damaged.
MAX_LOCK_BYTES = 64 * 1024 * 1024
MAX_UPSTREAMS = 1000
MAX_TOOLS_PER_UPSTREAM = 10_000
#: The canonical JSON of one approved definition.
MAX_DEFINITION_BYTES = 1024 * 1024
#: Nesting of arrays and objects in one definition (JSON Schemas nest, but not this far).
MAX_DEPTH = 64

PinVerdict = Literal["pinned", "changed", "new"]
#: Why a tool is quarantined: its verdict, or ``invalid`` (a definition that cannot be
#: pinned: too large, too deep, not JSON) or ``duplicate`` (listed twice, differently).
QuarantineReason = Literal["changed", "new", "invalid", "duplicate"]

ToolLike = Mapping[str, Any] | types.Tool

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class PinningError(ValueError):
    """A tool definition that cannot be pinned (not a JSON object with a string
    ``name``, too large, too deeply nested, not valid Unicode)."""


class LockError(ValueError):
    """A lock file that cannot be used: missing, damaged, too large, of another
    version. The message is one line: the file, what is wrong, and what to do."""


# -- the approved part of a definition, and its digest ----------------------------------


def approved_definition(tool: ToolLike, *, meta: bool = True) -> dict[str, Any]:
    """The part of ``tool`` a reviewer approves (every member; without ``meta``, every
    member but ``_meta``, as a version 1 lock pinned), as plain JSON values, checked:
    ``PinningError`` if it is not a JSON object with a string ``name``, nests deeper
    than ``MAX_DEPTH``, holds a non-JSON value (a float that is not finite, a
    non-string key) or a lone surrogate. ``tool`` is a definition as sent on the wire
    (a mapping) or the engine's ``types.Tool``."""
    if isinstance(tool, types.Tool):
        tool = msgspec.to_builtins(tool)
    if not isinstance(tool, Mapping):
        raise PinningError(f"a tool definition is a JSON object, not {type(tool).__name__}")
    name = tool.get("name")
    if not isinstance(name, str):
        raise PinningError("a tool definition has a string name")
    return {key: _plain(value, 1, key) for key, value in tool.items()
            if (meta or key not in UNPINNED_MEMBERS) and _key(key, "")}


def canonical_json(definition: Mapping[str, Any]) -> bytes:
    """The one byte string a definition hashes as: JSON with sorted keys, no
    insignificant whitespace, every non-ASCII character escaped (``\\uXXXX``: no
    encoding choice, no normalization; two strings that differ in any code point
    differ here). ``PinningError`` past ``MAX_DEFINITION_BYTES``."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    if len(text) > MAX_DEFINITION_BYTES:
        raise PinningError(f"a tool definition of {len(text)} bytes is larger than the "
                           f"{MAX_DEFINITION_BYTES} a lock file holds")
    return text.encode("ascii")


def definition_digest(tool: ToolLike, *, meta: bool = True) -> str:
    """``sha256:<hex>`` of the canonical JSON of the approved part of ``tool``: the same
    for the same definition whatever the order of its keys or its whitespace on the
    wire, different when any approved member changes, appears or disappears. Without
    ``meta``: a version 1 lock's digest (``_meta`` left out; the same digest for a tool
    that has no ``_meta``).

    >>> definition_digest({"name": "echo", "inputSchema": {"type": "object"}})[:15]
    'sha256:a85008ed'
    """
    return _digest(canonical_json(approved_definition(tool, meta=meta)))


def _digest(canonical: bytes) -> str:
    return f"{DIGEST_ALGORITHM}:{hashlib.sha256(canonical).hexdigest()}"


def _key(key: object, where: str) -> bool:
    if not isinstance(key, str):
        raise PinningError(f"{where or 'the definition'}: a key is not a string ({key!r})")
    if _SURROGATE.search(key):
        raise PinningError(f"{where or 'the definition'}: a key is not valid Unicode")
    return True


def _plain(value: Any, depth: int, where: str) -> Any:
    """``value`` as plain JSON (dict, list, str, int, float, bool, None), checked."""
    if depth > MAX_DEPTH:
        raise PinningError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        if not value.isascii() and _SURROGATE.search(value):
            raise PinningError(f"{where}: not valid Unicode (a lone surrogate)")
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise PinningError(f"{where}: {value} is not a JSON number")
        return value
    if isinstance(value, Mapping):
        return {key: _plain(item, depth + 1, f"{where}.{key}") for key, item in value.items()
                if _key(key, where)}
    if isinstance(value, list | tuple):
        return [_plain(item, depth + 1, f"{where}[{i}]") for i, item in enumerate(value)]
    raise PinningError(f"{where}: a {type(value).__name__} is not a JSON value")


def tool_name(tool: ToolLike) -> str:
    """The name an upstream lists ``tool`` under."""
    name = tool.name if isinstance(tool, types.Tool) else tool.get("name")
    if not isinstance(name, str):
        raise PinningError("a tool definition has a string name")
    return name


# -- the lock file ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pin:
    """One approved tool: its digest, and its approved definition (kept so a diff can
    show what changed without the old version from the network). ``meta``: whether
    ``_meta`` is pinned (False for a pin read from a version 1 lock)."""

    digest: str
    definition: Mapping[str, Any]
    meta: bool = True

    @classmethod
    def of(cls, tool: ToolLike, *, meta: bool = True) -> Pin:
        definition = approved_definition(tool, meta=meta)
        return cls(_digest(canonical_json(definition)), definition, meta)

    def matches(self, tool: ToolLike, digest: str | None = None) -> bool:
        """Whether ``tool`` is the approved definition (``digest``: its full digest, if
        known); a version 1 pin compares it without its ``_meta``."""
        if not self.meta:
            return self.digest == definition_digest(tool, meta=False)
        return self.digest == (digest if digest is not None else definition_digest(tool))


@dataclass(frozen=True, slots=True)
class Changes:
    """How one upstream's tools compare with its pins (names, sorted)."""

    upstream: str
    pinned: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    #: Pinned, but no longer listed by the upstream.
    removed: tuple[str, ...] = ()

    @property
    def differs(self) -> bool:
        return bool(self.changed or self.new or self.removed)


@dataclass(frozen=True, slots=True)
class Approval:
    """The lock an approval produced, and what it approved (``upstream/name`` each):
    ``added`` (new tools), ``changed`` (new definitions of pinned tools), ``removed``
    (pins of tools the upstream no longer lists; reported, never dropped silently)."""

    pins: Pins
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


class Pins:
    """The pinned definitions of a lock file, by upstream name and then by the name the
    upstream lists the tool under. Immutable: an approval returns a new ``Pins``.

    >>> pins = Pins.from_definitions({"files": [{"name": "read", "inputSchema": {}}]})
    >>> pins.verdict("files", {"name": "read", "inputSchema": {}})
    'pinned'
    >>> pins.verdict("files", {"name": "read", "description": "x", "inputSchema": {}})
    'changed'
    """

    __slots__ = ("_upstreams",)

    def __init__(self, upstreams: Mapping[str, Mapping[str, Pin]] | None = None) -> None:
        self._upstreams: dict[str, dict[str, Pin]] = {
            upstream: dict(tools) for upstream, tools in (upstreams or {}).items()}

    @property
    def legacy(self) -> bool:
        """Whether some pin does not pin ``_meta`` (read from a version 1 lock)."""
        return any(not pin.meta for tools in self._upstreams.values()
                   for pin in tools.values())

    # -- building and reading ------------------------------------------------------------
    @classmethod
    def from_definitions(cls, definitions: Mapping[str, Iterable[ToolLike]]) -> Pins:
        """Pins of every tool in ``definitions`` (upstream name → its tools), as
        ``mcpcore gateway pin`` writes them. ``PinningError`` for a definition that
        cannot be pinned, or a name an upstream lists twice."""
        upstreams: dict[str, dict[str, Pin]] = {}
        for upstream, tools in definitions.items():
            pinned = upstreams.setdefault(upstream, {})
            for tool in tools:
                name = tool_name(tool)
                if name in pinned:
                    raise PinningError(f"upstream {upstream!r} lists tool {name!r} twice")
                pinned[name] = _pin(upstream, tool)
        _check_counts(upstreams, PinningError, "")
        return cls(upstreams)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Pins:
        """The lock file at ``path``, read strictly (see ``loads``); ``LockError`` if it
        is missing, unreadable or larger than ``MAX_LOCK_BYTES``."""
        where = os.fspath(path)
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_LOCK_BYTES + 1)
        except FileNotFoundError:
            raise LockError(f"{where}: no such lock file; write it with `mcpcore gateway "
                            "pin CONFIG` (after reviewing the upstreams' tools)") from None
        except OSError as exc:
            raise LockError(f"{where}: cannot read the lock file ({exc.strerror or exc})"
                            ) from None
        return cls.loads(data, source=where)

    @classmethod
    def loads(cls, data: bytes | str, *, source: str = "gateway.lock") -> Pins:
        """A lock file's contents, read strictly: at most ``MAX_LOCK_BYTES``, UTF-8 JSON
        without a repeated key, this module's ``LOCK_VERSION``, no unknown member, within
        ``MAX_UPSTREAMS`` and ``MAX_TOOLS_PER_UPSTREAM``, and each pin's digest the
        digest of its definition. Anything else is one ``LockError``."""
        size = len(data.encode(errors="surrogatepass") if isinstance(data, str) else data)
        if size > MAX_LOCK_BYTES:
            raise LockError(f"{source}: the lock file is larger than {MAX_LOCK_BYTES} "
                            f"bytes; {_RESTORE}")
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            document = json.loads(text, object_pairs_hook=_no_repeats,
                                  parse_constant=_no_constant)
        except UnicodeDecodeError:
            raise LockError(f"{source}: the lock file is not UTF-8; {_RESTORE}") from None
        except ValueError as exc:
            raise LockError(f"{source}: the lock file is not valid JSON ({exc}); "
                            f"{_RESTORE}") from None
        except RecursionError:
            raise LockError(f"{source}: the lock file nests too deeply; {_RESTORE}"
                            ) from None
        return cls(_read_document(document, source))

    # -- writing -------------------------------------------------------------------------
    def dumps(self) -> str:
        """The lock file's text: ``version`` first, then upstreams, tools and every
        definition's keys in sorted order, two-space indents: it diffs well in version
        control, and the same pins always give the same bytes. Pins of a version 1 lock
        are not written (``LockError``): ``upgraded`` first."""
        if self.legacy:
            raise LockError(f"the lock file is version {LEGACY_LOCK_VERSION}, which does "
                            "not pin tools' _meta: upgrade it first with `mcpcore gateway "
                            "pin CONFIG --upgrade`")
        document = {
            "version": LOCK_VERSION,
            "upstreams": {
                upstream: {"tools": {
                    name: {"digest": tools[name].digest,
                           "definition": _sorted(tools[name].definition)}
                    for name in sorted(tools)}}
                for upstream, tools in sorted(self._upstreams.items())},
        }
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the lock file at ``path`` atomically (a temporary file in the same
        folder, then renamed over it): a reader sees the old lock or the new one."""
        target = Path(path)
        text = self.dumps().encode("utf-8")
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                             dir=target.parent)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    # -- reading the pins ----------------------------------------------------------------
    @property
    def upstreams(self) -> tuple[str, ...]:
        return tuple(sorted(self._upstreams))

    def tools(self, upstream: str) -> Mapping[str, Pin]:
        """The pins of ``upstream``'s tools (empty if it has none)."""
        return dict(self._upstreams.get(upstream, {}))

    def pin(self, upstream: str, name: str) -> Pin | None:
        return self._upstreams.get(upstream, {}).get(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pins) and self._upstreams == other._upstreams

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        count = sum(len(tools) for tools in self._upstreams.values())
        return f"Pins({len(self._upstreams)} upstreams, {count} tools)"

    def verdict(self, upstream: str, tool: ToolLike) -> PinVerdict:
        """``pinned`` (the definition is the approved one), ``changed`` (the lock has
        another definition under this name) or ``new`` (the lock has no tool of this
        name for this upstream). ``PinningError`` if ``tool`` cannot be pinned."""
        return self.verdict_of(upstream, tool_name(tool), definition_digest(tool), tool)

    def verdict_of(self, upstream: str, name: str, digest: str,
                   tool: ToolLike | None = None) -> PinVerdict:
        """``verdict`` for a tool whose digest is known (``tool``: the tool itself,
        which a version 1 pin compares without its ``_meta``; without it, such a pin
        matches only a tool that has no ``_meta``)."""
        pin = self.pin(upstream, name)
        if pin is None:
            return "new"
        if not pin.meta and tool is not None:
            return "pinned" if pin.matches(tool) else "changed"
        return "pinned" if pin.digest == digest else "changed"

    def upgraded(self, definitions: Mapping[str, Iterable[ToolLike]]
                 ) -> tuple[Pins, int, int]:
        """These pins with every version 1 pin made a version 2 one: a tool that
        ``definitions`` (what each upstream lists now) still lists as pinned is pinned
        with its ``_meta`` now; any other keeps its approved definition, which has no
        ``_meta`` (a changed tool stays changed; one that comes back with a ``_meta``
        is changed too). The new pins, how many version 1 pins were taken from
        ``definitions`` (``_meta`` and all), and how many were kept as they were."""
        listed = {upstream: {tool_name(tool): tool for tool in tools}
                  for upstream, tools in definitions.items()}
        taken = kept = 0
        upstreams: dict[str, dict[str, Pin]] = {}
        for upstream, tools in self._upstreams.items():
            upstreams[upstream] = {}
            for name, pin in tools.items():
                if pin.meta:
                    upstreams[upstream][name] = pin
                    continue
                now = listed.get(upstream, {}).get(name)
                if now is not None and pin.matches(now):
                    upstreams[upstream][name] = _pin(upstream, now)
                    taken += 1
                else:
                    upstreams[upstream][name] = Pin.of(pin.definition)
                    kept += 1
        return Pins(upstreams), taken, kept

    def changes(self, upstream: str, tools: Iterable[ToolLike]) -> Changes:
        """How ``tools`` (all that ``upstream`` lists now) compare with the pins."""
        found: dict[PinVerdict, list[str]] = {"pinned": [], "changed": [], "new": []}
        listed = set()
        for tool in tools:
            name = tool_name(tool)
            listed.add(name)
            try:
                verdict = self.verdict(upstream, tool)
            except PinningError:  # cannot be pinned: it differs from any pin
                verdict = "new" if self.pin(upstream, name) is None else "changed"
            found[verdict].append(name)
        removed = sorted(set(self._upstreams.get(upstream, {})) - listed)
        return Changes(upstream, pinned=tuple(sorted(found["pinned"])),
                       changed=tuple(sorted(found["changed"])),
                       new=tuple(sorted(found["new"])), removed=tuple(removed))

    # -- approving -----------------------------------------------------------------------
    def approve(self, upstream: str, tool: ToolLike) -> Pins:
        """A new ``Pins`` with ``tool``'s current definition approved."""
        name = tool_name(tool)
        upstreams = {key: dict(tools) for key, tools in self._upstreams.items()}
        upstreams.setdefault(upstream, {})[name] = _pin(upstream, tool)
        _check_counts(upstreams, PinningError, "")
        return Pins(upstreams)

    def approve_upstream(self, upstream: str, tools: Iterable[ToolLike], *,
                         new_only: bool = False) -> Approval:
        """Approve every tool ``upstream`` lists now (``tools``): new ones are added,
        changed ones take their new definition, and pins of tools it no longer lists
        are removed (and reported in ``Approval.removed``). With ``new_only``, only new
        tools are added: changed ones keep their old pin (and stay quarantined) and no
        pin is removed."""
        listed = list(tools)
        changes = self.changes(upstream, listed)
        chosen = set(changes.new) if new_only else {*changes.new, *changes.changed}
        pins = self
        for tool in listed:
            if tool_name(tool) in chosen:
                pins = pins.approve(upstream, tool)
        removed: tuple[str, ...] = () if new_only else changes.removed
        if removed:
            upstreams = {key: dict(value) for key, value in pins._upstreams.items()}
            for name in removed:
                del upstreams[upstream][name]
            pins = Pins(upstreams)
        label = f"{upstream}/"
        return Approval(pins, tuple(label + name for name in changes.new),
                        () if new_only else tuple(label + name for name in changes.changed),
                        tuple(label + name for name in removed))

    def without_upstream(self, upstream: str) -> Pins:
        """A new ``Pins`` without ``upstream``'s pins (an upstream removed from the
        configuration)."""
        return Pins({key: tools for key, tools in self._upstreams.items() if key != upstream})


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _pin(upstream: str, tool: ToolLike) -> Pin:
    try:
        return Pin.of(tool)
    except PinningError as exc:
        raise PinningError(f"upstream {upstream!r}, tool {tool_name(tool)!r}: {exc}"
                           ) from None


_RESTORE = ("restore it from version control, or review the upstreams' tools and write "
            "it again with `mcpcore gateway pin CONFIG --force`")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise ValueError(f"the key {key!r} is repeated")
        document[key] = value
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _check_counts(upstreams: Mapping[str, Mapping[str, Any]],
                  error: type[ValueError], source: str) -> None:
    where = f"{source}: " if source else ""
    if len(upstreams) > MAX_UPSTREAMS:
        raise error(f"{where}more than {MAX_UPSTREAMS} upstreams")
    for upstream, tools in upstreams.items():
        if len(tools) > MAX_TOOLS_PER_UPSTREAM:
            raise error(f"{where}upstream {upstream!r} has more than "
                        f"{MAX_TOOLS_PER_UPSTREAM} tools")


def _read_document(document: Any, source: str) -> dict[str, dict[str, Pin]]:
    def damaged(what: str) -> LockError:
        return LockError(f"{source}: {what}; {_RESTORE}")

    if not isinstance(document, dict):
        raise damaged("the lock file is not a JSON object")
    version = document.get("version")
    if version not in (LOCK_VERSION, LEGACY_LOCK_VERSION) or isinstance(version, bool):
        raise LockError(f"{source}: lock file version {version!r}, not {LOCK_VERSION}; "
                        "write it again with this version of mcpcore (`mcpcore gateway pin "
                        "CONFIG --force`, after reviewing the upstreams' tools)")
    meta = version == LOCK_VERSION
    if unknown := set(document) - {"version", "upstreams"}:
        raise damaged(f"unknown member {sorted(unknown)[0]!r}")
    raw_upstreams = document.get("upstreams")
    if not isinstance(raw_upstreams, dict):
        raise damaged("'upstreams' is not an object")
    if len(raw_upstreams) > MAX_UPSTREAMS:
        raise damaged(f"more than {MAX_UPSTREAMS} upstreams")
    upstreams: dict[str, dict[str, Pin]] = {}
    for upstream, entry in raw_upstreams.items():
        if not isinstance(entry, dict) or set(entry) != {"tools"} \
                or not isinstance(entry["tools"], dict):
            raise damaged(f"upstream {upstream!r} is not an object with only 'tools'")
        raw_tools = entry["tools"]
        if len(raw_tools) > MAX_TOOLS_PER_UPSTREAM:
            raise damaged(f"upstream {upstream!r} has more than {MAX_TOOLS_PER_UPSTREAM} "
                          "tools")
        tools: dict[str, Pin] = {}
        for name, raw in raw_tools.items():
            label = f"{upstream}/{name}"
            if not isinstance(raw, dict) or set(raw) != {"digest", "definition"}:
                raise damaged(f"{label} is not an object with 'digest' and 'definition'")
            digest, definition = raw["digest"], raw["definition"]
            if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
                raise damaged(f"{label}: the digest {str(digest)[:80]!r} is not "
                              "sha256:<64 hex digits>")
            if not isinstance(definition, dict) or definition.get("name") != name:
                raise damaged(f"{label}: the definition is not an object named {name!r}")
            try:
                pin = Pin.of(definition, meta=meta)
            except PinningError as exc:
                raise damaged(f"{label}: {exc}") from None
            if pin.definition != definition:
                raise damaged(f"{label}: the definition holds members a version "
                              f"{version} lock does not pin "
                              f"({', '.join(sorted(UNPINNED_MEMBERS))})")
            if pin.digest != digest:
                raise damaged(f"{label}: the definition does not match its digest (the "
                              "lock was edited by hand or damaged)")
            tools[name] = pin
        upstreams[upstream] = tools
    return upstreams


__all__ = [
    "DIGEST_ALGORITHM",
    "LEGACY_LOCK_VERSION",
    "LOCK_VERSION",
    "MAX_DEFINITION_BYTES",
    "MAX_DEPTH",
    "MAX_LOCK_BYTES",
    "MAX_TOOLS_PER_UPSTREAM",
    "MAX_UPSTREAMS",
    "UNPINNED_MEMBERS",
    "Approval",
    "Changes",
    "LockError",
    "Pin",
    "PinVerdict",
    "PinningError",
    "Pins",
    "QuarantineReason",
    "ToolLike",
    "approved_definition",
    "canonical_json",
    "definition_digest",
    "tool_name",
]
