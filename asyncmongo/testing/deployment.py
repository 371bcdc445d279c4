"""Simulated deployments as async context managers: the Python API users test with.

::

    async with ReplicaSet(members=3) as rs:
        client = AnyDriver(rs.uri)
        await rs.step_down()                 # a new primary, a new electionId
        await rs.members[1].stop()           # gone; .start() brings it back (new processId)
        with rs.fail_point({"times": 1}, failCommands=["insert"], errorCode=91):
            ...

:class:`Standalone`, :class:`ReplicaSet`, :class:`ShardedCluster` (several mongos over one
store) and :class:`LoadBalanced` (one mongos that answers ``serviceId``). Every member is a
:class:`~asyncmongo.testing.server.SimServer` on 127.0.0.1; the members of a deployment share
one :class:`~asyncmongo.testing.store.Store`.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from asyncmongo.errors import ConfigurationError
from asyncmongo.testing.member import MemberConfig, Role
from asyncmongo.testing.partition import MemberPartition
from asyncmongo.testing.proxy import FaultProxy
from asyncmongo.testing.replset import ReplicaSetGroup
from asyncmongo.testing.scram import UserDirectory
from asyncmongo.testing.server import FailPointHandle, SimServer
from asyncmongo.testing.store import Store

Users = Mapping[str, str] | UserDirectory | None


def user_directory(users: Users) -> UserDirectory:
    """A :class:`UserDirectory` from ``{"name": "password"}`` (admin, SCRAM-SHA-1 and -256)."""
    if isinstance(users, UserDirectory):
        return users
    directory = UserDirectory()
    for name, password in (users or {}).items():
        directory.add_user(name, password)
    return directory


class _Deployment:
    """What every deployment shares: a store, users, TLS, the servers, ``async with``."""

    def __init__(self, *, users: Users = None, tls: ssl.SSLContext | None = None,
                 streaming: bool = True, store: Store | None = None,
                 host_name: str = "127.0.0.1", fault_proxy: bool = False) -> None:
        self.store = store if store is not None else Store()
        #: How the members name themselves (they always listen on 127.0.0.1).
        self.host_name = host_name
        self.users = user_directory(users)
        self.tls = tls
        self.streaming = streaming
        #: Every member behind a :class:`~asyncmongo.testing.proxy.FaultProxy`.
        self.fault_proxy = fault_proxy
        self.members: list[SimServer] = []

    async def __aenter__(self) -> Any:
        try:
            await self.start()
        except BaseException:
            await self.close()  # a half-started deployment leaves no listener behind
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """Stop every server and close every connection."""
        await asyncio.gather(*(member.stop() for member in self.members))

    def _server(self, role: Role, **kwargs: Any) -> SimServer:
        return SimServer(role, store=self.store, users=self.users, ssl_context=self.tls,
                         streaming=self.streaming, host_name=self.host_name,
                         fault_proxy=self.fault_proxy, **kwargs)

    @property
    def proxies(self) -> list[FaultProxy]:
        """The members' fault proxies (``fault_proxy=True``), in member order."""
        return [member.proxy for member in self.members if member.proxy is not None]

    async def heal_network(self) -> None:
        """Take every proxy fault off, on every member."""
        for proxy in self.proxies:
            await proxy.heal()

    def _uri(self, hosts: Iterable[str], options: Mapping[str, str]) -> str:
        query = dict(options)
        if self.tls is not None:
            query["tls"] = "true"
        suffix = f"/?{urllib.parse.urlencode(query)}" if query else "/"
        return f"mongodb://{','.join(hosts)}{suffix}"

    def fail_point(self, mode: str | Mapping[str, int] = "alwaysOn",
                   data: Mapping[str, Any] | None = None, **fields: Any) -> FailPointHandle:
        """``failCommand`` on the first member (a replica set overrides: the primary)."""
        return self.members[0].fail_point(mode, data, **fields)


class Standalone(_Deployment):
    """One standalone mongod."""

    def __init__(self, *, port: int = 0, users: Users = None, tls: ssl.SSLContext | None = None,
                 streaming: bool = True, store: Store | None = None,
                 host_name: str = "127.0.0.1", fault_proxy: bool = False) -> None:
        super().__init__(users=users, tls=tls, streaming=streaming, store=store,
                         host_name=host_name, fault_proxy=fault_proxy)
        self.members = [self._server(Role.STANDALONE, port=port)]

    def __repr__(self) -> str:
        return f"<Standalone {self.server!r}>"

    @property
    def server(self) -> SimServer:
        return self.members[0]

    @property
    def uri(self) -> str:
        return self._uri([self.server.host], {})

    async def start(self) -> None:
        await self.server.start()


class ReplicaSet(_Deployment):
    """A replica set: ``members`` data-bearing members (the first is elected primary),
    ``arbiters``, the last ``hidden`` data-bearing members hidden (priority 0), per-member
    ``tags`` and ``priorities``, and ``replication_lag_ms`` (the secondaries' lastWrite lag).

    With ``election_timeout_ms`` set, a primary that stops or is partitioned is replaced as a
    real set does it: after that many milliseconds, if it is still unreachable, the next
    electable reachable member wins an election. Without it, elections happen only when the
    test calls :meth:`step_down` or :meth:`elect`.

    ``ports`` fixes the members' ports in order (0 or missing entries: a free port), and
    ``host_name`` how they name themselves (``ReplicaSet(ports=[27017, 27018, 27019],
    host_name="localhost")`` is the set the DNS seedlist tests expect)."""

    def __init__(
        self,
        members: int = 3,
        *,
        arbiters: int = 0,
        hidden: int = 0,
        tags: Sequence[Mapping[str, str]] | None = None,
        priorities: Sequence[float] | None = None,
        set_name: str = "rs0",
        streaming: bool = True,
        users: Users = None,
        tls: ssl.SSLContext | None = None,
        replication_lag_ms: float = 0,
        election_timeout_ms: float | None = None,
        store: Store | None = None,
        ports: Sequence[int] = (),
        host_name: str = "127.0.0.1",
        fault_proxy: bool = False,
    ) -> None:
        super().__init__(users=users, tls=tls, streaming=streaming, store=store,
                         host_name=host_name, fault_proxy=fault_proxy)
        self.election_timeout_ms = election_timeout_ms
        self._ports = tuple(ports)
        self._closing = False
        self._elections: set[asyncio.Task[None]] = set()
        self._partitions: list[MemberPartition] = []
        if members < 1 or hidden >= members or arbiters < 0 or hidden < 0:
            raise ConfigurationError("a replica set needs members >= 1 and a visible member")
        for name, values in (("tags", tags), ("priorities", priorities)):
            if values is not None and len(values) != members:
                raise ConfigurationError(f"{name} needs one entry per data-bearing member "
                                         f"({members}), got {len(values)}")
        self.group = ReplicaSetGroup(set_name, (), replication_lag_ms=replication_lag_ms)
        self._plan = [(False, index >= members - hidden,
                       (priorities[index] if priorities else 1.0),
                       (tags[index] if tags else {}))
                      for index in range(members)]
        self._plan += [(True, False, 0.0, {}) for _ in range(arbiters)]

    def __repr__(self) -> str:
        return f"<ReplicaSet {self.group!r}>"

    @property
    def set_name(self) -> str:
        return self.group.set_name

    @property
    def uri(self) -> str:
        """Every visible data-bearing member as a seed, with ``replicaSet``."""
        hosts = [m.host for m in self.group.members if not m.arbiter and not m.hidden]
        return self._uri(hosts, {"replicaSet": self.set_name})

    @property
    def primary(self) -> SimServer | None:
        return self.member(self.group.primary) if self.group.primary else None

    @property
    def secondaries(self) -> list[SimServer]:
        return [m for m in self.members if m.role is Role.SECONDARY]

    def member(self, host: str) -> SimServer:
        for server in self.members:
            if server.host == host:
                return server
        raise ConfigurationError(f"{host} is not a member of {self.set_name}")

    async def start(self) -> None:
        configs = []
        for index, (arbiter, hidden, priority, tags) in enumerate(self._plan):
            port = self._ports[index] if index < len(self._ports) else 0
            server = self._new_member(Role.ARBITER if arbiter else Role.SECONDARY, port=port)
            await server.start()
            configs.append(MemberConfig(server.host, arbiter=arbiter, hidden=hidden,
                                        priority=0.0 if hidden else priority, tags=tags))
        self.group.members = tuple(configs)
        first = self.group.next_electable()
        if first is None:
            raise ConfigurationError("no member can be elected primary")
        self._elect(self.member(first))

    def _new_member(self, role: Role, port: int = 0) -> SimServer:
        server = self._server(role, port=port, replica_set=self.group,
                              on_step_down=self._step_down_hook,
                              on_unreachable=self._unreachable_hook,
                              count_acknowledgers=self._count_acknowledgers)
        self.members.append(server)
        return server

    def _count_acknowledgers(self) -> int:
        """Reachable data-bearing members: who can acknowledge a write now."""
        return sum(1 for m in self.members if m.reachable and m.role is not Role.ARBITER)

    def _unreachable_hook(self, server: SimServer) -> None:
        if self.election_timeout_ms is None or server is not self.primary or self._closing:
            return
        task = asyncio.get_running_loop().create_task(self._elect_after_timeout(server))
        self._elections.add(task)
        task.add_done_callback(self._elections.discard)

    async def _elect_after_timeout(self, lost: SimServer) -> None:
        assert self.election_timeout_ms is not None
        await asyncio.sleep(self.election_timeout_ms / 1000)
        if lost is not self.primary or lost.reachable:
            return
        unreachable = {m.host for m in self.members if not m.reachable} | self._cut_off()
        frozen = self.group.frozen(asyncio.get_running_loop().time())
        host = self.group.next_electable(unreachable | frozen)
        self.group.step_down()
        lost.role = Role.SECONDARY
        if host is not None:
            self._elect(self.member(host))
        else:
            self._bump_all()

    async def close(self) -> None:
        """Cancel pending elections, then stop every member."""
        self._closing = True
        for task in list(self._elections):
            task.cancel()
        await asyncio.gather(*self._elections, return_exceptions=True)
        await super().close()

    async def _step_down_hook(self, server: SimServer) -> None:
        await self.step_down()

    def _bump_all(self) -> None:
        for server in self.members:
            server.clock.bump()

    def _elect(self, server: SimServer) -> None:
        old = self.primary
        self.group.elect(server.host)
        if old is not None and old is not server:
            old.role = Role.SECONDARY
        server.role = Role.PRIMARY
        self._bump_all()

    async def elect(self, member: SimServer) -> None:
        """``member`` wins an election: new term and electionId, same setVersion; the old
        primary (if any) becomes a secondary. Every member's topologyVersion moves."""
        self._elect(member)

    async def step_down(self, *, elect: SimServer | bool = True) -> SimServer | None:
        """The primary steps down. With ``elect=True`` (default) the next electable member
        wins the following election at once; ``elect=False`` leaves the set without a primary
        (call :meth:`elect` later); a member elects that member. Returns the new primary."""
        old = self.primary
        if old is not None:
            self.group.step_down()
            old.role = Role.SECONDARY
            self._bump_all()
        if elect is False:
            return None
        if isinstance(elect, SimServer):
            winner: SimServer | None = elect
        else:
            unreachable = {m.host for m in self.members if not m.reachable} | self._cut_off()
            frozen = self.group.frozen(asyncio.get_running_loop().time())
            host = self.group.next_electable(
                {*unreachable, *frozen, old.host if old is not None else None})
            winner = self.member(host) if host is not None else None
        if winner is not None:
            self._elect(winner)
        return winner

    async def partition_members(self, isolated: Iterable[SimServer]) -> MemberPartition:
        """Cut ``isolated`` off from the other members (the driver still reaches all): a
        primary left on the minority side steps down and the majority side elects one. The
        returned partition heals on ``async with`` exit or ``await partition.heal()``."""
        partition = MemberPartition(self, isolated)
        await partition.apply()
        self._partitions = [p for p in self._partitions if p.active] + [partition]
        return partition

    def _cut_off(self) -> set[str]:
        """Members a partition leaves without a majority: no election picks them."""
        return {host for partition in self._partitions for host in partition.cut_off()}

    async def reconfig(self, *, add: int | Sequence[MemberConfig] = 0,
                       remove: Iterable[SimServer] = ()) -> None:
        """Add ``add`` new secondaries (a count, or configs whose host is ignored) and remove
        members (they are stopped): setVersion + 1, every topologyVersion moves."""
        removed = list(remove)
        plans: list[MemberConfig] = ([MemberConfig("") for _ in range(add)]
                                     if isinstance(add, int) else list(add))
        new_configs = []
        for plan in plans:
            server = self._new_member(Role.ARBITER if plan.arbiter else Role.SECONDARY)
            await server.start()
            new_configs.append(MemberConfig(server.host, plan.arbiter, plan.hidden,
                                            plan.priority, plan.tags))
        self.group.reconfig(new_configs, [server.host for server in removed])
        for server in removed:
            await server.stop()
            self.members.remove(server)
        self._bump_all()

    def fail_point(self, mode: str | Mapping[str, int] = "alwaysOn",
                   data: Mapping[str, Any] | None = None, **fields: Any) -> FailPointHandle:
        """``failCommand`` on the current primary."""
        primary = self.primary
        if primary is None:
            raise ConfigurationError("the replica set has no primary")
        return primary.fail_point(mode, data, **fields)


class ShardedCluster(_Deployment):
    """``mongos`` routers over one store (the shards are not simulated); ``ports`` fixes
    their ports in order (0 or missing entries: a free port)."""

    def __init__(self, mongos: int = 2, *, users: Users = None,
                 tls: ssl.SSLContext | None = None, streaming: bool = True,
                 store: Store | None = None, ports: Sequence[int] = (),
                 host_name: str = "127.0.0.1", fault_proxy: bool = False) -> None:
        super().__init__(users=users, tls=tls, streaming=streaming, store=store,
                         host_name=host_name, fault_proxy=fault_proxy)
        if mongos < 1:
            raise ConfigurationError("a sharded cluster needs at least one mongos")
        self.members = [self._server(Role.MONGOS, port=ports[i] if i < len(ports) else 0)
                        for i in range(mongos)]

    def __repr__(self) -> str:
        return f"<ShardedCluster {len(self.members)} mongos>"

    @property
    def mongos(self) -> list[SimServer]:
        return self.members

    @property
    def uri(self) -> str:
        return self._uri([m.host for m in self.members], {})

    async def start(self) -> None:
        for server in self.members:
            await server.start()


class LoadBalanced(_Deployment):
    """A load balancer in front of ``services`` mongos: one address; a client that says
    ``loadBalanced: true`` gets the ``serviceId`` of the mongos its connection reached
    (round robin over the connections); the URI carries ``loadBalanced=true``."""

    def __init__(self, *, services: int = 1, users: Users = None,
                 tls: ssl.SSLContext | None = None, store: Store | None = None,
                 port: int = 0, host_name: str = "127.0.0.1",
                 fault_proxy: bool = False) -> None:
        super().__init__(users=users, tls=tls, streaming=False, store=store,
                         host_name=host_name, fault_proxy=fault_proxy)
        if services < 1:
            raise ConfigurationError("a load balancer needs at least one service")
        self.members = [self._server(Role.MONGOS, load_balanced=True, services=services,
                                     port=port)]

    def __repr__(self) -> str:
        return f"<LoadBalanced {self.members[0]!r}>"

    @property
    def server(self) -> SimServer:
        return self.members[0]

    @property
    def uri(self) -> str:
        return self._uri([self.server.host], {"loadBalanced": "true"})

    async def start(self) -> None:
        await self.server.start()
