"""The SDAM spec's integration prose tests (server-discovery-and-monitoring-tests.md) that
asyncmongo.testing can play."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.cmap.events import PoolClearedEvent, PoolReadyEvent
from asyncmongo.core.sdam import ServerType, TopologyType
from asyncmongo.core.sdam.events import (
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)
from asyncmongo.core.selection import Mode, ReadPreference
from asyncmongo.errors import AutoReconnect, NotPrimaryError
from asyncmongo.testing.deployment import ReplicaSet, Standalone
from tests.topology.support import INSERT, address, recording_client, unknown_marks, wait_until

SECONDARY = ReadPreference(Mode.SECONDARY)


async def test_all_servers_unavailable() -> None:
    client = AsyncMongoClient("mongodb://127.0.0.1:9,127.0.0.1:11/?serverSelectionTimeoutMS=100")
    await client.aconnect()  # no exception
    await client.close()


async def test_network_error_writing_to_primary() -> None:
    async with ReplicaSet(3) as rs:
        async with recording_client(rs.uri) as (client, events):
            topology = client._topology_runtime
            await client._run_command("db", INSERT)
            assert rs.primary is not None
            where = address(rs.primary.host)
            with rs.fail_point({"times": 1}, failCommands=["insert"], closeConnection=True):
                with pytest.raises(AutoReconnect):
                    await client._run_command("db", INSERT)
            assert topology.description.servers[where].server_type is ServerType.UNKNOWN
            assert topology.description.topology_type is TopologyType.REPLICA_SET_NO_PRIMARY
            seen = len(events)
            await asyncio.sleep(0.3)
            # no immediate re-check of the former primary
            assert not [
                e
                for e in events[seen:]
                if isinstance(e, ServerHeartbeatStartedEvent) and e.connection_id == where
            ]
            assert topology.description.servers[where].server_type is ServerType.UNKNOWN


async def test_not_writable_primary_when_reading_from_the_primary() -> None:
    # Polling: asyncmongo.testing attaches the member's current topologyVersion to a fail
    # point's state-change error when it streams, which SDAM then (rightly) ignores as stale.
    async with ReplicaSet(3, streaming=False) as rs:
        async with recording_client(rs.uri) as (client, events):
            await client.admin_command({"ping": 1})
            assert rs.primary is not None
            where = address(rs.primary.host)
            with rs.fail_point({"times": 1}, failCommands=["ping"], errorCode=10107):
                with pytest.raises(NotPrimaryError):
                    await client.admin_command({"ping": 1})
            (marked, *_) = unknown_marks(events, where)
            changes = [e for e in events if getattr(e, "new_description", None) is not None]
            after = changes[changes.index(marked) + 1 :]
            topology_change = next(e for e in after if not hasattr(e, "address"))
            assert (
                topology_change.new_description.topology_type is TopologyType.REPLICA_SET_NO_PRIMARY
            )


# A fail point's error does not change the member's state, so a streaming monitor (whose check
# is in progress, and "a request during a check MUST be ignored") would hear nothing until
# maxAwaitTimeMS; a real "node is recovering" moves topologyVersion and is pushed at once.
# These two tests therefore poll, where the requested immediate check is observable.


async def test_node_is_recovering_reading_from_a_secondary() -> None:
    async with ReplicaSet(2, streaming=False) as rs:
        async with recording_client(rs.uri) as (client, events):
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            secondary = rs.secondaries[0]
            where = address(secondary.host)
            with secondary.fail_point({"times": 1}, failCommands=["ping"], errorCode=11600):
                with pytest.raises(NotPrimaryError):
                    await client.admin_command({"ping": 1}, read_preference=SECONDARY)
            assert unknown_marks(events, where)
            assert topology.description.topology_type is TopologyType.REPLICA_SET_WITH_PRIMARY
            # a multi-threaded (here: asynchronous) client re-checks the secondary at once
            await wait_until(
                lambda: topology.description.servers[where].server_type is ServerType.RS_SECONDARY,
                within=1,
            )


async def test_node_is_recovering_from_a_write_concern_error() -> None:
    async with ReplicaSet(3, streaming=False) as rs:
        async with recording_client(rs.uri) as (client, events):
            topology = client._topology_runtime
            await client._run_command("db", INSERT)
            assert rs.primary is not None
            where = address(rs.primary.host)
            wce = {"code": 91, "errmsg": "Replication is being shut down"}
            with rs.fail_point({"times": 1}, failCommands=["insert"], writeConcernError=wce):
                reply = await client._run_command("db", INSERT)
            assert reply["writeConcernError"]["code"] == 91
            assert unknown_marks(events, where)
            # re-checked at once: the primary is back
            await wait_until(
                lambda: (p := topology.description.primary) is not None and p.address == where,
                within=1,
            )


@pytest.mark.parametrize(
    ("query", "write_succeeds"),
    [("?directConnection=false", True), ("?directConnection=true", False), ("", True)],
)
async def test_topology_discovery_and_direct_connection(query: str, write_succeeds: bool) -> None:
    async with ReplicaSet(2) as rs:
        host = rs.secondaries[0].host
        async with AsyncMongoClient(f"mongodb://{host}/{query}") as client:
            if write_succeeds:
                assert (await client._run_command("db", INSERT))["n"] == 1
            else:
                with pytest.raises(NotPrimaryError):
                    await client._run_command("db", INSERT)


async def test_monitors_sleep_at_least_min_heartbeat_frequency_between_checks() -> None:
    async with Standalone() as standalone:
        app = "SDAMMinHeartbeatFrequencyTest"
        with standalone.fail_point(
            {"times": 5}, failCommands=["hello", "isMaster"], errorCode=1234, appName=app
        ):
            uri = f"{standalone.uri.split('?')[0]}?directConnection=true"
            async with AsyncMongoClient(uri, appname=app, serverSelectionTimeoutMS=5000) as client:
                loop = asyncio.get_running_loop()
                start = loop.time()
                assert (await client.admin_command({"ping": 1}))["ok"] == 1.0
                assert 2.0 <= loop.time() - start <= 3.5


async def test_connection_pool_management() -> None:
    async with Standalone() as standalone:
        app = "SDAMPoolManagementTest"
        events: list[Any] = []
        uri = f"{standalone.uri.split('?')[0]}?directConnection=true"
        # Polling: while streaming, the RttMonitor's own hellos (same appName) may use up the
        # fail point's two failures before the stream's next hello runs.
        async with AsyncMongoClient(
            uri,
            appname=app,
            heartbeatFrequencyMS=500,
            serverMonitoringMode="poll",
            event_listeners=[events.append],
        ):
            await wait_until(lambda: any(isinstance(e, PoolReadyEvent) for e in events))
            kinds = [type(e) for e in events]
            assert kinds.index(ServerHeartbeatSucceededEvent) < kinds.index(PoolReadyEvent)
            seen = len(events)
            with standalone.fail_point(
                {"times": 2}, failCommands=["hello", "isMaster"], errorCode=1234, appName=app
            ):
                await wait_until(
                    lambda: any(isinstance(e, PoolClearedEvent) for e in events[seen:]),
                    within=3,
                )
                later = [type(e) for e in events[seen:]]
                assert ServerHeartbeatFailedEvent in later
                cleared = later.index(PoolClearedEvent)
                await wait_until(
                    lambda: PoolReadyEvent in [type(e) for e in events[seen:]][cleared:],
                    within=3,
                )
            later = [type(e) for e in events[seen:]]
            ready = len(later) - 1 - later[::-1].index(PoolReadyEvent)
            assert ServerHeartbeatSucceededEvent in later[cleared:ready]
