"""Inside an anyio application (asyncio backend, as FastAPI/Starlette run): operations
cancelled by move_on_after or a cancelled task group leave no connection checked out, and the
client keeps working."""

from __future__ import annotations

import anyio

from asyncmongo.client import AsyncMongoClient
from tests.topology.sim import ReplicaSet
from tests.topology.support import wait_until


async def test_move_on_after_leaves_no_connection_checked_out() -> None:
    async with ReplicaSet(1) as rs:
        member = rs.members[0]
        async with AsyncMongoClient(rs.seed) as client:
            await client.admin_command({"ping": 1})
            pool = client._topology_runtime.servers[member.address].pool
            member.operation_delay = 0.3
            with anyio.move_on_after(0.05) as scope:
                await client.admin_command({"ping": 1})
            assert scope.cancelled_caught
            assert pool.statistics().in_use == 0
            server = client._topology_runtime.servers[member.address]
            assert server.operation_count == 0
            member.operation_delay = 0
            assert (await client.admin_command({"ping": 1}))["ok"] == 1.0
            assert pool.statistics().in_use == 0


async def test_cancelled_task_group_leaves_no_connection_checked_out() -> None:
    async with ReplicaSet(3) as rs:
        primary = rs.members[0]
        async with AsyncMongoClient(rs.seed, maxPoolSize=5) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.primary is not None)
            primary.operation_delay = 0.2
            async with anyio.create_task_group() as group:
                for _ in range(30):  # more than the pool: some wait in its queue
                    group.start_soon(client._run_command, "db", {"insert": "c"})
                await anyio.sleep(0.05)
                group.cancel_scope.cancel()
            server = topology.servers[primary.address]
            stats = server.pool.statistics()
            assert stats.in_use == 0 and stats.waiting == 0
            assert server.operation_count == 0
            primary.operation_delay = 0
            async with anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(client._run_command, "db", {"insert": "c"})
            assert server.pool.statistics().in_use == 0
