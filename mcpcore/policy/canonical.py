"""The canonical TOML text of a rule set: what ``mcpcore policy check`` prints and hashes.

The standard library reads TOML (``tomllib``) but does not write it, and the documents
here are small and regular (strings, numbers, booleans, lists, tables, arrays of
tables), so this is a writer for exactly that, with one spelling for everything:
top-level keys first, then tables in the order given, inline tables for values nested
below a table's own keys, basic strings escaped as JSON escapes them (a subset of TOML's
escapes), floats in their shortest round-trip form. The same document always gives the
same bytes, and ``tomllib.loads`` reads them back to the same document.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def string(value: str) -> str:
    # JSON's escapes are TOML basic-string escapes; TOML also forbids a raw DEL.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def key(name: str) -> str:
    return name if _BARE_KEY.match(name) else string(name)


def value(item: Any) -> str:
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item)
    if isinstance(item, float):
        if not math.isfinite(item):
            raise ValueError("TOML here holds finite numbers only")
        return repr(item)
    if isinstance(item, str):
        return string(item)
    if isinstance(item, Mapping):
        if not item:
            return "{}"
        return "{ " + ", ".join(f"{key(k)} = {value(v)}" for k, v in item.items()) + " }"
    if isinstance(item, Sequence):
        return "[" + ", ".join(value(v) for v in item) + "]"
    raise TypeError(f"cannot write {type(item).__name__} as TOML")


def _is_table(item: Any) -> bool:
    return isinstance(item, Mapping)


def _is_table_array(item: Any) -> bool:
    return (isinstance(item, Sequence) and not isinstance(item, str) and bool(item)
            and all(isinstance(v, Mapping) for v in item))


def dumps(document: Mapping[str, Any]) -> str:
    """``document`` as TOML. Top-level mappings become ``[tables]`` (one level of
    sub-tables, ``[a.b]``, for mappings of mappings), lists of mappings ``[[arrays]]``;
    anything deeper is an inline value."""
    lines: list[str] = []
    tables: list[tuple[str, Any]] = []
    for name, item in document.items():
        if _is_table(item) or _is_table_array(item):
            tables.append((name, item))
        else:
            lines.append(f"{key(name)} = {value(item)}")
    for name, item in tables:
        if _is_table_array(item):
            for entry in item:
                lines.extend(["", f"[[{key(name)}]]"])
                lines.extend(f"{key(k)} = {value(v)}" for k, v in entry.items())
            continue
        plain = {k: v for k, v in item.items() if not _is_table(v)}
        nested = {k: v for k, v in item.items() if _is_table(v)}
        if plain or not nested:
            lines.extend(["", f"[{key(name)}]"])
            lines.extend(f"{key(k)} = {value(v)}" for k, v in plain.items())
        for sub, table in nested.items():
            lines.extend(["", f"[{key(name)}.{key(sub)}]"])
            lines.extend(f"{key(k)} = {value(v)}" for k, v in table.items())
    text = "\n".join(lines).lstrip("\n")
    return text + "\n"


__all__ = ["dumps"]
