"""Server selection that waits for change (no busy loop), its timeout error, and the SDAM
verdicts the executor carries out for application errors."""

from __future__ import annotations

import asyncio

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.sdam import ServerType, TopologyType
from asyncmongo.errors import AutoReconnect, NotPrimaryError, ServerSelectionTimeoutError
from tests.topology.sim import ReplicaSet
from tests.topology.support import wait_until


async def test_operation_waits_without_busy_loop_then_runs_on_the_new_primary() -> None:
    async with ReplicaSet(3, primary=None) as rs:
        async with AsyncMongoClient(rs.seed, heartbeatFrequencyMS=10_000) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 3)
            attempts, wakeups = topology.selection_attempts, topology.wakeups
            operation = asyncio.create_task(client._run_command("db", {"insert": "c"}))
            await asyncio.sleep(0.3)
            assert not operation.done()
            # 300 ms of waiting cost one selection attempt and no wake-up: nothing changed
            assert topology.selection_attempts - attempts == 1
            assert topology.wakeups == wakeups
            rs.elect(1)
            reply = await asyncio.wait_for(operation, 0.5)
            assert reply["n"] == 1
            assert rs.members[1].operations == 1
            # the election touched 3 servers: a handful of wake-ups, not a loop
            assert topology.wakeups - wakeups <= 4
            assert topology.selection_attempts - attempts <= 5


async def test_selection_timeout_explains_itself() -> None:
    async with ReplicaSet(2, primary=None) as rs:
        async with AsyncMongoClient(rs.seed, serverSelectionTimeoutMS=200) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            loop = asyncio.get_running_loop()
            start = loop.time()
            with pytest.raises(ServerSelectionTimeoutError) as raised:
                await client._run_command("db", {"insert": "c"})
            assert 0.19 < loop.time() - start < 0.5
            message = str(raised.value)
            assert "no primary" in message
            assert "ReplicaSetNoPrimary" in message and "RSSecondary" in message


async def test_unreachable_seed_times_out_with_the_error() -> None:
    async with ReplicaSet(1) as rs:
        host, port = rs.members[0].address
    # the server is gone: nothing listens on that port any more
    async with AsyncMongoClient(
        f"mongodb://{host}:{port}", serverSelectionTimeoutMS=300, connectTimeoutMS=200
    ) as client:
        with pytest.raises(ServerSelectionTimeoutError) as raised:
            await client.admin_command({"ping": 1})
        assert "Unknown" in str(raised.value)
        assert raised.value.errors  # per-server errors


async def test_not_primary_error_marks_unknown_and_rediscovers() -> None:
    async with ReplicaSet(3, streaming=False) as rs:
        async with AsyncMongoClient(rs.seed, heartbeatFrequencyMS=10_000) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.primary is not None)
            await wait_until(lambda: len(topology.description.known_servers) == 3)
            old = rs.members[0]
            new_primary = rs.step_down()  # polling every 10 s: the client does not know yet
            with pytest.raises(NotPrimaryError):
                await client._run_command("db", {"insert": "c"})
            assert topology.description.servers[old.address].server_type is ServerType.UNKNOWN
            # selection finds no primary, requests immediate checks and waits: the checks
            # (500 ms minimum spacing, not the 10 s heartbeat) find the new primary
            loop = asyncio.get_running_loop()
            start = loop.time()
            assert (await client._run_command("db", {"insert": "c"}))["n"] == 1
            assert loop.time() - start < 1.5
            assert new_primary.operations == 1


async def test_network_error_marks_unknown_and_clears_the_pool() -> None:
    async with ReplicaSet(1) as rs:
        async with AsyncMongoClient(rs.seed, directConnection=True) as client:
            topology = client._topology_runtime
            await client.admin_command({"ping": 1})
            server = topology.servers[rs.members[0].address]
            generation = server.pool.generation
            rs.members[0].drop_operations = 1
            with pytest.raises(AutoReconnect):
                await client.admin_command({"ping": 1})
            assert server.pool.generation == generation + 1
            assert topology.description.topology_type is TopologyType.SINGLE
            # the monitor brings it back and the client works again
            assert (await client.admin_command({"ping": 1}))["ok"] == 1.0


async def test_timeout_ms_bounds_selection() -> None:
    async with ReplicaSet(2, primary=None) as rs:
        async with AsyncMongoClient(rs.seed, timeoutMS=150) as client:
            loop = asyncio.get_running_loop()
            start = loop.time()
            with pytest.raises(ServerSelectionTimeoutError):
                await client._run_command("db", {"insert": "c"})
            assert 0.14 < loop.time() - start < 0.5  # timeoutMS, not serverSelectionTimeoutMS
