"""asyncmongo.testing: simulated MongoDB deployments that speak the real wire protocol.

In-process asyncio servers on 127.0.0.1 playing standalone mongods, replica-set members,
mongos routers and a load balancer, with streaming hello, failCommand fail points, network
faults, SCRAM users, compression and TLS, over an in-memory store. For the driver's own tests
and for users testing their failover handling::

    async with ReplicaSet(members=3) as rs:
        ...  # connect any driver to rs.uri
        await rs.step_down()

``python -m asyncmongo.testing replset 3`` runs one from the command line; the pytest plugin
(:mod:`asyncmongo.testing.pytest_plugin`) offers fixtures.
"""

from asyncmongo.testing.deployment import LoadBalanced, ReplicaSet, ShardedCluster, Standalone
from asyncmongo.testing.member import MemberConfig, Role
from asyncmongo.testing.server import FailPointHandle, SimServer

__all__ = [
    "FailPointHandle",
    "LoadBalanced",
    "MemberConfig",
    "ReplicaSet",
    "Role",
    "ShardedCluster",
    "SimServer",
    "Standalone",
]
