"""What a simulated server does differently by role: standalone, replica-set primary,
secondary or arbiter, mongos, mongos behind a load balancer.

:class:`RoleState` holds the role and what comes with it: the topology version
(:class:`~asyncmongo.testing.streaming.TopologyClock`), the replica set the member belongs to,
the load balancer's service ids, a mongos's cluster clock and transaction router. It builds the
hello reply, stamps replies with ``$clusterTime``/``operationTime``/``topologyVersion``,
refuses what the role cannot do, and waits for a replica set's write concern.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.bson import Binary, Int64, ObjectId, Timestamp
from asyncmongo.testing import write_concern
from asyncmongo.testing.codes import NOT_PRIMARY_CODES
from asyncmongo.testing.member import HelloState, Role, build_hello
from asyncmongo.testing.mongos_router import TransactionRouter
from asyncmongo.testing.replies import error_reply
from asyncmongo.testing.replset import ReplicaSetGroup
from asyncmongo.testing.server.command_fields import (
    READ_COMMANDS,
    WRITE_COMMANDS,
    read_concern_level,
    secondary_ok,
)
from asyncmongo.testing.store.change_streams import is_change_stream
from asyncmongo.testing.store.transactions import TransactionManager
from asyncmongo.testing.streaming import TopologyClock


class RoleState:
    """The role of one server and the state that differs by role."""

    __slots__ = ("_cluster_time", "clock", "compressors", "count_acknowledgers",
                 "load_balanced", "replica_set", "role", "service_ids", "streaming",
                 "transaction_router")

    def __init__(self, role: Role, *, replica_set: ReplicaSetGroup | None, streaming: bool,
                 compressors: tuple[str, ...], load_balanced: bool, services: int,
                 count_acknowledgers: Callable[[], int] | None) -> None:
        self.role = role
        self.replica_set = replica_set
        self.streaming = streaming
        self.compressors = compressors
        self.load_balanced = load_balanced
        #: Behind a load balancer: one serviceId per backend mongos; connection N reaches
        #: backend N mod len(service_ids), as a round-robin balancer spreads them.
        self.service_ids = tuple(ObjectId() for _ in range(max(1, services)))
        #: How many data-bearing members could acknowledge a write now (write concern).
        self.count_acknowledgers = count_acknowledgers
        self.clock = TopologyClock()
        self.transaction_router = TransactionRouter()
        self._cluster_time = Timestamp(0, 0)

    def set_role(self, role: Role) -> None:
        """Change role (an election, a step down): the topology version moves."""
        self.role = role
        self.clock.bump()

    def service_id_of(self, connection_id: int) -> ObjectId:
        """The serviceId of the backend a (load-balanced) connection reached."""
        return self.service_ids[connection_id % len(self.service_ids)]

    # --- replies ---------------------------------------------------------------------------

    def hello(self, command: Mapping[str, Any], me: str, connection_id: int) -> dict[str, Any]:
        """The hello reply of this role now, undecorated and without authentication fields."""
        now = _now()
        group = self.replica_set
        return build_hello(command, HelloState(
            role=self.role,
            me=me,
            process_id=self.clock.process_id,
            counter=self.clock.counter,
            connection_id=connection_id,
            now=now,
            replica_set=group.view() if group is not None else None,
            last_write=group.last_write_for(me, now) if group is not None else None,
            streaming=self.streaming,
            load_balanced=self.load_balanced,
            service_id=self.service_id_of(connection_id),
            compressors=self.compressors,
        ))

    def decorate(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Replica-set members and mongos gossip ``$clusterTime`` and ``operationTime``; a
        not-primary error carries the member's ``topologyVersion`` (SDAM stale errors; mongod
        stamps shutdown errors only in quiesce mode, which the simulator does not model)."""
        if self.streaming and not reply.get("ok", 1) and reply.get("code") in (
                NOT_PRIMARY_CODES):
            reply["topologyVersion"] = {"processId": self.clock.process_id,
                                        "counter": Int64(self.clock.counter)}
        if self.replica_set is None and self.role is not Role.MONGOS:
            return reply
        cluster_time = self._next_cluster_time()
        reply["$clusterTime"] = {"clusterTime": cluster_time,
                                 "signature": {"hash": Binary(bytes(20)), "keyId": Int64(0)}}
        reply["operationTime"] = cluster_time
        return reply

    def _next_cluster_time(self) -> Timestamp:
        """A replica set's newest optime; a mongos ticks its own clock."""
        now = _now()
        if self.replica_set is not None:
            return self.replica_set.cluster_time(now)
        seconds = int(now.timestamp())
        inc = self._cluster_time.inc + 1 if seconds <= self._cluster_time.time else 1
        self._cluster_time = Timestamp(max(seconds, self._cluster_time.time), inc)
        return self._cluster_time

    def store_time(self) -> Timestamp | None:
        """The cluster time the store's snapshot reads run at: a replica set's newest optime
        (no write is newer), a mongos's own clock; None for a standalone (no snapshots)."""
        if self.replica_set is not None:
            return self.replica_set.cluster_time(_now())
        if self.role is Role.MONGOS:
            return self._cluster_time if self._cluster_time.time else (
                Timestamp(int(_now().timestamp()), 1))
        return None

    def add_recovery_token(self, reply: dict[str, Any], command: Mapping[str, Any]) -> None:
        """mongos' transaction router answers every command of a transaction with the
        recoveryToken the driver must send with commit/abort (transactions spec)."""
        if self.role is Role.MONGOS and command.get("autocommit") is False:
            reply["recoveryToken"] = TransactionRouter.recovery_token()

    # --- refusals --------------------------------------------------------------------------

    def mongos_refusal(self, name: str, command: Mapping[str, Any],
                       transactions: TransactionManager) -> dict[str, Any] | None:
        """What a mongos's transaction router answers in place of the command, if anything."""
        if self.role is not Role.MONGOS:
            return None
        return self.transaction_router.refusal(name, command, transactions)

    def refusal(self, name: str, command: Mapping[str, Any], body: Mapping[str, Any]
                ) -> dict[str, Any] | None:
        """What the member refuses in its role: a secondary's writes and unflagged reads, an
        arbiter's everything, what a standalone cannot do without replication."""
        refused = self._member_refusal(name, command)
        if refused is not None or self.role is not Role.STANDALONE:
            return refused
        if name in WRITE_COMMANDS:
            refused = write_concern.standalone_refusal(command.get("writeConcern"))
            if refused is not None:
                return refused
        if read_concern_level(command) == "snapshot":
            # mongod: snapshot reads need replication (sessions: snapshot-sessions-not-
            # supported-server-error)
            return error_reply(123, "node needs to be a replica set member to use "
                                    "readConcern: snapshot", command)
        if name == "aggregate" and is_change_stream(body):
            return error_reply(40573, "The $changeStream stage is only supported on replica "
                                      "sets", command)
        return None

    def _member_refusal(self, name: str, command: Mapping[str, Any]) -> dict[str, Any] | None:
        """What a replica-set member refuses in its state (none for standalone and mongos)."""
        if self.role in (Role.ARBITER, Role.OTHER) and name not in ("endSessions",):
            return error_reply(13436, "node is not in primary or recovering state", command)
        if self.role is not Role.SECONDARY:
            return None
        if name in WRITE_COMMANDS:
            return error_reply(10107, "not primary", command)
        if name in READ_COMMANDS and not secondary_ok(command):
            return error_reply(13435, "not primary and secondaryOk=false", command)
        return None

    # --- replication -----------------------------------------------------------------------

    async def replicate(self, concern: Any, reply: dict[str, Any]) -> dict[str, Any]:
        """A write succeeded: a replica set records its optime and waits for the write
        concern (the reply gains a writeConcernError if it fails); others answer at once."""
        if self.replica_set is None:
            return reply
        self.replica_set.record_write(_now())
        return await self._wait_for_write_concern(self.replica_set, concern, reply)

    async def _wait_for_write_concern(self, group: ReplicaSetGroup, concern: Any,
                                      reply: dict[str, Any]) -> dict[str, Any]:
        """Wait until enough members could acknowledge the write (or wtimeout passes)."""
        members = group.members
        required = write_concern.required_acknowledgements(concern, members)
        error = write_concern.unsatisfiable(required, members)
        timeout = write_concern.wtimeout_ms(concern)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout / 1000 if timeout is not None else None
        while error is None and self.count_acknowledgers is not None and (
                self.count_acknowledgers() < required):
            if deadline is not None and loop.time() >= deadline:
                error = write_concern.timed_out(concern)
                break
            await asyncio.sleep(0.01)
        if error is not None:
            reply = {**reply, "writeConcernError": error}
        return reply


def _now() -> datetime.datetime:
    now = datetime.datetime.now(datetime.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
