"""The deployment the unified tests run against, and the runner's own internal client.

By default a simulated deployment from :mod:`asyncmongo.testing`, of the topology the file's
runOnRequirements want (single -> Standalone, replicaset -> ReplicaSet(3), sharded ->
ShardedCluster(2), load-balanced -> LoadBalanced); with ``MONGODB_URI`` set, that server.
The internal client (no listeners) does what the spec reserves for the runner: initialData,
outcome checks, turning fail points off, killAllSessions.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from asyncmongo.client import AsyncMongoClient
from asyncmongo.errors import OperationFailure
from asyncmongo.testing import deployment as sim
from spec_tests.unified.schema import ServerInfo, parse_version, requirements_unmet_reason

__all__ = [
    "SIMULATED_TOPOLOGIES",
    "Target",
    "TargetPool",
    "choose_topology",
    "direct_uri",
    "run_command",
    "uri_for_host",
]

#: Simulated topologies in the order we prefer them when several would do.
SIMULATED_TOPOLOGIES: Final = ("single", "replicaset", "sharded", "load-balanced")
#: What asyncmongo.testing reports (buildInfo versionArray 7.0.0, no auth, no CSFLE).
SIMULATED_VERSION: Final = (7, 0, 0)


@dataclass(frozen=True, slots=True)
class Target:
    """A running deployment: its connection strings and what runOnRequirements see.

    ``single_host_uri`` (the first host only) is what a client with ``useMultipleMongoses:
    false`` or ``directConnection: true`` gets.
    """

    uri: str
    single_host_uri: str
    info: ServerInfo
    simulated: bool


def choose_topology(file_requirements: Sequence[Mapping[str, Any]],
                    tests: Sequence[Mapping[str, Any]]) -> str:
    """The simulated topology under which the most tests of a file can run."""
    def runnable(topology: str) -> tuple[int, bool]:
        info = ServerInfo(SIMULATED_VERSION, topology)
        unmet = requirements_unmet_reason(file_requirements, info)
        if unmet is not None:
            # Nothing runs; still prefer a topology the file accepts, so the skip reason
            # names what is really missing (auth, a server version, ...).
            return -1, f"topology {topology} not in" not in unmet
        return sum(requirements_unmet_reason(t.get("runOnRequirements", ()), info) is None
                   for t in tests), True

    return max(SIMULATED_TOPOLOGIES, key=runnable)


def _add_options(uri: str, options: Mapping[str, str]) -> str:
    parts = urllib.parse.urlsplit(uri)
    query = dict(urllib.parse.parse_qsl(parts.query))
    query.update(options)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path or "/",
                                                  query=urllib.parse.urlencode(query)))


def _single_host(uri: str) -> str:
    parts = urllib.parse.urlsplit(uri)
    first = parts.netloc.rsplit("@", 1)[-1].split(",")[0]
    userinfo = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=userinfo + first))


def uri_for_host(uri: str, host: str) -> str:
    """``uri`` (credentials and options kept) pointed straight at ``host`` alone."""
    parts = urllib.parse.urlsplit(uri)
    userinfo = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query)
             if k.lower() not in ("replicaset", "loadbalanced", "directconnection")]
    query.append(("directConnection", "true"))
    return urllib.parse.urlunsplit(parts._replace(netloc=userinfo + host,
                                                  query=urllib.parse.urlencode(query)))


def direct_uri(uri: str) -> str:
    """The first host alone, without replicaSet (uri-options: directConnection=true)."""
    parts = urllib.parse.urlsplit(_single_host(uri))
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k.lower() != "replicaset"]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


async def run_command(client: AsyncMongoClient, db: str, command: Mapping[str, Any]) -> Any:
    """Run a command on the primary through the public API when it exists.

    ``client[db].command`` is PyMongo's name; until asyncmongo's database API lands the
    runner uses the client's internal command path so setup still works.
    """
    getitem = getattr(client, "__getitem__", None)
    if getitem is not None and hasattr(getitem(db), "command"):
        return await getitem(db).command(command)
    return await client._run_command(db, command)


class TargetPool:
    """Deployments started on demand, one per topology, closed together at the end.

    A test module keeps one pool for its lifetime so every file that wants the same topology
    reuses one simulated deployment (and one internal client).
    """

    def __init__(self) -> None:
        self._deployments: dict[str, Any] = {}
        self._targets: dict[str, Target] = {}
        self._clients: dict[str, AsyncMongoClient] = {}

    async def get(self, topology: str) -> tuple[Target, AsyncMongoClient]:
        """The target for ``topology`` (ignored with MONGODB_URI) and its internal client."""
        key = "uri" if os.environ.get("MONGODB_URI") else topology
        if key not in self._targets:
            target = await (self._external() if key == "uri" else self._simulated(topology))
            self._targets[key] = target
            self._clients[key] = AsyncMongoClient(target.uri)
        return self._targets[key], self._clients[key]

    async def _simulated(self, topology: str) -> Target:
        deployment: Any
        if topology == "single":
            deployment = sim.Standalone()
        elif topology == "replicaset":
            deployment = sim.ReplicaSet(3)
        elif topology == "sharded":
            deployment = sim.ShardedCluster(2)
        else:
            deployment = sim.LoadBalanced()
        await deployment.start()
        self._deployments[topology] = deployment
        uri = deployment.uri
        info = ServerInfo(SIMULATED_VERSION, topology)
        return Target(uri, _single_host(uri), info, simulated=True)

    async def _external(self) -> Target:
        uri = os.environ["MONGODB_URI"]
        client = AsyncMongoClient(uri)
        try:
            info = await _probe(client)
        finally:
            await client.close()
        return Target(uri, _single_host(uri), info, simulated=False)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        for deployment in self._deployments.values():
            await deployment.close()
        self._clients.clear()
        self._deployments.clear()
        self._targets.clear()


async def _probe(client: AsyncMongoClient) -> ServerInfo:
    """Ask a real deployment what it is (buildInfo, hello, getParameter)."""
    build = await client.admin_command({"buildInfo": 1})
    hello = await client.admin_command({"hello": 1})
    version = tuple(build["versionArray"][:3])
    if hello.get("msg") == "isdbgrid":
        topology = "load-balanced" if client.options.load_balanced else "sharded"
    elif "setName" in hello:
        topology = "replicaset"
    else:
        topology = "single"
    try:
        params = await client.admin_command({"getParameter": "*"})
    except OperationFailure:
        params = {}
    info = ServerInfo(parse_version(".".join(map(str, version))), topology,
                      shards_are_replica_sets=topology in ("sharded", "load-balanced"),
                      server_parameters=params)
    mechanisms = params.get("authenticationMechanisms", ())
    auth = client.options.credential is not None if hasattr(client.options, "credential") \
        else False
    return replace(info, auth=auth, auth_mechanisms=tuple(mechanisms))


def uri_with_options(uri: str, options: Mapping[str, str]) -> str:
    """``uri`` with these URI options added (overriding the same names)."""
    return _add_options(uri, options)
