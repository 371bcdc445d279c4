"""Read concerns a member refuses as mongod does: a standalone has no replication, so it
refuses ``readConcern: {level: "snapshot"}`` (snapshot reads need a replica set member)."""

from __future__ import annotations

import pytest

from asyncmongo.testing import ReplicaSet, SimServer
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(15)

SNAPSHOT_FIND = {"find": "c", "filter": {}, "readConcern": {"level": "snapshot"}, "$db": "db"}


async def test_standalone_refuses_a_snapshot_read() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            reply = await client.command(SNAPSHOT_FIND)
            assert (reply["ok"], reply["code"], reply["codeName"]) == (
                0.0, 123, "NotAReplicaSet")
            plain = await client.command({**SNAPSHOT_FIND, "readConcern": {"level": "local"}})
            assert plain["ok"] == 1.0
        finally:
            await client.close()


async def test_replica_set_member_runs_a_snapshot_read() -> None:
    async with ReplicaSet(1) as rs:
        client = await RawClient.connect(rs.members[0].port)
        try:
            assert (await client.command(SNAPSHOT_FIND))["ok"] == 1.0
        finally:
            await client.close()
