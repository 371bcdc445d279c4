"""replSetFreeze as mongod answers it: a frozen secondary wins no election until it is
unfrozen (``replSetFreeze: 0`` answers ``info: "unfreezing"``), a primary refuses with
NotSecondary, a standalone with NoReplicationEnabled, another database with Unauthorized."""

from __future__ import annotations

import pytest

from asyncmongo.testing import ReplicaSet, SimServer
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(15)


async def test_a_frozen_secondary_is_passed_over_until_unfrozen() -> None:
    async with ReplicaSet(3) as rs:
        first, second, third = rs.members
        assert rs.primary is first
        client = await RawClient.connect(second.port)
        try:
            frozen = await client.command({"replSetFreeze": 60, "$db": "admin"})
            assert frozen["ok"] == 1.0 and "info" not in frozen
            assert await rs.step_down() is third        # second is frozen: third wins
            await rs.elect(first)
            unfrozen = await client.command({"replSetFreeze": 0, "$db": "admin"})
            assert (unfrozen["ok"], unfrozen["info"]) == (1.0, "unfreezing")
            assert await rs.step_down() is second       # unfrozen, electable again
        finally:
            await client.close()


async def test_refusals() -> None:
    async with ReplicaSet(2) as rs, SimServer() as standalone:
        primary = await RawClient.connect(rs.members[0].port)
        secondary = await RawClient.connect(rs.members[1].port)
        alone = await RawClient.connect(standalone.port)
        try:
            reply = await primary.command({"replSetFreeze": 10, "$db": "admin"})
            assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 95, "NotSecondary")
            reply = await alone.command({"replSetFreeze": 10, "$db": "admin"})
            assert (reply["code"], reply["codeName"]) == (76, "NoReplicationEnabled")
            reply = await secondary.command({"replSetFreeze": 10, "$db": "db"})
            assert (reply["code"], reply["codeName"]) == (13, "Unauthorized")
            reply = await secondary.command({"replSetFreeze": "x", "$db": "admin"})
            assert (reply["code"], reply["codeName"]) == (14, "TypeMismatch")
            reply = await secondary.command({"replSetFreeze": 1, "$db": "admin"})
            assert reply["ok"] == 1.0 and "1 second" in reply["warning"]
        finally:
            for client in (primary, secondary, alone):
                await client.close()
