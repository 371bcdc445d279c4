"""CMAP integration tests (``style: integration``) against asyncmongo.testing.

The cmap-format README's Integration Test Runner: the test runs against one endpoint of a
real (here: simulated) deployment; ``runOn`` picks a Standalone or a ReplicaSet (its primary)
and gates on the server's version; the ``failPoint`` command is sent to the endpoint's admin
database over a separate connection and turned off after the test; the pool under test opens
real ``connect()`` connections with the file's ``poolOptions.appName``, so the fail point (which
matches that appName) acts on them and on nothing else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from asyncmongo.core.address import Address
from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.runtime.connection import Connection, ConnectionSettings, connect
from asyncmongo.testing import ReplicaSet, Standalone
from spec_tests.support.cmap_runner import CmapRunner

#: Ids for the runner's own admin connections (the pool under test counts from 1).
_ADMIN_ID = 1_000_000


class Unsupported(Exception):
    """The test's runOn cannot be met by any deployment asyncmongo.testing offers."""


def topology_for(run_on: Sequence[Mapping[str, Any]]) -> str:
    """"single" or "replicaset": the first topology some runOn requirement accepts."""
    if not run_on:
        return "single"
    for requirement in run_on:
        topologies = requirement.get("topology") or requirement.get("topologies")
        if topologies is None or "single" in topologies:
            return "single"
        if "replicaset" in topologies:
            return "replicaset"
    raise Unsupported(f"runOn {list(run_on)} needs a topology other than single/replicaset")


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


def unmet_requirement(
    run_on: Sequence[Mapping[str, Any]], topology: str, version: tuple[int, ...]
) -> str | None:
    """Why no runOn requirement is met by a ``topology`` server of ``version`` (None: met)."""
    if not run_on:
        return None
    for requirement in run_on:
        topologies = requirement.get("topology") or requirement.get("topologies")
        if topologies is not None and topology not in topologies:
            continue
        low = requirement.get("minServerVersion")
        if low is not None and version < version_tuple(low):
            continue
        high = requirement.get("maxServerVersion")
        if high is not None and version > version_tuple(high):
            continue
        return None
    shown = ".".join(map(str, version))
    return f"runOn {list(run_on)} is not met by a {topology} server {shown}"


@asynccontextmanager
async def endpoint(topology: str) -> AsyncIterator[Address]:
    """A running deployment of ``topology``; yields the one endpoint the test uses."""
    if topology == "single":
        async with Standalone() as standalone:
            yield ("127.0.0.1", standalone.server.port)
    else:
        async with ReplicaSet(members=3) as rs:
            primary = rs.primary
            assert primary is not None
            yield ("127.0.0.1", primary.port)


async def admin_connection(address: Address) -> Connection:
    settings = ConnectionSettings(host=HostInfo("Linux"), connect_timeout=5.0)
    return await connect(address, settings, id=_ADMIN_ID)


@asynccontextmanager
async def fail_point(admin: Connection, command: Mapping[str, Any] | None) -> AsyncIterator[None]:
    """``configureFailPoint`` on the admin database; mode "off" afterwards, whatever happened."""
    if command is None:
        yield
        return
    await admin.command("admin", command, check=True)
    try:
        yield
    finally:
        off = {"configureFailPoint": command["configureFailPoint"], "mode": "off"}
        await admin.command("admin", off, check=True)


async def server_version(admin: Connection) -> tuple[int, ...]:
    reply = await admin.command("admin", {"buildInfo": 1}, check=True)
    return tuple(int(part) for part in reply["versionArray"][:3])


async def run_integration(test: Mapping[str, Any]) -> str | None:
    """Run one integration test; returns a skip reason instead when runOn is not met."""
    run_on = test.get("runOn", [])
    try:
        topology = topology_for(run_on)
    except Unsupported as exc:
        return str(exc)
    async with endpoint(topology) as address:
        admin = await admin_connection(address)
        try:
            reason = unmet_requirement(run_on, topology, await server_version(admin))
            if reason is not None:
                return reason
            async with fail_point(admin, test.get("failPoint")):
                await _run_pool(test, address)
        finally:
            await admin.aclose()
    return None


async def _run_pool(test: Mapping[str, Any], address: Address) -> None:
    app_name = test.get("poolOptions", {}).get("appName")
    settings = ConnectionSettings(host=HostInfo("Linux"), connect_timeout=5.0, app_name=app_name)

    async def establish(connection_id: int) -> Connection:
        return await connect(address, settings, id=connection_id)

    # SDAM's part: an error of the minPoolSize filler clears the pool (unless backpressure).
    runner = CmapRunner(test, establish, clear_on_background_error=True, address=address)
    await runner.run()
