"""Load-balanced mode on asyncmongo.testing's LoadBalanced (load balancers spec): per-service
pool generations in the SDAM staleness check, cursors pinned to their connection through a
getMore network error, the wait queue timeout's accounting of pinned connections, and errors
that cannot be tied to a service clearing nothing."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.core.cmap.events import (
    ConnectionCheckedInEvent,
    ConnectionClosedEvent,
    ConnectionClosedReason,
    PoolClearedEvent,
)
from asyncmongo.errors import (
    AutoReconnect,
    NotPrimaryError,
    OperationFailure,
    WaitQueueTimeoutError,
)
from asyncmongo.runtime.pool import Pinned, Pool
from asyncmongo.testing import LoadBalanced

pytestmark = pytest.mark.timeout(30)


class Events:
    """Every event the client publishes, with the command names of the started ones."""

    def __init__(self) -> None:
        self.all: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.all.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.all if isinstance(e, kind)]

    def started(self) -> list[str]:
        return [e.command_name for e in self.all if type(e).__name__ == "CommandStartedEvent"]


def _pool(client: AsyncMongoClient) -> Pool[Any]:
    topology = client._topology_runtime
    (address,) = topology.description.servers
    server = topology.server(address)
    assert server is not None
    return server.pool


async def _seed(client: AsyncMongoClient, count: int = 6) -> None:
    await client.db.c.insert_many([{"_id": i} for i in range(count)])


async def test_a_getmore_network_error_keeps_the_connection_pinned_until_close() -> None:
    async with LoadBalanced() as lb:
        events = Events()
        async with AsyncMongoClient(lb.uri, event_listeners=[events]) as client:
            await _seed(client)
            cursor = client.db.c.find({}, batch_size=2)
            assert await cursor.next() == {"_id": 0}
            pool = _pool(client)
            assert pool.pinned_counts()[Pinned.CURSOR] == 1
            events.all.clear()
            with lb.server.fail_point({"times": 1}, failCommands=["getMore"], closeConnection=True):
                await cursor.next()
                with pytest.raises(AutoReconnect):
                    await cursor.next()
            assert pool.statistics().in_use == 1  # still pinned to the cursor
            await cursor.close()
            assert pool.statistics().in_use == 0
            assert pool.pinned_counts()[Pinned.CURSOR] == 0
            assert "killCursors" not in events.started()  # the connection is no longer valid
            closed = events.of(ConnectionClosedEvent)
            assert [e.reason for e in closed] == [ConnectionClosedReason.ERROR]
            assert len(events.of(ConnectionCheckedInEvent)) == 1


async def test_an_older_connection_of_a_service_is_stale_after_its_clear() -> None:
    async with LoadBalanced() as lb:
        events = Events()
        async with AsyncMongoClient(lb.uri, event_listeners=[events]) as client:
            await _seed(client)
            first = client.db.c.find({}, batch_size=2)
            second = client.db.c.find({}, batch_size=2)
            await first.next()
            await second.next()  # two connections, both generation 0 of the one service
            pool = _pool(client)
            events.all.clear()
            with lb.server.fail_point({"times": 2}, failCommands=["getMore"], closeConnection=True):
                for cursor in (first, second):
                    await cursor.next()
                    with pytest.raises(AutoReconnect):
                        await cursor.next()
            cleared = events.of(PoolClearedEvent)
            assert len(cleared) == 1  # the second error came from a generation-0 connection
            assert cleared[0].service_id is not None
            assert pool.generation_for(cleared[0].service_id) == 1
            for cursor in (first, second):
                await cursor.close()
            assert pool.statistics().in_use == 0


async def test_a_shutdown_error_clears_only_its_service() -> None:
    async with LoadBalanced(services=2) as lb:
        events = Events()
        async with AsyncMongoClient(lb.uri, event_listeners=[events], retryWrites=False) as client:
            await _seed(client)
            cursors = [client.db.c.find({}, batch_size=2) for _ in range(2)]
            for cursor in cursors:
                await cursor.next()  # round robin: one connection per service
            services = {e.service_id for e in events.all if hasattr(e, "service_id")} - {None}
            assert len(services) == 2
            for cursor in cursors:
                await cursor.close()
            pool = _pool(client)
            assert pool.statistics().idle == 2
            events.all.clear()
            with lb.server.fail_point({"times": 1}, failCommands=["insert"], errorCode=11600):
                with pytest.raises(NotPrimaryError):
                    await client.db.c.insert_one({"x": 1})
            (cleared,) = events.of(PoolClearedEvent)
            assert cleared.service_id in services
            closed = events.of(ConnectionClosedEvent)
            assert len(closed) == 1  # the other service's idle connection survives
            assert pool.statistics().idle == 1
            await client.db.c.insert_one({"x": 2})


async def test_an_error_in_the_initial_hello_clears_nothing() -> None:
    async with LoadBalanced() as lb:
        events = Events()
        async with AsyncMongoClient(lb.uri, event_listeners=[events], appname="lbHello") as client:
            with lb.server.fail_point(
                {"times": 1}, failCommands=["hello", "isMaster"], errorCode=11600, appName="lbHello"
            ):
                with pytest.raises(OperationFailure) as raised:
                    await client.db.command("ping")
                assert raised.value.code == 11600
            assert events.of(PoolClearedEvent) == []  # no serviceId is known yet
            assert (await client.db.command("ping"))["ok"] == 1


async def test_the_wait_queue_timeout_counts_pinned_connections() -> None:
    async with LoadBalanced() as lb:
        async with AsyncMongoClient(lb.uri, maxPoolSize=2, waitQueueTimeoutMS=50) as client:
            await _seed(client)
            cursor = client.db.c.find({}, batch_size=2)
            await cursor.next()
            async with client.start_session() as session:
                session.start_transaction()
                await client.db.c.insert_one({"_id": 100}, session=session)
                with pytest.raises(WaitQueueTimeoutError) as raised:
                    await client.db.c.find_one({})
                assert (
                    "maxPoolSize: 2, connections in use by cursors: 1, connections in use by "
                    "transactions: 1, connections in use by other operations: 0"
                ) in str(raised.value)
                await session.abort_transaction()
            await cursor.close()
            assert _pool(client).pinned_counts() == {Pinned.CURSOR: 0, Pinned.TRANSACTION: 0}
