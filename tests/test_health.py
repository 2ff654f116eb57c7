"""``/healthz`` and ``/readyz``: up, ready when the Store answers, not ready when it does
not or while draining; a plain pass-through for everything else."""

from __future__ import annotations

import httpx

from mcpcore import MemoryStore, Server, StreamableHTTP
from mcpcore.health import Operations
from mcpcore.stores import RedisStore


async def get(app: Operations, path: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://127.0.0.1") as c:
        return await c.get(path)


async def test_health_readiness_and_draining() -> None:
    app = Operations(StreamableHTTP(Server("h")), store=MemoryStore())
    assert (await get(app, "/healthz")).text == "ok\n"
    assert (await get(app, "/readyz")).status_code == 200
    assert (await get(app, "/metrics")).status_code == 404  # no metrics: not served
    app.draining = True
    answer = await get(app, "/readyz")
    assert (answer.status_code, answer.text) == (503, "draining\n")
    assert (await get(app, "/healthz")).status_code == 200   # still alive while draining


async def test_not_ready_when_the_store_is_down() -> None:
    dead = RedisStore.from_url("redis://user:hunter2@127.0.0.1:9/0", connect_timeout=0.2,
                               command_timeout=0.2, retries=0)
    try:
        app = Operations(StreamableHTTP(Server("h")), store=dead, ready_timeout=1)
        answer = await get(app, "/readyz")
        assert answer.status_code == 503
        assert answer.text == "not ready: the store is unavailable\n"   # no address, no password
    finally:
        await dead.close()


async def test_without_a_store_it_is_ready_and_other_paths_pass_through() -> None:
    app = Operations(StreamableHTTP(Server("h")), paths={"health": "/livez"})
    assert (await get(app, "/livez")).status_code == 200
    assert (await get(app, "/readyz")).status_code == 200
    assert (await get(app, "/healthz")).status_code == 404   # renamed: the app's 404


async def test_drain_says_draining_and_drains_the_app_it_wraps() -> None:
    """``mcpcore.serving.run`` finds ``Operations.drain`` (the outermost ``drain``) on
    SIGTERM: ``/readyz`` must say 503 ``draining`` at once, and the MCP endpoint behind
    any middleware must still drain (its listen streams end, responses close their
    connections)."""
    from types import SimpleNamespace

    from mcpcore.serving import find_drain

    endpoint = StreamableHTTP(Server("h"))
    app = Operations(SimpleNamespace(app=endpoint), store=MemoryStore())  # a middleware
    drain = find_drain(app)
    assert drain is not None
    await drain()
    answer = await get(app, "/readyz")
    assert (answer.status_code, answer.text) == (503, "draining\n")
    assert endpoint.draining
