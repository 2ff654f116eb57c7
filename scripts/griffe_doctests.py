"""A griffe extension for the docs site: doctest examples in docstrings become code.

Our docstrings show usage as ``>>>`` sessions, the Python convention (``help()`` and
doctest read them). Markdown would render those lines as nested quotes, so before
mkdocstrings renders a docstring, each run of ``>>>``/``...`` lines and the output under
it is wrapped in a ``pycon`` code fence. Used by ``mkdocs.yml`` only.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """Wrap each doctest session of ``text`` (up to the next blank line) in a fence.

    A session indented by four spaces or more is already a code block in Markdown (as
    under an RST ``::``), so it is left as it is.
    """
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        stripped = line.lstrip()
        if not inside and stripped.startswith(">>>") and len(line) - len(stripped) < 4:
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
            inside = True
        elif inside and not stripped:
            out.append(f"{indent}```")
            inside = False
        out.append(line)
    if inside:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the doctest sessions of every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
