"""Random replies over a real socket: whatever the peer sends, a command ends in
ProtocolError / AutoReconnect / NetworkTimeout (or a reply), and a failed connection is closed."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.errors import AutoReconnect, ProtocolError
from asyncmongo.runtime.connection import ConnectionSettings, connect
from tests.support.scripted_server import Peer, Request, ScriptedServer, op_msg

SETTINGS = ConnectionSettings(host=HostInfo("Linux"), socket_timeout=0.2)


async def exchange(chunks: list[bytes], prefix_valid_header: bool) -> None:
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
        conn = await connect(server.address, SETTINGS, id=1)
        try:
            await conn.command("db", {"fuzz": 1})
        except (ProtocolError, AutoReconnect):
            assert conn.is_closed
        finally:
            conn.close()


@given(st.lists(st.binary(max_size=64), max_size=6), st.booleans())
@settings(max_examples=40, deadline=None)
def test_random_replies(chunks: list[bytes], prefix_valid_header: bool) -> None:
    asyncio.run(exchange(chunks, prefix_valid_header))
