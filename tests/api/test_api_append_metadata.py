"""AsyncMongoClient.append_metadata (handshake spec, "Metadata updates after MongoClient
initialization") end to end against the simulator: connections opened afterwards send the
appended driver info, connections already open keep theirs, none is opened or closed for it,
and appending equal info twice appends it once."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient, DriverInfo
from asyncmongo.core.wire.handshake import HostInfo, append_driver_info, client_metadata
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing import SimServer

pytestmark = pytest.mark.timeout(30)

FRAMEWORK = DriverInfo("framework", "2.0", "Framework Platform")


def _handshakes(server: SimServer) -> list[Mapping[str, Any]]:
    """The client metadata of every connection the simulator has open."""
    return [conn.metadata for conn in server.network.connections if conn.metadata is not None]


async def test_new_connections_carry_appended_metadata_and_old_ones_keep_theirs() -> None:
    async with SimServer() as server:
        client = AsyncMongoClient(f"mongodb://127.0.0.1:{server.port}/?maxPoolSize=5")
        try:
            await client.admin_command({"ping": 1})
            before = len(_handshakes(server))
            client.append_metadata(FRAMEWORK)
            client.append_metadata(DriverInfo("framework", "2.0", "Framework Platform"))
            # No connection is opened or closed for the update.
            await asyncio.sleep(0.05)
            assert len(_handshakes(server)) == before
            assert all(m["driver"]["name"] == "asyncmongo" for m in _handshakes(server))
            # Two pings at once need a second pooled connection: it carries the info, once.
            server.slow(100, commands=["ping"])
            await asyncio.gather(client.admin_command({"ping": 1}),
                                 client.admin_command({"ping": 1}))
            appended = [m for m in _handshakes(server) if m["driver"]["name"] != "asyncmongo"]
            assert len(appended) == 1
            assert appended[0]["driver"] == {"name": "asyncmongo|framework",
                                             "version": appended[0]["driver"]["version"]}
            assert appended[0]["driver"]["version"].endswith("|2.0")
            assert appended[0]["platform"].endswith("|Framework Platform")
            assert client.options.driver_info == (FRAMEWORK,)
        finally:
            await client.close()


async def test_append_before_connecting_reaches_the_first_handshake() -> None:
    async with SimServer() as server:
        client = AsyncMongoClient(f"mongodb://127.0.0.1:{server.port}",
                                  driver_info=DriverInfo("lib", "1"))
        client.append_metadata(DriverInfo("framework"))
        try:
            await client.admin_command({"ping": 1})
            names = {m["driver"]["name"] for m in _handshakes(server)}
            assert names == {"asyncmongo|lib|framework"}  # monitor and pool alike
        finally:
            await client.close()


def test_equal_driver_info_is_appended_once() -> None:
    # Spec: an empty string counts as unset; comparison is case-sensitive.
    infos = append_driver_info((DriverInfo("a", "1", ""),), DriverInfo("a", "1"))
    assert infos == (DriverInfo("a", "1", ""),)
    infos = append_driver_info(infos, DriverInfo("A", "1"))
    assert [i.name for i in infos] == ["a", "A"]
    driver = client_metadata(HostInfo(platform="CPython"), None, infos)["driver"]
    assert driver["name"] == "asyncmongo|a|A"


def test_append_metadata_refuses_what_is_not_driver_info() -> None:
    client = AsyncMongoClient("mongodb://127.0.0.1:1")
    with pytest.raises(ConfigurationError, match="DriverInfo"):
        client.append_metadata({"name": "x"})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"\|"):
        client.append_metadata(DriverInfo("a|b"))
