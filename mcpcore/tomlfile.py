"""TOML files people write and review: read whole, every problem reported with its line.

What lives here is what each such file needs (the policy rule files,
``mcpcore.policy.rulefile``, and the gateway's configuration, ``mcpcore.gateway.config``):

- ``parse_document``: bytes to a parsed document, refusing a file too big, not UTF-8,
  or not TOML (the syntax error with its line and column), and its ``Locator``;
- ``Locator``: the line of every table header and key of the text, by document path
  (``tomllib`` parses but keeps no positions);
- ``Reader``: small typed readers (a table, a string, a list of strings, a boolean, a
  number of seconds, a duration, the known keys of a table with a "did you mean") that
  collect ``Problem``\\ s instead of stopping at the first;
- ``TomlFileError``: every problem at once, one ``source:line: message`` a line.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpcore.spelling import did_you_mean

#: A path into a parsed document: keys, and the index of an entry of an array of tables
#: (``("rules", 2, "effect")``).
KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a file: where (1-based line, 0 if unknown) and what."""

    line: int
    message: str


class TomlFileError(ValueError):
    """A file that cannot be used; ``problems`` lists every one, with its line.

    ``str(error)`` is one ``source:line: message`` per problem, the way compilers say it.
    """

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = sorted(problems, key=lambda p: p.line)
        super().__init__("\n".join(
            f"{source}:{p.line}: {p.message}" if p.line else f"{source}: {p.message}"
            for p in self.problems))


def read_bytes(path: str | Path, *, max_bytes: int, error: type[TomlFileError]) -> bytes:
    """At most ``max_bytes + 1`` bytes of the file (``parse_document`` refuses more);
    a file that cannot be read raises ``error``."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(str(path), [Problem(0, f"cannot read the file: "
                                           f"{exc.strerror or exc}")]) from None


def parse_document(text: str | bytes, *, source: str, max_bytes: int, what: str,
                   error: type[TomlFileError]) -> tuple[dict[str, Any], Locator]:
    """The parsed document and where its keys are; raises ``error`` for a file larger
    than ``max_bytes`` (``what`` names the kind of file in that message), not UTF-8,
    or not TOML."""
    raw = text.encode() if isinstance(text, str) else text
    if len(raw) > max_bytes:
        line = raw[:max_bytes].count(b"\n") + 1
        raise error(source, [Problem(line, f"the file is larger than {max_bytes} "
                                           f"bytes, the most {what} may be")])
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise error(source, [Problem(line, "the file is not UTF-8")]) from None
    try:
        document = tomllib.loads(decoded)
    except tomllib.TOMLDecodeError as exc:
        raise error(source, [syntax_problem(exc, decoded)]) from None
    except RecursionError:
        raise error(source, [Problem(0, "invalid TOML: nested too deeply")]) from None
    return document, Locator(decoded)


def syntax_problem(exc: tomllib.TOMLDecodeError, document: str) -> Problem:
    """``tomllib``'s error as a ``Problem`` on its line."""
    text = str(exc)
    match = re.search(r"\(at line (\d+), column (\d+)\)", text)
    if match is None:
        if "(at end of document)" in text:
            reason = text.replace("(at end of document)", "").strip()
            return Problem(document.count("\n") + 1,
                           f"invalid TOML: {reason} (the file ends too early)")
        return Problem(0, f"invalid TOML: {text}")
    reason = text[:match.start()].strip()
    return Problem(int(match[1]), f"invalid TOML: {reason} (column {match[2]})")


# -- positions ----------------------------------------------------------------------------
_BARE = re.compile(r"[A-Za-z0-9_-]+")


class Locator:
    """The line of every table header and key of a TOML text, by document path.

    Paths are tuples of keys, with the index for entries of arrays of tables
    (``("rules", 2, "effect")``). ``line(path)`` gives the line of the longest recorded
    prefix, so a problem inside an inline table or a multi-line array points at the key
    that starts it.
    """

    def __init__(self, text: str) -> None:
        self.lines: dict[KeyPath, int] = {}
        self._arrays: dict[KeyPath, int] = {}
        self._scan(text)

    def line(self, path: KeyPath) -> int:
        probe = tuple(path)
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe[:-1]
        return 0

    def _resolve(self, keys: Sequence[str]) -> list[str | int]:
        out: list[str | int] = []
        for key in keys:
            out.append(key)
            index = self._arrays.get(tuple(out))
            if index is not None:
                out.append(index)
        return out

    def _scan(self, text: str) -> None:
        table: KeyPath = ()
        depth = 0
        multiline: str | None = None
        for lineno, line in enumerate(text.splitlines(), 1):
            pos = 0
            if multiline is not None:
                end = line.find(multiline)
                if end == -1:
                    continue
                pos, multiline = end + 3, None
            elif depth == 0:
                stripped = line.lstrip()
                offset = len(line) - len(stripped)
                if stripped.startswith("[["):
                    keys, end = _keys(stripped, 2)
                    if keys is not None and stripped.startswith("]]", end):
                        parent = self._resolve(keys[:-1])
                        full = (*parent, keys[-1])
                        index = self._arrays.get(full, -1) + 1
                        self._arrays[full] = index
                        table = (*full, index)
                        self.lines.setdefault(full, lineno)
                        self.lines[table] = lineno
                    continue
                if stripped.startswith("["):
                    keys, end = _keys(stripped, 1)
                    if keys is not None:
                        table = tuple(self._resolve(keys))
                        self.lines.setdefault(table, lineno)
                    continue
                keys, end = _keys(stripped, 0)
                if keys is not None and stripped[end:end + 1] == "=":
                    self.lines.setdefault((*table, *keys), lineno)
                    pos = offset + end + 1
                else:
                    continue
            depth, multiline = _scan_value(line, pos, depth)


def _keys(text: str, pos: int) -> tuple[list[str] | None, int]:
    """A dotted key starting at ``pos``: its parts and the position after it (and after
    trailing blanks), or None if there is none."""
    parts: list[str] = []
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos >= n:
            return None, pos
        ch = text[pos]
        if ch == '"':
            end = pos + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if end >= n:
                return None, pos
            try:
                parts.append(json.loads(text[pos:end + 1]))
            except ValueError:
                parts.append(text[pos + 1:end])
            pos = end + 1
        elif ch == "'":
            end = text.find("'", pos + 1)
            if end == -1:
                return None, pos
            parts.append(text[pos + 1:end])
            pos = end + 1
        else:
            match = _BARE.match(text, pos)
            if match is None:
                return None, pos
            parts.append(match.group())
            pos = match.end()
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos < n and text[pos] == ".":
            pos += 1
            continue
        return parts, pos


def _scan_value(line: str, pos: int, depth: int) -> tuple[int, str | None]:
    """Track brackets and strings through the rest of a line: the bracket depth after it,
    and the quote of a multi-line string still open at its end."""
    n = len(line)
    while pos < n:
        ch = line[pos]
        if ch == "#":
            break
        if line.startswith('"""', pos) or line.startswith("'''", pos):
            quote = line[pos:pos + 3]
            end = line.find(quote, pos + 3)
            if end == -1:
                return depth, quote
            pos = end + 3
            continue
        if ch == '"':
            pos += 1
            while pos < n and line[pos] != '"':
                pos += 2 if line[pos] == "\\" else 1
        elif ch == "'":
            end = line.find("'", pos + 1)
            pos = n if end == -1 else end
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
        pos += 1
    return depth, None


# -- reading the document -----------------------------------------------------------------
def type_name(value: Any) -> str:
    """What a TOML value is, for a message: ``a string``, ``a table``..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


#: A duration as text: a number and its unit (``500ms``, ``30s``, ``5m``, ``1h``).
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class Reader:
    """Checks a parsed document, collecting problems with their lines (``problems``);
    a subclass adds what its kind of file holds."""

    def __init__(self, source: str, where: Locator) -> None:
        self.source = source
        self.where = where
        self.problems: list[Problem] = []

    def problem(self, path: KeyPath, message: str) -> None:
        self.problems.append(Problem(self.where.line(path), message))

    def keys(self, path: KeyPath, table: Mapping[str, Any], known: Sequence[str],
             what: str) -> None:
        for key in table:
            if key not in known:
                self.problem((*path, key), f"unknown key {key!r} in {what}"
                             f"{did_you_mean(key, known)}; known: {', '.join(known)}")

    def table(self, path: KeyPath, value: Any, what: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path, f"{what} must be a table, not {type_name(value)}")
            return None
        return value

    def string(self, path: KeyPath, value: Any, what: str) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.problem(path, f"{what} must be a non-empty string, not {type_name(value)}"
                         if not isinstance(value, str) else f"{what} must not be empty")
            return None
        return value

    def strings(self, path: KeyPath, value: Any, what: str, *, allow_empty: bool = False
                ) -> list[str] | None:
        if not isinstance(value, list) or not all(
                isinstance(v, str) and v.strip() for v in value):
            self.problem(path, f"{what} must be a list of non-empty strings"
                         + ("" if isinstance(value, list) else f", not {type_name(value)}"))
            return None
        if not value and not allow_empty:
            self.problem(path, f"{what} is empty: nothing can match it")
            return None
        if len(set(value)) != len(value):
            dup = next(v for v in value if value.count(v) > 1)
            self.problem(path, f"{what} lists {dup!r} twice")
        return value

    def boolean(self, path: KeyPath, value: Any, what: str) -> bool | None:
        if not isinstance(value, bool):
            self.problem(path, f"{what} must be true or false, not {type_name(value)}")
            return None
        return value

    def seconds(self, path: KeyPath, value: Any, what: str) -> float | None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 \
                or value == float("inf"):
            self.problem(path, f"{what} must be a number of seconds > 0")
            return None
        return float(value)

    def duration(self, path: KeyPath, value: Any, what: str, *, at_most: float
                 ) -> float | None:
        """Seconds from a number (of seconds) or a text with its unit (``"500ms"``,
        ``"30s"``, ``"5m"``, ``"1h"``); more than 0 and at most ``at_most``."""
        seconds: float | None = None
        if isinstance(value, str):
            match = _DURATION.match(value)
            if match is not None:
                seconds = float(match[1]) * _UNITS[match[2]]
        elif isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        if seconds is None or not math.isfinite(seconds):
            self.problem(path, f"{what} must be a number of seconds or a duration like "
                               f"\"500ms\", \"30s\", \"5m\", \"1h\", not {value!r}")
            return None
        if not 0 < seconds <= at_most:
            self.problem(path, f"{what} must be more than 0 and at most {at_most:g} "
                               "seconds")
            return None
        return seconds

    def whole(self, path: KeyPath, value: Any, what: str, *, least: int, most: int
              ) -> int | None:
        """A whole number within ``least..most``."""
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            self.problem(path, f"{what} must be a whole number from {least} to {most}")
            return None
        return value


__all__ = ["KeyPath", "Locator", "Problem", "Reader", "TomlFileError", "parse_document",
           "read_bytes", "syntax_problem", "type_name"]
