"""The documentation site builds with ``mkdocs build --strict``: no broken links, no
missing API references, every page in the navigation."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_docs_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s+([\w/.-]+\.md)\s*$", config, re.M))
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages - listed == set(), "pages missing from mkdocs.yml's nav"
    assert listed - pages == set(), "nav entries without a page"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    reference = (tmp_path / "reference" / "mcpcore" / "index.html").read_text()
    # The API reference is generated from the docstrings, not written by hand: the
    # first line of Server's docstring and its methods appear on the page.
    import mcpcore

    summary = (mcpcore.Server.__doc__ or "").splitlines()[0]
    assert summary and summary.split(":")[0] in reference
    assert 'id="mcpcore.Server.tool"' in reference
    # mcpcore.auth is read from auth/ (pyproject.toml's package-dir; the griffe extension
    # scripts/griffe_package_dirs.py), and its reference page documents it.
    auth = (tmp_path / "reference" / "auth" / "index.html").read_text()
    assert 'id="mcpcore.auth.BearerAuthMiddleware"' in auth
    assert (tmp_path / "index.html").exists()


@pytest.mark.parametrize("page", ["install.md", "changelog.md", "reference/mcpcore.md"])
def test_the_pages_a_user_looks_for_exist(page: str) -> None:
    assert (ROOT / "docs" / page).is_file()


def test_doctest_sessions_become_fenced_code() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from griffe_doctests import fence_doctests
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    text = ">>> f(1)\n2\n\nThen, indented (already code)::\n\n    >>> g()\n  >>> h()"
    assert fence_doctests(text) == (
        "```pycon\n>>> f(1)\n2\n```\n\nThen, indented (already code)::\n\n    >>> g()\n"
        "  ```pycon\n  >>> h()\n  ```")
