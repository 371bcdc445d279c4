"""Cancellation at every await of connection.py: the connection ends up reusable (its reply
drained) or closed, never half-read, and connect() leaves nothing open."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.errors import NetworkTimeout
from asyncmongo.runtime.connection import Connection, ConnectionSettings, connect
from asyncmongo.runtime.network import TlsSettings
from tests.support.scripted_server import Peer, Request, ScriptedServer

pytestmark = pytest.mark.timeout(10)

SETTINGS = ConnectionSettings(host=HostInfo("Linux"), connect_timeout=5.0)


async def slow_handler(request: Request, peer: Peer) -> None:
    if request.name == "slow":
        await asyncio.sleep(float(request.command["slow"]))
        await peer.reply(request, {"ok": 1, "was": "slow"})
    elif request.name == "stream":
        rid = await peer.reply(request, {"ok": 1, "n": 0}, flags=2)
        await asyncio.sleep(0.05)
        await peer.reply(request, {"ok": 1, "n": 1}, flags=2, response_to=rid)
    elif request.name == "hang":
        await asyncio.sleep(10)
    else:
        await peer.default(request)


async def cancel_soon(coro: Any, delay: float = 0.02) -> None:
    task = asyncio.ensure_future(coro)
    await asyncio.sleep(delay)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelled_read_drains_and_stays_reusable() -> None:
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        await cancel_soon(conn.command("db", {"slow": 0.1}))
        assert not conn.is_closed and "draining" in repr(conn)
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}  # slow's reply was dropped
        assert "draining" not in repr(conn)
        conn.close()


async def test_drain_that_never_ends_times_out_and_closes() -> None:
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        await cancel_soon(conn.command("db", {"hang": 1}))
        deadline = asyncio.get_running_loop().time() + 0.05
        with pytest.raises(NetworkTimeout):
            await conn.command("db", {"ping": 1}, deadline=deadline)
        assert conn.is_closed


async def test_cancelled_while_waiting_for_drain() -> None:
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        await cancel_soon(conn.command("db", {"slow": 0.15}))
        await cancel_soon(conn.command("db", {"ping": 1}))  # cancelled inside wait_drained
        assert not conn.is_closed and "draining" in repr(conn)
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_cancelled_exhaust_read_closes() -> None:
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        first = await conn.command("db", {"stream": 1}, exhaust_allowed=True)
        assert first["n"] == 0 and conn.more_to_come
        await cancel_soon(conn.read_more_to_come(), delay=0.01)
        assert conn.is_closed


async def test_cancelled_exhaust_allowed_request_closes() -> None:
    # the server may answer with an endless moreToCome stream: draining is no option
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        await cancel_soon(conn.command("db", {"slow": 0.1}, exhaust_allowed=True))
        assert conn.is_closed


async def test_cancelled_while_write_paused() -> None:
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        conn._transport.set_write_buffer_limits(high=1024)
        await conn.command("db", {"ping": 1})
        # the server is busy with an unacknowledged "hang" and reads nothing more: the 8 MB
        # request fills every buffer, the transport pauses writing and the command waits in
        # wait_writable()
        await conn.command("db", {"hang": 1}, unacknowledged=True)
        task = asyncio.ensure_future(conn.command("db", {"echo": "x" * 8_000_000}))
        await asyncio.sleep(0.05)
        assert conn._protocol._paused is not None  # really waiting for the write buffer
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not conn.is_closed and "draining" in repr(conn)
        conn.close()


async def test_cancelled_handshake_leaves_nothing_open() -> None:
    async with ScriptedServer(slow_handler, hello_extra={}) as server:

        async def silent_hello(request: Request, peer: Peer) -> None:
            await asyncio.sleep(10)

        server.handler = silent_hello
        await cancel_soon(connect(server.address, SETTINGS, id=1))
        await asyncio.sleep(0.02)
        assert all(p.writer.transport.is_closing() or p.reader.at_eof() for p in server.peers)


async def test_cancelled_tls_connect() -> None:
    # a plain TCP server that never speaks TLS: the client's TLS handshake is still pending
    # inside open_transport() when it is cancelled
    writers: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda r, w: writers.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    settings = ConnectionSettings(host=HostInfo("Linux"), tls=TlsSettings(enabled=True))
    try:
        await cancel_soon(connect(("127.0.0.1", port), settings, id=1), delay=0.05)
        assert writers  # the TCP connection was made, TLS was under way
    finally:
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()


class SlowAuthenticator:
    sasl_supported_mechs = None

    def __init__(self) -> None:
        self.conn: Connection | None = None

    def speculative_document(self) -> Mapping[str, Any] | None:
        return None

    async def authenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None:
        self.conn = conn
        await conn.command("admin", {"hang": 1}, deadline=deadline)


async def test_cancelled_authentication_closes() -> None:
    auth = SlowAuthenticator()
    async with ScriptedServer(slow_handler) as server:
        await cancel_soon(connect(server.address, SETTINGS, id=1, authenticator=auth))
        assert auth.conn is not None and auth.conn.is_closed


async def test_cancelled_aclose_still_closes() -> None:
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        task = asyncio.ensure_future(conn.aclose())
        await asyncio.sleep(0)  # aclose has aborted the transport and yields
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert conn.is_closed


async def test_cancelled_timed_read_drains_and_stays_reusable() -> None:
    """CSOT's timed read (one timer on the reply's waiter): a cancellation still drains."""
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        deadline = asyncio.get_running_loop().time() + 5
        await cancel_soon(conn.command("db", {"slow": 0.1}, deadline=deadline, csot=True))
        assert not conn.is_closed and "draining" in repr(conn)
        assert await conn.command("db", {"ping": 1}, deadline=deadline, csot=True) == {"ok": 1.0}
        conn.close()


async def test_timed_read_past_its_deadline_closes_and_names_the_budget() -> None:
    async with ScriptedServer(slow_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        deadline = asyncio.get_running_loop().time() + 0.05
        with pytest.raises(NetworkTimeout, match=r"during read \(timeoutMS ran out"):
            await conn.command("db", {"slow": 0.5}, deadline=deadline, csot=True)
        assert conn.is_closed  # the reply may still come: never read it as the next one's
