"""Cursors dropped while open, end to end against asyncmongo.testing.

A cursor neither exhausted nor closed keeps, until it is killed, an implicit session the
executor holds for its getMores and, behind a load balancer, a pinned connection. When the
application drops it, its ``__del__`` hands the killCursors to the client's cursor reaper,
which sends it from a client task in the cursor's session and lets the executor forget it:
the server session goes back to the pool, the connection back to its pool. A cursor of an
explicit session is only forgotten.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import pytest_asyncio

from asyncmongo import AsyncMongoClient
from asyncmongo.bson import CodecOptions
from asyncmongo.core.operations.common import Namespace
from asyncmongo.core.operations.cursors import KillCursors
from asyncmongo.runtime.cursor_reaper import CursorReaper
from asyncmongo.runtime.executor import Executor
from asyncmongo.testing import LoadBalanced, ReplicaSet

pytestmark = pytest.mark.timeout(60)


class Commands:
    """The commands started and the replies they succeeded with, by name."""

    def __init__(self) -> None:
        self.started: list[tuple[str, dict[str, Any]]] = []
        self.replies: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, event: Any) -> None:
        kind = type(event).__name__
        if kind == "CommandStartedEvent":
            self.started.append((event.command_name, dict(event.command)))
        elif kind == "CommandSucceededEvent":
            self.replies.append((event.command_name, dict(event.reply)))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [command for started, command in self.started if started == name]

    def killed(self) -> list[int]:
        """The cursor ids the server reported killed."""
        return [
            cursor_id
            for name, reply in self.replies
            if name == "killCursors"
            for cursor_id in reply.get("cursorsKilled", [])
        ]


@pytest_asyncio.fixture
async def rs() -> AsyncIterator[ReplicaSet]:
    async with ReplicaSet(members=1) as deployment:
        yield deployment


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def _in_use(client: AsyncMongoClient) -> int:
    topology = client._topology_runtime
    return sum(
        server.pool.statistics().in_use
        for server in (topology.server(a) for a in topology.description.servers)
        if server is not None
    )


@asynccontextmanager
async def _seeded(
    uri: str, commands: Commands | None = None
) -> AsyncIterator[tuple[AsyncMongoClient, Executor]]:
    """A client (listened to by ``commands``) over db.c holding _id 0..9, and its executor."""
    async with AsyncMongoClient(uri, event_listeners=[commands] if commands else []) as client:
        await client.db.c.insert_many([{"_id": i} for i in range(10)])
        executor = client._executor
        assert executor is not None
        yield client, executor


async def _open_cursor(client: AsyncMongoClient, **options: Any) -> int:
    """Read the first document of a cursor that stays open, drop the cursor; its id."""
    cursor = client.db.c.find({}, batch_size=2, **options)
    assert await cursor.next() == {"_id": 0}
    cursor_id = cursor.cursor_id
    assert cursor.alive and cursor_id
    return cursor_id


async def test_a_dropped_cursor_is_killed_in_its_session_and_the_session_pooled(
    rs: ReplicaSet,
) -> None:
    commands = Commands()
    async with _seeded(rs.uri, commands) as (client, executor):
        pooled = len(client._server_sessions)
        cursor_id = await _open_cursor(client)  # returns: the cursor is dropped
        await _until(lambda: commands.killed() == [cursor_id], "the server killed it")
        (find,) = commands.named("find")
        (kill,) = commands.named("killCursors")
        assert kill["lsid"] == find["lsid"]  # in the cursor's own session
        await _until(lambda: not executor.cursor_sessions, "the cursor forgotten")
        assert len(client._server_sessions) == pooled  # the server session is back
        assert await client.db.c.find_one({"_id": 5}) == {"_id": 5}
        assert commands.named("find")[-1]["lsid"] == find["lsid"]  # and reused (LIFO)


async def test_many_dropped_cursors_leave_nothing_behind(rs: ReplicaSet) -> None:
    commands = Commands()
    async with _seeded(rs.uri, commands) as (client, executor):
        opened = [await _open_cursor(client) for _ in range(50)]
        await _until(lambda: len(commands.killed()) == 50, "every cursor killed")
        assert sorted(commands.killed()) == sorted(opened)
        await _until(lambda: not executor.cursor_sessions, "every cursor forgotten")


async def test_an_explicit_sessions_cursor_is_forgotten_not_killed(rs: ReplicaSet) -> None:
    commands = Commands()
    async with _seeded(rs.uri, commands) as (client, executor):
        async with client.start_session() as session:
            await _open_cursor(client, session=session)
            await _until(lambda: not executor.cursor_sessions, "the cursor forgotten")
            await asyncio.sleep(0.05)
            assert commands.named("killCursors") == []  # the session is the application's
            assert await client.db.c.find_one({"_id": 3}, session=session) == {"_id": 3}


async def test_a_dropped_load_balanced_cursor_gives_its_connection_back() -> None:
    async with LoadBalanced() as lb, _seeded(lb.uri) as (client, executor):
        await _open_cursor(client)
        await _until(lambda: not executor.cursor_pins, "the pinned connection released")
        assert _in_use(client) == 0


async def test_a_cursor_dropped_after_its_client_closed_is_left_alone(rs: ReplicaSet) -> None:
    async with _seeded(rs.uri) as (client, _):
        cursor = client.db.c.find({}, batch_size=2)
        await cursor.next()
    del cursor  # no client runtime to hand it to, and nothing raised


async def test_a_cursor_dropped_on_another_thread_is_killed_on_the_clients_loop(
    rs: ReplicaSet,
) -> None:
    commands = Commands()
    async with _seeded(rs.uri, commands) as (client, _):
        runtime = client._runtime
        assert runtime is not None
        cursor = client.db.c.find({}, batch_size=2)
        await cursor.next()
        cursor_id, address = cursor.cursor_id, cursor.address
        assert cursor_id and address is not None
        kill = KillCursors(cursor_id, Namespace("db", "c"), address, CodecOptions())
        await asyncio.to_thread(runtime.reaper.drop, kill)  # as a collection there would
        await _until(lambda: commands.killed() == [cursor_id], "the server killed it")
        await cursor.close()  # a second killCursors finds nothing to kill, and that is fine


def test_a_cursor_dropped_once_the_loop_is_closed_is_left_to_the_server() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    spawned: list[Any] = []
    executor: Any = object()  # never reached
    reaper = CursorReaper(executor, lambda coro, name: spawned.append(coro), loop, None)
    kill = KillCursors(7, Namespace("db", "c"), ("h", 1), CodecOptions())
    reaper.drop(kill)  # not on the loop's thread, and the loop cannot take a callback
    reaper.drop(kill)
    assert spawned == [] and repr(reaper) == "<CursorReaper idle, 0 queued>"
