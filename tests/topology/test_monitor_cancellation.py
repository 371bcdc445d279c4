"""A cancellation test per await of the monitors and of selection: close() (which cancels the
tasks) at each point ends them at once and leaves no task or socket; a cancelled selection
leaves the condition free."""

from __future__ import annotations

import asyncio

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.selection import Selection
from tests.topology.sim import ReplicaSet
from tests.topology.support import monitors, wait_until


async def close_quickly(client: AsyncMongoClient) -> None:
    topology = client._topology_runtime
    watched = list(monitors(topology))
    loop = asyncio.get_running_loop()
    start = loop.time()
    await client.close()
    assert loop.time() - start < 0.5
    assert client._tasks is not None and len(client._tasks) == 0
    for monitor in watched:
        assert monitor._connection is None
        assert monitor._task is None


async def test_close_while_the_monitor_connects() -> None:
    async with ReplicaSet(1) as rs:
        rs.members[0].hello_delay = 5  # the handshake hangs
        client = AsyncMongoClient(rs.seed)
        await client.aconnect()
        await asyncio.sleep(0.05)
        await close_quickly(client)


async def test_close_while_the_monitor_awaits_a_streamed_reply() -> None:
    async with ReplicaSet(1) as rs:
        client = AsyncMongoClient(rs.seed, heartbeatFrequencyMS=10_000)
        await client.aconnect()
        topology = client._topology_runtime
        await wait_until(lambda: all(m.streaming for m in monitors(topology)))
        await close_quickly(client)


async def test_close_while_the_monitor_waits_between_polls() -> None:
    async with ReplicaSet(1, streaming=False) as rs:
        client = AsyncMongoClient(rs.seed, heartbeatFrequencyMS=10_000)
        await client.aconnect()
        topology = client._topology_runtime
        await wait_until(lambda: topology.description.known_servers)
        await asyncio.sleep(0.05)
        await close_quickly(client)


async def test_close_while_the_monitor_sleeps_the_minimum_spacing() -> None:
    async with ReplicaSet(1, streaming=False) as rs:
        client = AsyncMongoClient(rs.seed, heartbeatFrequencyMS=10_000)
        await client.aconnect()
        topology = client._topology_runtime
        await wait_until(lambda: topology.description.known_servers)
        topology.request_checks()  # wakes it into the 500 ms minimum-spacing sleep
        await asyncio.sleep(0.05)
        await close_quickly(client)


async def test_close_while_the_rtt_monitor_pings() -> None:
    async with ReplicaSet(1) as rs:
        client = AsyncMongoClient(rs.seed, heartbeatFrequencyMS=500)
        await client.aconnect()
        topology = client._topology_runtime
        await wait_until(lambda: all(m._rtt_monitor is not None for m in monitors(topology)))
        rtt = [m._rtt_monitor for m in monitors(topology)]
        rs.members[0].hello_delay = 5  # the RTT monitor's next hello hangs
        await asyncio.sleep(0.6)
        await close_quickly(client)
        assert all(r is not None and r._connection is None for r in rtt)


async def test_cancelled_selection_leaves_the_condition_free() -> None:
    async with ReplicaSet(2, primary=None) as rs:
        async with AsyncMongoClient(rs.seed) as client:
            topology = client._topology_runtime
            waiting = asyncio.create_task(topology.select_server(Selection.write()))
            await asyncio.sleep(0.05)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert not topology._condition.locked()
            rs.elect(0)
            server = await topology.select_server(Selection.write())
            assert server.address == rs.members[0].address


async def test_wait_for_change_times_out_and_wakes() -> None:
    async with ReplicaSet(1) as rs:
        async with AsyncMongoClient(rs.seed) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.known_servers)
            await asyncio.sleep(0.05)
            assert await topology.wait_for_change(0.05) is False
            version = topology.version
            waiter = asyncio.create_task(topology.wait_for_change(2, version))
            await asyncio.sleep(0.01)
            rs.members[0].change(role="secondary", primary=None)
            assert await waiter is True
            assert topology.version > version
