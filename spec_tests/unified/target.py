"""The deployment the unified tests run against, and the runner's own internal client.

By default a simulated deployment from :mod:`asyncmongo.testing`, of the topology the file's
runOnRequirements want (single -> Standalone, replicaset -> ReplicaSet(3), sharded ->
ShardedCluster(2), load-balanced -> LoadBalanced); with ``MONGODB_URI`` set, that server.
The internal client (no listeners) does what the spec reserves for the runner: initialData,
outcome checks, turning fail points off, killAllSessions.
"""

from __future__ import annotations

import os
import tempfile
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from asyncmongo.client import AsyncMongoClient
from asyncmongo.errors import OperationFailure
from asyncmongo.testing import deployment as sim
from asyncmongo.testing.builtins import SERVER_VERSION
from asyncmongo.testing.scram import UserDirectory
from asyncmongo.testing.stable_api import DEFAULT_PARAMETERS
from spec_tests.unified.encryption import CSFLE_AVAILABLE
from spec_tests.unified.schema import ServerInfo, parse_version, requirements_unmet_reason

__all__ = [
    "SIMULATED_TOPOLOGIES",
    "Target",
    "TargetPool",
    "choose_deployment",
    "choose_topology",
    "direct_uri",
    "run_command",
    "simulated_info",
    "uri_for_host",
]

#: Simulated topologies in the order we prefer them when several would do.
SIMULATED_TOPOLOGIES: Final = ("single", "replicaset", "sharded", "load-balanced")
#: What asyncmongo.testing reports (its buildInfo version, 8.0.0; no CSFLE).
SIMULATED_VERSION: Final = parse_version(SERVER_VERSION)
#: With auth on, the simulated deployments have this user (SCRAM-SHA-1 and -256), and accept
#: MONGODB-OIDC tokens of a test identity provider: a token of its is in the file
#: OIDC_TOKEN_FILE names while the pool is open (the auth spec's ENVIRONMENT:test).
SIMULATED_USER: Final = ("unified-user", "unified-pencil")
_SIMULATED_MECHANISMS: Final = ("SCRAM-SHA-1", "SCRAM-SHA-256", "MONGODB-OIDC")
#: What the simulator's getParameter answers at start (enableTestCommands, requireApiVersion
#: off, acceptApiVersion2 on: mongod as the drivers' test matrix runs it).
_SIMULATED_PARAMETERS: Final = dict(DEFAULT_PARAMETERS)


@dataclass(frozen=True, slots=True)
class Target:
    """A running deployment: its connection strings and what runOnRequirements see.

    ``single_host_uri`` is what a client with ``useMultipleMongoses: false`` or
    ``directConnection: true`` gets: the first host only, or behind load balancers the one
    fronting a single server (``uri`` is then the one fronting several).
    """

    uri: str
    single_host_uri: str
    info: ServerInfo
    simulated: bool


def simulated_info(topology: str, auth: bool = False) -> ServerInfo:
    """What runOnRequirements see of a simulated deployment."""
    mechanisms = _SIMULATED_MECHANISMS if auth else ()
    return ServerInfo(SIMULATED_VERSION, topology, auth=auth, auth_mechanisms=mechanisms,
                      server_parameters=_SIMULATED_PARAMETERS, csfle=CSFLE_AVAILABLE)


def choose_deployment(file_requirements: Sequence[Mapping[str, Any]],
                      tests: Sequence[Mapping[str, Any]]) -> tuple[str, bool]:
    """The simulated (topology, auth) under which the most tests of a file can run."""
    def runnable(choice: tuple[str, bool]) -> tuple[int, bool]:
        info = simulated_info(*choice)
        unmet = requirements_unmet_reason(file_requirements, info)
        if unmet is not None:
            # Nothing runs; still prefer a topology the file accepts, so the skip reason
            # names what is really missing (a server version, CSFLE, ...).
            return -1, f"topology {choice[0]} not in" not in unmet
        return sum(requirements_unmet_reason(t.get("runOnRequirements", ()), info) is None
                   for t in tests), True

    choices = [(t, auth) for auth in (False, True) for t in SIMULATED_TOPOLOGIES]
    return max(choices, key=runnable)


def choose_topology(file_requirements: Sequence[Mapping[str, Any]],
                    tests: Sequence[Mapping[str, Any]]) -> str:
    """The simulated topology under which the most tests of a file can run."""
    return choose_deployment(file_requirements, tests)[0]


def _add_options(uri: str, options: Mapping[str, str]) -> str:
    parts = urllib.parse.urlsplit(uri)
    query = dict(urllib.parse.parse_qsl(parts.query))
    query.update(options)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path or "/",
                                                  query=urllib.parse.urlencode(query)))


def _with_user(uri: str, user: str, password: str) -> str:
    parts = urllib.parse.urlsplit(uri)
    userinfo = f"{urllib.parse.quote(user)}:{urllib.parse.quote(password)}@"
    return urllib.parse.urlunsplit(parts._replace(netloc=userinfo + parts.netloc))


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
        self._token_dir: tempfile.TemporaryDirectory[str] | None = None
        self._saved_token_file: str | None = None

    async def get(self, topology: str, auth: bool = False) -> tuple[Target, AsyncMongoClient]:
        """The target for ``topology`` (with authentication on if ``auth``; both ignored
        with MONGODB_URI) and its internal client."""
        key = "uri" if os.environ.get("MONGODB_URI") else f"{topology}{'+auth' if auth else ''}"
        if key not in self._targets:
            target = await (self._external() if key == "uri"
                            else self._simulated(key, topology, auth))
            self._targets[key] = target
            self._clients[key] = AsyncMongoClient(target.uri)
        return self._targets[key], self._clients[key]

    async def _simulated(self, key: str, topology: str, auth: bool) -> Target:
        deployment: Any
        users = self._users() if auth else None
        if topology == "single":
            deployment = sim.Standalone(users=users)
        elif topology == "replicaset":
            deployment = sim.ReplicaSet(3, users=users)
        elif topology == "sharded":
            deployment = sim.ShardedCluster(2, users=users)
        else:
            deployment = sim.LoadBalanced(users=users)
        await deployment.start()
        self._deployments[key] = deployment
        uri = _with_user(deployment.uri, *SIMULATED_USER) if auth else deployment.uri
        single = _single_host(uri)
        if topology == "load-balanced":
            # useMultipleMongoses true or unset: the load balancer fronting several servers
            # (two services here, over the same data and users); false: the single one's.
            several = sim.LoadBalanced(services=2, users=deployment.users,
                                       store=deployment.store)
            await several.start()
            self._deployments[f"{key}+several"] = several
            uri = _with_user(several.uri, *SIMULATED_USER) if auth else several.uri
        return Target(uri, single, simulated_info(topology, auth), simulated=True)

    def _users(self) -> UserDirectory:
        """The SCRAM user, and MONGODB-OIDC with a token in OIDC_TOKEN_FILE."""
        users = UserDirectory()
        users.add_user(*SIMULATED_USER)
        idp = users.enable_oidc()
        if self._token_dir is None:
            self._token_dir = tempfile.TemporaryDirectory(prefix="asyncmongo-oidc-")
            self._saved_token_file = os.environ.get("OIDC_TOKEN_FILE")
        path = os.path.join(self._token_dir.name, "test_user1")
        with open(path, "w", encoding="utf-8") as file:
            file.write(idp.mint_token("test_user1", expires_in=24 * 3600))
        os.environ["OIDC_TOKEN_FILE"] = path
        return users

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
        if self._token_dir is not None:
            if self._saved_token_file is None:
                os.environ.pop("OIDC_TOKEN_FILE", None)
            else:
                os.environ["OIDC_TOKEN_FILE"] = self._saved_token_file
            self._token_dir.cleanup()
            self._token_dir = None


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
                      server_parameters=params, csfle=CSFLE_AVAILABLE)
    mechanisms = params.get("authenticationMechanisms", ())
    auth = client.options.credential is not None
    return replace(info, auth=auth, auth_mechanisms=tuple(mechanisms))


def uri_with_options(uri: str, options: Mapping[str, str]) -> str:
    """``uri`` with these URI options added (overriding the same names)."""
    return _add_options(uri, options)
