"""A bounded soak: a 3-member set whose primary steps down every ~0.7 s while 200 concurrent
operations run for ~6 s. Every operation succeeds or fails with a documented error
(NotPrimaryError / the AutoReconnect family), and nothing leaks."""

from __future__ import annotations

import asyncio

from asyncmongo.client import AsyncMongoClient
from tests.topology.sim import ReplicaSet
from tests.topology.support import assert_no_operation_left, soak_step_downs, wait_until

DURATION_S = 6.0
STEP_DOWN_EVERY_S = 0.7
WORKERS = 200


async def test_soak_step_downs_under_load() -> None:
    async with ReplicaSet(3) as rs:
        baseline = asyncio.all_tasks()
        async with AsyncMongoClient(
            rs.seed, heartbeatFrequencyMS=10_000, serverSelectionTimeoutMS=5_000
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.primary is not None)
            outcomes, stepped = await soak_step_downs(
                client,
                rs.step_down,
                command={"insert": "c"},
                duration_s=DURATION_S,
                every_s=STEP_DOWN_EVERY_S,
                workers=WORKERS,
            )
            assert stepped >= 6
            assert outcomes["ok"] > 1000
            assert set(outcomes) <= {"ok", "NotPrimaryError", "AutoReconnect"}
            assert_no_operation_left(topology)
            print(dict(outcomes), "step-downs:", stepped)
        await wait_until(lambda: all(not m.server._tasks for m in rs.members))
        leaked = {t for t in asyncio.all_tasks() - baseline if t is not asyncio.current_task()}
        assert not leaked
