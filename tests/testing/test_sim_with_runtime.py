"""asyncmongo's own runtime connection against the simulator: handshake, compression,
streaming hello (exhaust) and exhaust cursors, the paths the monitors and cursors will use."""

from __future__ import annotations

import pytest

from asyncmongo.bson import Int64
from asyncmongo.core.wire.compression import CompressionSettings, Compressor
from asyncmongo.runtime.connection import ConnectionSettings, connect
from asyncmongo.testing import Role, SimServer

pytestmark = pytest.mark.timeout(30)


async def test_handshake_and_compressed_commands() -> None:
    async with SimServer() as server:
        settings = ConnectionSettings(compression=CompressionSettings(("zstd", "zlib")))
        conn = await connect(("127.0.0.1", server.port), settings, id=1)
        try:
            assert conn.compressor is Compressor.ZSTD
            assert conn.hello["ismaster"] is True  # the legacy hello answers ismaster
            await conn.command("db", {"insert": "c", "documents": [{"_id": i}
                                                                   for i in range(10)]})
            reply = await conn.command("db", {"find": "c", "filter": {}, "batchSize": 3},
                                       check=True)
            assert len(reply["cursor"]["firstBatch"]) == 3
            assert server.compressed_requests["zstd"] == 2
        finally:
            await conn.aclose()


async def test_streaming_hello_over_exhaust() -> None:
    async with SimServer() as server:
        conn = await connect(("127.0.0.1", server.port), ConnectionSettings(), id=1)
        try:
            tv = conn.hello["topologyVersion"]
            first = await conn.command("admin", {"hello": 1, "topologyVersion": tv,
                                                 "maxAwaitTimeMS": 300},
                                       exhaust_allowed=True)  # answered after 300 ms
            assert first["topologyVersion"]["counter"] == Int64(0)
            server.set_role(Role.STANDALONE)
            second = await conn.read_more_to_come()
            assert second["topologyVersion"]["counter"] == Int64(1)
        finally:
            await conn.aclose()


async def test_exhaust_cursor() -> None:
    async with SimServer() as server:
        conn = await connect(("127.0.0.1", server.port), ConnectionSettings(), id=1)
        try:
            await conn.command("db", {"insert": "c", "documents": [{"_id": i}
                                                                   for i in range(7)]})
            first = await conn.command("db", {"find": "c", "filter": {}, "batchSize": 2})
            cursor_id = first["cursor"]["id"]
            seen = [d["_id"] for d in first["cursor"]["firstBatch"]]
            reply = await conn.command("db", {"getMore": cursor_id, "collection": "c",
                                              "batchSize": 2}, exhaust_allowed=True)
            seen += [d["_id"] for d in reply["cursor"]["nextBatch"]]
            while reply["cursor"]["id"] != 0:
                reply = await conn.read_more_to_come()
                seen += [d["_id"] for d in reply["cursor"]["nextBatch"]]
            assert seen == list(range(7))
            assert (await conn.command("admin", {"ping": 1}))["ok"] == 1.0
        finally:
            await conn.aclose()
