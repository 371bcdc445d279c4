"""Which error replies of the simulated server carry its topologyVersion (SDAM stale errors).

mongod 4.4+ always attaches topologyVersion to "not primary" errors, but to "node is shutting
down" errors (91, 11600) only in quiesce mode; a plain shutdown error is therefore never stale
and marks the server Unknown. The simulator models the non-quiesce case.
"""

from __future__ import annotations

import pytest

from asyncmongo.testing import SimServer
from asyncmongo.testing.codes import NOT_PRIMARY_CODES, SHUTDOWN_CODES
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(30)

HELLO = {"hello": 1, "$db": "admin"}
PING = {"ping": 1, "$db": "admin"}


@pytest.mark.parametrize("code", sorted(NOT_PRIMARY_CODES))
async def test_not_primary_errors_carry_topology_version(code: int) -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            with server.fail_point({"times": 1}, failCommands=["ping"], errorCode=code):
                reply = await client.command(PING)
            assert reply["code"] == code
            assert reply["topologyVersion"] == (await client.command(HELLO))["topologyVersion"]
        finally:
            await client.close()


@pytest.mark.parametrize("code", sorted(SHUTDOWN_CODES))
async def test_shutdown_errors_carry_no_topology_version(code: int) -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            with server.fail_point({"times": 1}, failCommands=["ping"], errorCode=code):
                reply = await client.command(PING)
            assert reply["code"] == code
            assert "topologyVersion" not in reply
        finally:
            await client.close()
