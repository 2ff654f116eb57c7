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

Shell blocks run **as printed**, by a reader at the checkout's root who never activated
``.venv`` (the checkout flow, ``make serve``, does not): ``run_printed`` runs a command with
bash, with the venv's ``bin`` taken off ``PATH``, so a bare ``mcpcore`` or ``python -m
examples...`` fails there as it fails for the reader; ``.venv/bin/`` is this test run's
venv (the same folder when the tests run from make's ``.venv``). ``bare_commands`` finds
such commands in every shell block, run or illustrative.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The venv running the tests: what ``.venv/bin/`` in a doc command means here.
VENV_BIN = Path(sys.executable).parent
SHELL = ("bash", "sh")
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


def marked(page: Path, marker: str, lang: str) -> list[Block]:
    """The ``lang`` blocks of ``page`` whose doc-test marker names ``marker`` (the test
    file that runs them)."""
    return [b for b in blocks(page) if b.marker == marker and b.lang == lang]


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


# -- shell blocks, as the reader runs them ------------------------------------------------
#: A program a checkout has only in ``.venv``, in command position (line start, after
#: ``$(``, ``;``, ``&&``, ``|`` or ``VAR=value`` assignments) without ``.venv/bin/``.
_BARE = re.compile(r"(?:^|\$\(|[;&|(]|\bexec)\s*(?:\w+=\S*\s+)*"
                   r"(mcpcore|uvicorn|pytest|python3?)(?=\s|$)(?!\s+-m\s+venv\b)",
                   re.MULTILINE)


def commands(block: Block) -> list[str]:
    """The block's command lines, ``\\`` continuations joined, comments and blanks out."""
    lines = block.code.replace("\\\n", " ").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def bare_commands(block: Block) -> list[str]:
    """The lines of a shell block that call ``mcpcore``, ``uvicorn``, ``pytest`` or
    ``python`` without ``.venv/bin/`` (``python3 -m venv`` is the system's, and fine):
    "command not found", or an interpreter without mcpcore, for a reader of a checkout."""
    if block.lang not in SHELL:
        return []
    return [line for line in commands(block) if _BARE.search(line.split(" #")[0])]


def reader_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment as a reader has it: no venv activated (its ``bin`` off ``PATH``,
    no ``VIRTUAL_ENV``)."""
    venvs = {os.path.realpath(VENV_BIN), os.path.realpath(ROOT / ".venv" / "bin")}
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and os.path.realpath(p) not in venvs]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, "PATH": os.pathsep.join(path), **(extra or {})}


def as_printed(command: str) -> str:
    """``command`` with ``.venv/bin/`` pointing at this test run's venv; nothing else
    changed."""
    return re.sub(r"(?<![\w/.$-])\.venv/bin/", f"{VENV_BIN}/", command)


def run_printed(command: str, *, env: dict[str, str] | None = None, timeout: float = 60,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run one doc command as printed: bash, from the repository root, as a reader."""
    return subprocess.run(["bash", "-c", as_printed(command)], cwd=ROOT, env=reader_env(env),
                          input=stdin, capture_output=True, text=True, timeout=timeout,
                          check=False)


def start_printed(command: str, *, env: dict[str, str] | None = None,
                  **popen: object) -> subprocess.Popen[bytes]:
    """Start one doc command (a server) as printed, in a session of its own, so that
    ``stop_printed`` ends bash and what it started."""
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        ["bash", "-c", as_printed(command)], cwd=ROOT, env=reader_env(env),
        start_new_session=True, **popen)


def stop_printed(proc: subprocess.Popen[bytes]) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
