"""What changed in a pinned tool, as a person reviews it (``mcpcore gateway diff``).

``render_diff(old, new)`` shows one tool: the description as a unified text diff (split
at sentence ends, so that one sentence added to a long one-line description is one
``+`` line), every other member as a path-level diff
(``inputSchema.properties.path.type: "string" → "integer"``), and each annotation hint
whose effective value moved towards risk flagged ``[risk increase]`` (towards the
spec's defaults, which assume the worst: schema/2026-07-28 ``ToolAnnotations``:
``readOnlyHint`` false, ``destructiveHint`` true, ``idempotentHint`` false,
``openWorldHint`` true).
``render_changes(pins, definitions)`` shows every upstream: new, changed and removed
tools.

The text comes from the upstream, which may be hostile: control and format characters
(terminal escapes, carriage returns, bidirectional overrides, zero-width characters,
which can hide text from the reviewer) are shown escaped (``\\u202e``), and the output
is bounded (``MAX_VALUE_CHARS`` per value, ``MAX_TOOL_LINES`` per tool,
``MAX_TOTAL_LINES`` in all, ``MAX_DIFF_TEXT_LINES`` lines of description diffed).
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from mcpcore.gateway.pinning import (
    PinningError,
    Pins,
    ToolLike,
    approved_definition,
    definition_digest,
    tool_name,
)

#: One value (a schema fragment, a title) is cut after this many characters.
MAX_VALUE_CHARS = 200
#: One tool's diff is cut after this many lines.
MAX_TOOL_LINES = 200
#: ``render_changes`` is cut after this many lines.
MAX_TOTAL_LINES = 5000
#: Descriptions longer than this many lines (after splitting at sentence ends) are not
#: diffed line by line (difflib's matching is quadratic in the worst case).
MAX_DIFF_TEXT_LINES = 2000

#: The hints' values when absent (schema/2026-07-28 ``ToolAnnotations``). Each is also
#: the riskier value (absent means: assume the worst), so a hint whose effective value
#: becomes its default is a risk increase.
HINT_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False,
                 "openWorldHint": True}

_ABSENT: Any = type("_Absent", (), {"__repr__": lambda self: "(absent)"})()
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


def visible(text: str) -> str:
    """``text`` with every control or format character (Unicode categories Cc, Cf, Zl,
    Zp: escapes, carriage returns, bidirectional overrides, zero-width characters)
    but the tab written as ``\\uXXXX``, so that what a reviewer reads is what the
    model reads.

    >>> visible("safe\\u202etxt.exe\\x1b[8m")
    'safe\\\\u202etxt.exe\\\\u001b[8m'
    """
    if text.isprintable():
        return text
    return "".join(
        char if char == "\t" or unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp")
        else f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}"
        for char in text)


def _value(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = visible(json.dumps(value, ensure_ascii=False, sort_keys=True))
    if len(text) > MAX_VALUE_CHARS:
        text = f"{text[:MAX_VALUE_CHARS]}… ({len(text) - MAX_VALUE_CHARS} more characters)"
    return text


def _path(path: str, key: str) -> str:
    step = f".{key}" if _PLAIN_KEY.fullmatch(key) else f"[{json.dumps(key)}]"
    return visible(step[1:] if not path and step.startswith(".") else path + step)


def _walk(old: Any, new: Any, path: str) -> Iterator[str]:
    """``path: old → new`` for each leaf that differs, objects by key (sorted), arrays
    of objects by index; an array of plain values is shown whole."""
    if old == new and type(old) is type(new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys()):
            yield from _walk(old.get(key, _ABSENT), new.get(key, _ABSENT), _path(path, key))
        return
    if (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)
            and any(isinstance(item, dict | list) for item in (*old, *new))):
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            yield from _walk(before, after, f"{path}[{index}]")
        return
    yield f"{path}: {_value(old)} → {_value(new)}"


def _sentences(text: str) -> list[str]:
    return [piece for line in text.split("\n") for piece in _SENTENCE_END.split(line)]


def _text_diff(member: str, old: Any, new: Any) -> Iterator[str]:
    if not isinstance(old, str) or not isinstance(new, str):
        yield f"{member}: {_value(old)} → {_value(new)}"
        return
    before, after = _sentences(old), _sentences(new)
    if len(before) > MAX_DIFF_TEXT_LINES or len(after) > MAX_DIFF_TEXT_LINES:
        yield (f"{member}: changed ({len(old)} → {len(new)} characters; too long to diff "
               "sentence by sentence: see the definitions with --json)")
        return
    yield f"{member}:"
    lines = difflib.unified_diff(before, after, lineterm="", n=2)
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        yield "  " + visible(line)


def _hints(old: Any, new: Any) -> Iterator[str]:
    old_hints = old if isinstance(old, dict) else {}
    new_hints = new if isinstance(new, dict) else {}
    for hint, default in HINT_DEFAULTS.items():
        before, after = old_hints.get(hint, _ABSENT), new_hints.get(hint, _ABSENT)
        if before == after and type(before) is type(after):
            continue
        line = f"annotations.{hint}: {_hint(before, default)} → {_hint(after, default)}"
        if (default if after is _ABSENT else after) == default \
                and (default if before is _ABSENT else before) != default:
            line += "  [risk increase]"
        yield line


def _hint(value: Any, default: bool) -> str:
    return f"(absent: {json.dumps(default)} by default)" if value is _ABSENT else _value(value)


def _member_lines(old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[str]:
    for member in sorted(old.keys() | new.keys(), key=_member_order):
        before, after = old.get(member, _ABSENT), new.get(member, _ABSENT)
        if before == after and type(before) is type(after):
            continue
        if member == "description":
            yield from _text_diff(member, before, after)
        elif member == "annotations":
            yield from _hints(before, after)
            rest_before = {key: value for key, value in before.items()
                           if key not in HINT_DEFAULTS} if isinstance(before, dict) else before
            rest_after = {key: value for key, value in after.items()
                          if key not in HINT_DEFAULTS} if isinstance(after, dict) else after
            if isinstance(rest_before, dict) or isinstance(rest_after, dict):
                yield from _walk(rest_before if isinstance(rest_before, dict) else {},
                                 rest_after if isinstance(rest_after, dict) else {},
                                 "annotations")
        else:
            yield from _walk(before, after, _path("", member))


_ORDER = ("name", "title", "description", "annotations", "inputSchema", "outputSchema")


def _member_order(member: str) -> tuple[int, str]:
    return (_ORDER.index(member) if member in _ORDER else len(_ORDER), member)


def _bounded(lines: Iterable[str], limit: int, what: str) -> list[str]:
    kept: list[str] = []
    extra = 0
    for line in lines:
        if len(kept) < limit:
            kept.append(line)
        else:
            extra += 1
    if extra:
        kept.append(f"… {extra} more lines of {what}")
    return kept


def render_diff(old: ToolLike | None, new: ToolLike | None, *, label: str | None = None
                ) -> str:
    """A readable diff of one tool's approved definition: ``old`` (the pinned one, or
    ``None`` for a new tool) against ``new`` (the upstream's now, or ``None`` for a
    removed tool). The first line names the tool (``label``, default its name) and the
    digests; every line after it says what changed. At most ``MAX_TOOL_LINES`` lines.

    >>> print(render_diff({"name": "t", "inputSchema": {"type": "object"},
    ...                    "annotations": {"destructiveHint": False}},
    ...                   {"name": "t", "inputSchema": {"type": "object"},
    ...                    "annotations": {"destructiveHint": True}}))
    ... # doctest: +ELLIPSIS
    ~ t (pinned sha256:..., now sha256:...)
    annotations.destructiveHint: false → true  [risk increase]
    """
    if old is None and new is None:
        raise ValueError("render_diff needs an old or a new definition")
    name = visible(label or tool_name(new if new is not None else old))  # type: ignore[arg-type]
    old_definition = None if old is None else approved_definition(old)
    try:
        new_definition = None if new is None else approved_definition(new)
    except PinningError as exc:
        state = "new" if old is None else f"pinned {definition_digest(old)}, now"
        return f"{'+' if old is None else '~'} {name} ({state} cannot be pinned: {exc})"
    lines: list[str]
    if old_definition is None:
        assert new_definition is not None
        lines = [f"+ {name} (new, {_digest_or_reason(new_definition)})"]
        lines += _member_lines({}, new_definition)
    elif new_definition is None:
        lines = [f"- {name} (pinned {definition_digest(old_definition)}; no longer listed)"]
    else:
        lines = [f"~ {name} (pinned {definition_digest(old_definition)}, now "
                 f"{_digest_or_reason(new_definition)})"]
        lines += _member_lines(old_definition, new_definition)
    return "\n".join(_bounded(lines, MAX_TOOL_LINES, f"the diff of {name}"))


def _digest_or_reason(definition: Mapping[str, Any]) -> str:
    try:
        return definition_digest(definition)
    except PinningError as exc:
        return f"cannot be pinned: {exc}"


def render_changes(pins: Pins, definitions: Mapping[str, Iterable[ToolLike]]) -> str:
    """Every difference between ``pins`` and ``definitions`` (what each upstream lists
    now, by upstream name): the changed tools, then the new ones, then those no longer
    listed, each as ``render_diff`` shows it; ``""`` when there is none. At most
    ``MAX_TOTAL_LINES`` lines. An upstream absent from ``definitions`` is not compared
    (it was not asked)."""
    blocks: list[str] = []
    for upstream in sorted(definitions):
        tools = {tool_name(tool): tool for tool in definitions[upstream]}
        changes = pins.changes(upstream, tools.values())
        for name in changes.changed:
            pin = pins.pin(upstream, name)
            assert pin is not None
            blocks.append(render_diff(pin.definition, tools[name], label=f"{upstream}/{name}"))
        for name in changes.new:
            blocks.append(render_diff(None, tools[name], label=f"{upstream}/{name}"))
        for name in changes.removed:
            pin = pins.pin(upstream, name)
            assert pin is not None
            blocks.append(render_diff(pin.definition, None, label=f"{upstream}/{name}"))
    lines = "\n\n".join(blocks).split("\n") if blocks else []
    return "\n".join(_bounded(lines, MAX_TOTAL_LINES, "differences"))


__all__ = ["HINT_DEFAULTS", "MAX_DIFF_TEXT_LINES", "MAX_TOOL_LINES", "MAX_TOTAL_LINES",
           "MAX_VALUE_CHARS", "render_changes", "render_diff", "visible"]
