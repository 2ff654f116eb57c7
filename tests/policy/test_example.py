"""examples/policy_server.py over real HTTP with real tokens from its local AS."""

from __future__ import annotations

from typing import Any

import httpx

from examples.policy_server import build_app, persona_tokens
from tests.auth.support import LoopbackServer
from tests.support.wire import FULL_CAPS, make_meta, standard_headers


async def test_the_example_gates_each_persona() -> None:
    built: dict[str, Any] = {}

    def factory(url: str) -> Any:
        app, authorization_server, config = build_app(url)
        built.update(tokens=persona_tokens(authorization_server, config.resource),
                     prm=config.metadata_url)
        return app

    with LoopbackServer(factory, lifespan="on") as server:
        tokens: dict[str, str] = built["tokens"]
        async with httpx.AsyncClient(base_url=server.url) as c:

            async def post(persona: str, method: str, params: dict[str, Any]
                           ) -> httpx.Response:
                body = {"jsonrpc": "2.0", "id": 1, "method": method,
                        "params": {**params, "_meta": make_meta(FULL_CAPS)}}
                headers = standard_headers(method, body["params"])
                headers["Accept"] = "application/json"
                headers["Authorization"] = f"Bearer {tokens[persona]}"
                return await c.post("/mcp", json=body, headers=headers)

            async def call(persona: str, tool: str, **arguments: Any) -> httpx.Response:
                return await post(persona, "tools/call", {"name": tool, "arguments": arguments})

            listed = (await post("reader", "tools/list", {})).json()["result"]
            found = await call("reader", "search_notes", query="hello")
            step_up = await call("reader", "add_note", name="n", text="t")
            added = await call("editor", "add_note", name="n", text="t")
            outsider = await call("outsider", "search_notes", query="hello")
            purge = await call("admin", "purge_all")
            confirm = await call("admin", "delete_note", name="n")
            job_delete = await call("job", "delete_note", name="n")
            job_cleanup = await call("job", "nightly_cleanup")

    assert listed["cacheScope"] == "private"
    assert "purge_all" not in [t["name"] for t in listed["tools"]]
    assert found.json()["result"]["content"][0]["text"] == "welcome"
    assert step_up.status_code == 403
    assert step_up.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{built["prm"]}", scope="mcp:write", '
        f'error="insufficient_scope"')
    assert added.json()["result"]["content"][0]["text"] == "added n"
    for denied in (outsider, purge, job_delete):
        assert denied.status_code == 200 and denied.json()["result"]["isError"] is True
    assert confirm.json()["result"]["resultType"] == "input_required"
    assert job_cleanup.json()["result"]["content"][0]["text"].startswith("removed")
