"""Every fenced code block of ``docs/*.md`` and ``README.md``, and how each is tested.

A block is tested in one of four ways:

- **run here**: an unmarked ``python`` block is executed (``tests/test_docs.py``), in a
  fresh namespace, from the repository root; a ``json`` or ``toml`` block is parsed.
- **run elsewhere**: a marker line right above the fence names the test that runs it,
  and that test file names the page::

      <!-- doc-test: tests/test_readme.py -->

- **illustrative**: a marker says why the block is not run, and the reason is required::

      <!-- doc-test: illustrative (needs a second machine) -->

Anything else (a ``bash`` block with no marker, a marker naming a test that does not
exist or never mentions the page) fails ``tests/test_docs.py``, so a block cannot slip
out of the tests by accident, and a page renamed or removed breaks the test that names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"^<!-- doc-test: (.*?) -->$")
FENCE = re.compile(r"^(\s*)```([\w+-]*)\s*$")
#: Languages a block may have without a marker, and what is done with it.
CHECKED = {"python": "run", "json": "parse", "toml": "parse"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def illustrative(self) -> bool:
        return self.marker is not None and self.marker.startswith("illustrative")

    @property
    def tested_by(self) -> Path | None:
        if self.marker is None or self.illustrative:
            return None
        return ROOT / self.marker


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of one page, in order, each with the marker above it if any."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, lang = opening.group(1), opening.group(2)
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        above = next((lines[j].strip() for j in range(start - 1, -1, -1)
                      if lines[j].strip()), "")
        marker = MARKER.match(above)
        found.append(Block(page, start + 1, lang, "\n".join(body) + "\n",
                           marker.group(1).strip() if marker else None))
        i += 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


def problem(block: Block) -> str | None:
    """Why ``block`` is not covered by any test, or ``None`` when it is."""
    if block.illustrative:
        reason = block.marker.removeprefix("illustrative").strip(" ():") if block.marker else ""
        return None if reason else "an illustrative marker needs a reason in parentheses"
    test = block.tested_by
    if test is not None:
        if not test.is_file():
            return f"the marker names {block.marker}, which does not exist"
        if block.page.name not in test.read_text(encoding="utf-8"):
            return f"{block.marker} never mentions {block.page.name}"
        return None
    if block.lang in CHECKED:
        return None
    return (f"a {block.lang or 'plain'} block with no doc-test marker: run it from a test "
            "and name that test above the fence (<!-- doc-test: tests/... -->), or say "
            "why it is not run (<!-- doc-test: illustrative (reason) -->)")
