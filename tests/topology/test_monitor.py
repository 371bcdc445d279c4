"""Monitor behaviour on errors, requests and cancellation (Server Monitoring spec)."""

from __future__ import annotations

import asyncio
import itertools

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.cmap.events import PoolClearedEvent
from asyncmongo.core.sdam import ServerType
from asyncmongo.core.sdam.events import (
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)
from asyncmongo.errors import AutoReconnect
from tests.topology.sim import ReplicaSet
from tests.topology.support import monitors, wait_until


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[float, object]] = []

    def __call__(self, event: object) -> None:
        self.events.append((asyncio.get_running_loop().time(), event))

    def of(self, kind: type) -> list[tuple[float, object]]:
        return [(t, e) for t, e in self.events if isinstance(e, kind)]


async def test_network_error_on_known_server_is_retried_at_once() -> None:
    async with ReplicaSet(1, streaming=False) as rs:
        member = rs.members[0]
        recorder = Recorder()
        async with AsyncMongoClient(
            rs.seed, heartbeatFrequencyMS=500, event_listeners=[recorder]
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.known_servers)
            member.drop_hellos = 1
            await wait_until(lambda: recorder.of(ServerHeartbeatFailedEvent), within=2)
            await wait_until(lambda: topology.description.known_servers)
            ((failed_at, _),) = recorder.of(ServerHeartbeatFailedEvent)
            after = [(t, e) for t, e in recorder.events if t >= failed_at]
            cleared = [e for _, e in after if isinstance(e, PoolClearedEvent)]
            assert cleared and not cleared[0].interrupt_in_use_connections
            retry = [t for t, e in after if isinstance(e, ServerHeartbeatStartedEvent)]
            assert retry and retry[0] - failed_at < 0.3  # before the 500 ms spacing
            assert topology.description.known_servers[0].server_type is ServerType.RS_PRIMARY


async def test_timeout_clears_the_pool_interrupting_in_use_connections() -> None:
    async with ReplicaSet(1, streaming=False) as rs:
        member = rs.members[0]
        recorder = Recorder()
        async with AsyncMongoClient(
            rs.seed, heartbeatFrequencyMS=500, connectTimeoutMS=100, event_listeners=[recorder]
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.known_servers)
            member.hello_delay = 0.3
            await wait_until(lambda: recorder.of(ServerHeartbeatFailedEvent), within=2)
            member.hello_delay = 0
            cleared = [e for _, e in recorder.of(PoolClearedEvent)]
            assert cleared and cleared[0].interrupt_in_use_connections  # type: ignore[attr-defined]
            await wait_until(lambda: topology.description.known_servers, within=3)


async def test_application_network_error_cancels_the_streaming_check() -> None:
    async with ReplicaSet(1) as rs:
        member = rs.members[0]
        recorder = Recorder()
        async with AsyncMongoClient(
            rs.seed, heartbeatFrequencyMS=10_000, event_listeners=[recorder]
        ) as client:
            topology = client._topology_runtime
            await client.admin_command({"ping": 1})
            await wait_until(lambda: all(m.streaming for m in monitors(topology)))
            member.drop_operations = 1
            try:
                await client.admin_command({"ping": 1})
            except AutoReconnect:
                pass
            else:
                raise AssertionError("the dropped connection should fail the operation")
            assert topology.description.servers[member.address].server_type is ServerType.UNKNOWN
            await asyncio.sleep(0.05)
            # the cancelled check is not reported as a failed heartbeat
            assert not recorder.of(ServerHeartbeatFailedEvent)
            # the next operation's selection requests a check and the server is back
            assert (await client.admin_command({"ping": 1}))["ok"] == 1.0


async def test_immediate_checks_respect_the_minimum_spacing() -> None:
    async with ReplicaSet(1, streaming=False) as rs:
        recorder = Recorder()
        async with AsyncMongoClient(
            rs.seed, heartbeatFrequencyMS=10_000, event_listeners=[recorder]
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.known_servers)
            for _ in range(5):
                topology.request_checks()
                await asyncio.sleep(0.1)
            await wait_until(lambda: len(recorder.of(ServerHeartbeatSucceededEvent)) >= 2)
            await asyncio.sleep(0.6)
            started = [t for t, _ in recorder.of(ServerHeartbeatStartedEvent)]
            # the handshake check, then at most one check per 500 ms however many requests
            assert 2 <= len(started) <= 3
            gaps = [b - a for a, b in itertools.pairwise(started)]
            assert all(gap >= 0.49 for gap in gaps)


async def test_a_malformed_or_failed_hello_is_a_failed_check_not_a_dead_monitor() -> None:
    from tests.support.scripted_server import HELLO_REPLY, Peer, Request, ScriptedServer

    replies = [dict(HELLO_REPLY, setName=5), {"ok": 0.0, "errmsg": "not today", "code": 2}]

    async def handler(request: Request, peer: Peer) -> None:
        if request.name.lower() in ("hello", "ismaster") and replies:
            await peer.reply(request, replies.pop(0) if len(replies) > 1 else replies[0])
        else:
            await peer.default(request)

    async with ScriptedServer(handler) as server:
        recorder = Recorder()
        host, port = server.address
        async with AsyncMongoClient(
            f"mongodb://{host}:{port}/?heartbeatFrequencyMS=500", event_listeners=[recorder]
        ) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(recorder.of(ServerHeartbeatFailedEvent)) >= 2, within=3)
            (described,) = topology.description.servers.values()
            assert described.server_type is ServerType.UNKNOWN
            failures = [e.failure for _, e in recorder.of(ServerHeartbeatFailedEvent)]  # type: ignore[attr-defined]
            assert "setName" in str(failures[0])
            assert "not today" in str(failures[1])
            assert all(m._task is not None and not m._task.done() for m in monitors(topology))
            replies.clear()  # healthy again
            await wait_until(lambda: topology.description.known_servers, within=3)
