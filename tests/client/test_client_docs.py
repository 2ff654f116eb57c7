"""The code blocks of docs/client.md run as written (the runnable ones spawn the stdio
server; the others define functions, which must at least compile and import)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "client.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.integration
def test_client_doc_blocks_run(state_keys: str, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    blocks = BLOCK.findall(DOC.read_text())
    assert len(blocks) >= 5
    for i, code in enumerate(blocks):
        exec(compile(code, f"client.md#{i + 1}", "exec"), {"__name__": "docs_example"})
    out = capsys.readouterr().out
    assert "This is a simple text response for testing." in out
    assert "Ada likes Ada" in out
    assert "notifications/progress" in out
    assert "modern 2026-07-28 This is a simple text" in out
    assert "legacy 2025-11-25 This is a simple text" in out
    assert "protocol error -32602" in out and "timed out:" in out
