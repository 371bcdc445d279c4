"""The client's server sessions: the pool they are taken from, and ``endSessions`` on close.

Server sessions are pooled by the pure :class:`~asyncmongo.core.sessions.ServerSessionPool`
(LIFO, discard the ones about to expire or dirtied by a network error); :class:`ServerSessions`
gives it the clock, the random ids and the deployment's logicalSessionTimeoutMinutes, and
sends ``endSessions`` for the pooled ids when the client closes.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

from asyncmongo.core.operations.base import Operation, Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.selection.read_preference import Mode
from asyncmongo.core.sessions import ServerSession, ServerSessionPool
from asyncmongo.core.sessions.server_session import fresh_for
from asyncmongo.errors import MongoError

__all__ = ["END_SESSIONS_BATCH", "Described", "ServerSessions"]

#: Sessions spec: endSessions takes at most this many ids per command.
END_SESSIONS_BATCH: Final = 10_000

#: The clock of the pool's expiry rule (tests replace it).
monotonic: Callable[[], float] = time.monotonic


class Described(Protocol):
    """What the pool watches for the deployment's logicalSessionTimeoutMinutes: the
    client's running topology (``runtime.topology.Topology``)."""

    @property
    def description(self) -> TopologyDescription: ...


class _NotConnected:
    """Stands for the topology until the client has one: its description is the client's
    (a new object on every call), so the pool asks again on every acquire and release."""

    __slots__ = ("_description",)

    def __init__(self, description: Callable[[], TopologyDescription]) -> None:
        self._description = description

    @property
    def description(self) -> TopologyDescription:
        return self._description()


def _no_topology() -> Described | None:
    return None


class ServerSessions:
    """One client's server session pool, sized by the deployment its topology describes.

    ``description()`` is the client's topology description, ``topology()`` its running
    topology once it has one (None before it connects). Every acquire and release needs
    the deployment's session timeout, which only changes with the topology description:
    the pool remembers the description it read it from and compares the topology's
    current one by identity, an attribute read rather than a call into the client."""

    __slots__ = ("_connected", "_described", "_description", "_fresh", "_pool", "_topology")

    def __init__(
        self,
        description: Callable[[], TopologyDescription],
        topology: Callable[[], Described | None] = _no_topology,
    ) -> None:
        self._description = description
        self._connected = topology
        self._pool = ServerSessionPool(lambda: uuid.uuid4().bytes)
        #: The running topology, once ``topology()`` gave it (it never changes after).
        self._topology: Described = _NotConnected(description)
        #: The topology description ``_fresh`` was derived from.
        self._described: object = None
        #: ``fresh_for`` of that description's timeout (``math.inf``: nothing expires).
        self._fresh = math.inf

    def __len__(self) -> int:
        return len(self._pool)

    def acquire(self, now: float | None = None) -> ServerSession:
        """A server session from the pool; ``now`` is the caller's clock reading, when it
        has just taken one (an implicit session stamps its last use with the same value)."""
        if self._topology.description is not self._described:
            self._describe()
        if now is None:
            now = monotonic()
        return self._pool.acquire_within(now, self._fresh)

    def release(self, session: ServerSession) -> None:
        """Give ``session`` back (the pool decides whether it is worth keeping)."""
        if self._topology.description is not self._described:
            self._describe()
        self._pool.release_within(session, monotonic(), self._fresh)

    def _describe(self) -> None:
        """Remember the session timeout of a new topology description: its
        logicalSessionTimeoutMinutes, none in load-balanced mode (nothing expires)."""
        if isinstance(self._topology, _NotConnected):
            topology = self._connected()
            if topology is not None:
                self._topology = topology
        description = self._topology.description
        timeout = None
        if description.topology_type is not TopologyType.LOAD_BALANCED:
            minutes = description.logical_session_timeout_minutes
            timeout = minutes if isinstance(minutes, int) else None
        self._fresh = fresh_for(timeout)
        self._described = description

    async def end_all(self, run: Callable[[Operation[Any]], Awaitable[Any]]) -> None:
        """Sessions spec: endSessions for every pooled id on close (errors ignored)."""
        if not len(self._pool):
            return
        ids = self._pool.drain()
        description = self._description()
        if description.topology_type is not TopologyType.LOAD_BALANCED and not any(
            server.is_data_bearing for server in description.known_servers
        ):
            return  # nobody to tell: closing must not wait for a server selection
        preference = ReadPreference(Mode.PRIMARY_PREFERRED)
        for start in range(0, len(ids), END_SESSIONS_BATCH):
            batch = ids[start : start + END_SESSIONS_BATCH]
            op: CommandOperation[Mapping[str, Any]] = CommandOperation(
                "admin", {"endSessions": batch}, _unchecked, Target.read(preference)
            )
            try:
                await asyncio.wait_for(run(op), 5)
            except (MongoError, TimeoutError):
                return


def _unchecked(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    return reply
