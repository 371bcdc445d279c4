"""The client's server sessions: the pool they are taken from, and ``endSessions`` on close.

Server sessions are pooled by the pure :class:`~asyncmongo.core.sessions.ServerSessionPool`
(LIFO, discard the ones about to expire or dirtied by a network error); :class:`ServerSessions`
gives it the clock, the random ids and the deployment's topology description, and
sends ``endSessions`` for the pooled ids when the client closes.
"""

from __future__ import annotations

import asyncio
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
from asyncmongo.errors import MongoError

__all__ = ["END_SESSIONS_BATCH", "Described", "ServerSessions"]

#: Sessions spec: endSessions takes at most this many ids per command.
END_SESSIONS_BATCH: Final = 10_000

#: The clock of the pool's expiry rule (tests replace it).
monotonic: Callable[[], float] = time.monotonic


class Described(Protocol):
    """What the pool reads the deployment from: the client's running topology
    (``runtime.topology.Topology``)."""

    @property
    def description(self) -> TopologyDescription: ...


class _NotConnected:
    """Stands for the topology until the client has one: its description is the client's
    (a new object on every call, so the pool derives the timeout again each time). Once
    the client has a topology, the first read installs it in the pool's place."""

    __slots__ = ("_sessions",)

    def __init__(self, sessions: ServerSessions) -> None:
        self._sessions = sessions

    @property
    def description(self) -> TopologyDescription:
        sessions = self._sessions
        topology = sessions._connected()
        if topology is None:
            return sessions._description()
        sessions.topology = topology
        return topology.description


def _no_topology() -> Described | None:
    return None


class ServerSessions:
    """One client's server session pool, sized by the deployment its topology describes.

    ``description()`` is the client's topology description, ``topology()`` its running
    topology once it has one (None before it connects). Every acquire and release reads
    ``topology.description`` (an attribute of the running topology, not a call into the
    client) and the pure pool derives the session timeout once per description object.
    An implicit session reads ``pool`` and ``topology`` itself: see ``ImplicitSession``.
    """

    __slots__ = ("_connected", "_description", "pool", "topology")

    def __init__(
        self,
        description: Callable[[], TopologyDescription],
        topology: Callable[[], Described | None] = _no_topology,
    ) -> None:
        self._description = description
        self._connected = topology
        self.pool = ServerSessionPool(lambda: uuid.uuid4().bytes)
        #: The running topology, installed by ``_NotConnected`` on the first read after the
        #: client has one (it never changes after).
        self.topology: Described = _NotConnected(self)

    def __len__(self) -> int:
        return len(self.pool)

    def acquire(self, now: float | None = None) -> ServerSession:
        """A server session from the pool; ``now`` is the caller's clock reading, when it
        has just taken one (an implicit session stamps its last use with the same value)."""
        if now is None:
            now = monotonic()
        return self.pool.acquire(now, self.topology.description)

    def release(self, session: ServerSession) -> None:
        """Give ``session`` back (the pool decides whether it is worth keeping)."""
        self.pool.release(session, monotonic(), self.topology.description)

    async def end_all(self, run: Callable[[Operation[Any]], Awaitable[Any]]) -> None:
        """Sessions spec: endSessions for every pooled id on close (errors ignored)."""
        if not len(self.pool):
            return
        ids = self.pool.drain()
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
