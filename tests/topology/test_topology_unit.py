"""Topology without a network: servers follow the description (SRV updates add and close
them), events and log messages, stale application errors ignored, the selection timeout."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from asyncmongo.core.address import Address
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.core.error_policy import ApplicationError, ErrorKind, ErrorPhase
from asyncmongo.core.sdam import ServerDescription, TopologySettings, TopologyType
from asyncmongo.core.sdam.events import (
    ServerClosedEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)
from asyncmongo.core.selection import Selection
from asyncmongo.errors import AutoReconnect, ServerSelectionTimeoutError
from asyncmongo.monitoring import Listeners
from asyncmongo.runtime.connection import Connection
from asyncmongo.runtime.pool import Pool
from asyncmongo.runtime.server import Server
from asyncmongo.runtime.tasks import TaskSet
from asyncmongo.runtime.topology import Topology

A: Address = ("a", 27017)
B: Address = ("b", 27017)
C: Address = ("c", 27017)


async def _never(connection_id: int) -> Connection:
    raise AutoReconnect("no network in these tests")


def make_topology(
    settings: TopologySettings, events: list[Any] | None = None
) -> tuple[Topology, TaskSet, list[Server]]:
    tasks = TaskSet(asyncio.get_running_loop())
    made: list[Server] = []

    def factory(address: Address, topology: Topology) -> Server:
        pool: Pool[Connection] = Pool(address, PoolOptions(), _never, maintenance_interval=None)
        server = Server(address, pool, None)
        made.append(server)
        return server

    listeners = Listeners([events.append] if events is not None else [])
    return Topology(settings, factory, tasks.spawn, listeners=listeners), tasks, made


def mongos(address: Address) -> ServerDescription:
    reply = {"ok": 1, "msg": "isdbgrid", "maxWireVersion": 21, "minWireVersion": 0}
    return ServerDescription.from_hello(address, reply, None, 0.0)


async def test_open_and_close_publish_the_spec_events_in_order() -> None:
    events: list[Any] = []
    topology, tasks, _ = make_topology(TopologySettings(seeds=(A, B)), events)
    topology.open()
    assert [type(e) for e in events] == [
        TopologyOpeningEvent,
        TopologyDescriptionChangedEvent,
        ServerOpeningEvent,
        ServerOpeningEvent,
    ]
    events.clear()
    await topology.close()
    await tasks.close()
    kinds = [type(e) for e in events]
    assert kinds[-1] is TopologyClosedEvent
    assert kinds.count(ServerClosedEvent) == 2


async def test_srv_hosts_add_and_close_servers() -> None:
    topology, tasks, made = make_topology(TopologySettings(seeds=(A, B)))
    topology.open()
    await topology.on_check_succeeded(made[0], mongos(A))
    assert topology.description.topology_type is TopologyType.SHARDED
    await topology.apply_srv_hosts([B, C])
    assert set(topology.servers) == {B, C}
    removed = made[0]
    await asyncio.sleep(0.01)  # the removed server closes in its own task
    assert removed.pool.statistics().state.value == "closed"
    assert len(tasks) == 0
    await topology.close()
    await tasks.close()


async def test_stale_application_errors_change_nothing() -> None:
    topology, tasks, made = make_topology(TopologySettings(seeds=(A,), direct_connection=True))
    topology.open()
    server = made[0]
    await topology.on_check_succeeded(server, mongos(A))
    server.pool.clear()  # generation 1: connections of generation 0 are stale
    version = topology.version
    stale = ApplicationError(ErrorKind.NETWORK, ErrorPhase.ESTABLISHED, generation=0)
    await topology.handle_error(A, stale)
    assert topology.version == version
    assert topology.description.servers[A].is_known
    fresh = ApplicationError(ErrorKind.NETWORK, ErrorPhase.ESTABLISHED, generation=1)
    await topology.handle_error(A, fresh)
    assert not topology.description.servers[A].is_known
    assert server.pool.generation == 2
    await topology.close()
    await tasks.close()


async def test_selection_times_out_with_the_reason_and_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = TopologySettings(seeds=(A,), server_selection_timeout_ms=50)
    topology, tasks, _ = make_topology(settings)
    caplog.set_level(logging.DEBUG, logger="asyncmongo")
    topology.open()
    with pytest.raises(ServerSelectionTimeoutError) as raised:
        await topology.select_server(Selection.write(), operation="insert")
    assert "every server is Unknown" in str(raised.value)
    messages = [
        r.msg.fields["message"]  # type: ignore[union-attr]
        for r in caplog.records
        if r.name == "asyncmongo.serverSelection"
    ]
    assert messages == [
        "Server selection started",
        "Waiting for suitable server to become available",
        "Server selection failed",
    ]
    waiting = [r for r in caplog.records if "Waiting" in str(r.msg)]
    assert waiting[0].levelno == logging.INFO
    assert waiting[0].msg.fields["operation"] == "insert"  # type: ignore[union-attr]
    sdam = [str(r.msg) for r in caplog.records if r.name == "asyncmongo.topology"]
    assert any(m.startswith("Starting monitoring for topology") for m in sdam)
    await topology.close()
    await tasks.close()


async def test_selection_success_is_logged_with_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    topology, tasks, made = make_topology(TopologySettings(seeds=(A,)))
    caplog.set_level(logging.DEBUG, logger="asyncmongo.serverSelection")
    topology.open()
    await topology.on_check_succeeded(made[0], mongos(A))
    server = await topology.select_server(Selection.write(), operation="insert", operation_id=7)
    assert server is made[0]
    (succeeded,) = [r for r in caplog.records if "succeeded" in str(r.msg)]
    fields = succeeded.msg.fields  # type: ignore[union-attr]
    assert fields["serverHost"] == "a" and fields["serverPort"] == 27017
    assert fields["operationId"] == 7 and "with ID 7" in str(succeeded.msg)
    await topology.close()
    await tasks.close()


async def test_heartbeat_log_messages_carry_the_connection_ids(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tests.topology.sim import ReplicaSet as ScriptedReplicaSet

    caplog.set_level(logging.DEBUG, logger="asyncmongo.topology")
    async with ScriptedReplicaSet(1, streaming=False) as rs:
        from asyncmongo.client import AsyncMongoClient

        async with AsyncMongoClient(rs.seed) as client:
            await client.admin_command({"ping": 1})
    beats = [
        r.msg.fields  # type: ignore[union-attr]
        for r in caplog.records
        if "heartbeat succeeded" in str(r.msg).lower()
    ]
    assert beats
    assert isinstance(beats[0]["driverConnectionId"], int)
    assert beats[0]["serverConnectionId"] == 1  # the scripted server's connectionId
    assert beats[0]["awaited"] is False and beats[0]["durationMS"] >= 0
    assert '"ok"' in beats[0]["reply"]
