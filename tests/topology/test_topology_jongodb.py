"""The topology runtime against jongodb, a MongoDB-compatible server nobody here wrote."""

from __future__ import annotations

import asyncio

from asyncmongo.bson import ObjectId
from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.sdam import ServerType, TopologyType
from asyncmongo.core.sdam.events import ServerHeartbeatSucceededEvent
from tests.support.jongodb import jongodb_uri
from tests.topology.support import monitors, wait_until

__all__ = ["jongodb_uri"]


async def test_discovers_and_runs_commands(jongodb_uri: str) -> None:
    events: list[object] = []
    async with AsyncMongoClient(
        jongodb_uri, heartbeatFrequencyMS=500, event_listeners=[events.append]
    ) as client:
        assert (await client.admin_command({"ping": 1}))["ok"] == 1.0
        description = client.topology_description
        (server,) = description.servers.values()
        assert server.is_known
        assert description.topology_type in (
            TopologyType.SINGLE,
            TopologyType.REPLICA_SET_WITH_PRIMARY,
        )
        assert server.server_type in (ServerType.STANDALONE, ServerType.RS_PRIMARY)
        # the raw command adds no _id, and the shared jongodb (no drop) outlives this test
        document = {"_id": ObjectId(), "x": 1}
        reply = await client._run_command(
            "topology_tests", {"insert": "things", "documents": [document]}
        )
        assert reply["n"] == 1
        # the monitor keeps checking (streaming if jongodb sends topologyVersion, else polls)
        topology = client._topology_runtime
        before = sum(m.checks for m in monitors(topology))
        await asyncio.sleep(1.1)
        beats = [e for e in events if isinstance(e, ServerHeartbeatSucceededEvent)]
        assert beats
        assert sum(m.checks for m in monitors(topology)) > before or all(
            m.streaming for m in monitors(topology)
        )


async def test_close_leaves_nothing_behind(jongodb_uri: str) -> None:
    baseline = asyncio.all_tasks()
    client = AsyncMongoClient(jongodb_uri)
    await client.admin_command({"ping": 1})
    await client.close()
    await wait_until(
        lambda: not {t for t in asyncio.all_tasks() - baseline if t is not asyncio.current_task()}
    )
