"""The topology runtime against asyncmongo.testing's simulated deployments (the real wire
protocol, streaming hello, elections, fail points, stopped members)."""

from __future__ import annotations

import asyncio

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.sdam import ServerType, TopologyType
from asyncmongo.core.sdam.events import (
    ServerDescriptionChangedEvent,
    ServerHeartbeatSucceededEvent,
)
from asyncmongo.errors import AutoReconnect, NotPrimaryError
from asyncmongo.testing.deployment import LoadBalanced, ReplicaSet, ShardedCluster
from tests.topology.support import (
    INSERT,
    address,
    assert_no_operation_left,
    monitors,
    recording_client,
    soak_step_downs,
    unknown_marks,
    wait_until,
)


async def test_replica_set_discovered_from_one_seed() -> None:
    async with ReplicaSet(3) as rs:
        async with AsyncMongoClient(f"mongodb://{rs.members[0].host}") as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 3)
            description = client.topology_description
            assert description.topology_type is TopologyType.REPLICA_SET_WITH_PRIMARY
            assert description.set_name == rs.set_name
            assert rs.primary is not None
            assert description.primary is not None
            assert description.primary.address == address(rs.primary.host)
            assert (await client._run_command("db", INSERT))["n"] == 1


async def test_direct_connection_and_sharded_and_load_balanced() -> None:
    async with ReplicaSet(2) as rs:
        secondary = rs.secondaries[0]
        uri = f"mongodb://{secondary.host}/?directConnection=true"
        async with AsyncMongoClient(uri) as client:
            await client.admin_command({"ping": 1})
            description = client.topology_description
            assert description.topology_type is TopologyType.SINGLE
            (server,) = description.servers.values()
            assert server.server_type is ServerType.RS_SECONDARY
    async with ShardedCluster(2) as cluster:
        async with AsyncMongoClient(cluster.uri) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            assert topology.description.topology_type is TopologyType.SHARDED
            for _ in range(20):
                await client._run_command("db", INSERT)
    async with LoadBalanced() as lb:
        async with AsyncMongoClient(lb.uri) as client:
            assert (await client.admin_command({"ping": 1}))["ok"] == 1.0
            description = client.topology_description
            assert description.topology_type is TopologyType.LOAD_BALANCED
            (server,) = description.servers.values()
            assert server.server_type is ServerType.LOAD_BALANCER
            assert all(s.monitor is None for s in client._topology_runtime.servers.values())


async def test_step_down_seen_by_streaming_within_200_ms() -> None:
    async with ReplicaSet(3) as rs:
        async with recording_client(rs.uri) as (client, events):
            topology = client._topology_runtime
            await wait_until(
                lambda: (
                    len(monitors(topology)) == 3 and all(m.streaming for m in monitors(topology))
                )
            )
            await wait_until(lambda: topology.description.primary is not None)
            streamed = sum(m.streamed_replies for m in monitors(topology))
            seen = len(events)
            loop = asyncio.get_running_loop()
            start = loop.time()
            new_primary = await rs.step_down()
            assert new_primary is not None
            await wait_until(
                lambda: (
                    (p := topology.description.primary) is not None
                    and p.address == address(new_primary.host)
                ),
                within=0.2,
            )
            assert loop.time() - start < 0.2
            assert sum(m.streamed_replies for m in monitors(topology)) > streamed  # moreToCome
            succeeded = [e for e in events[seen:] if isinstance(e, ServerHeartbeatSucceededEvent)]
            assert succeeded and all(e.awaited for e in succeeded)


async def test_polling_when_the_servers_do_not_stream() -> None:
    async with ReplicaSet(2, streaming=False) as rs:
        events: list[object] = []
        async with AsyncMongoClient(
            rs.uri, heartbeatFrequencyMS=500, event_listeners=[events.append]
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            await asyncio.sleep(0.6)
            beats = [e for e in events if isinstance(e, ServerHeartbeatSucceededEvent)]
            assert len(beats) >= 4 and not any(e.awaited for e in beats)
            assert all(m.streamed_replies == 0 for m in monitors(topology))


async def test_operation_waits_for_an_election() -> None:
    async with ReplicaSet(3) as rs:
        async with AsyncMongoClient(rs.uri) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.primary is not None)
            await rs.step_down(elect=False)
            await wait_until(lambda: topology.description.primary is None)
            attempts = topology.selection_attempts
            operation = asyncio.create_task(client._run_command("db", INSERT))
            await asyncio.sleep(0.3)
            assert not operation.done()
            assert topology.selection_attempts - attempts == 1  # waiting, not looping
            await rs.elect(rs.members[2])
            assert (await asyncio.wait_for(operation, 1))["n"] == 1


async def test_shutdown_error_clears_the_pool_and_marks_unknown() -> None:
    # Polling: see test_sdam_prose (a streaming member stamps fail point errors with its
    # current topologyVersion, which makes them stale).
    async with ReplicaSet(2, streaming=False) as rs:
        async with recording_client(rs.uri) as (client, events):
            topology = client._topology_runtime
            await client._run_command("db", INSERT)
            primary = rs.primary
            assert primary is not None
            server = topology.servers[address(primary.host)]
            generation = server.pool.generation
            with rs.fail_point({"times": 1}, failCommands=["insert"], errorCode=91):
                with pytest.raises(NotPrimaryError):
                    await client._run_command("db", INSERT)
            assert server.pool.generation == generation + 1  # 91 is "shutting down"
            marked = unknown_marks(events, server.address)
            assert marked and "91" in (marked[0].new_description.error or "")
            assert (await client._run_command("db", INSERT))["n"] == 1


async def test_closed_connection_marks_unknown_then_recovers() -> None:
    async with ReplicaSet(2) as rs:
        async with AsyncMongoClient(rs.uri, heartbeatFrequencyMS=10_000) as client:
            topology = client._topology_runtime
            await client._run_command("db", INSERT)
            primary = rs.primary
            assert primary is not None
            server = topology.servers[address(primary.host)]
            generation = server.pool.generation
            with rs.fail_point({"times": 1}, failCommands=["insert"], closeConnection=True):
                with pytest.raises(AutoReconnect):
                    await client._run_command("db", INSERT)
            assert server.pool.generation == generation + 1
            assert (await client._run_command("db", INSERT))["n"] == 1


async def test_a_stopped_member_goes_unknown_and_comes_back() -> None:
    async with ReplicaSet(3) as rs:
        async with AsyncMongoClient(rs.uri, heartbeatFrequencyMS=500) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 3)
            member = rs.secondaries[0]
            await member.stop()
            where = address(member.host)
            await wait_until(
                lambda: topology.description.servers[where].server_type is ServerType.UNKNOWN
            )
            await member.start()
            await wait_until(
                lambda: topology.description.servers[where].server_type is ServerType.RS_SECONDARY,
                within=3,
            )


async def test_soak_against_the_simulator() -> None:
    """200 concurrent workers for ~4 s while the primary steps down every 0.5 s."""
    async with ReplicaSet(3) as rs:
        baseline = asyncio.all_tasks()
        async with AsyncMongoClient(rs.uri, serverSelectionTimeoutMS=5_000) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.primary is not None)
            outcomes, stepped = await soak_step_downs(
                client, rs.step_down, command=INSERT, duration_s=4.0, every_s=0.5, workers=200
            )
            assert stepped >= 5
            assert outcomes["ok"] > 500
            assert set(outcomes) <= {"ok", "NotPrimaryError", "AutoReconnect"}
            assert_no_operation_left(topology)
            print(dict(outcomes), "step-downs:", stepped)
        await wait_until(lambda: all(m.connection_count == 0 for m in rs.members))
        await asyncio.sleep(0.05)
        leaked = {t for t in asyncio.all_tasks() - baseline if t is not asyncio.current_task()}
        assert not leaked, leaked


async def test_srv_host_updates_reach_the_topology() -> None:
    """The SRV poller's callback (client._runtime._srv_hosts_changed) adds and removes mongos."""
    async with ShardedCluster(3) as cluster:
        first, second, third = (address(m.host) for m in cluster.mongos)
        uri = f"mongodb://{cluster.mongos[0].host},{cluster.mongos[1].host}"
        async with AsyncMongoClient(uri) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            runtime = client._runtime
            assert runtime is not None and runtime._should_poll_srv()
            removed = topology.servers[first]
            runtime._srv_hosts_changed((second, third))
            await wait_until(lambda: set(topology.servers) == {second, third})
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            await wait_until(lambda: removed.pool.statistics().state.value == "closed")
            assert removed.monitor is not None and removed.monitor._task is None
            for _ in range(10):
                await client._run_command("db", INSERT)


async def test_a_state_change_error_with_the_current_topology_version_is_stale() -> None:
    """SDAM: an error whose topologyVersion is not newer than the server's is ignored (the
    streaming simulator stamps its errors with its current version)."""
    async with ReplicaSet(2) as rs:
        events: list[object] = []
        async with AsyncMongoClient(rs.uri, event_listeners=[events.append]) as client:
            topology = client._topology_runtime
            await client._run_command("db", INSERT)
            primary = rs.primary
            assert primary is not None
            server = topology.servers[address(primary.host)]
            generation = server.pool.generation
            seen = len(events)
            with rs.fail_point({"times": 1}, failCommands=["insert"], errorCode=10107):
                with pytest.raises(NotPrimaryError):
                    await client._run_command("db", INSERT)
            assert server.pool.generation == generation
            assert not [e for e in events[seen:] if isinstance(e, ServerDescriptionChangedEvent)]
            assert topology.description.primary is not None
