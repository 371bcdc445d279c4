"""The state every AsyncClientSession carries, and the bookkeeping on it.

:class:`SessionState` holds the slots (server session and lsid, cluster and operation time,
snapshot time, transaction state and options, pinning, recovery token) and the small
internal operations on them: take the server session lazily, give it back, pin and unpin a
mongos or a load-balanced connection. The behaviour lives in the mixins built on it:
:mod:`asyncmongo.session_hooks` (what the executor asks) and
:mod:`asyncmongo.session_transactions` (start / commit / abort).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from asyncmongo.bson.types import Timestamp
from asyncmongo.core.sessions import ServerSession, TxnState
from asyncmongo.errors import InvalidOperation
from asyncmongo.runtime.executor import bound_session
from asyncmongo.session_options import NO_TRANSACTION_OPTIONS, SessionOptions

if TYPE_CHECKING:
    from asyncmongo.client import AsyncMongoClient

__all__ = ["SessionState", "session_scope"]


@contextmanager
def session_scope(session: SessionState | None) -> Iterator[None]:
    """Run the enclosed operations in ``session`` (the API binds ``session=`` this way)."""
    if session is None:
        yield
        return
    token = bound_session.set(session)
    try:
        yield
    finally:
        bound_session.reset(token)


class SessionState:
    """A logical session's fields and their bookkeeping (the base of AsyncClientSession)."""

    __slots__ = (
        "_client",
        "_cluster_time",
        "_ended",
        "_implicit",
        "_lsid",
        "_operation_time",
        "_options",
        "_pinned_address",
        "_pinned_connection",
        "_pinned_pool",
        "_recovery_token",
        "_server_session",
        "_session_deadline",
        "_snapshot_time",
        "_txn_options",
        "_txn_state",
        "_txn_writes_unacknowledged",
    )

    def __init__(
        self,
        client: AsyncMongoClient,
        options: SessionOptions,
        *,
        implicit: bool = False,
    ) -> None:
        self._client = client
        self._options = options
        self._implicit = implicit
        self._server_session: ServerSession | None = None
        self._lsid: Mapping[str, Any] | None = None
        self._ended = False
        self._cluster_time: Mapping[str, Any] | None = None
        self._operation_time: Timestamp | None = None
        self._snapshot_time: Timestamp | None = options.snapshot_time
        self._txn_state = TxnState.NONE
        self._txn_options = NO_TRANSACTION_OPTIONS
        self._pinned_address: Any = None
        #: Load-balanced mode: the connection a transaction runs on, and its pool.
        self._pinned_connection: Any = None
        self._pinned_pool: Any = None
        self._recovery_token: Mapping[str, Any] | None = None
        self._txn_writes_unacknowledged = False
        #: CSOT: the ``loop.time()`` every operation in this session must finish by, while
        #: one is set (with_transaction under timeoutMS; commit/abort under the session's
        #: defaultTimeoutMS): the executor caps the operation's deadline with it.
        self._session_deadline: float | None = None

    @property
    def in_transaction(self) -> bool:
        return self._txn_state.in_transaction

    # -- internals ----------------------------------------------------------------------

    def _check_not_ended(self) -> None:
        if self._ended:
            raise InvalidOperation("Cannot use ended session")

    def _take_server_session(self) -> ServerSession:
        if self._server_session is None:
            self._server_session = self._client._server_sessions_acquire()
            self._lsid = self._server_session.lsid
        return self._server_session

    def _release(self) -> None:
        """End: the server session goes back to the client's pool."""
        if self._ended:
            return
        self._ended = True
        if self._pinned_address is not None or self._pinned_connection is not None:
            self._unpin()
        server_session, self._server_session = self._server_session, None
        if server_session is not None:
            self._client._server_sessions_release(server_session)

    def _unpin(self) -> None:
        """Forget the pinned mongos; give a pinned connection back to its pool."""
        self._pinned_address = None
        conn, pool = self._pinned_connection, self._pinned_pool
        self._pinned_connection = self._pinned_pool = None
        if conn is not None and pool is not None:
            pool.check_in(conn)

    def _pin_connection(self, conn: Any, pool: Any, address: Any) -> None:
        """Load balancers spec: a transaction keeps its first connection until it ends."""
        self._pinned_connection = conn
        self._pinned_pool = pool
        self._pinned_address = address

    def _drop_pinned_connection(self) -> None:
        """The pinned connection broke and its pool discarded it."""
        self._pinned_connection = self._pinned_pool = None
