"""The client's side of sessions: ``start_session``, the server session pool, ``endSessions``.

:class:`ClientSessions` is mixed into AsyncMongoClient. Server sessions are pooled by the
pure :class:`~asyncmongo.core.sessions.ServerSessionPool` (LIFO, discard the ones about to
expire or dirtied by a network error); this module gives it the clock, the random ids and
the deployment's logicalSessionTimeoutMinutes, and sends ``endSessions`` for the pooled ids
when the client closes.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from asyncmongo.bson.types import Timestamp
from asyncmongo.client_session import AsyncClientSession
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.selection.read_preference import Mode
from asyncmongo.core.sessions import ServerSession, ServerSessionPool
from asyncmongo.errors import InvalidOperation, MongoError
from asyncmongo.session_options import IMPLICIT_OPTIONS, SessionOptions, TransactionOptions

if TYPE_CHECKING:
    from asyncmongo.client import AsyncMongoClient

__all__ = ["END_SESSIONS_BATCH", "ClientSessions"]

#: Sessions spec: endSessions takes at most this many ids per command.
END_SESSIONS_BATCH: Final = 10_000

#: The clock of the pool's expiry rule (tests replace it).
monotonic: Callable[[], float] = time.monotonic


class ClientSessions:
    """Mixed into AsyncMongoClient: start_session, the server session pool, endSessions."""

    _server_session_pool: ServerSessionPool | None = None
    #: (a topology description, its session timeout): see _session_timeout.
    _session_timeout_of: tuple[object, int | None] | None = None

    if TYPE_CHECKING:
        _closed: bool

        async def _run_operation(self, op: Any, operation_id: int | None = None) -> Any: ...

        @property
        def topology_description(self) -> Any: ...

    def start_session(
        self,
        causal_consistency: bool | None = None,
        default_transaction_options: TransactionOptions | None = None,
        snapshot: bool = False,
        default_timeout_ms: int | None = None,
        snapshot_time: Timestamp | None = None,
    ) -> AsyncClientSession:
        """A new explicit session (use ``async with``, or call ``end_session``).

        Its server session is taken from the pool on first use and may have as little as
        a minute left before the server considers it stale: an application that waits more
        than a minute between starting a session and using it risks errors (sessions spec).
        Causally consistent operations are not causally consistent with unacknowledged
        (w:0) writes, which get no operationTime back (causal consistency spec)."""
        if self._closed:
            raise InvalidOperation("the client is closed")
        options = SessionOptions(
            causal_consistency,
            default_transaction_options,
            snapshot,
            default_timeout_ms,
            snapshot_time,
        )
        return AsyncClientSession(cast("AsyncMongoClient", self), options)

    def _implicit_session(self) -> AsyncClientSession:
        return AsyncClientSession(cast("AsyncMongoClient", self), IMPLICIT_OPTIONS, implicit=True)

    def _session_pool(self) -> ServerSessionPool:
        pool = self._server_session_pool
        if pool is None:
            pool = ServerSessionPool(lambda: uuid.uuid4().bytes)
            self._server_session_pool = pool
        return pool

    def _session_timeout(self) -> int | None:
        """The deployment's logicalSessionTimeoutMinutes (None: nothing expires); asked twice
        per operation, so remembered for the topology description it was read from."""
        description = self.topology_description
        remembered = self._session_timeout_of
        if remembered is not None and remembered[0] is description:
            return remembered[1]
        timeout = None
        if description.topology_type is not TopologyType.LOAD_BALANCED:
            minutes = description.logical_session_timeout_minutes
            timeout = minutes if isinstance(minutes, int) else None
        self._session_timeout_of = (description, timeout)
        return timeout

    def _server_sessions_acquire(self) -> ServerSession:
        pool = self._server_session_pool
        if pool is None:
            pool = self._session_pool()
        return pool.acquire(monotonic(), self._session_timeout())

    def _server_sessions_release(self, session: ServerSession) -> None:
        pool = self._server_session_pool
        if pool is None:
            pool = self._session_pool()
        pool.release(session, monotonic(), self._session_timeout())

    async def _end_server_sessions(self) -> None:
        """Sessions spec: endSessions for every pooled id on close (errors ignored)."""
        pool = self._server_session_pool
        if pool is None or not len(pool):
            return
        ids = pool.drain()
        description = self.topology_description
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
                await asyncio.wait_for(self._run_operation(op), 5)
            except (MongoError, TimeoutError):
                return


def _unchecked(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    return reply
