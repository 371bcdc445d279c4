"""A connection that fails while authenticating reaches SDAM before the pool's own events
(issue #6; the CMAP logging spec test "Connection checkout fails due to error establishing
connection"): the server is marked Unknown and the pool cleared, synchronously, and only then
does the pool emit ConnectionClosed and ConnectionCheckOutFailed. The same error reported
again afterwards carries the generation the pool has left behind, so SDAM ignores it.

Against a simulated Standalone with a SCRAM user and a saslContinue closeConnection fail point.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.auth.credential import MongoCredential
from asyncmongo.core.cmap.events import (
    ConnectionCheckOutFailedEvent,
    ConnectionClosedEvent,
    PoolClearedEvent,
)
from asyncmongo.core.error_policy import ErrorPhase
from asyncmongo.core.sdam.events import ServerDescriptionChangedEvent
from asyncmongo.core.sdam.types import ServerType
from asyncmongo.errors import AutoReconnect, ConnectionFailure
from asyncmongo.runtime.auth import CredentialAuthenticator
from asyncmongo.runtime.connection import ConnectionSettings, connect
from asyncmongo.testing import Standalone

USER, PASSWORD = "app", "app-password"
APP = "sdamOrderApp"


@pytest.fixture
async def failing_auth() -> AsyncIterator[tuple[Standalone, list[Any]]]:
    """A Standalone whose next saslContinue from APP closes the connection; the events."""
    async with Standalone(users={USER: PASSWORD}) as deployment:
        address = ("127.0.0.1", deployment.server.port)
        credential = MongoCredential(None, "admin", USER, PASSWORD)
        admin = await connect(
            address,
            ConnectionSettings(connect_timeout=5.0),
            id=0,
            authenticator=CredentialAuthenticator(credential),
        )
        fail_point = {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["saslContinue"], "closeConnection": True, "appName": APP},
        }
        await admin.command("admin", fail_point, check=True)
        try:
            yield deployment, []
        finally:
            off = {"configureFailPoint": "failCommand", "mode": "off"}
            await admin.command("admin", off, check=True)
            await admin.aclose()


def _client(deployment: Standalone, events: list[Any]) -> AsyncMongoClient:
    return AsyncMongoClient(
        deployment.uri,
        username=USER,
        password=PASSWORD,
        appname=APP,
        retryReads=False,
        heartbeatFrequencyMS=10000,
        event_listeners=[events.append],
    )


def _index(events: list[Any], kind: type) -> int:
    (position,) = [i for i, event in enumerate(events) if isinstance(event, kind)]
    return position


async def test_sdam_clears_the_pool_before_the_pool_reports_the_failure(
    failing_auth: tuple[Standalone, list[Any]],
) -> None:
    deployment, events = failing_auth
    client = _client(deployment, events)
    try:
        await client.aconnect()
        with pytest.raises(ConnectionFailure):
            await client.admin_command({"ping": 1})
        cleared = _index(events, PoolClearedEvent)
        assert cleared < _index(events, ConnectionClosedEvent)
        assert cleared < _index(events, ConnectionCheckOutFailedEvent)
        unknown = [
            i
            for i, event in enumerate(events)
            if isinstance(event, ServerDescriptionChangedEvent)
            and event.new_description.server_type is ServerType.UNKNOWN
        ]
        assert unknown and unknown[-1] < cleared  # marked Unknown, then the pool cleared
        (server,) = client._topology_runtime.servers.values()
        assert server.pool.generation == 1
    finally:
        await client.close()


async def test_the_same_error_reported_again_is_stale(
    failing_auth: tuple[Standalone, list[Any]],
) -> None:
    deployment, events = failing_auth
    client = _client(deployment, events)
    try:
        await client.aconnect()
        with pytest.raises(ConnectionFailure):
            await client.admin_command({"ping": 1})
        topology = client._topology_runtime
        (address,) = topology.servers
        version, seen = topology.version, len(events)
        # A late second report of that error (made in generation 0): nothing changes.
        await topology.handle_application_error(
            address,
            AutoReconnect("saslContinue: connection closed"),
            0,
            phase=ErrorPhase.AUTHENTICATING,
        )
        assert topology.version == version
        assert not [e for e in events[seen:] if isinstance(e, PoolClearedEvent)]
        assert topology.servers[address].pool.generation == 1
    finally:
        await client.close()
