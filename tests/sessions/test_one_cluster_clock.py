"""Sessions spec: a client keeps ONE highest-seen cluster time, whichever path ran the command."""

from __future__ import annotations

from asyncmongo import AsyncMongoClient
from asyncmongo.testing import ReplicaSet


async def test_commands_and_api_operations_gossip_one_cluster_time() -> None:
    async with ReplicaSet(members=1) as rs, AsyncMongoClient(rs.uri) as client:
        await client.admin.command("ping")
        await client.db.things.insert_one({"x": 1})
        assert client._executor is not None
        api_clock = client._executor.clock
        assert api_clock is client._executor.clock
