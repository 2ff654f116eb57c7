"""The official JSON schemas of each MCP revision we speak, shipped as package data.

``load("2026-07-28")`` returns the parsed ``schema.json`` of that revision (provenance in
``schemas/README.md`` beside this module). Parsed once per process.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

#: The revisions whose schema ships with the package.
REVISIONS = ("2026-07-28", "2025-11-25")


@cache
def load(revision: str) -> dict[str, Any]:
    """The parsed official schema of ``revision``; ``KeyError`` for one we do not ship."""
    if revision not in REVISIONS:
        raise KeyError(f"no schema shipped for revision {revision!r}; have {REVISIONS}")
    text = resources.files(__package__).joinpath("schemas", f"{revision}.json").read_text(
        encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


__all__ = ["REVISIONS", "load"]
