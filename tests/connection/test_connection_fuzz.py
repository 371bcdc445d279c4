"""Random replies over a real socket: whatever the peer sends, a command ends in
ProtocolError / AutoReconnect / NetworkTimeout (or a reply), and a failed connection is closed.

With socketTimeoutMS the read goes through the general (guarded) path; without it through
the command fast path (the peer always closes, so the read ends either way)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.errors import AutoReconnect, ProtocolError
from asyncmongo.runtime.connection import ConnectionSettings, connect
from tests.support.scripted_server import Peer, Request, ScriptedServer, op_msg

SETTINGS = ConnectionSettings(host=HostInfo("Linux"), socket_timeout=0.2)
FAST_PATH_SETTINGS = ConnectionSettings(host=HostInfo("Linux"))


async def exchange(
    chunks: list[bytes], prefix_valid_header: bool, settings: ConnectionSettings = SETTINGS
) -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name != "fuzz":
            return await peer.default(request)
        if prefix_valid_header:
            peer.send_raw(op_msg({"ok": 1}, request.request_id)[:16])
        for chunk in chunks:
            peer.send_raw(chunk)
            await asyncio.sleep(0)
        peer.abort()

    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, settings, id=1)
        try:
            async with asyncio.timeout(5):  # a hang is a failure, not a timeout
                await conn.command("db", {"fuzz": 1})
        except (ProtocolError, AutoReconnect):
            assert conn.is_closed
        finally:
            conn.close()


@given(st.lists(st.binary(max_size=64), max_size=6), st.booleans())
@settings(max_examples=40, deadline=None)
def test_random_replies(chunks: list[bytes], prefix_valid_header: bool) -> None:
    asyncio.run(exchange(chunks, prefix_valid_header))


@given(st.lists(st.binary(max_size=64), max_size=6), st.booleans())
@settings(max_examples=40, deadline=None)
def test_random_replies_on_the_fast_path(chunks: list[bytes], prefix_valid_header: bool) -> None:
    asyncio.run(exchange(chunks, prefix_valid_header, FAST_PATH_SETTINGS))


@given(st.binary(min_size=1, max_size=40), st.integers(0, 60), st.integers(0, 255))
@settings(max_examples=60, deadline=None)
def test_corrupted_plain_replies_on_the_fast_path(payload: bytes, at: int, value: int) -> None:
    """A whole reply in one chunk with one byte changed (header, flags, kind, sizes, body)."""

    async def run() -> None:
        async def handler(request: Request, peer: Peer) -> None:
            if request.name != "fuzz":
                return await peer.default(request)
            message = bytearray(op_msg({"ok": 1, "p": payload}, request.request_id))
            if at < len(message):
                message[at] = value
            peer.send_raw(bytes(message))
            await asyncio.sleep(0.01)
            peer.abort()

        async with ScriptedServer(handler) as server:
            conn = await connect(server.address, FAST_PATH_SETTINGS, id=1)
            try:
                async with asyncio.timeout(5):
                    reply = await conn.command("db", {"fuzz": 1})
                assert isinstance(reply, dict)  # a changed key or value can still be BSON
            except (ProtocolError, AutoReconnect):
                assert conn.is_closed
            finally:
                conn.close()

    asyncio.run(run())
