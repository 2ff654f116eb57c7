"""Every code block of the docs and the README is tested, or says why not.

``tests/docs_blocks.py`` finds the blocks and the rule: unmarked ``python`` blocks run
here, each in a fresh namespace from the repository root; unmarked ``json``/``toml``
blocks are parsed; every other block names the test that runs it, or is marked
illustrative with a reason. The EMA and OAuth client blocks of ``auth.md`` are run by
``test_auth_docs_client_and_server_blocks_run`` below, against a real loopback world.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from tests.docs_blocks import ROOT, Block, all_blocks, bare_commands, blocks, problem

DOCS = ROOT / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
BLOCKS = all_blocks()
RUN = [b for b in BLOCKS if b.lang == "python" and b.marker is None]
PARSE = [b for b in BLOCKS if b.lang in ("json", "toml") and b.marker is None]


def test_every_block_is_tested_or_says_why_not() -> None:
    problems = [f"{b.where}: {why}" for b in BLOCKS if (why := problem(b))]
    assert not problems, "\n".join(problems)


def test_every_shell_command_runs_from_a_checkout_as_printed() -> None:
    """A reader of a checkout has ``.venv/bin/mcpcore``, not ``mcpcore`` (the checkout flow
    never activates ``.venv``): every shell block, run or illustrative, says so. The
    blocks a test runs are run as printed besides (``docs_blocks.run_printed``)."""
    bare = [f"{b.where}: {line}" for b in BLOCKS for line in bare_commands(b)]
    assert not bare, "write .venv/bin/... for:\n" + "\n".join(bare)


def test_there_are_blocks_to_check() -> None:
    # A broken parser would make every other test here vacuous.
    assert len(BLOCKS) > 60 and len(RUN) > 20


def test_readme_links_to_pages_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links and [link for link in links if not (ROOT / link).is_file()] == []


@pytest.mark.parametrize("block", RUN, ids=[b.where for b in RUN])
def test_python_block_runs(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MCPCORE_STATE_KEYS", "docs:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
    exec(compile(block.code, block.where, "exec"), {"__name__": "docs_example"})


@pytest.mark.parametrize("block", PARSE, ids=[b.where for b in PARSE])
def test_data_block_parses(block: Block) -> None:
    if block.lang == "json":
        json.loads(block.code)
    else:
        tomllib.loads(block.code)


def test_deploying_failure_blocks_run() -> None:
    """docs/deploying.md, "When things fail": the Sentinel and Cluster stores and the
    admission limits build as written (lazily: nothing connects)."""
    import asyncio

    text = (DOCS / "deploying.md").read_text()
    code = BLOCK.findall(text[text.index("## When things fail"):])
    assert code, "the section has no python block"
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec(compile(code[0], "deploying.md#when-things-fail", "exec"), namespace)
    from mcpcore.stores import RedisStore

    sentinel, cluster = namespace["sentinel"], namespace["cluster"]
    assert isinstance(sentinel, RedisStore) and "mymaster" in sentinel.address
    assert isinstance(cluster, RedisStore) and cluster.address.startswith("cluster ")
    app = namespace["app"]
    assert app.admission.limits.max_requests == 512  # type: ignore[attr-defined]
    for store in (sentinel, cluster):
        asyncio.run(store.close())


def auth_client_blocks() -> list[str]:
    """The python blocks of docs/auth.md from "## 4. The OAuth client" on."""
    text = (DOCS / "auth.md").read_text()
    return BLOCK.findall(text[text.index("## 4. The OAuth client"):])


async def test_auth_docs_client_and_server_blocks_run(tmp_path: Path) -> None:
    from mcpcore.auth.issuer import LocalAuthorizationServer
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
    from mcpcore.auth.terms import ID_JAG_GRANT_PROFILE, JWT_BEARER_GRANT

    assert isinstance(scope["enterprise"], EnterpriseGrant)
    ema_server = scope["ema_server"]
    assert isinstance(ema_server, LocalAuthorizationServer)
    metadata = ema_server.metadata()
    assert JWT_BEARER_GRANT in metadata["grant_types_supported"]
    assert metadata["authorization_grant_profiles_supported"] == [ID_JAG_GRANT_PROFILE]
    assert scope["no_purge"].auth_kinds == {"ema"}  # type: ignore[attr-defined]


def test_tasks_page_example_runs_the_whole_flow(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/tasks.md's long-running example: a task, its status messages, the approval
    asked through the task, the result."""
    monkeypatch.setenv("MCPCORE_STATE_KEYS", "docs:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
    first = next(b for b in blocks(DOCS / "tasks.md") if b.lang == "python")
    assert first.tested_by == Path(__file__)
    exec(compile(first.code, first.where, "exec"), {"__name__": "docs_example"})
    out = capsys.readouterr().out
    assert "now: working quarter 1 of 4" in out and "now: input_required" in out
    assert "asked: Publish the 2026 report?" in out
    assert out.rstrip().endswith("Report 2026 published.")
