"""asyncmongo.testing: simulated MongoDB deployments that speak the real wire protocol.

In-process asyncio servers on 127.0.0.1 play standalone mongods, replica-set members, mongos
routers and a load balancer over a shared in-memory store. Any driver can connect (PyMongo is
the acceptance test), so the driver's runtime, and users' own failover handling, are tested
against real wire traffic with faults on cue::

    async with ReplicaSet(members=3, arbiters=0, hidden=0, replication_lag_ms=0) as rs:
        client = SomeDriver(rs.uri)           # mongodb://127.0.0.1:p1,...,/?replicaSet=rs0
        await rs.step_down()                  # new primary: new electionId, same setVersion
        await rs.elect(rs.members[2])         # choose the winner
        await rs.members[1].stop()            # gone (connection refused) ...
        await rs.members[1].start()           # ... back, as a new process (new processId)
        await rs.members[1].partition("silent")   # or "refuse"; then await .heal()
        rs.members[1].slow(200)               # every reply 200 ms late (0 ends it)
        rs.members[1].send_garbage()          # next reply unparseable; send_truncated() too
        await rs.reconfig(add=1, remove=[rs.members[0]])   # setVersion + 1
        with rs.fail_point({"times": 1}, failCommands=["insert"], errorCode=91):
            ...                               # failCommand on the primary, off on exit

- Deployments: :class:`Standalone`, :class:`ReplicaSet`, :class:`ShardedCluster`
  (``mongos`` routers), :class:`LoadBalanced` (``services=N`` backends, each connection
  gets one's ``serviceId``; the URI says ``loadBalanced=true``); options
  ``users={"name": "password"}`` (SCRAM-SHA-1/256 in admin) or a
  :class:`~asyncmongo.testing.scram.UserDirectory` (PLAIN, MONGODB-X509 users too: the TLS
  client certificate's subject authenticates; MONGODB-AWS users by IAM ARN, whose SigV4
  signatures are checked against their known test credentials, with simulated STS, ECS and
  EC2 metadata endpoints in :mod:`asyncmongo.testing.aws`), ``tls=<ssl.SSLContext>``,
  ``streaming=False`` (no topologyVersion: drivers poll).
- Every member is a :class:`SimServer`: hello as mongod 8.0 builds it (legacy OP_QUERY
  ``isMaster`` too), the streaming (awaitable, exhaust) hello, OP_COMPRESSED with snappy, zlib
  and zstd, ``configureFailPoint``/``failCommand`` (also as a command from any driver),
  exhaust cursors, and the refusals of its role (NotWritablePrimary, NotPrimaryNoSecondaryOk).
- The data: :class:`Store`, the in-memory document store every member of a deployment
  shares (``deployment.store``; pass ``store=`` to share or pre-fill one). It is plain Python
  and usable alone: ``Store().handle("db", {"insert": "c", "documents": [...]})`` returns the
  reply document mongod would send, a :class:`SessionContext` passing the server's clock for
  the command; :class:`StoreError` is a server error (``code``, ``errmsg``, labels) that
  ``handle`` turns into an ``ok: 0`` reply.
- Network faults: with ``fault_proxy=True`` every member sits behind a :class:`FaultProxy`
  (``member.proxy``, ``deployment.proxies``) whose faults are async context managers scoped
  to new connections, existing ones or both (:class:`Scope`)::

      async with rs.primary.proxy.latency(50, jitter_ms=20): ...
      async with rs.members[1].proxy.blackhole(scope=Scope.EXISTING): ...
      rs.primary.proxy.reset(after_bytes=300); rs.primary.proxy.corrupt(count=2)
      async with await rs.partition_members([rs.primary]): ...   # the majority elects

  (latency, bandwidth, blackhole, reset, truncate, corrupt, misdirect, drip, refuse,
  partition: :mod:`asyncmongo.testing.proxy`).
- MONGODB-OIDC: :class:`TestIdentityProvider` (:mod:`asyncmongo.testing.oidc`) signs test
  tokens (RS256 with ``cryptography``, else HS256 with a test secret) and the server checks
  them (signature, expiry, audience, issuer: 18 when bad) once a
  :class:`~asyncmongo.testing.scram.UserDirectory` has ``idp = users.enable_oidc()``; a
  connection whose token expired gets ReauthenticationRequired (391);
  :func:`mint_token` (``idp.mint_token(subject, expires_in=...)``) makes tokens.
- :class:`QueryAnalyzer`: mongocryptd's part in automatic encryption (JSON-schema
  ``encrypt`` markings for the CSFLE subset), so ``AutoEncryptionOpts`` encrypts commands
  without mongocryptd or crypt_shared: pass ``**analyzer.auto_encryption_options()``
  (:mod:`asyncmongo.testing.query_analyzer`).
- :class:`Socks5Proxy`: a SOCKS5 proxy (optionally with username/password) that counts the
  connections it carries, for testing ``proxyHost`` (:mod:`asyncmongo.testing.socks5`).
- ``python -m asyncmongo.testing [standalone|replset N|sharded N|lb]`` runs one until Ctrl-C;
  ``--fault-proxy --control-port 0`` adds the proxies and a line-based control port other
  processes and shells drive (:mod:`asyncmongo.testing.control`: ``stepdown``, ``stop 1``,
  ``failpoint primary {...}``, ``fault 0 latency ms=100``, ``heal``...). The pytest plugin
  (:mod:`asyncmongo.testing.pytest_plugin`) offers ``mongo_standalone``,
  ``mongo_replica_set``, ``mongo_sharded`` and ``mongo_load_balanced`` fixtures, and
  ``mongo_proxied_standalone`` and ``mongo_proxied_replica_set`` behind fault proxies.

Known differences from a real deployment: the members of a replica set share one store, so
replication is instant (``replication_lag_ms`` only moves ``lastWrite`` for max staleness) and
a cursor opened on one member can be continued on another; a stopped primary stays "primary"
in the other members' hello until :meth:`ReplicaSet.step_down` or :meth:`ReplicaSet.elect`
unless ``ReplicaSet(election_timeout_ms=...)`` asks for automatic elections; a removed member
is stopped rather than left running with "no valid replica set config"; ``maxTimeMS`` is
enforced only against a fail point's ``blockConnection`` (MaxTimeMSExpired, 50); a plain
write to a document an open transaction holds waits at most 0.3 s for the transaction to end
(mongod waits until ``maxTimeMS``), then fails with WriteConflict (112). Write
concern counts reachable data-bearing members: stop enough of them and ``w: "majority"``
waits, or fails after ``wtimeout`` with WriteConcernFailed (64).
"""

from asyncmongo.testing.deployment import LoadBalanced, ReplicaSet, ShardedCluster, Standalone
from asyncmongo.testing.member import MemberConfig, Role
from asyncmongo.testing.oidc import TestIdentityProvider, mint_token
from asyncmongo.testing.partition import MemberPartition
from asyncmongo.testing.proxy import Fault, FaultProxy, Scope
from asyncmongo.testing.query_analyzer import QueryAnalyzer
from asyncmongo.testing.server import FailPointHandle, ServerStatistics, SimServer
from asyncmongo.testing.socks5 import Socks5Proxy
from asyncmongo.testing.store import SessionContext, Store, StoreError

__all__ = [
    "FailPointHandle",
    "Fault",
    "FaultProxy",
    "LoadBalanced",
    "MemberConfig",
    "MemberPartition",
    "QueryAnalyzer",
    "ReplicaSet",
    "Role",
    "Scope",
    "ServerStatistics",
    "SessionContext",
    "ShardedCluster",
    "SimServer",
    "Socks5Proxy",
    "Standalone",
    "Store",
    "StoreError",
    "TestIdentityProvider",
    "mint_token",
]
