"""The adversity suite's targeted cases: a corrupt compressed reply, a reply answering another
request (wrong responseTo), and a monitor connection that stalls (the streaming hello must time
out and the server be marked Unknown, per the SDAM monitoring spec)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.core.sdam import ServerType
from asyncmongo.core.sdam.events import ServerDescriptionChangedEvent
from asyncmongo.errors import AutoReconnect, ProtocolError
from asyncmongo.testing import ReplicaSet, Scope, Standalone
from asyncmongo.testing.proxy import FaultProxy

pytestmark = [pytest.mark.adversity, pytest.mark.timeout(60)]


@pytest.fixture
async def standalone() -> AsyncIterator[Standalone]:
    async with Standalone(fault_proxy=True) as deployment:
        yield deployment


def proxy_of(deployment: Standalone) -> FaultProxy:
    assert deployment.server.proxy is not None
    return deployment.server.proxy


@pytest.mark.parametrize("compressor", ["snappy", "zlib", "zstd"])
async def test_a_corrupt_compressed_reply_is_a_protocol_error(standalone: Standalone,
                                                              compressor: str) -> None:
    client = AsyncMongoClient(standalone.uri, compressors=compressor, timeoutMS=3000,
                              retryReads=False)
    try:
        await client.db.c.insert_many([{"_id": i, "pad": "z" * 200} for i in range(20)])
        before = standalone.server.compressed_requests[compressor]
        async with proxy_of(standalone).corrupt(count=None, scope=Scope.EXISTING):
            with pytest.raises((ProtocolError, AutoReconnect)):
                await client.db.c.find({}).to_list(None)
        assert standalone.server.compressed_requests[compressor] > before
        assert len(await client.db.c.find({}).to_list(None)) == 20  # a new connection
    finally:
        await client.close()


async def test_a_reply_to_another_request_closes_the_connection(standalone: Standalone) -> None:
    client = AsyncMongoClient(standalone.uri, timeoutMS=3000, retryReads=False)
    try:
        await client.db.c.insert_one({"_id": 1})
        opened = proxy_of(standalone).total_links
        async with proxy_of(standalone).misdirect(count=None, scope=Scope.EXISTING):
            with pytest.raises(ProtocolError):
                await client.db.c.find_one({})
        assert await client.db.c.find_one({}) == {"_id": 1}
        assert proxy_of(standalone).total_links > opened  # the misdirected one was dropped
    finally:
        await client.close()


async def test_a_stalled_monitor_marks_the_server_unknown() -> None:
    async with ReplicaSet(1, fault_proxy=True) as rs:
        proxy = rs.members[0].proxy
        assert proxy is not None
        unknown = asyncio.Event()

        def listen(event: Any) -> None:
            if isinstance(event, ServerDescriptionChangedEvent) and (
                    event.new_description.server_type is ServerType.UNKNOWN):
                unknown.set()

        # Streaming hello: an awaited reply may take heartbeatFrequencyMS (maxAwaitTimeMS)
        # plus connectTimeoutMS before the monitor gives up on it.
        client = AsyncMongoClient(rs.uri, heartbeatFrequencyMS=500, connectTimeoutMS=500,
                                  timeoutMS=5000, event_listeners=[listen])
        try:
            await client.db.c.insert_one({"_id": 1})
            assert rs.members[0].awaited_hellos > 0  # the monitor streams
            start = time.monotonic()
            async with proxy.blackhole(scope=Scope.EXISTING):  # open connections stall
                async with asyncio.timeout(10):
                    await unknown.wait()
                stalled = time.monotonic() - start
            assert stalled < 5
            await client.db.c.insert_one({"_id": 2})  # healed: rediscovered, writable
        finally:
            await client.close()
