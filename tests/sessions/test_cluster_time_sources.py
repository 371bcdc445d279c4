"""Where the client's cluster time comes from (sessions spec, "Gossipping the cluster time").

Every non-SDAM reply carrying ``$clusterTime`` advances the client's clock, including the
handshake reply of an application connection (PyMongo does the same), so the first command
on a fresh connection already gossips. The monitors' hello replies do not: the spec takes
cluster times from non-SDAM responses only and never gossips on SDAM commands (a heartbeat
to a member of another deployment could otherwise install an invalid cluster time).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.types import Timestamp
from asyncmongo.testing import ReplicaSet

pytestmark = pytest.mark.timeout(30)


class Heartbeats:
    """Heartbeat replies and the commands sent, as they happen."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.commands: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, event: Any) -> None:
        kind = type(event).__name__
        if kind == "ServerHeartbeatSucceededEvent":
            self.replies.append(dict(event.reply))
        elif kind == "CommandStartedEvent":
            self.commands.append((event.command_name, dict(event.command)))


def _api_clock(client: AsyncMongoClient) -> Any:
    """The cluster time of the executor the API's operations run on."""
    return client._executor.clock.cluster_time  # type: ignore[union-attr]


async def test_monitor_replies_do_not_advance_the_client_cluster_time() -> None:
    async with ReplicaSet(members=3) as rs:
        events = Heartbeats()
        client = AsyncMongoClient(rs.uri, event_listeners=[events])
        try:
            await client.aconnect()
            for _ in range(100):  # heartbeat events are published asynchronously
                if sum("$clusterTime" in reply for reply in events.replies) >= 3:
                    break
                await asyncio.sleep(0.01)
            assert sum("$clusterTime" in reply for reply in events.replies) >= 3
            assert _api_clock(client) is None
            assert client._executor is not None
            assert client._executor.clock.cluster_time is None
        finally:
            await client.close()


async def test_handshake_reply_advances_the_cluster_time_before_the_first_reply() -> None:
    async with ReplicaSet(members=3) as rs:
        events = Heartbeats()
        client = AsyncMongoClient(rs.uri, event_listeners=[events])
        try:
            await client.db.c.insert_one({"_id": 1})
            first = next(cmd for name, cmd in events.commands if name == "insert")
            # No command reply had arrived yet: this cluster time came from the handshake.
            gossiped = first["$clusterTime"]
            assert isinstance(gossiped["clusterTime"], Timestamp)
            clock = _api_clock(client)
            assert clock is not None
            assert clock["clusterTime"] >= gossiped["clusterTime"]
        finally:
            await client.close()


async def test_hello_commands_do_not_gossip() -> None:
    async with ReplicaSet(members=3) as rs:
        events = Heartbeats()
        client = AsyncMongoClient(rs.uri, event_listeners=[events])
        try:
            await client.db.c.insert_one({"_id": 1})
            await client.db.c.find_one({"_id": 1})
        finally:
            await client.close()
    hellos = [cmd for name, cmd in events.commands if name.lower() in ("hello", "ismaster")]
    assert all("$clusterTime" not in cmd for cmd in hellos)
