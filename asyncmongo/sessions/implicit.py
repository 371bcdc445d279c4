"""ImplicitSession: the session the driver starts for an operation run without one.

Sessions spec, "Implicit sessions": an operation (or a cursor, until it is exhausted or
closed) without ``session=`` still sends an lsid, from a server session taken from the
client's pool and given back afterwards. Such a session has no causal consistency, no
snapshot and no transactions, and the application never sees it, so it is a server session
and the executor's bookkeeping (``runtime.attempt.OperationSession``), nothing more.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.core.operations.base import Target
from asyncmongo.core.sessions import ServerSession
from asyncmongo.core.sessions.decorate import PlainSessionFields, SessionFields
from asyncmongo.core.sessions.labels import is_network_error
from asyncmongo.errors import ConnectionFailure, ServerSelectionTimeoutError
from asyncmongo.runtime.attempt import OUTSIDE_TRANSACTION, SessionStep
from asyncmongo.sessions.pool import ServerSessions

__all__ = ["ImplicitSession"]

#: The clock of the server sessions' last use (tests replace it).
monotonic: Callable[[], float] = time.monotonic



class ImplicitSession:
    """One operation's (or one cursor's) implicit session.

    The executor makes one per operation and calls each of its hooks, so the server session
    is taken and given back with one call each into the pure pool: ``ServerSessions.acquire``
    and ``release`` inlined (their clock, the pool and the topology's description).
    """

    __slots__ = ("_server_session", "_sessions")

    _implicit = True
    _session_deadline: float | None = None
    _pinned_connection: Any = None

    def __init__(self, sessions: ServerSessions) -> None:
        self._sessions = sessions
        self._server_session: ServerSession | None = None

    @classmethod
    def factory(cls, sessions: ServerSessions) -> Callable[[], ImplicitSession]:
        """The executor's ``implicit_session``: a partial, so making one runs no Python
        frame but ``__init__``."""
        return functools.partial(cls, sessions)

    def __repr__(self) -> str:
        return "<ImplicitSession>"

    def _prepare(self, name: str, *, acknowledged: bool) -> SessionStep:
        return OUTSIDE_TRANSACTION

    def _transaction_target(self, target: Target, *, own_preference: bool = False) -> Target:
        return target

    def _check_read_preference(self, target: Target, *, own_preference: bool = False) -> None:
        """Only a transaction restricts the read preference."""

    def _fields(
        self,
        step: SessionStep,
        txn_number: int | None,
        client_cluster_time: Mapping[str, Any] | None,
        *,
        generic: bool = False,
    ) -> SessionFields:
        return PlainSessionFields(self._implicit_lsid(), txn_number, client_cluster_time)

    def _implicit_lsid(self) -> Mapping[str, Any]:
        """The lsid of an attempt: the server session is taken from the pool on the first
        attempt and its last use stamped on each (the executor decorates the command with
        ``decorate_plain``, the short path of ``_fields``)."""
        now = monotonic()  # one clock reading: the pool's expiry check and the last use
        server_session = self._server_session
        if server_session is None:
            sessions = self._sessions
            server_session = self._server_session = sessions.pool.acquire(
                now, sessions.topology.description
            )
        server_session.last_use = now
        return server_session.lsid

    def _next_txn_number(self) -> int:
        """A retryable write's txnNumber: the server session is taken now (before
        ``_fields``, which then reuses it). ``ServerSession.next_txn_number`` inlined:
        every retryable write runs this once."""
        server_session = self._server_session
        if server_session is None:
            sessions = self._sessions
            server_session = self._server_session = sessions.pool.acquire(
                monotonic(), sessions.topology.description
            )
        server_session.txn_number += 1
        return server_session.txn_number

    def _observe(self, reply: Mapping[str, Any], address: Any, sharded: bool) -> None:
        """Nothing to keep: the client's clock gossips, nothing here reads causally."""

    def _on_error(self, exc: BaseException, step: SessionStep, name: str) -> None:
        """Sessions spec: a network error dirties the server session (never pooled again)."""
        if isinstance(exc, ConnectionFailure) and not isinstance(exc, ServerSelectionTimeoutError):
            if is_network_error(exc) and self._server_session is not None:
                self._server_session.mark_dirty()

    def _pin_connection(self, conn: Any, pool: Any, address: Any) -> None:
        raise AssertionError("an implicit session never runs a transaction")

    def _drop_pinned_connection(self) -> None:
        raise AssertionError("an implicit session never runs a transaction")

    def _release(self) -> None:
        """The server session goes back to the client's pool (once: a second call finds
        none, so it is never pooled twice)."""
        server_session = self._server_session
        if server_session is not None:
            self._server_session = None
            sessions = self._sessions
            sessions.pool.release(server_session, monotonic(), sessions.topology.description)
