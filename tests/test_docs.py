"""The code blocks of the server-author docs run as written.

Each page in ``RUNNABLE`` must exist and hold at least one ``python`` block: a page that
was renamed or emptied fails here instead of being checked silently as nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
RUNNABLE = ["servers.md", "mrtr.md", "policy.md", "legacy.md"]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    out = []
    for name in RUNNABLE:
        path = DOCS / name
        code = BLOCK.findall(path.read_text()) if path.exists() else []
        out.extend((f"{name}#{i + 1}", block) for i, block in enumerate(code))
    return out


@pytest.mark.parametrize("name", RUNNABLE)
def test_each_runnable_page_exists_and_has_code(name: str) -> None:
    path = DOCS / name
    assert path.is_file(), f"docs/{name} is listed as runnable but does not exist"
    assert BLOCK.search(path.read_text()), f"docs/{name} has no python block to run"


@pytest.mark.parametrize(("where", "code"), blocks(), ids=[w for w, _ in blocks()])
def test_doc_block_runs(where: str, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCORE_STATE_KEYS", "docs:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
    exec(compile(code, where, "exec"), {"__name__": "docs_example"})


def auth_client_blocks() -> list[str]:
    """The python blocks of docs/auth.md from "## 4. The OAuth client" on."""
    text = (DOCS / "auth.md").read_text()
    return BLOCK.findall(text[text.index("## 4. The OAuth client"):])


async def test_auth_docs_client_and_server_blocks_run(tmp_path: Path) -> None:
    from mcpcore.auth import LocalAuthorizationServer
    from tests.auth.support import oauth_world

    blocks = auth_client_blocks()
    assert len(blocks) >= 5
    scope: dict[str, object] = {}
    for i, code in enumerate(blocks):  # each block stands alone, in its own namespace
        namespace: dict[str, object] = {"__name__": "docs_example"}
        exec(compile(code, f"auth.md#client-{i + 1}", "exec"), namespace)
        scope.update(namespace)
    with oauth_world() as world:
        names = await scope["list_tools"](world.url)  # type: ignore[operator]
        assert "test_trigger_tool_change" in names
        assert await scope["with_dpop"](world.url)  # type: ignore[operator]
    store = scope["RegistrationsOnDisk"](str(tmp_path / "clients.txt"))  # type: ignore[operator]
    store.save_client("https://as.example", scope["ClientInfo"]("c1"))  # type: ignore[operator]
    assert (tmp_path / "clients.txt").read_text() == "https://as.example c1\n"
    server = scope["server"]
    assert isinstance(server, LocalAuthorizationServer)
    assert server.metadata()["authorization_response_iss_parameter_supported"] is True
    # Enterprise-Managed Authorization (§6): the client grant, the AS with the ID-JAG
    # grant, and the policy rule for EMA principals.
    from mcpcore.auth import EnterpriseGrant
    from mcpcore.auth.idjag import ID_JAG_GRANT_PROFILE, JWT_BEARER_GRANT

    assert isinstance(scope["enterprise"], EnterpriseGrant)
    ema_server = scope["ema_server"]
    assert isinstance(ema_server, LocalAuthorizationServer)
    metadata = ema_server.metadata()
    assert JWT_BEARER_GRANT in metadata["grant_types_supported"]
    assert metadata["authorization_grant_profiles_supported"] == [ID_JAG_GRANT_PROFILE]
    assert scope["no_purge"].auth_kinds == {"ema"}  # type: ignore[attr-defined]
