"""The client's lifecycle: lazy connect, close() leaves no task, socket or ResourceWarning,
a waiting operation ends when the client closes, a second event loop is refused clearly."""

from __future__ import annotations

import asyncio
import gc
import os
import warnings

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.sdam import TopologyType
from asyncmongo.errors import ConfigurationError, InvalidOperation
from tests.topology.sim import ReplicaSet
from tests.topology.support import wait_until


def open_sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


async def test_connects_lazily() -> None:
    async with ReplicaSet(1) as rs:
        client = AsyncMongoClient(rs.seed)
        assert client.topology_description.topology_type is TopologyType.UNKNOWN
        await asyncio.sleep(0.05)
        assert rs.members[0].hello_requests == 0  # nothing happens before first use
        assert (await client.admin_command({"ping": 1}))["ok"] == 1.0
        assert rs.members[0].hello_requests >= 1
        await client.close()


async def test_close_leaves_no_task_socket_or_resource_warning() -> None:
    async with ReplicaSet(3) as rs:
        baseline_tasks = asyncio.all_tasks()
        baseline_sockets = open_sockets()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = AsyncMongoClient(rs.seed, heartbeatFrequencyMS=500, minPoolSize=2)
            await client.aconnect()
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 3)
            await asyncio.gather(*(client._run_command("db", {"insert": "c"}) for _ in range(20)))
            primary = topology.servers[rs.members[0].address]
            await wait_until(lambda: primary.pool.statistics().idle >= 2)  # minPoolSize filler
            await client.close()
            assert client._tasks is not None and len(client._tasks) == 0
            # what remains are the simulated servers' handlers seeing the sockets close
            await wait_until(lambda: all(not m.server._tasks for m in rs.members))
            ours = {
                t for t in asyncio.all_tasks() - baseline_tasks if t is not asyncio.current_task()
            }
            assert not ours, ours
            assert open_sockets() == baseline_sockets
            del client
            gc.collect()
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


async def test_close_ends_an_operation_waiting_for_a_server() -> None:
    async with ReplicaSet(2, primary=None) as rs:
        client = AsyncMongoClient(rs.seed)
        operation = asyncio.create_task(client._run_command("db", {"insert": "c"}))
        await asyncio.sleep(0.1)
        await client.close()
        with pytest.raises(InvalidOperation):
            await operation
        with pytest.raises(InvalidOperation):
            await client.admin_command({"ping": 1})


async def test_a_second_event_loop_is_refused() -> None:
    async with ReplicaSet(1) as rs:
        async with AsyncMongoClient(rs.seed) as client:
            await client.admin_command({"ping": 1})

            def elsewhere() -> None:
                asyncio.run(client.admin_command({"ping": 1}))

            with pytest.raises(InvalidOperation, match="event loop"):
                await asyncio.to_thread(elsewhere)
            assert (await client.admin_command({"ping": 1}))["ok"] == 1.0


async def test_bad_options_fail_at_construction() -> None:
    with pytest.raises(ConfigurationError):
        AsyncMongoClient("mongodb://a,b/?directConnection=true")
    with pytest.raises(ConfigurationError):
        AsyncMongoClient("localhost", 27017, serverMonitoringMode="sometimes")
    with pytest.raises(ConfigurationError):
        AsyncMongoClient("localhost", event_listeners=[42])


async def test_host_and_port_form() -> None:
    async with ReplicaSet(1) as rs:
        host, port = rs.members[0].address
        async with AsyncMongoClient(host, port) as client:
            assert list(client.topology_description.servers) == [(host, port)]
            assert (await client.admin_command({"ping": 1}))["ok"] == 1.0
