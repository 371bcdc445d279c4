"""A connection reads at most READ_SIZE bytes per read on asyncio's loop (runtime/network.py
says why: asyncio's 256 KiB reads cost an mmap/munmap pair per reply), and replies larger
than that still arrive whole, on both loops."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.runtime.connection import ConnectionSettings, connect
from asyncmongo.runtime.network import READ_SIZE, TlsSettings
from tests.support import certs
from tests.support.scripted_server import Peer, Request, ScriptedServer

pytestmark = pytest.mark.timeout(20)

SETTINGS = ConnectionSettings(host=HostInfo("Linux"), connect_timeout=5.0)


async def handler(request: Request, peer: Peer) -> None:
    if request.name == "big":
        size = request.command["big"]
        await peer.reply(request, {"ok": 1.0, "data": b"\x07" * size})
    else:
        await peer.default(request)


async def test_reads_are_limited_on_asyncio_loops() -> None:
    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        try:
            transport = conn._protocol.transport
            assert transport is not None
            if isinstance(getattr(type(transport), "max_size", None), int):
                # asyncio's selector transport: its class asks for 256 KiB per read
                assert type(transport).max_size > READ_SIZE  # type: ignore[attr-defined]
                assert transport.max_size == READ_SIZE  # type: ignore[attr-defined]
            else:  # uvloop reads into its own buffer: nothing to change
                assert not hasattr(transport, "max_size")
        finally:
            conn.close()


@pytest.mark.parametrize("size", [READ_SIZE - 100, READ_SIZE * 3 + 17, 5 * 1024 * 1024])
async def test_replies_larger_than_one_read_arrive_whole(size: int) -> None:
    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        try:
            for _ in range(2):  # and the connection is usable after each
                reply = await conn.command("db", {"big": size})
                assert reply["data"] == b"\x07" * size
            assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        finally:
            conn.close()



async def test_tls_reads_are_limited_and_large_replies_arrive_whole(tmp_path: Path) -> None:
    files = certs.generate(tmp_path)
    tls = TlsSettings(enabled=True, ca_file=str(files.ca))
    settings = ConnectionSettings(host=HostInfo("Linux"), tls=tls, connect_timeout=5.0)
    async with ScriptedServer(handler, ssl_context=files.server_context()) as server:
        conn = await connect(server.address, settings, id=1)
        try:
            ssl_protocol = getattr(conn._protocol.transport, "_ssl_protocol", None)
            if isinstance(getattr(type(ssl_protocol), "max_size", None), int):
                # asyncio's SSL protocol reads the decrypted bytes 256 KiB at a time
                assert ssl_protocol.max_size == READ_SIZE
            size = READ_SIZE * 3 + 17
            assert (await conn.command("db", {"big": size}))["data"] == b"\x07" * size
        finally:
            conn.close()
