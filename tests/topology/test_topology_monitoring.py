"""Monitoring: streaming proven (a step-down seen within 200 ms with a 10 s heartbeat, as a
moreToCome reply), polling against servers without topologyVersion and when forced, immediate
checks on request, and RTT from the RttMonitor while streaming."""

from __future__ import annotations

import asyncio

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.sdam.events import (
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)
from asyncmongo.runtime.monitor import streaming_enabled
from tests.topology.sim import ReplicaSet
from tests.topology.support import monitors, wait_until


async def test_step_down_arrives_by_streaming_within_200_ms() -> None:
    async with ReplicaSet(3) as rs:
        events: list[object] = []
        client = AsyncMongoClient(
            rs.seed, heartbeatFrequencyMS=10_000, event_listeners=[events.append]
        )
        async with client:
            topology = client._topology_runtime
            await wait_until(
                lambda: (
                    len(monitors(topology)) == 3 and all(m.streaming for m in monitors(topology))
                )
            )
            checks_before = sum(m.checks for m in monitors(topology))
            streamed_before = sum(m.streamed_replies for m in rs.members)
            seen = len(events)
            loop = asyncio.get_running_loop()
            start = loop.time()
            new_primary = rs.step_down()
            await wait_until(
                lambda: (
                    (p := client.topology_description.primary) is not None
                    and p.address == new_primary.address
                ),
                within=0.2,
            )
            elapsed = loop.time() - start
            assert elapsed < 0.2
            # each monitor read the change as a moreToCome reply of its stream
            await wait_until(
                lambda: sum(m.streamed_replies for m in rs.members) >= streamed_before + 3
            )
            after = events[seen:]
            succeeded = [e for e in after if isinstance(e, ServerHeartbeatSucceededEvent)]
            assert succeeded and all(e.awaited for e in succeeded)
            started = [e for e in after if isinstance(e, ServerHeartbeatStartedEvent)]
            assert started and all(e.awaited for e in started)
            # no new hello was sent to learn it: the streams just delivered
            checks_after = sum(m.checks for m in monitors(topology))
            assert checks_after - checks_before <= 6
            assert sum(m.awaited_requests for m in rs.members) == 3


async def test_polling_against_servers_without_topology_version() -> None:
    async with ReplicaSet(2, streaming=False) as rs:
        events: list[object] = []
        async with AsyncMongoClient(
            rs.seed, heartbeatFrequencyMS=500, event_listeners=[events.append]
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            await asyncio.sleep(1.2)
            heartbeats = [e for e in events if isinstance(e, ServerHeartbeatSucceededEvent)]
            assert len(heartbeats) >= 4  # handshake + about two polls per server
            assert not any(e.awaited for e in heartbeats)
            assert all(m.awaited_requests == 0 for m in rs.members)
            assert all(not m.streaming for m in monitors(topology))
            # polling measures RTT itself
            assert all(s.round_trip_time_ms is not None for s in topology.description.known_servers)


async def test_server_monitoring_mode_poll_is_honoured() -> None:
    async with ReplicaSet(2) as rs:
        events: list[object] = []
        async with AsyncMongoClient(
            rs.seed,
            heartbeatFrequencyMS=500,
            serverMonitoringMode="poll",
            event_listeners=[events.append],
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            await asyncio.sleep(0.7)
            assert all(m.awaited_requests == 0 for m in rs.members)
            assert all(m.hello_requests >= 2 for m in rs.members)
            heartbeats = [e for e in events if isinstance(e, ServerHeartbeatSucceededEvent)]
            assert heartbeats and not any(e.awaited for e in heartbeats)


def test_auto_mode_polls_in_faas() -> None:
    assert streaming_enabled("auto", {}) is True
    assert streaming_enabled("auto", {"AWS_EXECUTION_ENV": "AWS_Lambda_python3.11"}) is False
    assert streaming_enabled("stream", {"AWS_EXECUTION_ENV": "AWS_Lambda_python3.11"}) is True
    assert streaming_enabled("poll", {}) is False


async def test_rtt_monitor_feeds_the_description_while_streaming() -> None:
    async with ReplicaSet(1) as rs:
        async with AsyncMongoClient(rs.seed, heartbeatFrequencyMS=500) as client:
            topology = client._topology_runtime
            server = topology.servers[rs.members[0].address]
            await wait_until(lambda: server.monitor is not None and server.monitor.streaming)
            await wait_until(lambda: server.rtt.minimum > 0, within=3)
            described = topology.description.servers[rs.members[0].address]
            assert described.round_trip_time_ms is not None
            assert described.min_round_trip_time_ms is not None


async def test_immediate_check_on_request_while_polling() -> None:
    """No primary, polling every 10 s: a waiting operation's check request finds the new
    primary within the 500 ms minimum spacing, not after a heartbeat."""
    async with ReplicaSet(3, streaming=False, primary=None) as rs:
        async with AsyncMongoClient(rs.seed, heartbeatFrequencyMS=10_000) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 3)
            loop = asyncio.get_running_loop()
            start = loop.time()
            operation = asyncio.create_task(client._run_command("db", {"insert": "c"}))
            await asyncio.sleep(0.05)
            rs.elect(2)
            reply = await asyncio.wait_for(operation, 2)
            assert reply["n"] == 1
            assert loop.time() - start < 1.5
            assert topology.wakeups < 20
