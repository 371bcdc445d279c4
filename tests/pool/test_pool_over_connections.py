"""The pool over real ``Connection``s to a scripted loopback server (end to end, no mongod)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from asyncmongo.core.cmap.events import ConnectionClosedEvent, ConnectionClosedReason, PoolEvent
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.errors import AutoReconnect
from asyncmongo.runtime.connection import Connection, ConnectionSettings, connect
from asyncmongo.runtime.pool import Pool, PoolConnection
from tests.support.scripted_server import Peer, Request, ScriptedServer, default_handler


def as_pool_connection(conn: Connection) -> PoolConnection:
    """Static proof (mypy): a real Connection is what the pool needs."""
    return conn


def make_pool(server: ScriptedServer, **options: Any) -> tuple[Pool[Connection], list[PoolEvent]]:
    events: list[PoolEvent] = []
    settings = ConnectionSettings(connect_timeout=5.0)

    async def establish(connection_id: int) -> Connection:
        return await connect(server.address, settings, id=connection_id)

    pool = Pool(server.address, PoolOptions(**options), establish, listener=events.append)
    pool.ready()
    return pool, events


async def test_many_tasks_share_few_sockets() -> None:
    async with ScriptedServer() as server:
        pool, _ = make_pool(server, max_pool_size=4)

        async def ping() -> None:
            async with pool.checkout() as conn:
                reply = await conn.command("admin", {"ping": 1})
                assert reply["ok"] == 1.0

        await asyncio.gather(*(ping() for _ in range(200)))
        stats = pool.statistics()
        assert stats.total <= 4 and stats.in_use == 0
        assert len(server.peers) == stats.total
        await pool.close()


async def test_cancelled_operation_discards_its_connection() -> None:
    started = asyncio.Event()

    async def slow_ping(request: Request, peer: Peer) -> None:
        if request.name == "ping":
            started.set()
            await asyncio.sleep(10)
        await default_handler(request, peer)

    async with ScriptedServer(slow_ping) as server:
        pool, events = make_pool(server)

        async def ping() -> None:
            async with pool.checkout() as conn:
                await conn.command("admin", {"ping": 1})

        task = asyncio.create_task(ping())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert pool.statistics().total == 0
        closed = [e for e in events if isinstance(e, ConnectionClosedEvent)]
        assert [e.reason for e in closed] == [ConnectionClosedReason.ERROR]
        await pool.close()


async def test_a_connection_the_server_drops_is_not_reused() -> None:
    async def abort_ping(request: Request, peer: Peer) -> None:
        if request.name == "ping":
            peer.abort()
            return
        await default_handler(request, peer)

    async with ScriptedServer(abort_ping) as server:
        pool, events = make_pool(server)
        with pytest.raises(AutoReconnect):
            async with pool.checkout() as conn:
                await conn.command("admin", {"ping": 1})
        assert conn.is_closed
        assert pool.statistics().total == 0
        closed = [e for e in events if isinstance(e, ConnectionClosedEvent)]
        assert [e.reason for e in closed] == [ConnectionClosedReason.ERROR]
        await pool.close()
