"""A bounded soak: a 3-member set whose primary steps down every ~0.7 s while 200 concurrent
operations run for ~6 s. Every operation succeeds or fails with a documented error
(NotPrimaryError / the AutoReconnect family), and nothing leaks."""

from __future__ import annotations

import asyncio
import collections

from asyncmongo.client import AsyncMongoClient
from asyncmongo.errors import AutoReconnect
from tests.topology.sim import ReplicaSet
from tests.topology.support import wait_until

DURATION_S = 6.0
STEP_DOWN_EVERY_S = 0.7
WORKERS = 200


async def test_soak_step_downs_under_load() -> None:
    async with ReplicaSet(3) as rs:
        baseline = asyncio.all_tasks()
        outcomes: collections.Counter[str] = collections.Counter()
        async with AsyncMongoClient(
            rs.seed, heartbeatFrequencyMS=10_000, serverSelectionTimeoutMS=5_000
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.primary is not None)
            loop = asyncio.get_running_loop()
            stop = loop.time() + DURATION_S

            async def worker() -> None:
                while loop.time() < stop:
                    try:
                        await client._run_command("db", {"insert": "c"})
                    except AutoReconnect as exc:  # NotPrimaryError is one of these
                        outcomes[type(exc).__name__] += 1
                    else:
                        outcomes["ok"] += 1

            async def step_downs() -> int:
                count = 0
                while loop.time() < stop - STEP_DOWN_EVERY_S:
                    await asyncio.sleep(STEP_DOWN_EVERY_S)
                    rs.step_down()
                    count += 1
                return count

            async with asyncio.TaskGroup() as group:
                for _ in range(WORKERS):
                    group.create_task(worker())
                stepped = group.create_task(step_downs())
            assert stepped.result() >= 6
            assert outcomes["ok"] > 1000
            assert set(outcomes) <= {"ok", "NotPrimaryError", "AutoReconnect"}
            for server in topology.servers.values():
                stats = server.pool.statistics()
                assert stats.in_use == 0 and stats.waiting == 0
                assert server.operation_count == 0
            print(dict(outcomes), "step-downs:", stepped.result())
        await wait_until(lambda: all(not m.server._tasks for m in rs.members))
        leaked = {t for t in asyncio.all_tasks() - baseline if t is not asyncio.current_task()}
        assert not leaked
