"""The code blocks of the server-author docs run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
RUNNABLE = ["servers.md", "mrtr.md", "policy.md"]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    out = []
    for name in RUNNABLE:
        path = DOCS / name
        if path.exists():
            for i, code in enumerate(BLOCK.findall(path.read_text())):
                out.append((f"{name}#{i + 1}", code))
    return out


@pytest.mark.parametrize(("where", "code"), blocks(), ids=[w for w, _ in blocks()])
def test_doc_block_runs(where: str, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCORE_STATE_KEYS", "docs:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
    exec(compile(code, where, "exec"), {"__name__": "docs_example"})
