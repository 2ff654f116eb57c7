"""One worker instance, for the fleet tests: starts a task on Redis whose work never
ends, prints the task id, and keeps renewing its lease until it is killed.

    python tests/tasks/worker_process.py REDIS_URL PREFIX LEASE_SECONDS PRINCIPAL_KEY
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcpcore.stores import RedisStore
from mcpcore.tasks import TaskManager, TaskRun


async def main(url: str, prefix: str, lease: float, principal: str) -> None:
    manager = TaskManager(RedisStore.from_url(url, prefix=prefix), lease=lease)

    async def work(run: TaskRun) -> dict[str, Any]:
        await asyncio.sleep(3600)
        return {"content": []}

    created = await manager.start(principal, work)
    print(created.task_id, flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]))
