"""The connection against asyncmongo.testing's simulated mongod: compression, document
sequences, streaming hello (exhaust), fail points that close or block the connection."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from asyncmongo.bson.codec import encode
from asyncmongo.core.wire.compression import CompressionSettings, Compressor
from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.core.wire.op_msg import DocumentSequence
from asyncmongo.errors import AutoReconnect, NetworkTimeout
from asyncmongo.runtime.connection import Connection, ConnectionSettings, connect
from asyncmongo.testing import SimServer

pytestmark = pytest.mark.timeout(20)


BASE = ConnectionSettings(host=HostInfo("Linux"), connect_timeout=5.0)


async def open_conn(server: SimServer, settings: ConnectionSettings = BASE) -> Connection:
    return await connect(("127.0.0.1", server.port), settings, id=1)


@pytest.mark.parametrize("compressor", ["snappy", "zlib", "zstd"])
async def test_compressed_crud(compressor: str) -> None:
    async with SimServer() as server:
        conn = await open_conn(
            server, replace(BASE, compression=CompressionSettings((compressor,)))
        )
        try:
            assert conn.compressor is Compressor.from_name(compressor)
            docs = [encode({"_id": i, "s": "x" * 200}) for i in range(100)]
            reply = await conn.command(
                "db", {"insert": "c"}, sequences=[DocumentSequence("documents", docs)], check=True
            )
            assert reply["n"] == 100
            found = await conn.command("db", {"find": "c", "filter": {"_id": {"$gte": 98}}})
            assert [d["_id"] for d in found["cursor"]["firstBatch"]] == [98, 99]
        finally:
            conn.close()


async def test_streaming_hello_is_exhaust() -> None:
    async with SimServer() as server:
        conn = await open_conn(server)
        try:
            first = await conn.command("admin", {"hello": 1}, check=True)
            command = {
                "hello": 1,
                "topologyVersion": first["topologyVersion"],
                "maxAwaitTimeMS": 50,
            }
            reply = await conn.command("admin", command, exhaust_allowed=True)
            assert reply["ok"] == 1 and conn.more_to_come
            again = await conn.read_more_to_come(asyncio.get_running_loop().time() + 5)
            assert again["ok"] == 1 and conn.more_to_come
        finally:
            conn.close()


async def test_fail_point_close_connection() -> None:
    async with SimServer() as server:
        conn = await open_conn(server)
        with server.fail_point({"times": 1}, failCommands=["ping"], closeConnection=True):
            with pytest.raises(AutoReconnect):
                await conn.command("admin", {"ping": 1})
        assert conn.is_closed


async def test_fail_point_block_meets_socket_timeout() -> None:
    async with SimServer() as server:
        conn = await open_conn(server, replace(BASE, socket_timeout=0.05))
        with server.fail_point(
            {"times": 1}, failCommands=["ping"], blockConnection=True, blockTimeMS=500
        ):
            with pytest.raises(NetworkTimeout):
                await conn.command("admin", {"ping": 1})
        assert conn.is_closed
