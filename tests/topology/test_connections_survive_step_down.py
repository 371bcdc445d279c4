"""The connections-survive-step-down prose tests (spec_tests/data/connections-survive-step-down/
README.md) against a simulated 3-member replica set.

The README checks pool clearing with CMAP events when the driver implements CMAP: a
PoolClearedEvent for the primary's pool, and (stricter than the README, as it can be here) the
ConnectionCreatedEvents that say whether the follow-up operation reused the pool's connection.
The admin commands (replSetFreeze, replSetStepDown) go through a separate direct client, as the
README advises for serverStatus, so the client under test sees only the test's own traffic.

The fail point tests run with both monitoring modes: a streaming member stamps a not-primary
error with its current topologyVersion (mongod 4.4+ does too), which SDAM ignores as stale;
a polling member's error is not stale and marks the primary Unknown. Either way a 10107 on a
4.2+ server must leave the pool alone, and a 91/11600 ("node is shutting down", never stamped
outside quiesce mode) must clear it.

heartbeatFrequencyMS is 500 (the README leaves it to the driver): a fail point's 91 changes
nothing on the member, so a streaming monitor, whose check is in progress (SDAM: the requested
immediate check waits for it), rediscovers the primary only when its awaitable hello's
maxAwaitTimeMS (= heartbeatFrequencyMS) runs out; with the default 10 s each such test would
wait 10 s for the follow-up insert. A real shutdown moves topologyVersion or closes the
monitoring connection, so a real deployment is rediscovered sooner.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient, CommandStartedEvent, WriteConcern
from asyncmongo.collection import AsyncCollection
from asyncmongo.core.address import Address
from asyncmongo.core.cmap.events import ConnectionCreatedEvent, PoolClearedEvent
from asyncmongo.core.sdam import ServerType
from asyncmongo.errors import NotPrimaryError
from asyncmongo.testing import ReplicaSet, SimServer
from tests.topology.support import address, unknown_marks, wait_until

NAME = "step-down"
MAJORITY = WriteConcern(w="majority")
MONITORING = pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "polling"])


def pool_cleared(events: list[Any]) -> list[PoolClearedEvent]:
    """Every PoolClearedEvent, whichever server's pool."""
    return [e for e in events if isinstance(e, PoolClearedEvent)]


def connections_created(events: list[Any], where: Address) -> list[ConnectionCreatedEvent]:
    return [e for e in events if isinstance(e, ConnectionCreatedEvent) and e.address == where]


def started(events: list[Any], name: str) -> list[CommandStartedEvent]:
    return [e for e in events if isinstance(e, CommandStartedEvent) and e.command_name == name]


async def admin(member: SimServer, command: dict[str, Any]) -> dict[str, Any]:
    """``command`` on ``member``'s admin database, from a client not under test."""
    uri = f"mongodb://{member.host}/?directConnection=true"
    async with AsyncMongoClient(uri) as client:
        return await client.admin_command(command)


@asynccontextmanager
async def step_down_setup(
    *, streaming: bool = True
) -> AsyncIterator[tuple[ReplicaSet, AsyncCollection, list[Any]]]:
    """The README's test setup: a client with retryWrites=false, the ``step-down`` collection
    of the ``step-down`` database dropped and created again with writeConcern majority.
    Yields the set, the collection (majority write concern) and the client's events."""
    events: list[Any] = []
    async with ReplicaSet(3, streaming=streaming) as rs:
        async with AsyncMongoClient(
            rs.uri, retryWrites=False, heartbeatFrequencyMS=500, event_listeners=[events.append]
        ) as client:
            database = client.get_database(NAME, write_concern=MAJORITY)
            await database.drop_collection(NAME)
            collection = await database.create_collection(NAME)
            for name in ("drop", "create"):
                (setup,) = started(events, name)
                assert setup.command["writeConcern"] == {"w": "majority"}
            yield rs, collection, events


@MONITORING
async def test_get_more_iteration_survives_a_step_down(streaming: bool) -> None:
    async with step_down_setup(streaming=streaming) as (rs, collection, events):
        await collection.insert_many([{"_id": i} for i in range(5)])
        cursor = collection.find({}, batch_size=2)
        first_batch = [await cursor.next(), await cursor.next()]
        assert not started(events, "getMore")  # the first batch came with find
        old_primary = rs.primary
        assert old_primary is not None
        where = address(old_primary.host)
        assert cursor.address == where
        created = len(connections_created(events, where))

        secondary = rs.secondaries[0]
        assert (await admin(secondary, {"replSetFreeze": 0}))["ok"] == 1.0
        reply = await admin(old_primary, {"replSetStepDown": 30, "force": True})
        assert reply["ok"] == 1.0
        assert rs.primary is not None and rs.primary is not old_primary
        topology = collection.database.client._topology_runtime
        await wait_until(
            lambda: topology.description.servers[where].server_type is ServerType.RS_SECONDARY
        )

        rest = await cursor.to_list()
        assert [d["_id"] for d in first_batch + rest] == list(range(5))
        (find,) = started(events, "find")
        get_mores = started(events, "getMore")
        assert len(get_mores) == 2  # batches of 2: [2, 3] then [4] with cursor id 0
        for get_more in get_mores:  # the cursor's server, over the connection find used
            assert get_more.connection_id == find.connection_id == where
            assert get_more.driver_connection_id == find.driver_connection_id
        assert not pool_cleared(events)
        assert len(connections_created(events, where)) == created  # the same connection
        # the client goes on writing, to the new primary
        assert (await collection.insert_one({"test": 1})).acknowledged


@MONITORING
async def test_not_primary_keeps_the_connection_pool(streaming: bool) -> None:
    async with step_down_setup(streaming=streaming) as (rs, collection, events):
        primary = rs.primary
        assert primary is not None
        where = address(primary.host)
        created = len(connections_created(events, where))
        assert created >= 1
        with rs.fail_point({"times": 1}, failCommands=["insert"], errorCode=10107):
            with pytest.raises(NotPrimaryError) as failure:
                await collection.insert_one({"test": 1})
            assert isinstance(failure.value.errors, dict)
            assert failure.value.errors["code"] == 10107
            # polling: marked Unknown, then rediscovered; streaming: ignored as stale
            assert bool(unknown_marks(events, where)) is not streaming
            assert (await collection.insert_one({"test": 1})).acknowledged
        assert not pool_cleared(events)
        assert len(connections_created(events, where)) == created  # the pool's connection


@MONITORING
@pytest.mark.parametrize(
    "code", [91, 11600], ids=["shutdown-in-progress", "interrupted-at-shutdown"]
)
async def test_shutdown_errors_reset_the_connection_pool(streaming: bool, code: int) -> None:
    async with step_down_setup(streaming=streaming) as (rs, collection, events):
        primary = rs.primary
        assert primary is not None
        where = address(primary.host)
        created = len(connections_created(events, where))
        with rs.fail_point({"times": 1}, failCommands=["insert"], errorCode=code):
            with pytest.raises(NotPrimaryError) as failure:
                await collection.insert_one({"test": 1})
            assert isinstance(failure.value.errors, dict)
            assert failure.value.errors["code"] == code
            assert [e.address for e in pool_cleared(events)] == [where]
            (marked,) = unknown_marks(events, where)
            assert str(code) in (marked.new_description.error or "")
            assert (await collection.insert_one({"test": 1})).acknowledged
        # the cleared pool's connection was not reused: exactly one new one
        assert len(connections_created(events, where)) == created + 1
