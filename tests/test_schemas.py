"""``mcpcore.conformance.schemas``: the official schemas ship with the package."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

import pytest

from mcpcore.conformance import schemas


@pytest.mark.parametrize("revision", schemas.REVISIONS)
def test_each_shipped_schema_is_the_one_its_readme_names(revision: str) -> None:
    folder = resources.files("mcpcore.conformance").joinpath("schemas")
    readme = folder.joinpath("README.md").read_text(encoding="utf-8")
    digest = re.search(rf"([0-9a-f]{{64}})  {revision}\.json", readme)
    assert digest is not None, f"README.md lists no digest for {revision}"
    data = folder.joinpath(f"{revision}.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest.group(1)


@pytest.mark.parametrize("revision", schemas.REVISIONS)
def test_load_parses_once(revision: str) -> None:
    loaded = schemas.load(revision)
    assert "JSONRPCRequest" in loaded["$defs"]
    assert schemas.load(revision) is loaded


def test_an_unshipped_revision_is_a_clear_key_error() -> None:
    with pytest.raises(KeyError, match="no schema shipped for revision '2024-11-05'"):
        schemas.load("2024-11-05")
