"""Discovery against simulated deployments: a replica set from one seed, directConnection,
sharded clusters, load-balanced mode."""

from __future__ import annotations

import bson

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.sdam import ServerType, TopologyType
from asyncmongo.core.sdam.events import ServerHeartbeatSucceededEvent
from tests.topology.sim import Deployment, Member, ReplicaSet
from tests.topology.support import wait_until


async def test_replica_set_discovered_from_one_seed() -> None:
    async with ReplicaSet(3) as rs:
        async with AsyncMongoClient(rs.seed, heartbeatFrequencyMS=10_000) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 3)
            description = client.topology_description
            assert description.topology_type is TopologyType.REPLICA_SET_WITH_PRIMARY
            assert description.set_name == "rs"
            primary = description.primary
            assert primary is not None and primary.address == rs.members[0].address
            types = sorted(s.server_type.value for s in description.servers.values())
            assert types == ["RSPrimary", "RSSecondary", "RSSecondary"]
            reply = await client.admin_command({"ping": 1})
            assert reply["ok"] == 1.0


async def test_direct_connection_to_a_secondary() -> None:
    async with ReplicaSet(3) as rs:
        uri = f"mongodb://{rs.members[1].host}/?directConnection=true"
        async with AsyncMongoClient(uri) as client:
            topology = client._topology_runtime
            await wait_until(lambda: topology.description.known_servers != [])
            description = client.topology_description
            assert description.topology_type is TopologyType.SINGLE
            assert list(description.servers) == [rs.members[1].address]
            assert description.servers[rs.members[1].address].server_type is (
                ServerType.RS_SECONDARY
            )
            assert (await client.admin_command({"ping": 1}))["ok"] == 1.0


async def test_sharded_cluster_of_two_mongos() -> None:
    async with Deployment([Member("mongos"), Member("mongos")]) as cluster:
        async with AsyncMongoClient(cluster.uri) as client:
            topology = client._topology_runtime
            await wait_until(lambda: len(topology.description.known_servers) == 2)
            description = client.topology_description
            assert description.topology_type is TopologyType.SHARDED
            assert {s.server_type for s in description.servers.values()} == {ServerType.MONGOS}
            for _ in range(20):
                assert (await client._run_command("db", {"insert": "c"}))["n"] == 1
            # both routers get work: the power of two choices spreads operations
            assert all(m.operations > 0 for m in cluster.members)


async def test_load_balanced_mode_has_no_monitors() -> None:
    lb = Member("mongos")
    async with Deployment([lb]):
        lb.server.hello_extra["serviceId"] = bson.ObjectId()
        events: list[object] = []
        uri = f"mongodb://{lb.host}/?loadBalanced=true"
        async with AsyncMongoClient(uri, event_listeners=[events.append]) as client:
            description = client.topology_description
            assert description.topology_type is TopologyType.LOAD_BALANCED
            (server,) = description.servers.values()
            assert server.server_type is ServerType.LOAD_BALANCER
            assert client._topology_runtime.servers[lb.address].monitor is None
            assert lb.hello_requests == 0  # nobody monitors a load balancer
            assert (await client.admin_command({"ping": 1}))["ok"] == 1.0
            assert lb.hello_requests == 1  # the pooled connection's handshake, nothing else
            assert not [e for e in events if isinstance(e, ServerHeartbeatSucceededEvent)]
